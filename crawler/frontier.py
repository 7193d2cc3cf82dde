"""The frontier: URLs claimed but not yet handed to a fetcher.

Breadth-first by depth: :meth:`MemoryFrontier.pop` always returns a URL of the lowest
depth present, so pages are fetched in link-distance order even though results come back
from many fetchers out of order. The interface (push / pop / ``len`` / drain) is all the
dispatcher uses, so another backend (Redis, disk) is an addition, not a rewrite.
"""

from __future__ import annotations

import collections
from typing import Iterator, Protocol

from crawler.messages import FetchTask


class Frontier(Protocol):
    """What the dispatcher needs from a frontier backend."""

    def push(self, task: FetchTask) -> None:
        """Add a claimed URL to be fetched later."""

    def pop(self) -> FetchTask:
        """Remove and return the next task (lowest depth first). Raises IndexError when empty."""

    def __len__(self) -> int:
        """Number of tasks waiting."""

    def drain(self) -> Iterator[FetchTask]:
        """Remove and yield every waiting task (used when a crawl stops early)."""


class MemoryFrontier:
    """In-process frontier: one FIFO per depth. O(1) push and pop (depth count is small)."""

    def __init__(self) -> None:
        self._by_depth: dict[int, collections.deque[FetchTask]] = {}
        self._size = 0

    def push(self, task: FetchTask) -> None:
        """Append ``task`` behind every task of its depth."""
        self._by_depth.setdefault(task.depth, collections.deque()).append(task)
        self._size += 1

    def pop(self) -> FetchTask:
        """Return the oldest task of the lowest depth. Raises IndexError when empty."""
        if not self._size:
            raise IndexError("pop from an empty frontier")
        depth = min(self._by_depth)
        bucket = self._by_depth[depth]
        task = bucket.popleft()
        if not bucket:
            del self._by_depth[depth]
        self._size -= 1
        return task

    def __len__(self) -> int:
        return self._size

    def drain(self) -> Iterator[FetchTask]:
        """Remove and yield every task, lowest depth first."""
        while self._size:
            yield self.pop()
