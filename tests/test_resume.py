"""Overnight runs: a crawl killed (SIGKILL of every process) or stopped (SIGINT) part-way
is finished by running the same command again, with every page exactly once, the same
Markdown as an uninterrupted crawl, and no recorded page requested twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from crawler.engine.resume import cut_partial_line
from crawler.errors import OutputError
from crawler.output import folderlock
from tests.helpers.crawlutil import read_records
from tests.helpers.generatedsite import DEADLINE_S, PAGES, GeneratedSite, markdown_by_path, start
from tests.helpers.siteserver import Route, SiteServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_sigkill_of_the_whole_crawl_then_the_same_command_finishes_it(tmp_path, reference):
    out = tmp_path / "out"
    with GeneratedSite(wanted=40) as site:
        first = start(site, out, "--quiet")
        assert site.reached.wait(DEADLINE_S)
        os.killpg(first.pid, signal.SIGKILL)  # the dispatcher, the manager and every fetcher
        first.communicate(timeout=DEADLINE_S)
        recorded_before = set(read_records(str(out)))
        hits_before = dict(site.hits)
        assert 0 < len(recorded_before) < PAGES
        second = start(site, out, "--quiet")
        stdout, err = second.communicate(timeout=DEADLINE_S)
        hits = dict(site.hits)
    assert second.returncode == 0, err
    records = read_records(str(out))  # fails on a URL recorded twice
    assert markdown_by_path(records, site) == reference
    # no page recorded before the kill was requested again
    for url in recorded_before:
        path = url[len(site.url("")) :]
        assert hits[path] == hits_before[path] == 1, path
    # at most the fetches under way at the kill were repeated
    repeated = {p: n for p, n in hits.items() if n > 1 and p != "/robots.txt"}
    assert len(repeated) <= 2 * 2 + 2 * 2, repeated
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert (summary["pages"], summary["claimed"], summary["reconciled"]) == (PAGES, PAGES, True)


def test_sigint_stops_with_exit_0_and_a_resume_finishes(tmp_path, reference):
    out = tmp_path / "out"
    with GeneratedSite(wanted=30) as site:
        first = start(site, out)
        assert site.reached.wait(DEADLINE_S)
        first.send_signal(signal.SIGINT)
        _, err = first.communicate(timeout=DEADLINE_S)
        assert first.returncode == 0, err
        assert "run the same command again to resume" in err
        stopped = json.loads((out / "summary.json").read_text("utf-8"))
        assert stopped["stopped"] == "interrupted" and stopped["pages"] < PAGES
        second = start(site, out, "--quiet")
        _, err = second.communicate(timeout=DEADLINE_S)
        hits = dict(site.hits)
    assert second.returncode == 0, err
    assert markdown_by_path(read_records(str(out)), site) == reference
    assert {p: n for p, n in hits.items() if n > 1} == {"/robots.txt": 2}  # a warm stop loses nothing
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert (summary["pages"], summary["skipped"], summary["stopped"]) == (PAGES, 0, None)
    assert summary["reconciled"]


def test_a_second_crawl_in_the_folder_of_a_running_one_stops_at_once(tmp_path, reference):
    out = tmp_path / "out"
    with GeneratedSite(wanted=20) as site:
        first = start(site, out)
        assert site.reached.wait(DEADLINE_S)
        second = start(site, out, "--quiet")
        _, err = second.communicate(timeout=DEADLINE_S)
        assert second.returncode == 2 and first.poll() is None  # refused while the first runs
        assert err.splitlines() == [
            f"crawler: error: another crawl is running in {out} (pid {first.pid}): wait for it to end, "
            "or stop it (Ctrl-C) and run the command again to resume"
        ]
        _, first_err = first.communicate(timeout=DEADLINE_S)
        hits = dict(site.hits)
    assert first.returncode == 0, first_err
    assert markdown_by_path(read_records(str(out)), site) == reference
    assert max(hits.values()) == 1  # every page and robots.txt requested once
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert (summary["pages"], summary["reconciled"]) == (PAGES, True)


def test_the_folder_lock_names_its_holder_and_goes_with_it(tmp_path):
    with folderlock.hold(str(tmp_path)):
        with pytest.raises(OutputError, match=rf"another crawl is running in {tmp_path} \(pid {os.getpid()}\)"):
            with folderlock.hold(str(tmp_path)):  # another open file description: refused as another process is
                pass
    with folderlock.hold(str(tmp_path)):  # released
        assert (tmp_path / folderlock.LOCK_FILE).read_text() == f"{os.getpid()}\n"
    assert folderlock.entries(str(tmp_path)) == []  # a bare lock is no earlier run (merge, export, --redis)


def test_another_seed_in_the_same_folder_is_an_error_unless_restart(tmp_path):
    out = tmp_path / "out"
    with SiteServer({"/": Route("<p>home</p>"), "/other": Route("<p>other</p>")}) as site:
        for path, extra, code in (("/", (), 0), ("/other", (), 2), ("/other", ("--restart",), 0)):
            proc = subprocess.run(
                [sys.executable, "-m", "crawler", site.url(path), "--out", str(out), "--quiet", *extra],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=DEADLINE_S,
            )
            assert proc.returncode == code, proc.stderr
            if code == 2:
                assert proc.stderr.count("\n") == 1 and "use --restart to start over" in proc.stderr
                assert f"holds a crawl with seeds ['{site.url('/')}'], not ['{site.url('/other')}']" in proc.stderr
    assert sorted(read_records(str(out))) == [site.url("/other")]


@pytest.mark.parametrize(
    "content, kept",
    [
        (b"", b""),
        (b"a\nb\n", b"a\nb\n"),
        (b"a\nb\npart", b"a\nb\n"),
        (b"part", b""),
        (b"x" * 70000 + b"\n" + b"y" * 70000, b"x" * 70000 + b"\n"),
    ],
)
def test_cut_partial_line(tmp_path, content, kept):
    path = tmp_path / "f"
    path.write_bytes(content)
    assert cut_partial_line(str(path)) == len(content) - len(kept)
    assert path.read_bytes() == kept


def test_max_memory_slows_the_crawl_to_one_request_at_a_time(tmp_path):
    from tests.helpers.crawlutil import run_crawl

    paths = [f"/p{i}" for i in range(12)]
    with SiteServer({"/": Route("".join(f'<a href="{p}">{p}</a>' for p in paths))}) as site:
        site.routes.update({p: Route(f"<p>{p}</p>", delay_s=0.05) for p in paths})
        summary, records = run_crawl(tmp_path, site.url("/"), workers=2, threads=4, max_memory_bytes=1)
        most = site.max_concurrent
    assert most == 1 and summary["pages"] == 13 and summary["reconciled"]


class BigSite(SiteServer):
    """/p0 .. /p{n-1}, tiny pages each linking to the next three, generated on request."""

    def __init__(self, count: int) -> None:
        super().__init__({})
        self.count = count

    def lookup(self, target):
        if target.startswith("/p") and target[2:].isdigit():
            i = int(target[2:])
            links = "".join(f'<a href="/p{j}">{j}</a>' for j in range(i + 1, min(i + 4, self.count)))
            return Route(f"<p>{i}</p>{links}")
        return super().lookup(target)


def test_dispatcher_memory_stays_flat_over_50000_urls(tmp_path):
    """RSS of the dispatcher process when 10,000 URLs are done and at the last progress
    line (about 50,000): the frontier is on disk, so the growth is bounded by SQLite's
    page cache (16 MiB), not by the URLs."""
    count = 50_000
    with BigSite(count) as site:
        # --per-host 8: 50,000 tiny pages one request at a time (the adaptive default)
        # are bound by the round trip, and this test is about memory
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "crawler",
                site.url("/p0"),
                "--out",
                str(tmp_path / "out"),
                "--workers",
                "2",
                "--threads",
                "4",
                "--per-host",
                "8",
                "--progress-interval",
                "0.5",
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        dispatcher = __import__("psutil").Process(proc.pid)
        samples = []
        for line in proc.stderr:
            if " done " in line and "frontier" in line:
                done = int(line.split(" done ")[1].split()[0])
                try:
                    samples.append((done, dispatcher.memory_info().rss))
                except Exception:
                    break
        proc.wait(timeout=600)
    assert proc.returncode == 0
    at_10k = next(rss for done, rss in samples if done >= 10_000)
    last_done, last_rss = samples[-1]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text("utf-8"))
    assert summary["pages"] == count and summary["reconciled"]
    assert last_done >= 40_000
    growth = last_rss - at_10k
    print(
        f"dispatcher RSS {at_10k / 2**20:.1f} MiB at 10,000 URLs, {last_rss / 2**20:.1f} MiB at "
        f"{last_done}: {growth / (last_done - 10_000):.0f} bytes per URL"
    )
    assert growth < 24 * 2**20
