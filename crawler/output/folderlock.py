"""One crawl at a time in an output folder.

Two runs of the same command on one ``--out`` would share its state store, frontier and
page shards: one of them then failed on rows the other had moved, or both fetched and
recorded the same URLs. :func:`hold` takes an exclusive advisory lock on ``OUT/.lock``
(``flock(2)``, ``LOCK_EX | LOCK_NB``) for the life of the run and writes the holder's
process id in it, so a second run stops at once with the first one's pid.

The kernel drops the lock when the last descriptor of it closes: a crawl killed with
SIGKILL leaves no stale lock (the next run resumes). Under the ``fork`` start method (the
default) the crawl's children (the manager, fetchers) share the descriptor and hold the
lock until they exit too; under ``spawn`` and ``forkserver`` they do not (the descriptor
is close-on-exec), so for the few tens of milliseconds between a SIGKILL of the main
process and its children's exit (:mod:`crawler.engine.lifeline`) the folder is free
while they write their last lines. A bare ``.lock`` does not make a folder hold a run
(:func:`entries`). POSIX only, like the rest of the crawl's process handling.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator

from crawler.errors import OutputError

#: The lock file's name in the output folder.
LOCK_FILE = ".lock"


@contextlib.contextmanager
def hold(out_dir: str) -> Iterator[None]:
    """Hold ``out_dir``'s lock for the ``with`` block (the folder must exist).

    Raises:
        OutputError: another process holds it (the message names its pid), or the lock
            file cannot be opened.
    """
    path = os.path.join(out_dir, LOCK_FILE)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise OutputError(f"cannot open {path}: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            raise OutputError(
                f"another crawl is running in {out_dir} (pid {holder}): wait for it to end, or stop it "
                "(Ctrl-C) and run the command again to resume"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        os.close(fd)


def entries(folder: str) -> list[str]:
    """The names in ``folder`` but the lock file: what a run, a merge or an export left."""
    return [name for name in os.listdir(folder) if name != LOCK_FILE]


def _holder(fd: int, wait_s: float = 0.5) -> str:
    """The pid written in the lock file: the holder writes it just after it locks, so a
    racing second run waits up to ``wait_s`` for it; ``unknown`` if it never comes."""
    deadline = time.monotonic() + wait_s
    while True:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        if holder or time.monotonic() >= deadline:
            return holder or "unknown"
        time.sleep(0.01)
