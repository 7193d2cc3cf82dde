"""The stall watchdog: silent while the crawl progresses, a report when it stalls."""

from __future__ import annotations

import logging
import threading
import time

from crawler.engine.watchdog import Watchdog


class FakeDispatcher:
    def __init__(self, progress_at: float, turned_at: float, waiting: bool = True) -> None:
        self.last_progress_at = progress_at
        self.loop_turned_at = turned_at
        self.waiting = waiting

    def work_waiting(self) -> bool:
        return self.waiting

    def describe(self) -> str:
        return "frontier 3 tasks; fetcher 0: page http://a.test/x (61.0 s)"


def test_no_report_while_progressing_or_with_nothing_waiting():
    now = 1000.0
    assert Watchdog(FakeDispatcher(now - 59, now), 60).check(now) is None
    assert Watchdog(FakeDispatcher(now - 600, now, waiting=False), 60).check(now) is None


def test_a_stall_reports_what_waits_and_what_each_fetcher_holds():
    now = 1000.0
    report = Watchdog(FakeDispatcher(now - 61, now - 0.5), 60).check(now)
    assert report == ("stall: no progress for 61 s; frontier 3 tasks; fetcher 0: page http://a.test/x (61.0 s)")


def test_a_blocked_loop_reports_the_main_threads_stack():
    now = 1000.0
    report = Watchdog(FakeDispatcher(now - 100, now - 100), 60).check(now)
    assert report.startswith("stall: the dispatcher loop has not turned for 100 s; its stack:")
    assert "test_a_blocked_loop_reports_the_main_threads_stack" in report


def test_the_thread_logs_a_stall_and_stops_promptly(caplog):
    fake = FakeDispatcher(time.monotonic() - 10, time.monotonic())
    with caplog.at_level(logging.WARNING, logger="crawler"):
        watchdog = Watchdog(fake, stall_s=0.2).start()
        deadline = time.monotonic() + 5
        while not watchdog.stalls and time.monotonic() < deadline:
            time.sleep(0.05)
        watchdog.stop()
    assert watchdog.stalls >= 1
    assert any("stall: no progress" in r.getMessage() for r in caplog.records)
    assert not any(t.name == "crawler-watchdog" for t in threading.enumerate())
