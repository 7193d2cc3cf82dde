"""The parent's signal policy (crawler/engine/signals.py), on this test process's main thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from crawler.engine.signals import StopOnSignal


def test_first_signal_requests_a_stop_second_raises():
    calls = []
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN when started in the background by a shell
    with StopOnSignal() as signals:
        signals.attach(calls.append)
        os.kill(os.getpid(), signal.SIGTERM)
        assert calls == ["interrupted"]
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before  # restored


def test_while_finishing_the_first_signal_only_warns():
    calls = []
    with StopOnSignal() as signals:
        signals.attach(calls.append)
        signals.finishing = True
        os.kill(os.getpid(), signal.SIGINT)
        assert calls == []
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)


DEFERRED = """
import os, signal, sys
sys.path.insert(0, {root!r})
from crawler.engine.signals import StopOnSignal, signals_deferred
calls = []
with StopOnSignal() as signals:
    signals.attach(calls.append)
    with signals_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        assert calls == [], calls  # pending, not delivered
    assert calls == ["interrupted"], calls  # delivered when the block ends
assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())
print("ok")
"""


def test_signals_deferred_is_delivered_after_the_block():
    # in a fresh process: the block is for a main thread with no other threads (a
    # process-directed signal could land on another thread while ignored), and this
    # test process may hold threads of earlier tests
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run(
        [sys.executable, "-c", DEFERRED.format(root=root)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert (result.returncode, result.stdout) == (0, "ok\n"), result.stderr
    assert result.stderr == "stopping: finishing fetches in flight (signal again to abort)\n"


def test_a_progress_bar_starts_no_thread(tmp_path):
    import threading

    from crawler.engine.progress import Progress

    before = set(threading.enumerate())
    with open(tmp_path / "bar.txt", "w") as stream:
        bar = Progress("bar", total=10, stream=stream)
        try:
            assert set(threading.enumerate()) == before  # tqdm's monitor thread is off
        finally:
            bar.close()


def test_a_signal_before_attach_is_passed_on_at_attach():
    calls = []
    with StopOnSignal() as signals:
        os.kill(os.getpid(), signal.SIGINT)
        signals.attach(calls.append)
    assert calls == ["interrupted"]
