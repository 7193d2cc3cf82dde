"""The lifeline: a child exits within seconds of the dispatcher's death (SIGKILL, the OOM
killer's choice), and the next run of the same command resumes the crawl.

The unit tests run :func:`crawler.engine.lifeline.watch_parent` in throwaway processes, on the
pidfd path and on the psutil fallback (``os.pidfd_open`` deleted). The end-to-end tests
SIGKILL only the dispatcher of a real crawl, under each start method, and wait (with a
deadline, psutil) for every process it left: the manager, the fetchers, and the
resource tracker and fork server multiprocessing started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from crawler.engine.lifeline import PARENT_DIED_EXIT_CODE, POLL_INTERVAL_S, wait_for_exit
from tests.helpers.crawlutil import crawl_command, read_records
from tests.helpers.siteserver import Route, SiteServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Seconds every process the dispatcher left has to exit after its SIGKILL.
EXIT_DEADLINE_S = 5.0
#: Seconds for anything else a test waits on (a crawl, a line from a child).
DEADLINE_S = 60

#: argv: pid to watch, its create time or "-", "pidfd" or "poll" (no os.pidfd_open).
WATCHER = """
import os, sys, time
if sys.argv[3] == "poll":
    del os.pidfd_open
from crawler.engine.lifeline import watch_parent
watch_parent(int(sys.argv[1]), None if sys.argv[2] == "-" else float(sys.argv[2]))
print("watching", os.getpid(), flush=True)
time.sleep(60)
"""

#: argv: "pidfd" or "poll"; starts a watcher of itself, then sleeps.
MIDDLE = """
import os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", sys.argv[1], str(os.getpid()), "-", sys.argv[2]])
time.sleep(60)
"""


def python(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", *args], cwd=ROOT, stdout=subprocess.PIPE, text=True, **kwargs)


def watching_pid(proc: subprocess.Popen) -> int:
    """The pid in the ``watching PID`` line a watcher prints once its lifeline runs."""
    line = [None]
    reader = threading.Thread(target=lambda: line.__setitem__(0, proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(DEADLINE_S)
    assert line[0] and line[0].startswith("watching "), line[0]
    return int(line[0].split()[1])


def gone(process: psutil.Process) -> bool:
    """Exited: no longer running, or a zombie (exited, not yet reaped)."""
    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_gone(processes: list[psutil.Process], deadline_s: float) -> tuple[float, list[psutil.Process]]:
    """Wait (polling every 5 ms, at most ``deadline_s``) for every process to exit;
    returns (seconds until the last one exited, or the deadline; the survivors)."""
    started = time.monotonic()
    while True:
        alive = [p for p in processes if not gone(p)]
        elapsed = time.monotonic() - started
        if not alive or elapsed >= deadline_s:
            return elapsed, alive
        time.sleep(0.005)


def describe(processes: list[psutil.Process]) -> list[str]:
    rows = []
    for p in processes:
        try:
            rows.append(f"{p.pid} {p.status()} {' '.join(p.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            rows.append(f"{p.pid} gone")
    return rows


def kill_all(processes: list[psutil.Process]) -> None:
    """Clean-up after a failure: SIGKILL these processes (by pid, checked by psutil
    against reuse)."""
    for p in processes:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


# -- watch_parent in throwaway processes ------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["pidfd", "poll"])
def test_a_grandchild_exits_when_the_middle_process_is_killed(mode):
    """A child of a child (the fetchers of a dispatcher) watching its parent: SIGKILL the
    middle one, left unreaped (a zombie, as a dispatcher is until its shell reaps it)."""
    middle = python(MIDDLE, WATCHER, mode)
    grandchild = psutil.Process(watching_pid(middle))
    try:
        assert grandchild.ppid() == middle.pid
        middle.kill()
        elapsed, alive = wait_gone([grandchild], EXIT_DEADLINE_S)
        print(f"{mode}: grandchild gone {elapsed * 1000:.0f} ms after the SIGKILL of its parent")
        assert not alive, describe(alive)
        assert elapsed < (0.5 if mode == "pidfd" else POLL_INTERVAL_S + 1.0)
    finally:
        kill_all([grandchild])
        middle.wait(DEADLINE_S)
        middle.stdout.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["pidfd", "poll"])
def test_the_watcher_lives_while_the_process_lives_then_exits_with_its_code(mode):
    watched = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    watcher = python(WATCHER, str(watched.pid), "-", mode)
    try:
        watching_pid(watcher)
        with pytest.raises(subprocess.TimeoutExpired):  # more than one psutil check
            watcher.wait(POLL_INTERVAL_S + 0.3)
        watched.kill()  # not reaped: a zombie has exited
        assert watcher.wait(EXIT_DEADLINE_S) == PARENT_DIED_EXIT_CODE
    finally:
        for proc in (watched, watcher):
            proc.kill()
            proc.wait(DEADLINE_S)
        watcher.stdout.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["pidfd", "poll"])
@pytest.mark.parametrize("case", ["reaped", "zombie", "pid reused"])
def test_a_process_already_gone_at_the_start_ends_the_watcher_at_once(mode, case):
    create_time = "-"
    dead = None
    if case == "reaped":
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait(DEADLINE_S)
        pid = dead.pid
    elif case == "zombie":
        dead = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        dead.kill()
        assert wait_gone([psutil.Process(dead.pid)], DEADLINE_S)[1] == []
        pid = dead.pid
    else:  # a live process with another creation time: the watched one died, its pid was reused
        pid = os.getpid()
        create_time = str(psutil.Process().create_time() - 100)
    watcher = python(WATCHER, str(pid), create_time, mode)
    try:
        started = time.monotonic()
        assert watcher.wait(EXIT_DEADLINE_S) == PARENT_DIED_EXIT_CODE
        assert time.monotonic() - started < EXIT_DEADLINE_S
    finally:
        watcher.kill()
        watcher.wait(DEADLINE_S)
        watcher.stdout.close()
        if dead is not None:
            dead.wait(DEADLINE_S)


def _pidfd_works() -> bool:
    try:
        os.close(os.pidfd_open(os.getpid()))
        return True
    except (AttributeError, OSError):
        return False


@pytest.mark.timeout(60)
@pytest.mark.skipif(not _pidfd_works(), reason="no pidfd on this system")
def test_wait_for_exit_blocks_on_the_pidfd_where_there_is_one():
    watched = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    result = []
    waiter = threading.Thread(target=lambda: result.append(wait_for_exit(watched.pid)), daemon=True)
    try:
        waiter.start()
        waiter.join(0.2)
        assert waiter.is_alive() and not result
        watched.kill()
        waiter.join(EXIT_DEADLINE_S)
        assert result == ["pidfd"]
    finally:
        watched.kill()
        watched.wait(DEADLINE_S)


# -- a real crawl whose dispatcher is SIGKILLed ------------------------------------------

PAGES = 80


class SlowSite(SiteServer):
    """/0 .. /PAGES-1, each linking to the next ten, every answer after 0.1 s;
    ``reached`` is set once ``wanted`` requests arrived."""

    def __init__(self, wanted: int) -> None:
        super().__init__(
            {
                f"/{i}": Route(
                    f"<title>{i}</title>" + "".join(f'<a href="/{j}">{j}</a>' for j in range(i + 1, min(i + 11, PAGES)))
                )
                for i in range(PAGES)
            }
        )
        self.wanted = wanted
        self.reached = threading.Event()

    def lookup(self, target):
        if sum(self.hits.values()) >= self.wanted:
            self.reached.set()
        time.sleep(0.1)
        return super().lookup(target)


#: What a crawl with two fetchers starts, by start method: the manager and the fetchers,
#: the resource tracker (not under fork) and the fork server (forkserver).
CHILDREN = {"fork": 3, "spawn": 4, "forkserver": 5}


def lifeline_command(site: SiteServer, out, start_method: str) -> list[str]:
    return crawl_command(site.url("/0"), out, "--quiet", "--start-method", start_method)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("start_method", ["fork", "spawn", "forkserver"])
def test_sigkill_of_the_dispatcher_ends_every_child_and_the_next_run_resumes(tmp_path, start_method):
    out = tmp_path / "out"
    with SlowSite(wanted=16) as site:
        command = lifeline_command(site, out, start_method)
        first = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        descendants: list[psutil.Process] = []
        try:
            assert site.reached.wait(DEADLINE_S)
            deadline = time.monotonic() + DEADLINE_S
            while len(descendants) < CHILDREN[start_method] and time.monotonic() < deadline:
                descendants = psutil.Process(first.pid).children(recursive=True)
                time.sleep(0.01)  # polling for the children to appear, bounded
            assert len(descendants) == CHILDREN[start_method], describe(descendants)
            first.send_signal(signal.SIGKILL)  # the dispatcher only
            elapsed, alive = wait_gone(descendants, EXIT_DEADLINE_S)
            print(
                f"{start_method}: {len(descendants)} children gone {elapsed * 1000:.0f} ms "
                "after the SIGKILL of the dispatcher"
            )
            assert not alive, f"still running {EXIT_DEADLINE_S} s after the dispatcher's SIGKILL: {describe(alive)}"
        finally:
            first.kill()  # a no-op unless the test failed before the SIGKILL
            kill_all(descendants)
            first.communicate(timeout=DEADLINE_S)
        assert first.returncode == -signal.SIGKILL
        recorded_before = set(read_records(str(out)))
        assert 0 < len(recorded_before) < PAGES

        second = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        try:
            _, err = second.communicate(timeout=DEADLINE_S)
        finally:
            second.kill()
            second.wait(DEADLINE_S)
    assert second.returncode == 0, err
    records = read_records(str(out))  # fails on a URL recorded twice
    assert set(records) == {site.url(f"/{i}") for i in range(PAGES)}
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert (summary["pages"], summary["reconciled"]) == (PAGES, True), summary
