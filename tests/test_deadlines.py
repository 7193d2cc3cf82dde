"""The per-process timer of the requests' deadlines (crawler/web/deadlines.py)."""

from __future__ import annotations

import math
import multiprocessing
import threading
import time

import pytest

from crawler.web import deadlines


def test_a_deadline_calls_back_once_its_time_has_passed():
    fired = threading.Event()
    armed_at = time.monotonic()
    deadlines.arm(0.05, fired.set)
    assert fired.wait(5)
    assert time.monotonic() - armed_at >= 0.05


def test_a_disarmed_deadline_never_calls_back():
    calls: list[str] = []
    later = threading.Event()
    deadlines.arm(0.02, lambda: calls.append("disarmed")).disarm()
    deadlines.arm(0.1, later.set)
    assert later.wait(5)
    assert calls == []


def test_a_deadline_armed_later_for_sooner_fires_first():
    order: list[str] = []
    done = threading.Event()
    deadlines.arm(0.3, lambda: (order.append("long"), done.set()))
    deadlines.arm(0.02, lambda: order.append("short"))  # the sleeping thread must wake for it
    assert done.wait(5)
    assert order == ["short", "long"]


def _exit() -> None:
    raise SystemExit(3)


@pytest.mark.parametrize("bad", [lambda: 1 / 0, _exit], ids=["ZeroDivisionError", "SystemExit"])
def test_a_callback_that_raises_does_not_stop_the_next(caplog, bad):
    fired = threading.Event()
    deadlines.arm(0.01, bad)
    deadlines.arm(0.05, fired.set)
    assert fired.wait(5)
    assert "deadline callback failed" in caplog.text


@pytest.mark.parametrize("seconds", [-1.0, math.nan, math.inf, deadlines.MAX_SECONDS * 2])
def test_a_deadline_out_of_range_is_refused(seconds):
    with pytest.raises(ValueError, match="a deadline must be 0 to 86400 s away"):
        deadlines.arm(seconds, lambda: None)


def _arm_in_child(queue) -> None:
    fired = threading.Event()
    deadlines.arm(0.02, fired.set)
    queue.put(fired.wait(5))


def test_a_forked_child_runs_its_own_timer_thread():
    deadlines.arm(60, lambda: None)  # the parent's thread is running, and not the child's
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_arm_in_child, args=(queue,))
    child.start()
    assert queue.get(timeout=10) is True
    child.join(10)
    assert child.exitcode == 0


def test_disarmed_deadlines_do_not_pile_up():
    timer = deadlines._Timer()
    for _ in range(1000):  # requests that end in time, one after the other
        timer.arm(60, lambda: None).disarm()
    assert len(timer._heap) == 1  # the last one: the next arm drops it


def test_disarmed_deadlines_behind_a_long_request_are_compacted():
    timer = deadlines._Timer()
    timer.arm(30, lambda: None)  # a request still in flight, at the heap's top
    for _ in range(5000):  # later requests that ended in time, behind it
        timer.arm(60, lambda: None).disarm()
    assert len(timer._heap) < 2 * deadlines._COMPACT_MIN
