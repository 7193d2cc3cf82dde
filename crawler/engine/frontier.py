"""The frontier: URLs claimed but not yet handed to a fetcher.

Kept per origin (``scheme://host[:port]``), the unit of politeness: the dispatcher asks
for the next URL *of an origin it may send a request to now*
(:class:`crawler.engine.politeness.Politeness`), so a slow or rate-limited host never holds up
the others (Mercator's "back queues"). Within an origin the order is breadth-first by
depth: :meth:`MemoryFrontier.pop` returns a URL of the lowest depth present, so pages
are fetched in link-distance order even though results come back from many fetchers out
of order. The interface (push / pop / origins / has_waiting / ``len`` / drain) is all
the dispatcher uses, so another backend (Redis, disk) is an addition, not a rewrite.
"""

from __future__ import annotations

import collections
import heapq
from collections.abc import Callable, Iterator
from typing import Protocol

from crawler.engine.messages import FetchTask
from crawler.web.urlnorm import origin_of


class Frontier(Protocol):
    """What the dispatcher needs from a frontier backend."""

    def push(self, task: FetchTask) -> None:
        """Add a claimed URL to be fetched later."""

    def pop(self, origin: str | None = None) -> FetchTask:
        """Remove and return the next task of ``origin`` (any origin if ``None``), lowest
        depth first. Raises IndexError when there is none."""

    def origins(self) -> list[str]:
        """The origins with waiting tasks, in the order they first got one."""

    def has_waiting(self, origin: str) -> bool:
        """True if ``origin`` has a waiting task."""

    def __len__(self) -> int:
        """Number of tasks waiting."""

    def drain(self) -> Iterator[FetchTask]:
        """Remove and yield every waiting task (used when a crawl stops early)."""


class MemoryFrontier:
    """In-process frontier: per origin, one FIFO per depth. O(1) push; pop is
    O(depths present in that origin), a small number."""

    def __init__(self) -> None:
        self._by_origin: dict[str, dict[int, collections.deque[FetchTask]]] = {}
        self._size = 0

    def push(self, task: FetchTask) -> None:
        """Append ``task`` behind every task of its origin and depth."""
        by_depth = self._by_origin.setdefault(origin_of(task.url), {})
        by_depth.setdefault(task.depth, collections.deque()).append(task)
        self._size += 1

    def pop(self, origin: str | None = None) -> FetchTask:
        """Return the oldest task of the lowest depth of ``origin`` (or, for ``None``,
        of all origins). Raises IndexError when there is none."""
        if origin is None:
            if not self._size:
                raise IndexError("pop from an empty frontier")
            origin = min(self._by_origin, key=lambda o: min(self._by_origin[o]))
        by_depth = self._by_origin.get(origin)
        if not by_depth:
            raise IndexError(f"no task waiting for {origin}")
        depth = min(by_depth)
        bucket = by_depth[depth]
        task = bucket.popleft()
        if not bucket:
            del by_depth[depth]
            if not by_depth:
                del self._by_origin[origin]
        self._size -= 1
        return task

    def origins(self) -> list[str]:
        """The origins with waiting tasks."""
        return list(self._by_origin)

    def has_waiting(self, origin: str) -> bool:
        """True if ``origin`` has a waiting task."""
        return origin in self._by_origin

    def waiting_by_origin(self) -> dict[str, int]:
        """Tasks waiting per origin (O(origins x depths present))."""
        return {origin: sum(map(len, by_depth.values())) for origin, by_depth in self._by_origin.items()}

    def __len__(self) -> int:
        return self._size

    def drain(self) -> Iterator[FetchTask]:
        """Remove and yield every task, lowest depth first."""
        return drain_in_order(
            self, lambda origin: min(self._by_origin[origin], default=None) if origin in self._by_origin else None
        )


def drain_in_order(frontier: Frontier, min_depth: Callable[[str], int | None]) -> Iterator[FetchTask]:
    """Pop every task of ``frontier`` in the order that repeated ``pop()`` gives (the
    origin with the lowest waiting depth first, ties by :meth:`Frontier.origins` order),
    in O(log origins) per task instead of a scan of every origin per task (a stop with a
    million URLs waiting over 10,000 origins). ``min_depth(origin)`` is the origin's
    lowest waiting depth, ``None`` when it has nothing waiting."""
    heap = [(min_depth(origin), rank, origin) for rank, origin in enumerate(frontier.origins())]
    heapq.heapify(heap)
    while heap:
        _depth, rank, origin = heapq.heappop(heap)
        yield frontier.pop(origin)
        depth = min_depth(origin)
        if depth is not None:
            heapq.heappush(heap, (depth, rank, origin))
