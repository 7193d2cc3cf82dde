"""Per-host politeness: which origins the dispatcher may send a request to now.

An *origin* (``scheme://host[:port]``, :func:`crawler.web.urlnorm.origin_of`) is the unit of
politeness, as it is of robots.txt (RFC 9309 section 2.3: rules apply to the origin that
served them). For each origin :class:`Politeness` keeps

* its robots.txt state: unknown (no page of it may be dispatched yet), being fetched,
  or known (:class:`crawler.web.robots.RobotsRules`);
* requests in flight: dispatched and whose HTTP exchange has not ended yet;
* the earliest time of its next request. One request is in flight at a time and the
  next starts ``delay`` seconds after the previous exchange *ended* (its body read, not
  its page converted), so the gap between two requests seen by the server is never
  shorter than the delay, however long the task queue is. The delay is, by default,
  adaptive (:func:`crawler.engine.throttle.next_delay`: it follows the origin's response time,
  backs off on 429/503, and never goes below ``--delay`` or the site's ``Crawl-delay``).
  With a fixed ``per_host`` (``--per-host N``) up to N requests are in flight and the
  delay is ``--delay`` or ``Crawl-delay`` only (with a delay, one at a time again). A
  ``Retry-After`` on a 429 or 503 pauses the whole origin until then.

Pure: the caller passes ``now`` (``time.monotonic()`` seconds), so tests need no clock.
"""

from __future__ import annotations

import dataclasses
import statistics

from crawler.engine.throttle import LATENCY_WINDOW, next_delay
from crawler.web.robots import RobotsRules

#: Robots states of an origin.
ROBOTS_UNKNOWN, ROBOTS_FETCHING, ROBOTS_KNOWN = "unknown", "fetching", "known"


@dataclasses.dataclass(slots=True)
class HostState:
    """Politeness state of one origin (see the module docstring)."""

    robots: RobotsRules | None = None
    robots_state: str = ROBOTS_UNKNOWN
    robots_attempts: int = 0
    in_flight: int = 0
    next_request_at: float = 0.0
    #: the delay in force (seconds); adaptive: it follows the response times
    delay_s: float = 0.0
    #: the delay never goes below this: ``--delay`` or ``Crawl-delay``, the larger
    floor_s: float = 0.0
    #: the last exchanges' latencies (seconds), at most LATENCY_WINDOW, for the adaptive
    #: delay (a list: a deque costs 760 bytes, and a batch has one per origin)
    latencies: list = dataclasses.field(default_factory=list)


class Politeness:
    """Per-origin limits of one crawl.

    Args:
        per_host: most requests in flight to one origin (>= 1), with a fixed delay;
            ``None``: the adaptive throttle (one in flight, :mod:`crawler.engine.throttle`).
        delay_s: minimum seconds between requests to one origin (>= 0); the larger of
            this and the origin's robots.txt ``Crawl-delay`` applies.
        max_crawl_delay_s: a ``Crawl-delay`` above this is capped to it (a site asking
            for an hour between pages would otherwise stall an overnight crawl).
        user_agent: the User-Agent whose robots.txt group applies.
        obey_robots: ``False`` (``--ignore-robots``): every origin allows everything and
            robots.txt is never fetched.
    """

    def __init__(
        self,
        per_host: int | None = None,
        delay_s: float = 0.0,
        max_crawl_delay_s: float = 60.0,
        user_agent: str = "",
        obey_robots: bool = True,
    ) -> None:
        self.per_host = per_host
        self.adaptive = per_host is None
        self.delay_s = delay_s
        self.max_crawl_delay_s = max_crawl_delay_s
        self.user_agent = user_agent
        self.obey_robots = obey_robots
        self.hosts: dict[str, HostState] = {}

    def host(self, origin: str) -> HostState:
        """The state of ``origin``, created on first use."""
        state = self.hosts.get(origin)
        if state is None:
            state = self.hosts[origin] = HostState(delay_s=self.delay_s, floor_s=self.delay_s)
            if not self.obey_robots:
                self.set_robots(origin, RobotsRules.allow_all())
        return state

    def needs_robots(self, origin: str) -> bool:
        """True if robots.txt of ``origin`` is unknown and not being fetched: the caller
        should fetch it now (then call :meth:`robots_fetching`)."""
        return self.host(origin).robots_state == ROBOTS_UNKNOWN

    def robots_fetching(self, origin: str) -> None:
        """A robots.txt fetch of ``origin`` was dispatched."""
        state = self.host(origin)
        state.robots_state = ROBOTS_FETCHING
        state.robots_attempts += 1

    def robots_retry(self, origin: str, at: float) -> None:
        """robots.txt of ``origin`` was unreachable and will be fetched again at ``at``
        (monotonic seconds); its pages wait until then (RFC 9309 section 2.3.1.4)."""
        state = self.host(origin)
        state.robots_state = ROBOTS_UNKNOWN
        state.next_request_at = max(state.next_request_at, at)

    def set_robots(self, origin: str, rules: RobotsRules) -> None:
        """robots.txt of ``origin`` is known: its pages may be dispatched; its
        ``Crawl-delay`` (capped at ``max_crawl_delay_s``) raises the origin's delay."""
        state = self.host(origin)
        state.robots, state.robots_state = rules, ROBOTS_KNOWN
        crawl_delay = rules.crawl_delay(self.user_agent) if self.obey_robots else None
        if crawl_delay:
            state.floor_s = max(self.delay_s, min(crawl_delay, self.max_crawl_delay_s))
            state.delay_s = max(state.delay_s, state.floor_s)

    def allowed(self, origin: str, url: str) -> bool:
        """True if robots.txt of ``origin`` (known) lets ``url`` be fetched."""
        rules = self.host(origin).robots
        return rules is None or rules.allowed(url, self.user_agent)

    def ready_at(self, origin: str) -> float | None:
        """Monotonic time from which a page of ``origin`` may be dispatched, or ``None``
        while it cannot be, whatever the time (robots.txt not known yet, or as many
        requests in flight as allowed: a finished request changes that)."""
        state = self.host(origin)
        if state.robots_state != ROBOTS_KNOWN:
            return None
        if state.in_flight >= self.cap(state):
            return None
        return state.next_request_at

    def cap(self, state: HostState) -> int:
        """Most requests in flight to an origin in ``state``."""
        if self.adaptive or state.delay_s > 0:
            return 1
        assert self.per_host is not None  # not adaptive: per_host was given
        return self.per_host

    def dispatched(self, origin: str, now: float) -> None:
        """A request to ``origin`` was handed to a fetcher at ``now``."""
        state = self.host(origin)
        state.in_flight += 1
        state.next_request_at = max(state.next_request_at, now)

    def finished(
        self,
        origin: str,
        now: float,
        pause_s: float | None = None,
        latency_s: float | None = None,
        status: int | None = None,
    ) -> None:
        """A request to ``origin`` finished at ``now``. The next one may start after
        the origin's delay, and not before ``now + pause_s`` (a ``Retry-After``).

        ``latency_s`` (request sent to body read) and ``status`` (``None``: no response)
        adjust the adaptive delay; without ``latency_s`` (a task taken back, nothing
        measured) the delay stays as it is.
        """
        state = self.host(origin)
        state.in_flight = max(0, state.in_flight - 1)
        if self.adaptive and latency_s is not None:
            state.latencies.append(latency_s)
            if len(state.latencies) > LATENCY_WINDOW:
                del state.latencies[0]
            state.delay_s = next_delay(
                state.delay_s,
                statistics.median(state.latencies),
                status,
                state.floor_s,
                max(state.floor_s, self.max_crawl_delay_s),
            )
        state.next_request_at = max(state.next_request_at, now + state.delay_s, now + (pause_s or 0.0))
