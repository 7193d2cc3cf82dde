"""Run the crawler command under watch: a crawl that hangs is reported, never waited on.

:func:`run_watched` starts ``python -m crawler ...`` in a new session (its own process
group) with ``PYTHONFAULTHANDLER=1``, so every process of the crawl (dispatcher, manager,
fetchers: the variable is inherited under every start method) dumps the Python stack of
all its threads on SIGABRT. Once a second it samples the crawl's process tree (psutil:
CPU, resident memory and open file descriptors of each process) and a progress counter
(for a :class:`manysites.ManySites` server: the requests it answered). The crawl *hangs*
when neither the counter nor the tree's CPU moved for ``stall_s`` seconds (less than
:data:`IDLE_CPU_SHARE` of a core); it *times out* after ``timeout_s`` whatever it does.
Either way each process gets SIGABRT in turn (dispatcher first: its stack is the one that
matters; a line naming the pid goes before each dump), then the whole group gets SIGKILL:
nothing of the crawl is left behind.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time

import psutil

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: Seconds between two samples of the process tree.
SAMPLE_INTERVAL_S = 1.0
#: A stalled crawl used less than this share of one core over the stall window.
IDLE_CPU_SHARE = 0.02
#: Seconds given to each process to write its stack dump after SIGABRT.
DUMP_WAIT_S = 1.0


@dataclasses.dataclass
class ProcessSample:
    """Peaks of one process of the crawl over its samples (``cpu_s``: the last one)."""

    pid: int
    cpu_s: float = 0.0
    peak_rss_bytes: int = 0
    peak_fds: int = 0


@dataclasses.dataclass
class WatchedRun:
    """How a watched crawl ended.

    Attributes:
        outcome: ``finished`` (exited by itself), ``hung`` (stalled ``stall_s``) or
            ``timeout`` (``timeout_s`` passed while it still moved).
        returncode: the command's exit code (None when it was killed by the watch).
        wall_s: from the start to the exit or the kill.
        progress: the counter's last value; ``progress_at`` when it last changed (s
            since the start).
        stderr: what the crawl wrote on stderr (the stack dumps included).
        processes: pid -> :class:`ProcessSample` of every process seen in the tree.
        root_pid: the dispatcher's pid.
        stderr_path: the file holding ``stderr``.
    """

    outcome: str
    returncode: int | None
    wall_s: float
    progress: int
    progress_at: float
    stderr: str
    processes: dict[int, ProcessSample]
    root_pid: int
    stderr_path: str

    @property
    def stacks(self) -> str:
        """The faulthandler dumps (from the first marker line on), '' if none."""
        at = self.stderr.find("=== SIGABRT")
        return self.stderr[at:] if at >= 0 else ""

    @property
    def dispatcher_stack(self) -> str:
        """The dispatcher's dump alone (the first one), '' if none."""
        stacks = self.stacks
        end = stacks.find("=== SIGABRT", 1)
        return stacks if end < 0 else stacks[:end]


def crawler_command(*args: str) -> list[str]:
    """``python -m crawler ARGS`` with this interpreter."""
    return [sys.executable, "-m", "crawler", *args]


def run_watched(
    command: list[str], stderr_path: str, progress=None, timeout_s: float = 600.0, stall_s: float = 60.0, on_sample=None
) -> WatchedRun:
    """Run ``command`` (from the repository root) until it exits, hangs or times out.

    Args:
        command: the argv, e.g. :func:`crawler_command`.
        stderr_path: file that receives the command's stderr (and the stack dumps).
        progress: a function returning a number that grows while the crawl makes
            progress (e.g. ``ManySites.count``), or None (the CPU alone tells).
        timeout_s, stall_s: see the module docstring.
        on_sample: called with (seconds since the start, the run's processes) after
            each sample, or None.
    """
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *filter(None, [env.get("PYTHONPATH")])])
    with open(stderr_path, "ab") as err:
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
            start_new_session=True,
        )
    started = time.monotonic()
    processes: dict[int, ProcessSample] = {}
    handles: dict[int, psutil.Process] = {}
    count = progress() if progress else 0
    moved_at, cpu_at_move, outcome = started, 0.0, "finished"
    try:
        while True:
            try:
                proc.wait(SAMPLE_INTERVAL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            cpu = _sample(proc.pid, handles, processes)
            if on_sample is not None:
                on_sample(now - started, processes)
            latest = progress() if progress else count
            if latest != count or cpu - cpu_at_move > IDLE_CPU_SHARE * (now - moved_at) + 0.05:
                count, moved_at, cpu_at_move = latest, now, cpu
            if now - moved_at >= stall_s:
                outcome = "hung"
            elif now - started >= timeout_s:
                outcome = "timeout"
            else:
                continue
            _dump_and_kill(proc, handles, stderr_path)
            break
    except BaseException:
        _dump_and_kill(proc, handles, stderr_path)
        raise
    wall = time.monotonic() - started
    if progress:
        count = progress()
    with open(stderr_path, encoding="utf-8", errors="replace") as f:
        stderr = f.read()
    return WatchedRun(
        outcome,
        proc.returncode if outcome == "finished" else None,
        wall,
        count,
        moved_at - started,
        stderr,
        processes,
        proc.pid,
        stderr_path,
    )


def _sample(root_pid: int, handles: dict[int, psutil.Process], processes: dict[int, ProcessSample]) -> float:
    """Sample every process of the tree under ``root_pid``; returns the CPU s of all seen."""
    try:
        root = handles.setdefault(root_pid, psutil.Process(root_pid))
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        tree = []
    for p in tree:
        p = handles.setdefault(p.pid, p)
        row = processes.setdefault(p.pid, ProcessSample(p.pid))
        try:
            with p.oneshot():
                times = p.cpu_times()
                row.cpu_s = times.user + times.system
                row.peak_rss_bytes = max(row.peak_rss_bytes, p.memory_info().rss)
                row.peak_fds = max(row.peak_fds, p.num_fds())
        except psutil.Error:
            continue
    return sum(row.cpu_s for row in processes.values())


def _dump_and_kill(proc: subprocess.Popen, handles: dict[int, psutil.Process], stderr_path: str) -> None:
    """SIGABRT to each live process of the crawl (the dispatcher first), each after a
    marker line in the stderr file, then SIGKILL to the whole process group."""
    try:
        root = psutil.Process(proc.pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        tree = []
    names = {}
    for p in tree:  # before any dies: its children then belong to init
        try:
            names[p.pid] = "dispatcher" if p.pid == proc.pid else f"child of {p.ppid()}"
        except psutil.Error:
            pass
    for p in tree:
        try:
            name = names.get(p.pid, "?")
            with open(stderr_path, "a", encoding="utf-8") as f:
                f.write(f"\n=== SIGABRT to pid {p.pid} ({name}) ===\n")
            p.send_signal(signal.SIGABRT)
            p.wait(DUMP_WAIT_S)
        except (psutil.Error, OSError):
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
