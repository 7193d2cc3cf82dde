"""A fetcher that hangs is killed and replaced; the watchdog reports a real stall and
stays silent while the crawl only waits for a Retry-After."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time

from tests.helpers.crawlutil import run_crawl
from tests.helpers.siteserver import Route, Sequence, SiteServer

PAGES = [f"/p{i}" for i in range(6)]


def site() -> dict[str, Route]:
    links = "".join(f'<a href="{p}">{p}</a>' for p in PAGES)
    routes = {"/": Route(f"<main>{links}</main>"), "/robots.txt": Route("", 404)}
    routes.update({p: Route(f"<main><p>{p}</p></main>", delay_s=0.3) for p in PAGES})
    return routes


def test_a_stopped_fetcher_is_killed_and_its_tasks_fetched_by_another(tmp_path):
    stopped = []

    def stop_a_fetcher():  # once the pages are being fetched, freeze one fetcher process
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if any(server.hits[p] for p in PAGES):
                for child in multiprocessing.active_children():
                    if child.name.startswith("crawler-fetcher-"):
                        os.kill(child.pid, signal.SIGSTOP)
                        stopped.append(child.pid)
                        return
            time.sleep(0.01)

    with SiteServer(site()) as server:
        thread = threading.Thread(target=stop_a_fetcher, daemon=True)
        thread.start()
        summary, records = run_crawl(
            tmp_path,
            server.url("/"),
            workers=2,
            threads=2,
            per_host=4,
            total_timeout_s=1.0,
            read_timeout_s=1.0,
            stall_s=2.0,
            start_method="fork",
        )
        thread.join()
    assert len(stopped) == 1
    assert sorted(records) == sorted([server.url("/")] + [server.url(p) for p in PAGES])
    assert summary["fetcher_deaths"] == 1 and summary["reconciled"]
    assert summary["stalls"] >= 1  # nothing came back for more than 2 s: reported


def test_waiting_for_a_retry_after_is_not_a_stall(tmp_path):
    routes = site()
    routes["/p0"] = Sequence(Route("busy", 429, headers={"Retry-After": "3"}), Route("<main>p0</main>"))
    with SiteServer(routes) as server:
        summary, records = run_crawl(tmp_path, server.url("/"), stall_s=1.0)
        assert server.hits["/p0"] == 2
    assert records[server.url("/p0")]["status"] == 200
    assert summary["retries"] == 1 and summary["stalls"] == 0
