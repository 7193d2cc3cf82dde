"""Politeness end to end, against servers on 127.0.0.1 that log every request:
robots.txt once per origin and before any page, disallowed paths never requested,
Crawl-delay and --delay spacing, the per-host cap, Retry-After and retries."""

from __future__ import annotations

import contextlib
import json
import time

import pytest

from crawler.api import crawl
from crawler.config import CrawlConfig
from crawler.errors import SeedFailed
from tests.helpers.crawlutil import read_records, run_crawl
from tests.helpers.siteserver import Route, Sequence, SiteServer, page, redirect

ROBOTS = "text/plain"


def test_robots_txt_first_once_and_disallowed_paths_never_requested(tmp_path):
    with SiteServer() as server, SiteServer() as other:
        server.routes.update(
            {
                "/robots.txt": Route("User-agent: *\nDisallow: /private\nAllow: /private/ok\n", content_type=ROBOTS),
                "/": page("Home", "/a", "/private/x", "/private/ok", other.url("/o")),
                "/a": page("A", "/private/y", "/"),
                "/private/ok": page("OK"),
            }
        )
        other.routes.update({"/o": page("O"), "/robots.txt": Route("", 404)})
        summary, records = run_crawl(tmp_path, server.url("/"), allow_domains=("127.0.0.1",))
        hits, other_hits, times = dict(server.hits), dict(other.hits), server.times
    assert hits == {"/robots.txt": 1, "/": 1, "/a": 1, "/private/ok": 1}
    assert other_hits == {"/robots.txt": 1, "/o": 1}  # each origin has its own robots.txt
    assert times["/robots.txt"][0] < min(t for path, ts in times.items() for t in ts if path != "/robots.txt")
    assert summary["skipped_by_reason"] == {"robots.txt disallows": 2}
    assert (summary["robots_fetches"], summary["pages"], summary["reconciled"]) == (2, 4, True)
    with open(tmp_path / "out" / "skipped.tsv", encoding="utf-8") as f:
        rows = [line.split("\t") for line in f.read().splitlines()[1:]]
    assert sorted(row[0] for row in rows) == [server.url("/private/x"), server.url("/private/y")]
    assert sorted(records) == sorted([server.url(p) for p in ("/", "/a", "/private/ok")] + [other.url("/o")])


def test_ignore_robots_fetches_no_robots_txt(tmp_path):
    with SiteServer(
        {
            "/robots.txt": Route("User-agent: *\nDisallow: /\n", content_type=ROBOTS),
            "/": page("Home", "/a"),
            "/a": page("A"),
        }
    ) as server:
        summary, _ = run_crawl(tmp_path, server.url("/"), obey_robots=False)
        hits = dict(server.hits)
    assert hits == {"/": 1, "/a": 1} and summary["robots_fetches"] == 0


def test_robots_txt_5xx_disallows_all_until_it_can_be_read(tmp_path):
    with SiteServer(
        {
            "/robots.txt": Sequence(Route("down", 503), Route("User-agent: *\nAllow: /\n", content_type=ROBOTS)),
            "/": page("Home", "/a"),
            "/a": page("A"),
        }
    ) as server:
        summary, records = run_crawl(tmp_path, server.url("/"), retry_base_s=0.2)
        hits, times = dict(server.hits), server.times
    assert hits == {"/robots.txt": 2, "/": 1, "/a": 1}
    assert times["/"][0] > times["/robots.txt"][1]  # no page before robots.txt was read
    assert summary["pages"] == 2 and summary["robots_fetches"] == 2


def test_robots_txt_that_stays_unreachable_skips_the_host(tmp_path):
    with SiteServer({"/robots.txt": Route("down", 500), "/": page("Home")}) as server:
        with pytest.raises(SeedFailed, match=r"robots.txt unreachable \(http 500\)"):
            run_crawl(tmp_path, server.url("/"), retries=1, retry_base_s=0.1)
        hits = dict(server.hits)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text("utf-8"))
    assert hits == {"/robots.txt": 2} and read_records(str(tmp_path / "out")) == {}
    assert summary["skipped_by_reason"] == {"robots.txt unreachable (http 500)": 1}
    assert summary["reconciled"]


def test_crawl_delay_spaces_requests_one_at_a_time(tmp_path):
    with SiteServer(
        {
            "/robots.txt": Route("User-agent: *\nCrawl-delay: 0.3\n", content_type=ROBOTS),
            "/": page("Home", "/a", "/b", "/c"),
        }
    ) as server:
        server.routes.update({p: Route(f"<p>{p}</p>", delay_s=0.05) for p in ("/a", "/b", "/c")})
        summary, _ = run_crawl(tmp_path, server.url("/"), workers=2, threads=4)
        starts = sorted(t for ts in server.times.values() for t in ts)
        max_concurrent = server.max_concurrent
    assert summary["pages"] == 4 and max_concurrent == 1
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert len(gaps) == 4 and min(gaps) >= 0.3, gaps


def test_per_host_cap_is_never_exceeded(tmp_path):
    paths = [f"/p{i}" for i in range(24)]
    with SiteServer({"/": page("Home", *paths)}) as server:
        server.routes.update({p: Route(f"<p>{p}</p>", delay_s=0.1) for p in paths})
        summary, _ = run_crawl(tmp_path, server.url("/"), workers=2, threads=8, per_host=3)
        max_concurrent = server.max_concurrent
    assert summary["pages"] == 25 and max_concurrent == 3


def test_C24a_429_with_retry_after_pauses_the_host_then_retries(tmp_path):
    with SiteServer(
        {
            "/": page("Home", "/busy", "/other"),
            "/busy": Sequence(Route("slow down", 429, {"Retry-After": "1"}), page("Busy")),
            "/other": page("Other"),
        }
    ) as server:
        started = time.monotonic()
        summary, records = run_crawl(tmp_path, server.url("/"), workers=1, threads=1)
        times = server.times
        hits = dict(server.hits)
    assert hits == {"/robots.txt": 1, "/": 1, "/busy": 2, "/other": 1}
    assert times["/busy"][1] - times["/busy"][0] >= 1.0
    # the whole host waited: nothing was requested during the Retry-After pause
    first_429 = times["/busy"][0]
    assert not [t for path, ts in times.items() for t in ts if first_429 < t < first_429 + 1.0]
    assert records[server.url("/busy")]["status"] == 200 and records[server.url("/busy")]["attempts"] == 2
    assert (summary["retries"], summary["failed"], summary["reconciled"]) == (1, 0, True)
    assert time.monotonic() - started < 10


def test_retries_exhausted_end_failed_with_the_reason(tmp_path):
    with SiteServer({"/": page("Home", "/down"), "/down": Route("oops", 503)}) as server:
        summary, records = run_crawl(tmp_path, server.url("/"), retries=2, retry_base_s=0.05)
        hits = dict(server.hits)
    assert hits["/down"] == 3
    down = records[server.url("/down")]
    assert (down["error"], down["attempts"]) == ("http 503", 3)
    assert summary["failed_by_reason"] == {"http 503": 1} and summary["retries"] == 2
    assert summary["reconciled"]


def test_a_calendar_trap_is_stopped_by_the_query_cap_and_url_length(tmp_path):
    class Calendar(SiteServer):
        def lookup(self, target):
            if target.startswith("/cal?month="):
                n = int(target.split("=")[1])
                return page(f"Month {n}", f"/cal?month={n + 1}", f"/cal?month={n - 1}")
            return super().lookup(target)

    with Calendar({"/": page("Home", "/cal?month=0", "/" + "x" * 300)}) as server:
        summary, records = run_crawl(tmp_path, server.url("/"), max_query_variants=10, max_url_length=200)
        hits = dict(server.hits)
    months = sorted(int(p.split("=")[1]) for p in hits if p.startswith("/cal"))
    assert len(months) == 10 and all(v == 1 for v in hits.values())
    assert summary["skipped_by_reason"] == {"query variants": 2, "url too long": 1}
    assert summary["reconciled"]


def _urlset(*urls: str) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(f"<url><loc>{u}</loc></url>" for u in urls)
        + "</urlset>"
    )


def test_sitemaps_from_robots_txt_seed_the_frontier_in_scope_only(tmp_path):
    import gzip

    with SiteServer() as server:
        u = server.url
        index = (
            '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<sitemap><loc>{u('/sm1.xml')}</loc></sitemap><sitemap><loc>{u('/sm2.xml.gz')}</loc></sitemap>"
            f"<sitemap><loc>{u('/sm1.xml')}</loc></sitemap></sitemapindex>"
        )
        server.routes.update(
            {
                "/robots.txt": Route(
                    f"User-agent: *\nDisallow: /private\nSitemap: {u('/index.xml')}\n", content_type="text/plain"
                ),
                "/": page("Home", "/a"),
                "/a": page("A"),
                "/index.xml": Route(index, content_type="application/xml"),
                "/sm1.xml": Route(
                    _urlset(u("/orphan1"), u("/a"), "http://elsewhere.invalid/x", u("/private/p")),
                    content_type="application/xml",
                ),
                "/sm2.xml.gz": Route(gzip.compress(_urlset(u("/orphan2")).encode()), content_type="application/gzip"),
                "/orphan1": page("Orphan 1"),
                "/orphan2": page("Orphan 2"),
            }
        )
        summary, records = run_crawl(tmp_path, u("/"), sitemaps=True)
        hits = dict(server.hits)
    assert hits == {
        "/robots.txt": 1,
        "/index.xml": 1,
        "/sm1.xml": 1,
        "/sm2.xml.gz": 1,
        "/": 1,
        "/a": 1,
        "/orphan1": 1,
        "/orphan2": 1,
    }
    assert sorted(records) == sorted(u(p) for p in ("/", "/a", "/orphan1", "/orphan2"))
    assert records[u("/orphan1")]["parent"] == u("/sm1.xml") and records[u("/orphan1")]["depth"] == 0
    assert summary["sitemaps_read"] == 3
    assert summary["skipped_by_reason"] == {"robots.txt disallows": 1} and summary["reconciled"]


def test_without_robots_sitemaps_the_conventional_sitemap_xml_is_read(tmp_path):
    with SiteServer() as server:
        server.routes.update(
            {
                "/": page("Home"),
                "/sitemap.xml": Route(_urlset(server.url("/b")), content_type="text/xml"),
                "/b": page("B"),
            }
        )
        summary, records = run_crawl(tmp_path, server.url("/"), sitemaps=True)
        hits = dict(server.hits)
    assert hits == {"/robots.txt": 1, "/sitemap.xml": 1, "/": 1, "/b": 1}
    assert summary["pages"] == 2 and summary["sitemaps_read"] == 1


def test_C17_a_redirect_to_another_in_scope_host_checks_that_hosts_robots_txt_first(tmp_path):
    with SiteServer() as other, SiteServer() as server:
        other.routes.update(
            {
                "/robots.txt": Route("User-agent: *\nDisallow: /private\n", content_type=ROBOTS),
                "/landing": page("Landing"),
                "/private/x": page("Private"),
            }
        )
        server.routes.update(
            {
                "/": page("Home", "/go", "/go-private"),
                "/go": Route("", 302, {"Location": other.url("/landing")}, content_type=None),
                "/go-private": Route("", 302, {"Location": other.url("/private/x")}, content_type=None),
            }
        )
        summary, records = run_crawl(tmp_path, server.url("/"), allow_domains=("127.0.0.1",))
        other_hits, times = dict(other.hits), other.times
    assert other_hits == {"/robots.txt": 1, "/landing": 1}  # robots.txt first, the disallowed never
    assert times["/robots.txt"][0] < times["/landing"][0]
    assert records[server.url("/go-private")]["final_url"] == other.url("/private/x")
    assert summary["skipped_by_reason"] == {"robots.txt disallows": 1} and summary["reconciled"]


def test_robots_txt_redirects_to_another_origin_follow_its_politeness(tmp_path):
    """Many sites whose robots.txt redirects to one shared host: the shared file is
    fetched once, under that host's politeness (never two requests at once there), and
    its rules apply to every site that redirected to it."""
    central = SiteServer(
        {"/central-robots.txt": Route("User-agent: *\nDisallow: /private\n", content_type=ROBOTS, delay_s=0.05)}
    )
    sites = [
        SiteServer({"/": Route('<a href="/a">a</a> <a href="/private/x">x</a>'), "/a": Route("<p>a</p>")})
        for _ in range(5)
    ]
    with central, contextlib.ExitStack() as stack:
        for site in sites:
            stack.enter_context(site)
            site.routes["/robots.txt"] = redirect(central.url("/central-robots.txt"))
        summary = crawl(
            CrawlConfig(
                seeds=tuple(s.url("/") for s in sites),
                out_dir=str(tmp_path / "out"),
                workers=2,
                threads=4,
                progress_interval_s=60.0,
            )
        )
        # the shared host's own robots.txt first (a task of its origin), then the file once
        assert central.hits == {"/robots.txt": 1, "/central-robots.txt": 1}
        assert central.max_concurrent == 1
        for site in sites:
            assert dict(site.hits) == {"/robots.txt": 1, "/": 1, "/a": 1}
    assert summary["visited"] == 10 and summary["skipped_by_reason"] == {"robots.txt disallows": 5}
