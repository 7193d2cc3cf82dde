"""A stall watchdog: a crawl that stops making progress says so, and says why.

A daemon thread in the dispatcher process wakes every ``stall_s / 4`` seconds (an
``Event.wait`` with a timeout: no busy loop) and reads two times the dispatcher keeps:
when it last made *progress* (a result received or a task dispatched) and when its loop
last *turned*. When work is waiting (tasks in the frontier, in flight or due for a retry)
and there was no progress for ``stall_s`` seconds, it logs the dispatcher's own report
(:meth:`crawler.engine.dispatcher.Dispatcher.describe`: what waits and why, what is in flight,
what each fetcher holds and for how long) once per ``stall_s`` while the stall lasts. If
the loop itself has not turned for ``stall_s``, the dispatcher is blocked: the report is
then the main thread's stack, since its state cannot be read safely.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the dispatcher imports this module
    from crawler.engine.dispatcher import Dispatcher

log = logging.getLogger("crawler")

#: Seconds without progress, while work waits, before the watchdog reports a stall.
STALL_S = 60.0


class Watchdog:
    """Watches one dispatcher from a daemon thread.

    Args:
        dispatcher: has ``last_progress_at`` and ``loop_turned_at`` (monotonic
            seconds), ``work_waiting() -> bool`` and ``describe() -> str``.
        stall_s: seconds without progress that make a stall.
    """

    def __init__(self, dispatcher: Dispatcher, stall_s: float = STALL_S) -> None:
        self.dispatcher = dispatcher
        self.stall_s = stall_s
        self.stalls = 0  # reports logged
        self._stop = threading.Event()
        self._main = threading.main_thread().ident
        self._thread = threading.Thread(target=self._run, name="crawler-watchdog", daemon=True)

    def start(self) -> Watchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.stall_s)

    def _run(self) -> None:
        reported_at = 0.0
        while not self._stop.wait(self.stall_s / 4):
            now = time.monotonic()
            if now - reported_at < self.stall_s:
                continue
            report = self.check(now)
            if report is not None:
                reported_at = now
                self.stalls += 1
                log.warning("%s", report)

    def check(self, now: float) -> str | None:
        """The stall report at ``now``, or ``None`` while the crawl progresses."""
        d = self.dispatcher
        if now - d.loop_turned_at >= self.stall_s:
            frame = sys._current_frames().get(self._main)  # type: ignore[arg-type]  # None: a miss
            stack = "".join(traceback.format_stack(frame)) if frame is not None else "(no stack)"
            return f"stall: the dispatcher loop has not turned for {now - d.loop_turned_at:.0f} s; its stack:\n{stack}"
        if now - d.last_progress_at < self.stall_s:
            return None
        try:
            if not d.work_waiting():
                return None
            return f"stall: no progress for {now - d.last_progress_at:.0f} s; {d.describe()}"
        except RuntimeError:  # a dict changed size under the read: the next turn reports
            return None
