"""One timer thread per process for the wall-clock deadlines of every request.

A GET's deadline (:class:`crawler.web.fetch.HttpClient`'s ``total_timeout_s``) used to be
a ``threading.Timer``: a new thread for every request, which ``start()`` waits for until
it runs, so in a fetcher whose threads hold the GIL converting pages each request first
waited its turn to start a thread. Here one daemon thread sleeps until the earliest
armed deadline and calls the callbacks of those that passed; arming one is a heap push
under a lock, disarming it a flag (the entry is dropped later, below), and the
thread is woken only when a new deadline comes before every other armed one. Each
:func:`arm` first drops the disarmed deadlines at the heap's top, so with requests
ending roughly in the order they began the heap holds about the requests in flight, not
every request of the last timeout.

Callbacks run on the timer thread, one after the other: they must be short; an exception
one raises is logged and the thread goes on, and a timer thread that died anyway is
started again by the next :func:`arm`. Safe in a forked child: the
child starts its own thread on its first :func:`arm` (``os.register_at_fork``).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable

__all__ = ["MAX_SECONDS", "Armed", "arm"]

log = logging.getLogger("crawler")


class Armed:
    """A deadline that :func:`arm` set: :meth:`disarm` it when the work ends in time."""

    __slots__ = ("callback", "when")

    def __init__(self, when: float, callback: Callable[[], object] | None) -> None:
        self.when = when
        self.callback = callback

    def disarm(self) -> None:
        """The callback will not run (if it is running already, it finishes)."""
        self.callback = None


class _Timer:
    """The heap of armed deadlines (by ``time.monotonic()``) and its thread."""

    def __init__(self) -> None:
        self._condition = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Armed]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._compact_at = _COMPACT_MIN

    def arm(self, seconds: float, callback: Callable[[], object]) -> Armed:
        if not 0 <= seconds <= MAX_SECONDS:  # NaN too
            raise ValueError(f"a deadline must be 0 to {MAX_SECONDS:g} s away, not {seconds!r}")
        armed = Armed(time.monotonic() + seconds, callback)
        with self._condition:
            heap = self._heap
            while heap and heap[0][2].callback is None:  # disarmed: its request ended
                heapq.heappop(heap)
            if len(heap) >= self._compact_at:  # disarmed ones behind a long request
                heap[:] = [entry for entry in heap if entry[2].callback is not None]
                heapq.heapify(heap)
                self._compact_at = max(_COMPACT_MIN, 2 * len(heap))
            earliest = heap[0][0] if heap else None
            heapq.heappush(heap, (armed.when, next(self._order), armed))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="deadlines", daemon=True)
                self._thread.start()
            elif earliest is None or armed.when < earliest:
                self._condition.notify()
        return armed

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._heap:
                    self._condition.wait()
                now = time.monotonic()
                due = []
                while self._heap and (self._heap[0][2].callback is None or self._heap[0][0] <= now):
                    due.append(heapq.heappop(self._heap)[2])
                if not due:
                    self._condition.wait(self._heap[0][0] - now)
                    continue
            for armed in due:
                callback, armed.callback = armed.callback, None  # fired: its objects may go
                if callback is None:  # disarmed
                    continue
                try:
                    callback()
                except BaseException:  # one callback's bug must not stop every later deadline
                    log.exception("deadline callback failed")
            del due, armed, callback


#: The farthest deadline :func:`arm` takes, in seconds (a day: ``--total-timeout`` is at
#: most that); a lock's wait cannot be much longer (``threading.TIMEOUT_MAX``).
MAX_SECONDS = 86_400.0
#: The heap is rebuilt without its disarmed entries when it reaches this size, then
#: twice its live size: disarmed deadlines behind a long request do not pile up.
_COMPACT_MIN = 1024


_TIMER = _Timer()


def _after_fork_in_child() -> None:
    global _TIMER
    _TIMER = _Timer()  # the parent's thread, lock and heap are not this process's


os.register_at_fork(after_in_child=_after_fork_in_child)


def arm(seconds: float, callback: Callable[[], object]) -> Armed:
    """Call ``callback()`` on this process's timer thread ``seconds`` from now
    (``time.monotonic``), unless the returned :class:`Armed` is disarmed first.

    Args:
        seconds: from now, 0 to :data:`MAX_SECONDS`.
        callback: short, called once at most, on the timer thread.

    Raises:
        ValueError: ``seconds`` is negative, NaN or over :data:`MAX_SECONDS`.
    """
    return _TIMER.arm(seconds, callback)
