"""The scheduler: which task goes out next, from the frontier under per-origin politeness.

Mercator's back-queue heap: the frontier keeps the waiting tasks per origin, and a heap
holds each origin that may take a request at some time, keyed by that time (its
politeness ``ready_at``; robots.txt first where it is unknown). :meth:`Scheduler.next`
pops the earliest origin that is due, so finding the next task costs O(log origins)
whatever the number of origins, and origins that became ready earlier go first (among
ready origins, the order is the order they became ready: round robin when all are).

An origin is in the heap only while it has waiting tasks (or needs its robots.txt) and is
not blocked. Blocked means: its robots.txt is being fetched, it has as many requests in
flight as its cap allows, or it reached ``--max-pages-per-site``. Every event that can
unblock it (a request finished, robots.txt known, a task pushed) calls
:meth:`Scheduler.refresh`, which puts it back with its new time. Heap entries are never
removed in place: an entry whose (time, seq) is no longer the origin's current one is
skipped when popped (lazy deletion), so the heap holds at most one live entry per
origin plus stale ones that are dropped as they surface.

Pure bookkeeping: the caller passes ``now`` (``time.monotonic()`` seconds).
"""

from __future__ import annotations

import heapq
import itertools
import logging

from crawler.engine.frontier import Frontier
from crawler.engine.messages import KIND_FAIL, KIND_PAGE, KIND_ROBOTS, KIND_ROBOTS_REDIRECT, FetchTask
from crawler.engine.politeness import Politeness
from crawler.web.urlnorm import origin_of

log = logging.getLogger("crawler")

#: Skip reason of the URLs left waiting in an origin that reached --max-pages-per-site.
SITE_LIMIT = "max-pages-per-site"


class Scheduler:
    """Picks the next task to dispatch.

    Args:
        frontier: the waiting tasks (:class:`crawler.engine.frontier.Frontier`).
        politeness: per-origin robots.txt state, requests in flight and next allowed time.
        max_pages_per_site: most page tasks dispatched per origin (every fetch counts,
            redirects included; a retry is the same URL again); ``None``: no limit.
    """

    def __init__(self, frontier: Frontier, politeness: Politeness, max_pages_per_site: int | None = None) -> None:
        self.frontier = frontier
        self.politeness = politeness
        self.max_pages_per_site = max_pages_per_site
        self.per_site: dict[str, int] = {}  # origin -> page tasks dispatched and not undone
        self._heap: list[tuple[float, int, str]] = []  # (ready at, seq, origin)
        self._entry: dict[str, tuple[float, int]] = {}  # origin -> its live heap entry
        self._seq = itertools.count()
        self.skipped: list[tuple[FetchTask, str]] = []  # disallowed by robots.txt, not yet handled
        for origin in frontier.origins():  # a resumed frontier
            self.refresh(origin)

    # -- events ------------------------------------------------------------------
    def push(self, task: FetchTask) -> None:
        """Add a claimed task to the frontier; its origin becomes schedulable."""
        self.frontier.push(task)
        self.refresh(origin_of(task.url))

    def dispatched(self, task: FetchTask, now: float) -> None:
        """``task`` was handed to a fetcher at ``now``."""
        origin = origin_of(task.url)
        if task.kind == KIND_ROBOTS:
            self.politeness.robots_fetching(origin)
        elif task.kind in (KIND_PAGE, KIND_FAIL):
            self.per_site[origin] = self.per_site.get(origin, 0) + 1
        self.politeness.dispatched(origin, now)
        self.refresh(origin)

    def undone(self, task: FetchTask) -> None:
        """A page task dispatched earlier does not count against its site's limit any
        more (taken back, its fetcher died, or it waits for a retry)."""
        if task.kind in (KIND_PAGE, KIND_FAIL):
            origin = origin_of(task.url)
            self.per_site[origin] = self.per_site.get(origin, 1) - 1
            self.refresh(origin)

    def recount(self, task: FetchTask) -> None:
        """A page task undone (:meth:`undone`) was fetched after all (its result was
        lost with its fetcher): it counts against its site's limit again."""
        origin = origin_of(task.url)
        self.per_site[origin] = self.per_site.get(origin, 0) + 1
        self.refresh(origin)

    def refresh(self, origin: str) -> None:
        """Put ``origin`` in the heap at the time it may next take a request, if it has
        work and is not blocked; else leave it out (a later event brings it back)."""
        at = self._ready_at(origin)
        current = self._entry.get(origin)
        if at is None:
            self._entry.pop(origin, None)
        elif current is None or current[0] != at:
            entry = (at, next(self._seq))
            self._entry[origin] = entry
            heapq.heappush(self._heap, (at, entry[1], origin))

    # -- queries -----------------------------------------------------------------
    def _ready_at(self, origin: str) -> float | None:
        politeness = self.politeness
        if politeness.needs_robots(origin):
            return politeness.host(origin).next_request_at if self.frontier.has_waiting(origin) else None
        if not self.frontier.has_waiting(origin) or self.site_full(origin):
            return None
        return politeness.ready_at(origin)

    def site_full(self, origin: str) -> bool:
        """True if ``origin`` has as many page tasks dispatched as --max-pages-per-site."""
        limit = self.max_pages_per_site
        return limit is not None and self.per_site.get(origin, 0) >= limit

    def next(self, now: float) -> FetchTask | None:
        """The next task due at ``now`` (robots.txt of an origin that needs it, else the
        origin's next page or sitemap, lowest depth first), or ``None``. A task that
        robots.txt disallows is moved to :attr:`skipped` and the next one is looked at."""
        heap = self._heap
        while heap and heap[0][0] <= now:
            at, seq, origin = heapq.heappop(heap)
            if self._entry.get(origin) != (at, seq):
                continue  # stale: the origin was rescheduled or blocked since
            del self._entry[origin]
            if self.politeness.needs_robots(origin):
                return FetchTask(origin, 0, kind=KIND_ROBOTS)
            while self.frontier.has_waiting(origin):
                task = self.frontier.pop(origin)
                if task.kind == KIND_ROBOTS_REDIRECT or self.politeness.allowed(origin, task.url):
                    return task  # a robots.txt is never subject to rules (RFC 9309 2.2.2)
                self.skipped.append((task, self._disallowed_reason(origin)))
            self.refresh(origin)
        return None

    def _disallowed_reason(self, origin: str) -> str:
        robots = self.politeness.host(origin).robots
        return robots.describe() if robots else "robots.txt"

    def wake_at(self) -> float | None:
        """The earliest time an origin in the heap becomes due (maybe a stale entry's:
        an early wake-up, never a late one), or ``None``."""
        heap = self._heap
        while heap and self._entry.get(heap[0][2]) != heap[0][:2]:
            heapq.heappop(heap)  # drop stale entries so the time is a live origin's
        return heap[0][0] if heap else None

    def peek_wake(self) -> float | None:
        """The heap's earliest time, stale entries included (no clean-up: safe to read
        from another thread), or ``None``."""
        try:
            return self._heap[0][0]
        except IndexError:
            return None

    def schedulable(self) -> bool:
        """True if some origin has work that may be dispatched now or later."""
        return self.wake_at() is not None

    def blocked_origins(self) -> dict[str, int]:
        """Origins with waiting tasks that are out of the heap, by why (for the
        watchdog's report): robots.txt being fetched, at the in-flight cap, site full."""
        reasons = {"robots.txt in flight": 0, "requests in flight": 0, SITE_LIMIT: 0}
        for origin in self.frontier.origins():
            if origin in self._entry:
                continue
            host = self.politeness.host(origin)
            if self.site_full(origin):
                reasons[SITE_LIMIT] += 1
            elif host.robots_state == "fetching":
                reasons["robots.txt in flight"] += 1
            else:
                reasons["requests in flight"] += 1
        return reasons

    def __len__(self) -> int:
        """Origins in the heap (live entries)."""
        return len(self._entry)
