"""The parent's signal policy (crawler/signals.py), on this test process's main thread."""

from __future__ import annotations

import os
import signal

import pytest

from crawler.signals import StopOnSignal, signals_deferred


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


def test_signals_deferred_is_delivered_after_the_block():
    calls = []
    with StopOnSignal() as signals:
        signals.attach(calls.append)
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            assert calls == []  # pending, not delivered
        assert calls == ["interrupted"]  # delivered when the block ends
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())


def test_a_signal_before_attach_is_passed_on_at_attach():
    calls = []
    with StopOnSignal() as signals:
        os.kill(os.getpid(), signal.SIGINT)
        signals.attach(calls.append)
    assert calls == ["interrupted"]
