"""The per-site report (crawler/output/sites.py): counts from records and skips, and sites.tsv's
exact rows after a crawl of three sites on 127.0.0.1 and after a --max-pages stop and a
resume."""

from __future__ import annotations

import contextlib
import json
import os

import pytest

from crawler.api import crawl
from crawler.config import CrawlConfig
from crawler.output.sites import COLUMNS, SiteCounts, site_counts, site_rows
from crawler.web.robots import RobotsRules
from tests.helpers.crawlutil import read_records
from tests.helpers.siteserver import Route, SiteServer, redirect


def record(
    url: str,
    *,
    final_url: str | None = None,
    markdown: str | None = "text",
    error: str | None = None,
    nbytes: int = 10,
    at: str = "2024-05-01T10:00:00.000Z",
    duplicate_of: str | None = None,
) -> dict:
    return {
        "url": url,
        "final_url": final_url or url,
        "markdown": markdown,
        "error": error,
        "bytes": nbytes,
        "fetched_at": at,
        "duplicate_of": duplicate_of,
    }


def test_site_counts_by_origin_and_outcome():
    records = [
        record("http://a.example/", at="2024-05-01T10:00:02.000Z"),
        record("http://a.example/dup", markdown=None, duplicate_of="http://a.example/", nbytes=5),
        record("http://a.example/f.pdf", markdown=None, nbytes=100, at="2024-05-01T09:59:59.500Z"),
        record("http://a.example/old", final_url="http://a.example/", markdown=None, nbytes=0),
        record("http://a.example/gone", markdown=None, error="http 404", nbytes=9, at="2024-05-01T10:00:03.250Z"),
        record("https://a.example/", nbytes=1),  # https: another origin
        record("http://a.example:8080/x", nbytes=2),  # another port: another origin
    ]
    skipped = ["http://a.example/private", "http://c.example/", "http://c.example/x"]
    sites = site_counts(records, skipped)
    assert sites == {
        "http://a.example": SiteCounts(
            pages=2,
            non_html=1,
            redirects=1,
            failed=1,
            skipped=1,
            bytes=124,
            first_fetch="2024-05-01T09:59:59.500Z",
            last_fetch="2024-05-01T10:00:03.250Z",
        ),
        "https://a.example": SiteCounts(
            pages=1, bytes=1, first_fetch="2024-05-01T10:00:00.000Z", last_fetch="2024-05-01T10:00:00.000Z"
        ),
        "http://a.example:8080": SiteCounts(
            pages=1, bytes=2, first_fetch="2024-05-01T10:00:00.000Z", last_fetch="2024-05-01T10:00:00.000Z"
        ),
        "http://c.example": SiteCounts(skipped=2),
    }
    robots = {"http://a.example": "404", "http://a.example:8080": "unreachable (timeout)"}
    assert site_rows(sites, robots) == [
        ("http://a.example", 2, 1, 1, 1, 1, "404", 124, "2024-05-01T09:59:59.500Z", "2024-05-01T10:00:03.250Z"),
        (
            "http://a.example:8080",
            1,
            0,
            0,
            0,
            0,
            "unreachable (timeout)",
            2,
            "2024-05-01T10:00:00.000Z",
            "2024-05-01T10:00:00.000Z",
        ),
        ("http://c.example", 0, 0, 0, 0, 2, "-", 0, "-", "-"),
        ("https://a.example", 1, 0, 0, 0, 0, "-", 1, "2024-05-01T10:00:00.000Z", "2024-05-01T10:00:00.000Z"),
    ]
    assert [row[6] for row in site_rows(sites, robots, obey_robots=False)] == ["ignored"] * 4


@pytest.mark.parametrize(
    "status, body, error, expected",
    [
        (200, b"User-agent: *\nDisallow: /x\n", None, "200"),
        (404, None, None, "404"),
        (410, None, None, "410"),
        (301, None, None, "301"),  # still a redirect after the limit: all allowed
        (503, None, None, "unreachable (http 503)"),
        (429, None, None, "unreachable (http 429)"),
        (None, None, "timeout", "unreachable (timeout)"),
        (None, None, None, "unreachable (network error)"),
    ],
)
def test_robots_status_line(status, body, error, expected):
    assert RobotsRules.from_response(status, body, error).status_line() == expected
    assert RobotsRules.allow_all().status_line() == "ignored"


# -- three sites on 127.0.0.1 -------------------------------------------------------------


def html(title: str, *hrefs: str) -> str:
    links = "".join(f'<a href="{h}">{h}</a> ' for h in hrefs)
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{links}</p></body></html>"


PDF = b"%PDF-1.4 not really"
NOT_FOUND = "<h1>not found</h1>"  # siteserver's 404 body


def site_a(delay_s: float = 0.0) -> dict:
    """robots.txt 404; 4 pages (a chain /, /a1, /a2, /a3), a PDF, a redirect, a 404."""
    return {
        "/": Route(html("A", "/a1", "/file.pdf", "/old", "/missing"), delay_s=delay_s),
        "/a1": Route(html("A1", "/a2"), delay_s=delay_s),
        "/a2": Route(html("A2", "/a3"), delay_s=delay_s),
        "/a3": Route(html("A3", "/"), delay_s=delay_s),
        "/file.pdf": Route(PDF, content_type="application/pdf"),
        "/old": redirect("/a1"),
    }


def site_b() -> dict:
    """robots.txt disallows /private; 2 pages and the disallowed link."""
    return {
        "/robots.txt": Route("User-agent: *\nDisallow: /private\n", content_type="text/plain"),
        "/": Route(html("B", "/b", "/private")),
        "/b": Route(html("Bb")),
    }


def site_c() -> dict:
    """robots.txt answers 503: with --retries 0 the origin is unreachable, its seed skipped."""
    return {"/robots.txt": Route("busy", 503, content_type="text/plain"), "/": Route(html("C"))}


def body_bytes(routes: dict, *paths: str) -> int:
    return sum(len(routes[p].body) if p in routes else len(NOT_FOUND) for p in paths)


@contextlib.contextmanager
def three_sites(delay_s: float = 0.0):
    with SiteServer(site_a(delay_s)) as a, SiteServer(site_b()) as b, SiteServer(site_c()) as c:
        yield a, b, c


def run(out: str, servers, **settings) -> dict:
    seeds = tuple(s.url("/") for s in servers)
    settings = {"workers": 2, "threads": 2, "retries": 0, "progress_interval_s": 60.0, **settings}
    summary = crawl(CrawlConfig(seeds=seeds, out_dir=out, **settings))
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
        assert json.load(f) == summary
    return summary


def read_sites(out: str) -> list[list[str]]:
    with open(os.path.join(out, "sites.tsv"), encoding="utf-8") as f:
        header, *rows = f.read().splitlines()
    assert header.split("\t") == list(COLUMNS)
    return [row.split("\t") for row in rows]


def expected_rows(out: str, a: SiteServer, b: SiteServer, c: SiteServer) -> list[list[str]]:
    """The exact rows of the three sites; fetch times are those of the records."""
    records = read_records(out)
    times = {}
    for server in (a, b, c):
        at = [r["fetched_at"] for url, r in records.items() if url.startswith(server.base + "/")]
        times[server.base] = [min(at), max(at)] if at else ["-", "-"]
    rows = {
        a.base: [
            a.base,
            "4",
            "1",
            "1",
            "1",
            "0",
            "404",
            str(body_bytes(a.routes, "/", "/a1", "/a2", "/a3", "/file.pdf", "/old", "/missing")),
            *times[a.base],
        ],
        b.base: [b.base, "2", "0", "0", "0", "1", "200", str(body_bytes(b.routes, "/", "/b")), *times[b.base]],
        c.base: [c.base, "0", "0", "0", "0", "1", "unreachable (http 503)", "0", "-", "-"],
    }
    return [rows[origin] for origin in sorted(rows)]


def test_sites_tsv_of_three_sites(tmp_path):
    out = str(tmp_path / "out")
    with three_sites() as (a, b, c):
        summary = run(out, (a, b, c))
        hits = [dict(s.hits) for s in (a, b, c)]
    assert hits == [
        {"/robots.txt": 1, "/": 1, "/a1": 1, "/a2": 1, "/a3": 1, "/file.pdf": 1, "/old": 1, "/missing": 1},
        {"/robots.txt": 1, "/": 1, "/b": 1},
        {"/robots.txt": 1},
    ]  # every seed's site in scope; C never past robots.txt
    assert read_sites(out) == expected_rows(out, a, b, c)
    assert (summary["pages"], summary["non_html"], summary["redirects"], summary["failed"], summary["skipped"]) == (
        6,
        1,
        1,
        1,
        2,
    )
    assert (summary["sites"], summary["sites_done"], summary["reconciled"]) == (3, 3, True)
    with open(os.path.join(out, "tree.txt"), encoding="utf-8") as f:
        assert f.readline() == a.url("/") + "\n"  # the first seed is the tree's root


def test_sites_tsv_covers_a_stopped_crawl_and_its_resume(tmp_path):
    out = str(tmp_path / "out")
    # A is slow (1 s a page, a chain of links): --max-pages 4 stops the first run in A,
    # after B (2 pages, 1 skip) and C (robots.txt unreachable) are done.
    with three_sites(delay_s=1.0) as (a, b, c):
        first = run(out, (a, b, c), max_pages=4)
        rows = {row[0]: row for row in read_sites(out)}
        assert rows[b.base][1:7] == ["2", "0", "0", "0", "1", "200"]
        assert rows[c.base][1:7] == ["0", "0", "0", "0", "1", "unreachable (http 503)"]
        assert int(rows[a.base][1]) < 4 and int(rows[a.base][5]) > 0  # A: cut, its rest skipped
        assert (first["sites"], first["sites_done"]) == (3, 2)  # A has URLs left
        second = run(out, (a, b, c))
        hits = [dict(s.hits) for s in (a, b, c)]
    # B and C were not asked for robots.txt again: their status comes from the state file
    assert hits[1]["/robots.txt"] == 1 and hits[2] == {"/robots.txt": 1}
    assert hits[0]["/robots.txt"] == 2  # A's: once per run
    assert all(n == 1 for path, n in hits[0].items() if path != "/robots.txt")
    assert read_sites(out) == expected_rows(out, a, b, c)
    assert (second["sites"], second["sites_done"], second["reconciled"]) == (3, 3, True)
    assert (second["pages"], second["skipped"]) == (6, 2)


def test_ignore_robots_says_so_for_every_site(tmp_path):
    out = str(tmp_path / "out")
    with SiteServer(site_b()) as b, SiteServer(site_c()) as c:
        run(out, (b, c), obey_robots=False)
    rows = read_sites(out)
    assert [(row[0], row[1], row[4], row[5], row[6]) for row in rows] == sorted(  # /private 404s
        [(b.base, "2", "1", "0", "ignored"), (c.base, "1", "0", "0", "ignored")]
    )


def test_a_site_at_its_page_limit_is_done(tmp_path):
    out = str(tmp_path / "out")
    with SiteServer(site_a()) as a, SiteServer(site_b()) as b:
        summary = run(out, (a, b), max_pages_per_site=2)
    rows = {row[0]: row for row in read_sites(out)}
    assert rows[a.base][1:7] == ["2", "0", "0", "0", "4", "404"]  # /, /a1; 4 links left
    assert rows[b.base][1:7] == ["2", "0", "0", "0", "1", "200"]  # /, /b; /private left
    # /private keeps its own reason: robots.txt disallows it, whatever the limit
    assert summary["skipped_by_reason"] == {"max-pages-per-site": 4, "robots.txt disallows": 1}
    assert (summary["sites"], summary["sites_done"]) == (2, 2)  # a resume would skip them again
