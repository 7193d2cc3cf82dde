"""A child's lifeline to the dispatcher: when the dispatcher dies, the child exits at once.

The dispatcher stops its children itself (STOP messages, a join, then SIGKILL), but a
dispatcher killed with SIGKILL (the OOM killer picks the largest process) runs none of
that, and without a lifeline the manager and the fetchers wait in their queues for ever.
So every child calls :func:`watch_parent` first thing, with the dispatcher's pid passed
explicitly, and a daemon thread ends the child with :data:`PARENT_DIED_EXIT_CODE` as soon
as that process is gone. ``os._exit`` is safe here because the child's outputs are
crash-safe by design: records and edges are appended one whole line per ``write`` and
flushed, and a resume cuts a partial line, deletes a half-compressed ``.tmp`` and fetches
again what was in flight.

Why not what the standard library offers (checked on Linux 6.18, CPython 3.11):

* ``os.getppid()`` (or ``prctl(PR_SET_PDEATHSIG)``) follows the OS parent. Under
  forkserver that is the fork server, not the dispatcher: a fetcher's ``getppid()`` is
  the fork server's pid, and the fork server lives on while any child holds its
  "alive" pipe. (prctl(2): PR_SET_PDEATHSIG also fires when the parent *thread* that
  forked the child exits.)
* ``multiprocessing.parent_process().sentinel`` is the read end of a pipe whose write
  end the parent holds. Under fork, every child forked later inherits that write end
  too (``os.fork`` copies every descriptor, inheritable or not): with the parent
  SIGKILLed, its first child's sentinel stayed unreadable while a later sibling lived
  (3 s, the whole wait). The manager is forked first, so every fetcher would hold its
  sentinel open. Under spawn and forkserver the sentinel became readable as the parent
  died, the write end being neither inheritable nor passed on.

So the lifeline waits on the dispatcher's pid itself. On Linux 5.3 and later
``os.pidfd_open(pid)`` gives a descriptor that ``poll`` reports readable once the
process has exited (as a zombie already, before its own parent reaps it), so the thread
blocks in the kernel and costs nothing until then. Where pidfd is not available (an
older kernel, a seccomp filter, not Linux) it checks every :data:`POLL_INTERVAL_S`
seconds with psutil, comparing the process's creation time so a pid reused by another
process counts as dead. A pid already dead when the watch starts ends the child at once.
"""

from __future__ import annotations

import os
import select
import threading
import time

import psutil

#: Exit status of a child whose dispatcher died (sysexits.h ``EX_TEMPFAIL``: a temporary
#: failure, to be retried: the next run of the same command resumes the crawl).
PARENT_DIED_EXIT_CODE = 75
#: Seconds between two checks of the watched process where pidfd is not available.
POLL_INTERVAL_S = 0.5
#: Seconds two creation times of one process may differ by (psutil derives them from
#: the boot time, which moves when the wall clock is adjusted); a pid reused sooner than
#: this after the watched process started is not told apart.
CREATE_TIME_TOLERANCE_S = 1.0


def watch_parent(pid: int, create_time: float | None = None) -> threading.Thread:
    """Exit this process (``os._exit(PARENT_DIED_EXIT_CODE)``) as soon as process ``pid``
    has exited (at once if it already has); returns the daemon thread that waits.

    Args:
        pid: the process to outlive by no more than a moment (the dispatcher, passed by
            it: under forkserver the OS parent is the fork server).
        create_time: ``psutil.Process(pid).create_time()`` as the caller saw it, so that
            a process that reused ``pid`` (the watched one died before this call) is not
            waited on; None: read here, now (a pid reused before this call is then
            taken for the watched process).
    """
    if create_time is None:
        create_time = _read_create_time(pid)
    thread = threading.Thread(target=_exit_when_gone, args=(pid, create_time), name="crawler-lifeline", daemon=True)
    thread.start()
    return thread


def _exit_when_gone(pid: int, create_time: float | None) -> None:
    wait_for_exit(pid, create_time)
    os._exit(PARENT_DIED_EXIT_CODE)


def wait_for_exit(pid: int, create_time: float | None = None, use_pidfd: bool = True) -> str:
    """Block until the process ``pid`` (created at ``create_time``; None: not compared)
    has exited; returns how it waited: ``"pidfd"`` (the kernel woke it), ``"poll"``
    (psutil every :data:`POLL_INTERVAL_S` seconds: no pidfd, or ``use_pidfd`` False) or
    ``"gone"`` (exited, or another process, when the wait began)."""
    if use_pidfd:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return "gone"
        except (AttributeError, OSError):  # not Linux, Linux < 5.3, seccomp: ENOSYS, EPERM
            pass
        else:
            try:
                # the pidfd pins whatever has the pid now: check it is the watched process
                if create_time is not None and not _alive(pid, create_time):
                    return "gone"
                poller = select.poll()
                poller.register(fd, select.POLLIN)
                poller.poll()  # no timeout: readable once the process has exited
                return "pidfd"
            finally:
                os.close(fd)
    if not _alive(pid, create_time):
        return "gone"
    while _alive(pid, create_time):
        time.sleep(POLL_INTERVAL_S)
    return "poll"


def _read_create_time(pid: int) -> float | None:
    """When process ``pid`` was created (psutil's seconds since the epoch); None if it
    cannot be read (no such process: the wait then ends at once)."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _alive(pid: int, create_time: float | None) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has) and, given
    ``create_time``, the one created then. A process whose state cannot be read
    (permission) counts as alive: the child must not end on a doubt."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return create_time is None or abs(process.create_time() - create_time) <= CREATE_TIME_TOLERANCE_S
    except psutil.NoSuchProcess:  # ZombieProcess included
        return False
    except psutil.AccessDenied:
        return True
