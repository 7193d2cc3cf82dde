"""The frontier on disk: the waiting URLs are the ``FRONTIER`` rows of the state store
(:mod:`crawler.engine.statestore`), and only a bounded window of them is in memory, so
the dispatcher's memory stays flat however large the crawl. Uses the store's frontier-row
API (``attach_frontier``, ``push_row``, ``take_row``, ``unload_row``, ``load_rows``,
``next_seq``) and nothing else of it.
"""

from __future__ import annotations

import collections
import heapq
from collections.abc import Iterator

from crawler.engine.frontier import drain_in_order
from crawler.engine.messages import KIND_PAGE, FetchTask
from crawler.engine.statestore import StateStore
from crawler.errors import StateError
from crawler.web.urlnorm import origin_of

#: Tasks per origin a :class:`DiskFrontier` holds in memory by default.
DEFAULT_WINDOW = 1000
#: Tasks a :class:`DiskFrontier` holds in memory over all origins by default (about
#: 0.5 KB each): the window of each origin shrinks as origins multiply, so memory stays
#: bounded however many sites a batch crawl has.
DEFAULT_BUDGET = 50_000


class _Origin:
    """What a DiskFrontier knows of one origin's waiting tasks."""

    __slots__ = ("depths", "window", "window_len", "unloaded", "extras")

    def __init__(self) -> None:
        self.depths: dict[int, int] = {}  # depth -> tasks waiting (window, disk, extras)
        # the first tasks in (depth, seq) order: depth -> deque of (seq, task)
        self.window: dict[int, collections.deque[tuple[int, FetchTask]]] = {}
        self.window_len = 0
        self.unloaded = 0  # waiting rows on disk only
        self.extras: list[tuple[int, int, FetchTask]] = []  # heap of non-page tasks


class DiskFrontier:
    """A :class:`crawler.engine.frontier.Frontier` whose tasks are the ``FRONTIER`` rows of a
    :class:`StateStore`: per origin, lowest depth first, FIFO within a depth, the exact
    order of :class:`crawler.engine.frontier.MemoryFrontier` for the same pushes and pops.

    Per origin, only a window of the first tasks in (depth, seq) order is in memory, at
    most ``window`` of them, and fewer when many origins wait: ``budget`` tasks in all
    are shared among the origins with waiting tasks (each keeps at least one). Rows read
    into a window get ``loaded = 1`` so they are not read twice, and when a window is
    empty the next rows are read (one query).
    A push writes its row and enters the window only if it belongs there (a lower depth
    than the window's last task, or nothing on disk and room left); if that overfills
    the window, its last task goes back to disk. Memory is thus about ``window`` tasks
    (~0.5 KB each) per origin with waiting tasks, plus SQLite's page cache: with many
    origins, choose a smaller window.

    :meth:`pop` marks the task's row ``IN_FLIGHT`` itself (:meth:`StateStore.take_row`):
    the task has left the frontier, and a crash after the next commit brings it back at
    the resume.
    The dispatcher then marks it visited, failed or skipped (:meth:`StateStore.set_state`),
    or pushes it back (a retry, a task taken back at a stop: :meth:`push` accepts an
    in-flight URL, with its new fields). :meth:`drain` is pops: the rows are in flight
    until the dispatcher marks them skipped.

    Tasks that are not pages (sitemaps) are held in memory only, in the same order, and
    are not in the store: they are lost at a crash.

    While a DiskFrontier is open, it owns the ``FRONTIER`` rows: the store refuses to add
    rows to or move rows into or out of that state by other means. One per store and
    process.

    Args:
        store: the state store; its waiting rows are counted per origin and depth
            (one index scan), not loaded, so ``len`` and
            :meth:`origins` are right at once. Call :meth:`StateStore.reset_for_resume`
            first to take back what was in flight.
        window: tasks per origin held in memory, at least 1.
        budget: tasks held in memory over all origins, at least 1.

    Raises:
        ValueError: ``window`` or ``budget`` < 1, or ``store`` already has a DiskFrontier.
        StateError: the store cannot be read.

    Memory is flat in the number of tasks (the costs are in docs/performance.md).
    """

    def __init__(self, store: StateStore, window: int = DEFAULT_WINDOW, budget: int = DEFAULT_BUDGET) -> None:
        if window < 1 or budget < 1:
            raise ValueError(f"window and budget must be at least 1, got {window}, {budget}")
        self.store = store
        self.window = window
        self.budget = budget
        self._origins: dict[str, _Origin] = {}
        self._size = 0
        self._in_memory = 0  # tasks in the windows of every origin
        for origin, depths in store.attach_frontier(self).items():
            entry = self._origins[origin] = _Origin()
            entry.depths = depths
            entry.unloaded = sum(depths.values())
            self._size += entry.unloaded

    def push(self, task: FetchTask) -> None:
        """Add ``task`` behind every waiting task of its origin and depth, and write its
        row (``FRONTIER``). A URL already in flight is put back with ``task``'s fields
        (depth, parent, redirect chain, request URL, attempt, cookies) and a new seq.

        Raises:
            ValueError: the URL is already waiting, visited, failed or skipped (pushing
                it would fetch it twice).
            StateError: the store cannot be written.
        """
        origin = origin_of(task.url)
        entry = self._origins.get(origin)
        if task.kind != KIND_PAGE:
            seq = self.store.next_seq()
            if entry is None:
                entry = self._origins[origin] = _Origin()
            heapq.heappush(entry.extras, (task.depth, seq, task))
        else:
            limit = self._origin_window(entry is None)
            if entry is None:
                into_window = True
            elif entry.window_len and task.depth < max(entry.window):
                into_window = True  # before the window's last task: it must be in it
            else:
                into_window = not entry.unloaded and entry.window_len < limit and self._in_memory < self.budget
            seq = self.store.push_row(task, origin, into_window)
            if entry is None:
                entry = self._origins[origin] = _Origin()
            if into_window:
                entry.window.setdefault(task.depth, collections.deque()).append((seq, task))
                entry.window_len += 1
                self._in_memory += 1
                if entry.window_len > limit or (entry.window_len > 1 and self._in_memory > self.budget):
                    self._evict(entry)
            else:
                entry.unloaded += 1
        entry.depths[task.depth] = entry.depths.get(task.depth, 0) + 1
        self._size += 1

    def _evict(self, entry: _Origin) -> None:
        """Send the window's last task back to disk (it stays before every disk row)."""
        depth = max(entry.window)
        bucket = entry.window[depth]
        self.store.unload_row(bucket[-1][0])
        bucket.pop()
        if not bucket:
            del entry.window[depth]
        entry.window_len -= 1
        entry.unloaded += 1
        self._in_memory -= 1

    def _origin_window(self, new_origin: bool = False) -> int:
        """The window of one origin now: ``window``, or its share of ``budget`` among the
        origins with waiting tasks, at least 1."""
        origins = len(self._origins) + new_origin
        return max(1, min(self.window, self.budget // max(1, origins)))

    def _refill(self, origin: str, entry: _Origin) -> None:
        want = min(self._origin_window(), entry.unloaded)
        rows = self.store.load_rows(origin, want)
        if len(rows) != want:
            raise StateError(
                f"{self.store.path}: {origin} should have {want} waiting rows on disk,"
                f" found {len(rows)}: the store was changed behind the frontier"
            )
        for seq, task in rows:
            entry.window.setdefault(task.depth, collections.deque()).append((seq, task))
        entry.window_len += want
        entry.unloaded -= want
        self._in_memory += want

    def pop(self, origin: str | None = None) -> FetchTask:
        """Remove and return the oldest task of the lowest depth of ``origin`` (or, for
        ``None``, of the origin whose lowest depth is lowest, the first such origin in
        :meth:`origins` order), and mark its row ``IN_FLIGHT``.

        Raises:
            IndexError: no task waiting (for ``origin``).
            StateError: the store cannot be read or written.
        """
        if origin is None:
            if not self._size:
                raise IndexError("pop from an empty frontier")
            origin = min(self._origins, key=lambda o: min(self._origins[o].depths))
        entry = self._origins.get(origin)
        if entry is None:
            raise IndexError(f"no task waiting for {origin}")
        if not entry.window_len and entry.unloaded:
            self._refill(origin, entry)
        from_window = False
        if entry.window_len:
            depth = min(entry.window)
            seq, task = entry.window[depth][0]
            from_window = not entry.extras or (depth, seq) < entry.extras[0][:2]
        if from_window:
            self.store.take_row(seq, task.url)
            bucket = entry.window[depth]
            bucket.popleft()
            if not bucket:
                del entry.window[depth]
            entry.window_len -= 1
            self._in_memory -= 1
        else:
            depth, seq, task = heapq.heappop(entry.extras)
        left = entry.depths[depth] - 1
        if left:
            entry.depths[depth] = left
        else:
            del entry.depths[depth]
            if not entry.depths:
                del self._origins[origin]
        self._size -= 1
        return task

    def origins(self) -> list[str]:
        """The origins with waiting tasks, in the order they first got one (after a
        resume: in the order of their oldest waiting row)."""
        return list(self._origins)

    def has_waiting(self, origin: str) -> bool:
        """True if ``origin`` has a waiting task (in memory or on disk)."""
        return origin in self._origins

    def __len__(self) -> int:
        """Tasks waiting, in memory and on disk."""
        return self._size

    def drain(self) -> Iterator[FetchTask]:
        """Pop and yield every waiting task, lowest depth first (their rows end up
        ``IN_FLIGHT``: the dispatcher then marks them skipped)."""

        def min_depth(origin: str) -> int | None:
            entry = self._origins.get(origin)
            return min(entry.depths) if entry is not None else None

        return drain_in_order(self, min_depth)
