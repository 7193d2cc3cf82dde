"""The hostile-server suite: one site on 127.0.0.1 that mixes every kind of bad server
behaviour a crawl meets overnight. The crawl must end on its own within its limits, with
the books balanced, one GET per page (retries aside), robots.txt read once and obeyed,
the per-host cap never exceeded, and every page the site serves correctly recorded."""

from __future__ import annotations

import gzip
import time
import zlib

from tests.helpers.crawlutil import read_edges, run_crawl
from tests.helpers.siteserver import Route, Sequence, SiteServer, page, redirect

PER_HOST = 4
LONG = "/long/" + "a" * 400


class HostileSite(SiteServer):
    """Routes, plus two endless families: /loop/N redirects to /loop/N+1 and
    /cal?m=N is a calendar page linking to the next month."""

    def lookup(self, target):
        if target.startswith("/loop/"):
            return redirect(f"/loop/{int(target[6:]) + 1}", 302)
        if target.startswith("/cal?m="):
            n = int(target[7:])
            return page(f"Month {n}", f"/cal?m={n + 1}")
        return super().lookup(target)


def hostile_routes(elsewhere: str) -> dict[str, Route]:
    many = "".join(f'<a href="#s{i}">s</a><a href="http://external.invalid/p{i}">e</a>' for i in range(5000))
    links = [
        "/drip",
        "/reset",
        "/huge",
        "/loop/0",
        "/elsewhere",
        "/rel",
        "/refresh",
        "/canon",
        "/notype",
        "/notype-text",
        "/binary",
        "/bad-utf8",
        "/charset-header",
        "/charset-bom",
        "/gzip",
        "/deflate",
        "/malformed",
        "/empty",
        "/error500",
        "/many",
        "/cal?m=0",
        "/dup1",
        "/dup2",
        LONG,
        "/busy",
        "/secret",
    ]
    duplicate = "<html><body><h1>Same</h1><p>Same words.</p></body></html>"
    return {
        "/robots.txt": Route("User-agent: *\nDisallow: /secret\n", content_type="text/plain"),
        "/": page("Home", *links),
        "/secret": page("Secret"),
        "/drip": Route("<p>" + "x" * 200 + "</p>", drip_s=0.05),
        "/reset": Route("<p>" + "r" * 5000 + "</p>", reset_after=100),
        "/huge": Route("<p>" + "y" * 600_000 + "</p>"),
        "/elsewhere": redirect(elsewhere, 302),
        "/rel": redirect("sub/target", 302),
        "/sub/target": page("Target"),
        "/refresh": page("Refresh", head='<meta http-equiv="refresh" content="0; url=/refreshed">'),
        "/refreshed": page("Refreshed"),
        "/canon": page("Canon", head='<link rel="Canonical" href="/">'),
        "/notype": Route("<!doctype html><title>NT</title><p>no type</p>", content_type=None),
        "/notype-text": Route("just some text", content_type=None),
        "/binary": Route(bytes(range(256)) * 4),
        "/bad-utf8": Route(b"<p>caf\xe9 \xff</p>"),
        "/charset-header": Route(
            b'<meta charset="utf-8"><p>caf\xe9 header</p>', content_type="text/html; charset=windows-1252"
        ),
        "/charset-bom": Route(b"\xef\xbb\xbf<p>caf\xc3\xa9 bom</p>", content_type="text/html; charset=iso-8859-1"),
        "/gzip": Route(gzip.compress(b"<p>zipped</p>"), headers={"Content-Encoding": "gzip"}),
        "/deflate": Route(zlib.compress(b"<p>deflated</p>"), headers={"Content-Encoding": "deflate"}),
        "/malformed": Route("<html><body><p>unclosed <b>bold <table><tr><td>cell"),
        "/empty": Route(""),
        "/error500": Route("oops", 500),
        "/many": Route(f"<html><body>{many}</body></html>"),
        "/dup1": Route(duplicate),
        "/dup2": Route(duplicate),
        "/busy": Sequence(Route("slow down", 429, {"Retry-After": "1"}), page("Busy")),
    }


def test_hostile_site_books_balance_and_nothing_served_correctly_is_lost(tmp_path):
    with SiteServer({"/landing": page("Landing")}) as other, HostileSite() as server:
        server.routes.update(hostile_routes(other.url("/landing")))
        started = time.monotonic()
        summary, records = run_crawl(
            tmp_path,
            server.url("/"),
            workers=2,
            threads=4,
            per_host=PER_HOST,
            retries=1,
            retry_base_s=0.05,
            total_timeout_s=1.0,
            read_timeout_s=0.5,
            max_body_bytes=500_000,
            max_redirects=5,
            max_query_variants=5,
            max_url_length=300,
        )
        wall = time.monotonic() - started
        hits, max_concurrent = dict(server.hits), server.max_concurrent
        other_hits = dict(other.hits)
    u = server.url

    # terminated on its own, within its limits (two 1 s drips, one 1 s Retry-After)
    assert wall < 30
    # the server's log
    assert hits.pop("/robots.txt") == 1
    assert "/secret" not in hits
    retried = {"/drip": 2, "/reset": 2, "/error500": 2, "/busy": 2}
    assert {p: n for p, n in hits.items() if n != 1} == retried
    assert max_concurrent <= PER_HOST
    assert other_hits == {}  # a redirect out of scope is an edge, not a fetch

    def outcome(path):
        r = records[u(path)]
        kind = (
            "failed"
            if r["error"]
            else "redirect"
            if r["final_url"] != r["url"]
            else "page"
            if r["markdown"] is not None or r["duplicate_of"]
            else "non_html"
        )
        return kind, r["error"]

    expected = {
        "/": ("page", None),
        "/drip": ("failed", "timeout"),
        "/huge": ("page", None),
        "/elsewhere": ("redirect", None),
        "/rel": ("redirect", None),
        "/sub/target": ("page", None),
        "/refresh": ("page", None),
        "/refreshed": ("page", None),
        "/canon": ("page", None),
        "/notype": ("page", None),
        "/notype-text": ("non_html", None),
        "/binary": ("non_html", None),
        "/bad-utf8": ("page", None),
        "/charset-header": ("page", None),
        "/charset-bom": ("page", None),
        "/gzip": ("page", None),
        "/deflate": ("page", None),
        "/malformed": ("page", None),
        "/empty": ("page", None),
        "/error500": ("failed", "http 500"),
        "/many": ("page", None),
        "/dup1": ("page", None),
        "/dup2": ("page", None),
        "/busy": ("page", None),
        **{f"/loop/{i}": ("redirect", None) for i in range(5)},
        "/loop/5": ("failed", "too many redirects"),
        **{f"/cal?m={i}": ("page", None) for i in range(5)},
    }
    reset = records[u("/reset")]
    assert reset["error"] in ("incomplete body", "connection") and reset["attempts"] == 2
    assert {p: outcome(p) for p in expected} == expected
    assert sorted(records) == sorted([u(p) for p in expected] + [u("/reset")])

    # what each page recorded
    assert records[u("/huge")]["truncated"] is True and records[u("/huge")]["bytes"] == 500_000
    assert records[u("/bad-utf8")]["markdown"] == "caf\ufffd \ufffd"
    assert records[u("/charset-header")]["markdown"] == "café header"  # header beats <meta>
    assert records[u("/charset-bom")]["markdown"] == "café bom"  # BOM beats the header
    assert records[u("/gzip")]["markdown"] == "zipped"
    assert records[u("/deflate")]["markdown"] == "deflated"
    # the parser puts the table inside the unclosed <b>: emphasis around a block is unwrapped
    assert records[u("/malformed")]["markdown"] == "unclosed bold\n\n| cell |\n| --- |"
    assert records[u("/empty")]["markdown"] == ""
    assert records[u("/canon")]["canonical"] == u("/")
    assert records[u("/rel")]["final_url"] == u("/sub/target")
    assert records[u("/elsewhere")]["final_url"] == other.url("/landing")
    assert records[u("/busy")]["attempts"] == 2 and records[u("/busy")]["status"] == 200
    first, second = sorted((records[u(p)] for p in ("/dup1", "/dup2")), key=lambda r: r["duplicate_of"] is not None)
    assert first["markdown"] == "# Same\n\nSame words." and first["duplicate_of"] is None
    assert second["markdown"] is None and second["duplicate_of"] == first["url"]
    assert second["fingerprint"] == first["fingerprint"]

    edges = read_edges(str(tmp_path / "out"))
    assert (u("/refresh"), u("/refreshed"), "link", "1") in edges
    assert sum(1 for s, t, _, _ in edges if s == u("/many")) == 5001  # 5,000 external + itself

    # the books
    assert summary["skipped_by_reason"] == {"robots.txt disallows": 1, "query variants": 1, "url too long": 1}
    assert summary["failed_by_reason"] == {"timeout": 1, reset["error"]: 1, "http 500": 1, "too many redirects": 1}
    assert summary["duplicates"] == 1 and summary["retries"] == 4
    assert summary["claimed"] == summary["visited"] + summary["failed"] + summary["skipped"]
    assert summary["claimed"] == len(records) + 3 and summary["reconciled"]
