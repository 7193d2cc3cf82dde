"""Several sites in one crawl: --max-pages-per-site exact (also over a resume), and the
adaptive default's one request at a time per origin, from the servers' logs."""

from __future__ import annotations

import collections
import contextlib
import json
import os

from crawler.api import crawl
from crawler.config import CrawlConfig
from crawler.engine.scheduler import SITE_LIMIT
from tests.helpers.crawlutil import read_records
from tests.helpers.siteserver import Route, SiteServer

PAGES = 6  # a home page and five pages linked from it


def site_routes(delay_s: float = 0.02) -> dict[str, Route]:
    links = "".join(f'<a href="/p{i}">p{i}</a>' for i in range(1, PAGES))
    routes = {
        "/": Route(f"<main><h1>home</h1>{links}</main>"),
        "/robots.txt": Route("", 404, content_type="text/plain"),
    }
    routes.update({f"/p{i}": Route(f"<main><p>page {i}</p></main>", delay_s=delay_s) for i in range(1, PAGES)})
    return routes


@contextlib.contextmanager
def three_sites():
    with SiteServer(site_routes()) as a, SiteServer(site_routes()) as b, SiteServer(site_routes()) as c:
        yield [a, b, c]


def run(tmp_path, servers, **settings) -> dict:
    out = str(tmp_path / "out")
    settings.setdefault("workers", 2)
    settings.setdefault("threads", 4)
    settings.setdefault("progress_interval_s", 60.0)
    return crawl(CrawlConfig(seeds=tuple(s.url("/") for s in servers), out_dir=out, **settings))


def per_origin(records: dict) -> collections.Counter:
    return collections.Counter(url.split("/", 3)[2] for url in records)


def skipped_reasons(tmp_path) -> collections.Counter:
    with open(os.path.join(tmp_path / "out", "skipped.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return collections.Counter((row[0].split("/", 3)[2], row[3]) for row in rows)


def test_max_pages_per_site_is_exact_for_every_site(tmp_path):
    with three_sites() as servers:
        summary = run(tmp_path, servers, max_pages_per_site=3)
        records = read_records(str(tmp_path / "out"))
        for server in servers:  # robots.txt, then exactly three of the six URLs
            assert sum(server.hits.values()) == 4 and server.hits["/robots.txt"] == 1
            assert all(n == 1 for n in server.hits.values())
    hosts = [f"127.0.0.1:{s.port}" for s in servers]
    assert per_origin(records) == {host: 3 for host in hosts}
    assert skipped_reasons(tmp_path) == {(host, SITE_LIMIT): 3 for host in hosts}
    assert summary["skipped_by_reason"] == {SITE_LIMIT: 9}
    assert (summary["visited"], summary["skipped"], summary["claimed"]) == (9, 9, 18)
    assert summary["reconciled"] and summary["stopped"] is None


def test_a_url_robots_txt_disallows_keeps_that_reason_at_the_site_limit(tmp_path):
    routes = site_routes()
    routes["/robots.txt"] = Route("User-agent: *\nDisallow: /p5\n", content_type="text/plain")
    with SiteServer(routes) as server:
        summary = run(tmp_path, [server], max_pages_per_site=2)
        assert "/p5" not in server.hits
    assert summary["skipped_by_reason"] == {SITE_LIMIT: 3, "robots.txt disallows": 1}


def test_max_pages_per_site_holds_over_a_resume(tmp_path):
    with three_sites() as servers:
        first = run(tmp_path, servers, max_pages=4, max_pages_per_site=3)
        assert first["visited"] == 4
        second = run(tmp_path, servers, max_pages_per_site=3)
        records = read_records(str(tmp_path / "out"))  # fails on a URL recorded twice
        for server in servers:
            assert sum(n for path, n in server.hits.items() if path != "/robots.txt") == 3
    assert per_origin(records) == {f"127.0.0.1:{s.port}": 3 for s in servers}
    assert second["visited"] == 9 and second["reconciled"]
    assert second["skipped_by_reason"] == {SITE_LIMIT: 9}


def test_the_adaptive_default_sends_one_request_at_a_time_per_site(tmp_path):
    with three_sites() as servers:
        summary = run(tmp_path, servers, workers=2, threads=8)
        for server in servers:
            assert server.max_concurrent == 1
            assert all(n == 1 for n in server.hits.values()) and len(server.hits) == PAGES + 1
    assert summary["visited"] == 3 * PAGES and summary["reconciled"]
    with open(os.path.join(tmp_path / "out", "summary.json"), encoding="utf-8") as f:
        assert json.load(f)["failed"] == 0


def test_per_host_sets_the_cap_by_hand(tmp_path):
    with SiteServer(site_routes(delay_s=0.3)) as server:
        summary = run(tmp_path, [server], workers=2, threads=8, per_host=3)
        assert server.max_concurrent == 3  # five pages found at once: the cap, not one
    assert summary["visited"] == PAGES


def page_requests(servers) -> int:
    """Requests the servers logged, robots.txt left out."""
    return sum(n for server in servers for path, n in server.hits.items() if path != "/robots.txt")


def test_max_pages_holds_over_a_resume(tmp_path):
    with three_sites() as servers:
        first = run(tmp_path, servers, max_pages=4)
        fetched = page_requests(servers)
        again = run(tmp_path, servers, max_pages=4)  # the same command on the finished crawl
        assert page_requests(servers) == fetched == 4
        more = run(tmp_path, servers, max_pages=6)  # a larger limit: two more URLs
        assert page_requests(servers) == 6
        records = read_records(str(tmp_path / "out"))  # fails on a URL recorded twice
    assert (first["visited"], again["visited"], more["visited"]) == (4, 4, 6)
    assert len(records) == 6 and more["reconciled"]
    # the URLs known and not fetched: the homes, and the links of each home fetched (a
    # home whose robots.txt came late may wait past the first run's 4 pages)
    homes = sum(1 for url in records if url.endswith("/"))
    assert more["skipped_by_reason"] == {"max-pages": len(servers) + homes * (PAGES - 1) - 6}
