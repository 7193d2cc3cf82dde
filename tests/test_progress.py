"""Tests for crawler.engine.progress: the tqdm bar, the log line, the end-of-crawl table, and a
crawl on a pseudo-terminal showing the bar."""

from __future__ import annotations

import fcntl
import io
import logging
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest

from crawler.engine.progress import Progress, ProgressStats, summary_table
from tests.helpers.siteserver import SiteServer, page

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATS = ProgressStats(done=4, pages=3, failed=1, frontier=12, in_flight=2, rss_bytes=300 * 2**20, elapsed_s=2.0)


def test_bar_shows_counts_total_and_memory():
    stream = io.StringIO()
    bar = Progress("bar", total=10, stream=stream)
    bar.update(STATS)
    bar.close()
    text = stream.getvalue()
    assert "4/10" in text and "40%" in text
    assert "pages 3 | failed 1 | frontier 12 | in flight 2 | 300 MiB" in text
    assert bar.interval_s == 0.5


def test_bar_without_a_total_counts_up():
    stream = io.StringIO()
    bar = Progress("bar", total=None, stream=stream)
    bar.update(STATS)
    bar.close()
    assert "4 URL" in stream.getvalue() and "%" not in stream.getvalue().split("|")[0]


def test_log_mode_writes_one_line_per_update(caplog):
    with caplog.at_level(logging.INFO, logger="crawler"):
        Progress("log", interval_s=7.0).update(STATS)
    assert caplog.messages == ["done 4 (pages 3, failed 1) | frontier 12 | in flight 2 | 2.0 URLs/s | memory 300 MiB"]


def test_off_shows_nothing(caplog):
    with caplog.at_level(logging.INFO, logger="crawler"):
        Progress("off").update(STATS)
    assert caplog.messages == []
    with pytest.raises(ValueError):
        Progress("fancy")


def test_summary_table():
    summary = {
        "pages": 8,
        "non_html": 1,
        "redirects": 4,
        "duplicates": 0,
        "near_duplicates": 3,
        "failed": 2,
        "skipped": 1,
        "claimed": 16,
        "reconciled": True,
        "sites": 3,
        "sites_done": 2,
        "wall_s": 1.5,
        "pages_per_s": 5.3,
        "peak_rss_bytes": 200 * 2**20,
        "stopped": None,
        "failed_by_reason": {"http 404": 2},
        "skipped_by_reason": {"robots.txt disallows": 1},
    }
    assert summary_table(summary).splitlines() == [
        "pages                          8",
        "non-HTML                       1",
        "redirects                      4",
        "duplicates                     0",
        "near duplicates                3",
        "failed                         2",
        "skipped                        1",
        "claimed                        16",
        "reconciled                     True",
        "sites                          3",
        "sites done                     2",
        "wall s                         1.5",
        "pages/s                        5.3",
        "peak memory MiB                200",
        "stopped                        -",
        "failed: http 404               2",
        "skipped: robots.txt disallows  1",
    ]


def test_a_crawl_on_a_terminal_draws_the_bar_and_the_table(tmp_path):
    with SiteServer({"/": page("Home", "/a"), "/a": page("A")}) as server:
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "crawler",
                server.url("/"),
                "--out",
                str(tmp_path / "out"),
                "--workers",
                "1",
                "--max-pages",
                "5",
            ],
            cwd=ROOT,
            stdin=follower,
            stdout=subprocess.PIPE,
            stderr=follower,
        )
        os.close(follower)
        stdout, _ = proc.communicate(timeout=60)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(leader)
    shown = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0
    assert "2/5" in shown and "pages 2 | failed 0" in shown  # the bar, with --max-pages as total
    assert "reconciled       True" in shown.replace("\r", "")  # the table at the end
    assert stdout.decode().startswith('{"pages": 2')


def test_log_mode_with_a_total_shows_it_and_an_eta_of_this_run(caplog):
    display = Progress("log", total=24, interval_s=7.0)
    display.start_at(2)  # a resume: 2 URLs were done by an earlier run
    with caplog.at_level(logging.INFO, logger="crawler"):
        display.update(STATS)  # 4 done: 2 in this run's 2.0 s, 20 left at 1.0 URLs/s
    assert caplog.messages == [
        "done 4/24 (pages 3, failed 1) | frontier 12 | in flight 2 | 1.0 URLs/s | ETA 20 s | memory 300 MiB"
    ]


def test_bar_of_a_resumed_crawl_counts_earlier_urls_but_not_in_its_rate():
    stream = io.StringIO()
    bar = Progress("bar", total=10, stream=stream)
    bar.start_at(3)
    assert (bar._bar.n, bar._bar.initial) == (3, 3)
    bar.update(STATS)
    bar.close()
    assert "4/10" in stream.getvalue()
