"""Discovery: each origin's robots.txt, and the sitemaps of the seed origins.

robots.txt is not a claimed URL: the scheduler hands out a robots.txt task when an
origin with waiting tasks first comes up (under the same capacity gate and politeness
as any task), and :meth:`Discovery.robots_done` sets the origin's rules from the result:
a 5xx, 429 or network error is tried again after a backoff, ``--retries`` times, then the
origin's URLs are skipped (RFC 9309 section 2.3.1.4). With ``--sitemaps``, a seed
origin's sitemaps (its robots.txt ``Sitemap:`` lines, else ``/sitemap.xml``) are queued as
sitemap tasks once its rules are known, indexes followed up to
:data:`crawler.config.MAX_SITEMAP_LEVELS` levels and :data:`crawler.config.MAX_SITEMAPS`
sitemaps in all.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from crawler.config import MAX_SITEMAP_LEVELS, MAX_SITEMAPS, CrawlConfig
from crawler.engine.messages import KIND_SITEMAP, FetchTask, TaskDone
from crawler.engine.politeness import Politeness
from crawler.web.retry import backoff_s
from crawler.web.robots import RobotsRules
from crawler.web.sitemaps import sitemap_candidates
from crawler.web.urlnorm import origin_of

log = logging.getLogger("crawler")


class Discovery:
    """robots.txt results and sitemap tasks of one crawl.

    Args:
        config: the crawl's :class:`crawler.config.CrawlConfig` (``retries``, the
            backoff, ``sitemaps``, the seeds).
        politeness: where each origin's rules go.
        push: called with each sitemap task to queue (the scheduler's ``push``).
        rng: the backoff's jitter.
    """

    def __init__(
        self,
        config: CrawlConfig,
        politeness: Politeness,
        push: Callable[[FetchTask], object],
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.politeness = politeness
        self.push = push
        self.rng = rng or random.Random()
        self.seed_origins = {origin_of(key) for key in config.seed_keys}
        self.robots_fetches = 0
        self.sitemaps_seen: set[str] = set()
        self.sitemaps_read = 0

    def robots_done(self, message: TaskDone, now: float, fetched: bool = True) -> RobotsRules:
        """Set the rules of the origin ``message.url`` from its robots.txt result, or
        schedule another attempt (an unreachable file, attempts left). Returns the rules
        the result gives, set or not: its :meth:`RobotsRules.status_line` is the
        attempt's outcome for the per-site report. ``fetched``: False for the final answer
        another machine fetched (``--redis``): set as it is, never tried again, not
        counted in :attr:`robots_fetches`."""
        origin = message.url
        self.robots_fetches += fetched
        rules = RobotsRules.from_response(message.status, message.robots_body, message.error)
        host = self.politeness.host(origin)
        if fetched and rules.unreachable and host.robots_attempts <= self.config.retries:
            wait = backoff_s(host.robots_attempts - 1, self.config.retry_base_s, self.config.retry_cap_s, self.rng)
            log.info("%s: %s; trying again in %.1f s", origin, rules.describe(), wait)
            self.politeness.robots_retry(origin, now + wait)
            return rules
        if rules.unreachable:
            log.warning("%s: %s; its URLs are skipped", origin, rules.describe())
        self.politeness.set_robots(origin, rules)
        if self.config.sitemaps and origin in self.seed_origins and not rules.unreachable:
            for url in sitemap_candidates(origin, rules.sitemaps):
                self.push_sitemap(url, 0)
        return rules

    def robots_lost(self, origin: str, now: float) -> None:
        """A robots.txt task was taken back or its fetcher died: fetch it again."""
        self.politeness.robots_retry(origin, now)

    def push_sitemap(self, url: str, level: int) -> None:
        """Queue the sitemap ``url`` (``level``: sitemap-index depth), once, within the
        level and count limits."""
        if url in self.sitemaps_seen or level > MAX_SITEMAP_LEVELS or len(self.sitemaps_seen) >= MAX_SITEMAPS:
            return
        self.sitemaps_seen.add(url)
        self.push(FetchTask(url, level, kind=KIND_SITEMAP))

    def sitemap_done(self, message: TaskDone, task: FetchTask | None) -> None:
        """Count a sitemap read and queue the child sitemaps of an index."""
        if message.status is not None and message.status < 300:
            self.sitemaps_read += 1
        for child in message.sitemaps:
            self.push_sitemap(child, (task.depth if task else 0) + 1)
