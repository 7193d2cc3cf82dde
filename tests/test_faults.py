"""Faults around the processes: a killed fetcher, a killed manager, Ctrl-C once and twice.

Each test runs ``python -m crawler`` as a subprocess against a slow local site and acts
on it part-way (deadlines on every wait, never a bare sleep to synchronize).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time

import psutil
import pytest

from crawler.engine.statestore import StateStore
from crawler.engine.worker import page_markdown
from tests.helpers.crawlutil import crawl_command, read_records, run_crawl
from tests.helpers.siteserver import Route, SiteServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEADLINE_S = 60


class SlowSite(SiteServer):
    """Pages /0 .. /count-1, each answering after ``delay_s`` and linking to the next
    ten; ``hit_event`` is set once ``hits_wanted`` requests arrived."""

    def __init__(self, count: int, delay_s: float, hits_wanted: int) -> None:
        super().__init__(
            {
                f"/{i}": Route(
                    f"<title>{i}</title>" + "".join(f'<a href="/{j}">{j}</a>' for j in range(i + 1, min(i + 11, count)))
                )
                for i in range(count)
            }
        )
        self.delay_s = delay_s
        self.hits_wanted = hits_wanted
        self.hit_event = threading.Event()

    def lookup(self, target):
        if sum(self.hits.values()) >= self.hits_wanted:
            self.hit_event.set()
        time.sleep(self.delay_s)
        return super().lookup(target)


def start_crawl(site: SiteServer, out, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        crawl_command(site.url("/0"), out, *args),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def children_by_age(proc: subprocess.Popen) -> list[psutil.Process]:
    """The crawl's child processes, oldest first: the manager, then the fetchers."""
    kids = psutil.Process(proc.pid).children()
    return sorted(kids, key=lambda p: p.create_time())


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=DEADLINE_S)
    return proc.returncode, out, err


def read_summary(out) -> dict:
    with open(out / "summary.json", encoding="utf-8") as f:
        return json.load(f)


def test_a_killed_fetcher_is_replaced_and_the_crawl_completes_with_every_page(tmp_path):
    out = tmp_path / "out"
    with SlowSite(200, 0.02, hits_wanted=30) as site:
        proc = start_crawl(site, out, "--quiet")
        assert site.hit_event.wait(DEADLINE_S)
        kids = children_by_age(proc)
        assert len(kids) == 3  # the manager and two fetchers
        kids[-1].kill()
        code, stdout, err = finish(proc)
        hits = dict(site.hits)
    assert code == 0, err
    summary = read_summary(out)
    records = read_records(str(out))
    assert sorted(records) == sorted(site.url(f"/{i}") for i in range(200))
    assert summary["fetcher_deaths"] == 1 and summary["reconciled"] is True
    assert summary["pages"] + summary.get("failed", 0) == 200
    # at most the tasks the dead fetcher held are requested twice (queue bound + threads)
    assert sum(n - 1 for n in hits.values()) <= 2 * 2 + 2 + 1
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in kids)


@pytest.mark.parametrize("victim", ["manager"])
def test_a_killed_child_stops_the_crawl_with_one_line_and_no_orphans(tmp_path, victim):
    out = tmp_path / "out"
    with SlowSite(200, 0.05, hits_wanted=10) as site:
        proc = start_crawl(site, out, "--quiet")
        assert site.hit_event.wait(DEADLINE_S)
        kids = children_by_age(proc)
        assert len(kids) == 3  # the manager and two fetchers
        target = kids[0] if victim == "manager" else kids[-1]
        target.kill()
        started = time.monotonic()
        code, _, err = finish(proc)
        stopped_after = time.monotonic() - started
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crawler: error: "), err
    assert ("fetcher" if victim == "fetcher" else "manager process died") in lines[0]
    assert "Traceback" not in err
    assert stopped_after < 30
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in kids)
    summary = read_summary(out)
    assert "died" in summary["stopped"] and summary["reconciled"] is False
    with open(out / "skipped.tsv", encoding="utf-8") as f:
        skipped = f.read().splitlines()[1:]
    assert skipped and all("aborted" in row.split("\t")[3] for row in skipped)


def test_ctrl_c_once_finishes_fetches_in_flight_and_exits_zero(tmp_path):
    out = tmp_path / "out"
    with SlowSite(200, 0.2, hits_wanted=8) as site:
        proc = start_crawl(site, out, "--quiet")
        assert site.hit_event.wait(DEADLINE_S)
        proc.send_signal(signal.SIGINT)
        sent_at = sum(site.hits.values())
        code, stdout, err = finish(proc)
        hits = dict(site.hits)
    assert code == 0, err
    summary = read_summary(out)
    assert summary["stopped"] == "interrupted" and summary["reconciled"] is True
    assert summary["skipped"] > 0 and summary["skipped_by_reason"] == {"interrupted": summary["skipped"]}
    # only fetches already under way finish: at most one per fetcher thread after the signal
    assert sum(hits.values()) - sent_at <= 2 * 2
    assert set(hits.values()) == {1}
    assert summary["visited"] + summary["failed"] == sum(hits.values()) - hits["/robots.txt"]


def test_ctrl_c_twice_aborts_promptly(tmp_path):
    out = tmp_path / "out"
    with SlowSite(200, 2.0, hits_wanted=2) as site:
        proc = start_crawl(site, out, "--quiet")
        assert site.hit_event.wait(DEADLINE_S)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)  # let the first signal be handled before the second (not a sync)
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        code, _, err = finish(proc)
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [
        f"crawler: aborted by a second signal; outputs in {out}; run the same command again to resume"
    ]
    assert time.monotonic() - started < 8
    summary = read_summary(out)  # a cold stop still writes the outputs
    assert summary["stopped"] == "aborted by a second signal"
    with open(out / "skipped.tsv", encoding="utf-8") as f:
        rows = f.read().splitlines()[1:]
    assert rows and all(row.split("\t")[3].startswith("aborted") for row in rows)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("start_method", ["spawn", "forkserver"])
def test_a_group_signal_while_children_start(tmp_path, start_method, signum):
    """A terminal Ctrl-C reaches every process of the group; children starting up must
    not die of it (they inherit SIGINT ignored), so the result is a warm stop."""
    out = tmp_path / "out"
    with SlowSite(50, 0.05, hits_wanted=10**6) as site:
        proc = subprocess.Popen(
            crawl_command(site.url("/0"), out, "--quiet", "--start-method", start_method, threads=None),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        deadline = time.monotonic() + DEADLINE_S
        while len(psutil.Process(proc.pid).children()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)  # polling for the children to appear, bounded
        os.killpg(proc.pid, signum)
        code, _, err = finish(proc)
    assert "Traceback" not in err and "died" not in err, err
    assert code == 0, err
    assert read_summary(out)["stopped"] == "interrupted"


def test_sigterm_to_the_whole_process_group_is_a_warm_stop(tmp_path):
    """``kill -TERM -PGID`` (what service managers send) reaches the fetchers and the
    manager too: they must leave the stop to the dispatcher."""
    out = tmp_path / "out"
    with SlowSite(200, 0.1, hits_wanted=8) as site:
        proc = subprocess.Popen(
            crawl_command(site.url("/0"), out, "--quiet"),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert site.hit_event.wait(DEADLINE_S)
        os.killpg(proc.pid, signal.SIGTERM)
        code, _, err = finish(proc)
    assert code == 0, err
    summary = read_summary(out)
    assert summary["stopped"] == "interrupted" and summary["reconciled"] is True


class PoisonSite(SiteServer):
    """``/poison`` kills the process that requested it (found by the client's port)."""

    def lookup(self, target):
        if target == "/poison":
            port = self.current_client_port()
            for conn in psutil.net_connections("tcp"):
                if conn.laddr and conn.laddr.port == port and conn.pid and conn.pid != os.getpid():
                    os.kill(conn.pid, signal.SIGKILL)
            time.sleep(0.5)
        return super().lookup(target)


def test_a_url_that_keeps_killing_fetchers_is_failed_with_the_reason(tmp_path):
    out = tmp_path / "out"
    pages = {
        "/0": Route('<a href="/poison">p</a><a href="/a">a</a>'),
        "/a": Route("<p>a</p>"),
        "/poison": Route("<p>never seen</p>"),
    }
    with PoisonSite(pages) as site:
        proc = start_crawl(site, out, "--quiet", "--retries", "0")
        code, _, err = finish(proc)
        hits = dict(site.hits)
    assert code == 0, err
    assert hits == {"/robots.txt": 1, "/0": 1, "/a": 1, "/poison": 3}
    records = read_records(str(out))
    poison = records[site.url("/poison")]
    assert poison["error"] == "fetcher process died while fetching it (3 times)"
    summary = read_summary(out)
    assert (summary["fetcher_deaths"], summary["pages"], summary["failed"]) == (3, 2, 1)
    assert summary["reconciled"] is True
    store = StateStore.open(str(out))  # the count is in the store, so a resume keeps it
    try:
        assert store.crashes_of(site.url("/poison")) == 3
        assert store.crashes_of(site.url("/a")) == 0
    finally:
        store.close()


class BigTaskSite(SiteServer):
    """A seed with a 50 KB query, so each task it gives (carrying it as its parent) is a
    50 KB frame and a few of them fill a task channel's pipe; its four links answer after
    3 s each, keeping the one fetcher thread busy."""

    SEED = "/0?" + "q" * 50_000
    CHILDREN = ("/s1", "/s2", "/s3", "/s4")

    def __init__(self) -> None:
        routes = {self.SEED: Route("".join(f'<a href="{k}">k</a>' for k in self.CHILDREN))}
        routes.update({k: Route("<p>child</p>", delay_s=3.0) for k in self.CHILDREN})
        super().__init__(routes)
        self.first_child = threading.Event()

    def lookup(self, target):
        if target != self.SEED:
            self.first_child.set()
        return super().lookup(target)


def test_a_warm_stop_takes_back_every_task_waiting_in_a_full_channel(tmp_path):
    # found by a reviewer: the take-back left the whole frames ahead of a frame written
    # in part in the pipe, and they were fetched after the signal
    out = tmp_path / "out"
    with BigTaskSite() as site:
        args = ("--queue-size", "8", "--per-host", "8", "--ignore-robots", "--max-url-length", "100000", "--quiet")
        proc = subprocess.Popen(
            crawl_command(site.url(site.SEED), out, *args, workers=1, threads=1),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert site.first_child.wait(DEADLINE_S)
        time.sleep(1.0)  # /s1 under way; the other three wait in the channel
        signalled_at = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=DEADLINE_S)
        started_late = sorted(path for path, times in site.times.items() if max(times) > signalled_at)
        hits = dict(site.hits)
    assert proc.returncode == 0, err
    assert started_late == [] and hits == {site.SEED: 1, "/s1": 1}
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert (summary["stopped"], summary["pages"], summary["skipped"]) == ("interrupted", 2, 3)


def spinning_page_markdown(text: str, *args, **kwargs):
    """``page_markdown``, except on a page that holds ``SPIN``: there a regular
    expression that backtracks for hours runs in C holding the GIL, as a native
    converter stuck on a page would (no Python-level timeout can interrupt it)."""
    if "SPIN" in text:
        re.match(r"(a|aa)+$", "a" * 80 + "b")
    return page_markdown(text, *args, **kwargs)


def test_a_page_whose_page_work_hangs_is_failed_and_its_fetcher_replaced(tmp_path, site_server, monkeypatch):
    monkeypatch.setattr("crawler.engine.worker.page_markdown", spinning_page_markdown)
    server = site_server(
        {
            "/": Route('<main><a href="/a">a</a> <a href="/spin">s</a> <a href="/b">b</a></main>'),
            "/a": Route('<main><p>page a</p><a href="/c">c</a></main>'),
            "/spin": Route("<main><p>SPIN</p></main>"),
            "/b": Route("<main><p>page b</p></main>"),
            "/c": Route("<main><p>page c</p></main>"),
        }
    )
    started = time.monotonic()
    summary, records = run_crawl(
        tmp_path, server.url("/"), workers=1, threads=1, page_timeout_s=1.0, start_method="fork"
    )
    assert time.monotonic() - started < 30
    # every path requested once: the hung page is failed, not fetched again, and the
    # tasks the killed fetcher held went back to the frontier unrequested
    assert dict(server.hits) == {"/robots.txt": 1, "/": 1, "/a": 1, "/spin": 1, "/b": 1, "/c": 1}
    assert {url: r.get("error") for url, r in records.items()} == {
        server.url("/"): None,
        server.url("/a"): None,
        server.url("/spin"): "page work timeout",
        server.url("/b"): None,
        server.url("/c"): None,
    }
    assert records[server.url("/b")]["markdown"] == "page b"
    assert (summary["pages"], summary["failed"], summary["fetcher_deaths"]) == (4, 1, 1)
    assert summary["reconciled"] is True
