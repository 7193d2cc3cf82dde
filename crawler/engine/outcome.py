"""What one run of the dispatcher ended with: the input of the outputs written at the end.

:meth:`crawler.engine.dispatcher.Dispatcher.outcome` builds a :class:`CrawlOutcome` once
the loop is over; :func:`crawler.api.finish_outputs` writes ``skipped.tsv``,
``sites.tsv``, ``tree.txt`` and ``summary.json`` from it, the output folder and the
visited table's counts, and reads nothing else of the dispatcher.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Protocol

from crawler.engine.messages import FetchTask, TaskDone
from crawler.engine.stats import CrawlCounters

#: A row of ``skipped.tsv``: ``(url, depth, parent, reason)``.
Row = tuple[str, int, "str | None", str]


class Listing(Protocol):
    """Every URL a crawl has claimed, as the state store holds them (every run's)."""

    def skipped_rows(self) -> Iterator[Row]:
        """The URLs skipped for good (robots.txt, a guard), streamed."""
        ...

    def unfinished_rows(self) -> Iterator[Row]:
        """The URLs this run left (a limit, a stop, in flight at an abort), streamed,
        lowest depth first: a resume takes them up."""
        ...

    def is_listed(self, url: str) -> bool:
        """True if ``url`` was claimed: recorded, skipped or left."""
        ...

    def fetched_urls(self) -> set[str]:
        """Every URL with a record (visited or failed)."""
        ...

    def redirected_urls(self) -> set[str]:
        """Every URL recorded as a redirect."""
        ...

    def duplicate_counts(self) -> tuple[int, int]:
        """``(exact duplicates, near duplicates)`` among the pages recorded."""
        ...

    def robots_statuses(self) -> dict[str, str]:
        """Each origin's last robots.txt outcome, one line (``sites.tsv``'s column)."""
        ...

    def site_count(self) -> int | None:
        """Origins with a claimed URL over every run, or None if not kept."""
        ...


@dataclasses.dataclass(frozen=True)
class CrawlOutcome:
    """The end of one run of the dispatcher.

    Attributes:
        counters: the outcomes counted, this run's and (after a resume) the earlier runs'.
        listing: the claimed URLs (:class:`Listing`), read from the state store.
        stop_reason: why dispatching stopped early (``"max-pages"``, a signal), or None.
        abandoned: the tasks in flight when the crawl aborted (their fetch may have
            happened), each with its skip reason.
        seed_outcome: the first seed's result, if one was reported.
        seed_skips: robots.txt reasons of the seeds it disallowed.
        fetcher_deaths, robots_fetches, sitemaps_read, retries, stalls: this run's counts.
        cpu_s, peak_rss_bytes, processes: psutil's figures of the process tree
            (seconds, bytes, per role).
        start_method: the multiprocessing start method used.
    """

    counters: CrawlCounters
    listing: Listing
    stop_reason: str | None
    abandoned: tuple[tuple[FetchTask, str], ...]
    seed_outcome: TaskDone | None
    seed_skips: tuple[str, ...]
    fetcher_deaths: int
    robots_fetches: int
    sitemaps_read: int
    retries: int
    stalls: int
    cpu_s: float
    peak_rss_bytes: int
    processes: dict
    start_method: str
