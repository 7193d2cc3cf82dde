"""A fetcher's task channel: the dispatcher's loop writes tasks, the fetcher's threads read.

One pipe per fetcher, in ``multiprocessing.connection``'s framing (a 4-byte big-endian
length, then a pickled :class:`crawler.engine.messages.FetchTask` or ``STOP``). The
dispatcher's end is non-blocking: :meth:`TaskChannel.put` appends the frame to the
channel's own buffer and writes what the pipe takes now; :meth:`TaskChannel.flush` writes
the rest once the pipe has room (the pool waits for that in the same ``poll`` as for
results). So a put never blocks and never needs a thread: ``multiprocessing.Queue`` hands
each put to a feeder thread, whose wake-up per task cost the dispatcher more CPU than
anything else it does per task (see docs/performance.md).

The readers (the fetcher's threads, and the dispatcher's warm-stop take-back) read whole
frames under one lock shared by the processes, as ``multiprocessing.Queue.get`` does. A
frame written in parts (the pipe was full) is finished by the dispatcher's next flush; a
reader meanwhile waits for it, which is the reader waiting, never the dispatcher.
"""

from __future__ import annotations

import array
import collections
import fcntl
import os
import pickle
import queue
import select
import struct
import termios
import time
from multiprocessing import context, synchronize
from multiprocessing.connection import Connection

from crawler.engine.messages import FetchTask

#: Frame header: the payload's length, as ``Connection.send_bytes`` writes it.
_HEADER = struct.Struct("!i")


def _load(frame: bytes) -> FetchTask | None:
    """The task (or STOP) of a whole frame."""
    task: FetchTask | None = pickle.loads(memoryview(frame)[_HEADER.size :])
    return task


def _bytes_in(fd: int) -> int:
    """Bytes waiting in the pipe whose read end is ``fd`` (``FIONREAD``)."""
    count = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, count, True)
    return count[0]


class TaskChannel:
    """A one-way channel of tasks from the dispatcher to one fetcher.

    Args:
        ctx: the multiprocessing context (start method) of the crawl.

    Only the dispatcher calls :meth:`put`, :meth:`flush`, :meth:`take_back` and
    :meth:`close`; the fetcher's threads call :meth:`get`. Pickled for a spawned
    fetcher, the channel carries its read end and lock only.
    """

    def __init__(self, ctx: context.BaseContext) -> None:
        self._reader, writer = ctx.Pipe(duplex=False)
        self._writer: Connection | None = writer
        self._rlock = ctx.Lock()
        os.set_blocking(writer.fileno(), False)
        self._frames: collections.deque[bytes] = collections.deque()  # not (wholly) written yet
        self._offset = 0  # bytes of _frames[0] already written

    def __getstate__(self) -> tuple[Connection, synchronize.Lock]:
        context.assert_spawning(self)  # only to a child being started
        return self._reader, self._rlock

    def __setstate__(self, state: tuple[Connection, synchronize.Lock]) -> None:
        self._reader, self._rlock = state
        self._writer = None
        self._frames, self._offset = collections.deque(), 0

    # -- the dispatcher's end ------------------------------------------------------
    def fileno(self) -> int:
        """The write end's file descriptor (poll it for ``POLLOUT`` while :meth:`pending`)."""
        assert self._writer is not None  # the dispatcher's side
        return self._writer.fileno()

    def put(self, task: FetchTask | None) -> None:
        """Send ``task`` (a FetchTask, or STOP) after every task put before; never blocks."""
        payload = pickle.dumps(task, pickle.HIGHEST_PROTOCOL)
        self._frames.append(_HEADER.pack(len(payload)) + payload)
        if len(self._frames) == 1:
            self.flush()

    def pending(self) -> bool:
        """True while some frame is not wholly written to the pipe."""
        return bool(self._frames)

    def flush(self) -> None:
        """Write what the pipe takes now of the frames waiting, in order; never blocks.

        Raises:
            OSError: the pipe is broken (the channel was closed).
        """
        self._write(len(self._frames))

    def _write(self, count: int) -> int:
        """Write up to ``count`` more frames (the one begun first) as far as the pipe
        takes them now; returns how many of them are still not wholly written."""
        frames, fd = self._frames, self.fileno()
        while count and frames:
            frame = frames[0]
            try:
                self._offset += os.write(fd, memoryview(frame)[self._offset :])
            except BlockingIOError:
                return count
            if self._offset < len(frame):
                return count  # the pipe is full
            frames.popleft()
            self._offset = 0
            count -= 1
        return 0

    def flush_until(self, deadline: float, count: int | None = None) -> bool:
        """:meth:`flush` (or write ``count`` frames only), waiting for room until
        ``deadline`` (monotonic seconds); True if all of them are written."""
        left_to_write = len(self._frames) if count is None else count
        poller = select.poll()
        poller.register(self.fileno(), select.POLLOUT)
        while True:
            left_to_write = self._write(left_to_write)
            wait = deadline - time.monotonic()
            if not left_to_write or wait <= 0:
                return not left_to_write
            poller.poll(max(1, int(wait * 1000)))

    def take_back(self, wait_s: float) -> list[FetchTask | None]:
        """The tasks no fetcher thread has begun to read, removed from the channel, in
        order: those waiting in the pipe (a frame written there in part included: its
        rest is here) and those still in this side's buffer. The read lock is waited
        for up to ``wait_s`` seconds; a thread that holds it that long is waiting, on an
        empty pipe or inside a frame begun, which is then its task: its rest is written
        (for ``wait_s`` at most, else later by :meth:`flush`) and only the buffer is
        taken back."""
        taken: list[FetchTask | None] = []
        if self._rlock.acquire(True, wait_s):
            try:
                taken = self._read_pipe()
            finally:
                self._rlock.release()
        elif self._offset:  # the frame begun is the waiting reader's: write its rest only
            self.flush_until(time.monotonic() + wait_s, count=1)
        start = 1 if self._offset else 0  # a frame begun and not taken back stays
        unsent = [self._frames.pop() for _ in range(len(self._frames) - start)][::-1]
        return taken + [_load(frame) for frame in unsent]

    def _read_pipe(self) -> list[FetchTask | None]:
        """Under the read lock: every task in the pipe. No reader is inside a frame, so
        the pipe holds whole frames, then the first :attr:`_offset` bytes of the frame
        begun, whose rest is ``_frames[0]``."""
        fd = self._reader.fileno()
        taken: list[FetchTask | None] = []
        while _bytes_in(fd) > self._offset:
            taken.append(pickle.loads(self._reader.recv_bytes()))
        if self._offset:
            head = b""
            while len(head) < self._offset:
                head += os.read(fd, self._offset - len(head))
            frame = self._frames.popleft()
            self._offset = 0
            taken.append(_load(head + frame[len(head) :]))
        return taken

    def close(self) -> None:
        """Close both ends held here (frames not written are dropped)."""
        self._frames.clear()
        self._reader.close()
        if self._writer is not None:
            self._writer.close()

    # -- the fetcher's end ---------------------------------------------------------
    def get(self, timeout: float | None = None) -> FetchTask | None:
        """The next task, or STOP; waits for ever, or ``timeout`` seconds.

        Raises:
            queue.Empty: nothing came within ``timeout``.
            EOFError: every write end is closed.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._rlock.acquire(True, timeout):
            raise queue.Empty
        try:
            if deadline is not None and not self._reader.poll(max(0.0, deadline - time.monotonic())):
                raise queue.Empty
            data = self._reader.recv_bytes()
        finally:
            self._rlock.release()
        return pickle.loads(data)
