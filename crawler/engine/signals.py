"""The parent's signal policy: the dispatcher owns Ctrl-C and SIGTERM.

* While children start, SIGINT and SIGTERM are ignored *and* blocked in the parent. A
  child inherits "ignored" across ``fork`` and ``exec`` (spawn and forkserver children
  too), so a terminal Ctrl-C or a ``kill -TERM -PGID``, sent to the whole process group,
  cannot kill a child still booting, before its own code runs :func:`child_signals`. In
  the parent, a blocked signal is never discarded as ignored (Linux keeps it pending),
  so it is delivered to the restored handler when the block ends.
* During a crawl, the first SIGINT or SIGTERM is a warm stop (dispatch nothing more,
  finish the fetches under way, write the outputs); the second raises KeyboardInterrupt
  (cold stop). Once the crawl loop has ended, a first signal only says that the outputs
  are being written.

Signals can only be handled in the main thread: elsewhere both helpers do nothing.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from multiprocessing import resource_tracker
from types import FrameType
from typing import Any

log = logging.getLogger("crawler")

#: The signals that stop a crawl; the dispatcher owns both.
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def signals_deferred(start_method: str = "fork") -> Iterator[None]:
    """Ignore and block SIGINT and SIGTERM for the duration (call it from the main
    thread, with no other threads running, giving the multiprocessing start method the
    children will use); children started inside inherit "ignored". A signal that arrives meanwhile
    is delivered to the previous handler when the block ends."""
    if not _main_thread():
        yield
        return
    if start_method != "fork":
        # Started later, the resource tracker would unblock both signals in this process
        # (multiprocessing/resource_tracker.py) while it is ignored: a Ctrl-C lost.
        resource_tracker.ensure_running()
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def child_signals() -> None:
    """First thing in a child process: SIGINT and SIGTERM are the dispatcher's, which
    stops its children itself (STOP messages, then SIGKILL), so both are ignored here
    (a terminal Ctrl-C or ``kill -TERM -PGID`` reaches the whole process group), a
    signal left pending by :func:`signals_deferred` is discarded, and both are
    unblocked."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


class StopOnSignal:
    """Context manager turning SIGINT/SIGTERM into ``request_stop()`` then KeyboardInterrupt.

    Install it before anything starts; :meth:`attach` the stop function once the
    dispatcher exists (a signal that came earlier is passed on then).
    """

    def __init__(self) -> None:
        self.request_stop: Callable[[str], object] | None = None
        self.signalled = False
        self.finishing = False
        #: signal -> handler replaced (signal.signal()'s return type)
        self.previous: dict[int, Callable[[int, FrameType | None], Any] | int | signal.Handlers | None] = {}

    def attach(self, request_stop: Callable[[str], object]) -> None:
        """Call ``request_stop("interrupted")`` on the first signal (now, if it came)."""
        self.request_stop = request_stop
        if self.signalled and not self.finishing:
            request_stop("interrupted")

    def install(self) -> StopOnSignal:
        """Handle SIGINT and SIGTERM from now on (main thread only; else a no-op)."""
        if _main_thread() and not self.previous:
            for sig in STOP_SIGNALS:
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def restore(self) -> None:
        """Put back the handlers that :meth:`install` replaced."""
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous.clear()

    def __enter__(self) -> StopOnSignal:
        return self.install()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signalled:
            raise KeyboardInterrupt
        self.signalled = True
        if self.finishing:
            log.warning("writing the outputs (signal again to abort)")
        else:
            log.warning("stopping: finishing fetches in flight (signal again to abort)")
            if self.request_stop is not None:
                self.request_stop("interrupted")

    def __exit__(self, *exc: object) -> None:
        self.restore()
