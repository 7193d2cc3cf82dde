"""End-to-end crawls of generated sites with known graphs, on 127.0.0.1."""

from __future__ import annotations

import os

import psutil
import pytest

from tests.helpers.crawlutil import read_edges, run_crawl
from tests.helpers.siteserver import Route, SiteServer, page, redirect

START_METHODS = ("fork", "spawn", "forkserver")


def crawl_children() -> list[psutil.Process]:
    """Child processes still alive, less multiprocessing's own per-interpreter helpers
    (the forkserver and the resource tracker live until the interpreter exits)."""
    helpers = ("resource_tracker", "forkserver")
    return [
        p for p in psutil.Process().children(recursive=True) if not any(h in " ".join(p.cmdline()) for h in helpers)
    ]


def known_site(server: SiteServer) -> None:
    """A site whose every link spelling, redirect and failure is known in advance."""
    port = server.port
    server.routes.update(
        {
            "/": page(
                "Home",
                "a.html",
                "a.html#section",
                f"http://127.0.0.1:{port}/./c/../a.html",
                f"HTTP://127.0.0.1:{port}/a.html",
                "b.html?y=2&x=1",
                "b.html?x=1&y=2",
                "q?a=1&b=2",
                "/dead.html",
                "/old",
                "/old2",
                "/docs",
                "/loop1",
                "/file.pdf",
                "/sub/",
                "http://external.invalid/x",
                "http://127.0.0.1:80/x",
                "mailto:someone@example.org",
                "javascript:void(0)",
            ),
            "/a.html": Route(
                "<html><head><title>Page A</title></head><body><h1>A</h1>"
                "<p>Back <a href=\"/\">home</a> or to <a href=\"b.html?x=1&amp;y=2\">B</a>.</p>"
                "<script>var secret = 1;</script><style>p {color: red}</style>"
                "</body></html>"
            ),
            "/b.html?x=1&y=2": page("B", "/sub/page.html", "/"),
            "/b.html?y=2&x=1": page("B", "/sub/page.html", "/"),
            "/q?a=1&b=2": redirect("/q?b=2&a=1", 301),  # the server's own parameter order
            "/q?b=2&a=1": page("Q"),
            "/old": redirect("/a.html", 301),
            "/old2": redirect(f"http://127.0.0.1:{port}/a.html", 302),
            "/docs": redirect("/docs/", 301),
            "/docs/": page("Docs", "/docs", "../a.html"),
            "/loop1": redirect("/loop2", 302),
            "/loop2": redirect("/loop1", 302),
            "/file.pdf": Route(b"%PDF-1.4 fake", content_type="application/pdf"),
            "/sub/": page("Sub", "leaf.html", head='<base href="/sub/deeper/">'),
            "/sub/deeper/leaf.html": page("Leaf", "../../a.html", "../../sub/"),
            "/sub/page.html": page("Sub page", "./", "page.html"),
        }
    )


EXPECTED_OUTCOMES = {
    "/": ("page", 200, None),
    "/a.html": ("page", 200, None),
    "/b.html?x=1&y=2": ("page", 200, None),
    "/q?a=1&b=2": ("page", 200, None),
    "/dead.html": ("failed", 404, "http 404"),
    "/old": ("redirect", 301, None),
    "/old2": ("redirect", 302, None),
    "/docs": ("redirect", 301, None),
    "/docs/": ("page", 200, None),
    "/loop1": ("redirect", 302, None),
    "/loop2": ("failed", 302, "redirect loop"),
    "/file.pdf": ("non_html", 200, None),
    "/sub/": ("page", 200, None),
    "/sub/deeper/leaf.html": ("page", 200, None),
    "/sub/page.html": ("page", 200, None),
}


#: Requests expected at the server: robots.txt once, before any page (RFC 9309; a 404
#: here: all allowed), one per key, sent as the link was written, plus the one extra GET
#: for /q's redirect to the server's own spelling of the same URL.
EXPECTED_HITS = {
    **{path: 1 for path in EXPECTED_OUTCOMES if path != "/b.html?x=1&y=2"},
    "/b.html?y=2&x=1": 1,
    "/q?b=2&a=1": 1,
    "/robots.txt": 1,
}


def outcome_of(record: dict) -> str:
    if record["error"]:
        return "failed"
    if record["final_url"] != record["url"]:
        return "redirect"
    return "page" if record["markdown"] is not None else "non_html"


@pytest.mark.parametrize("start_method", START_METHODS)
def test_known_graph_exact_pages_and_one_get_each(tmp_path, start_method):
    with SiteServer() as server:
        known_site(server)
        summary, records = run_crawl(tmp_path, server.url("/"), start_method=start_method)
        hits = dict(server.hits)
    base = server.url("")
    assert {url: (outcome_of(r), r["status"], r["error"]) for url, r in records.items()} == {
        base + path: outcome for path, outcome in EXPECTED_OUTCOMES.items()
    }
    assert hits == EXPECTED_HITS
    assert summary["claimed"] == 15 and summary["reconciled"] is True
    assert (summary["visited"], summary["failed"], summary["skipped"]) == (13, 2, 0)
    assert (summary["pages"], summary["redirects"], summary["non_html"]) == (8, 4, 1)
    assert summary["failed_by_reason"] == {"http 404": 1, "redirect loop": 1}
    assert summary["start_method"] == start_method
    assert crawl_children() == []  # fetchers and manager joined

    # redirects: final URL normalized and claimed; two URLs redirecting to one page, one page
    assert records[base + "/old"]["final_url"] == base + "/a.html"
    assert records[base + "/old2"]["final_url"] == base + "/a.html"
    assert records[base + "/docs"]["final_url"] == base + "/docs/"
    assert records[base + "/loop2"]["redirect_chain"] == [base + "/loop1"]
    # the query is sent as written; the key sorts it; the server's own order is followed
    assert records[base + "/b.html?x=1&y=2"]["request_url"] == base + "/b.html?y=2&x=1"
    assert records[base + "/q?a=1&b=2"]["request_url"] == base + "/q?b=2&a=1"
    assert records[base + "/q?a=1&b=2"]["title"] == "Q"
    # depth and parent: a redirect target keeps the redirecting URL's depth
    assert (records[base + "/docs/"]["depth"], records[base + "/docs/"]["parent"]) == (1, base + "/docs")
    assert records[base + "/sub/deeper/leaf.html"]["depth"] == 2
    assert records[base + "/sub/deeper/leaf.html"]["parent"] == base + "/sub/"

    a = records[base + "/a.html"]
    assert a["title"] == "Page A"
    assert a["markdown"] == f"# A\n\nBack [home]({base}/) or to [B]({base}/b.html?x=1&y=2)."
    assert a["request_url"] == base + "/a.html"
    assert len(a["fingerprint"]) == 16 and a["content_type"] == "text/html; charset=utf-8"
    assert a["fetched_at"].endswith("Z") and a["elapsed_ms"] >= 0

    edges = read_edges(str(tmp_path / "out"))
    assert (base + "/", "http://external.invalid/x", "link", "0") in edges
    assert (base + "/", "http://127.0.0.1/x", "link", "0") in edges  # :80 dropped: other site
    assert (base + "/docs", base + "/docs/", "redirect", "1") in edges
    assert (base + "/a.html", base + "/", "link", "1") in edges  # a cycle, kept
    assert not any(t.startswith(("mailto:", "javascript:")) for _, t, _, _ in edges)

    with open(tmp_path / "out" / "tree.txt", encoding="utf-8") as f:
        tree = f.read().splitlines()
    assert sorted(line.strip() for line in tree) == sorted(records)
    assert tree[0] == base + "/"


def test_every_page_links_to_every_other_page_eight_fetchers(tmp_path):
    count = 60
    with SiteServer() as server:
        server.routes.update(
            {f"/p{i}.html": page(f"P{i}", *(f"/p{j}.html" for j in range(count))) for i in range(count)}
        )
        summary, records = run_crawl(tmp_path, server.url("/p0.html"), workers=8, threads=2)
        hits = dict(server.hits)
    assert hits == {"/robots.txt": 1, **{f"/p{i}.html": 1 for i in range(count)}}
    assert sorted(records) == sorted(server.url(f"/p{i}.html") for i in range(count))
    assert summary["pages"] == count and summary["claimed"] == count and summary["reconciled"]
    roles = summary["processes"]
    assert {role: row["processes"] for role, row in roles.items() if role != "other"} == {
        "dispatcher": 1,
        "manager": 1,
        "fetcher": 8,
    }  # other: resource tracker, forkserver
    assert all(row["peak_rss_bytes"] > 2**20 for row in roles.values()), roles
    assert roles["fetcher"]["cpu_s"] > 0  # CPU times tick at 10 ms: the manager may read 0
    assert abs(sum(row["cpu_s"] for row in roles.values()) - summary["cpu_s"]) < 0.05


def chain_site(server: SiteServer, length: int) -> None:
    """Pages /0 .. /length-1, each linking to the next two."""
    server.routes.update({f"/{i}": page(str(i), f"/{i + 1}", f"/{i + 2}") for i in range(length)})


def test_max_pages_is_exact_and_the_rest_is_skipped(tmp_path):
    with SiteServer() as server:
        chain_site(server, 40)
        summary, records = run_crawl(tmp_path, server.url("/0"), max_pages=5, workers=2, threads=4)
        hits = dict(server.hits)
    assert hits.pop("/robots.txt") == 1
    assert len(records) == 5 and sum(hits.values()) == 5 and set(hits.values()) == {1}
    assert summary["skipped"] >= 1 and summary["skipped_by_reason"] == {"max-pages": summary["skipped"]}
    assert summary["claimed"] == 5 + summary["skipped"] and summary["reconciled"]
    with open(tmp_path / "out" / "skipped.tsv", encoding="utf-8") as f:
        header, *rows = f.read().splitlines()
    assert header == "url\tdepth\tparent\treason" and len(rows) == summary["skipped"]
    assert {row.split("\t")[0] for row in rows}.isdisjoint(records)


def test_max_depth_limits_link_distance(tmp_path):
    with SiteServer() as server:
        chain_site(server, 20)
        summary, records = run_crawl(tmp_path, server.url("/0"), max_depth=2)
        hits = dict(server.hits)
    # depth 0: /0; depth 1: /1 /2; depth 2: /3 /4 (via /2 and /3 ... /3 is depth 2 via /1)
    assert sorted(hits) == ["/0", "/1", "/2", "/3", "/4", "/robots.txt"]
    assert {r["depth"] for r in records.values()} == {0, 1, 2}
    assert summary["pages"] == 5 and summary["skipped"] == 0 and summary["reconciled"]


def test_a_page_that_breaks_nothing_else(tmp_path):
    """Malformed HTML, an empty 200, binary bytes as text/html: recorded (the binary
    one without Markdown), the crawl goes on."""
    with SiteServer() as server:
        server.routes.update(
            {
                "/": page("Home", "/broken", "/empty", "/binary", "/ok"),
                "/broken": Route("<html><body><p>unclosed <b>bold <a href='/ok'>ok<table><tr><td>x"),
                "/empty": Route(""),
                "/binary": Route(bytes(range(256)) * 4),
                "/ok": page("OK"),
            }
        )
        summary, records = run_crawl(tmp_path, server.url("/"))
        hits = dict(server.hits)
    assert hits == {"/": 1, "/broken": 1, "/empty": 1, "/binary": 1, "/ok": 1, "/robots.txt": 1}
    assert (summary["pages"], summary["non_html"], summary["failed"]) == (4, 1, 0)
    assert records[server.url("/binary")]["markdown"] is None  # binary bytes: not HTML
    # the unclosed <b> holds the table as the parser repairs it: emphasis around a block
    # is unwrapped (crawler/content/fragment.py), its text kept
    assert records[server.url("/broken")]["markdown"] == f"unclosed bold [ok]({server.url('/ok')})\n\n| x |\n| --- |"
    assert records[server.url("/empty")]["markdown"] == ""


@pytest.mark.skipif(
    not os.path.isdir("/usr/share/doc/python-flask-doc/html"),
    reason="Debian's python-flask-doc is not installed (.ci/run installs it)",
)
def test_flask_doc_real_site(tmp_path):
    from tests.helpers.reachable import reachable_html_pages

    root = "/usr/share/doc/python-flask-doc/html"
    expected = reachable_html_pages(root, "index.html")
    with SiteServer(root=root) as server:
        summary, records = run_crawl(tmp_path, server.url("/index.html"), workers=2, threads=4)
        hits = dict(server.hits)
    pages = {url for url, r in records.items() if r["markdown"] is not None and not r["error"]}
    assert {server_path(url, server) for url in pages} == expected
    assert all(records[url]["markdown"].strip() for url in pages)
    assert set(hits.values()) == {1}
    assert summary["reconciled"] and summary["pages"] == len(expected)


def server_path(url: str, server: SiteServer) -> str:
    import urllib.parse

    return urllib.parse.unquote(urllib.parse.urlsplit(url).path).lstrip("/")


def test_C17_redirect_to_another_host_is_not_followed(tmp_path):
    """Conformance C17: scope applies to redirect targets, not only to links."""
    with SiteServer() as server:
        server.routes.update(
            {
                "/": page("Home", "/ads/click?id=9"),
                "/ads/click?id=9": redirect("http://www.example.org/landing", 302),
            }
        )
        summary, records = run_crawl(tmp_path, server.url("/"))
        hits = dict(server.hits)
    assert hits == {"/": 1, "/ads/click?id=9": 1, "/robots.txt": 1}
    click = records[server.url("/ads/click?id=9")]
    assert click["final_url"] == "http://www.example.org/landing" and click["error"] is None
    assert "http://www.example.org/landing" not in records
    assert (server.url("/ads/click?id=9"), "http://www.example.org/landing", "redirect", "0") in read_edges(
        str(tmp_path / "out")
    )
    assert (summary["claimed"], summary["redirects"], summary["reconciled"]) == (2, 1, True)


def test_a_redirect_loop_between_separately_found_urls_is_reported(tmp_path):
    """/ra -> /rb and /rb -> /ra, both linked from the seed: whichever fetcher sees each
    hop finds the target already claimed; the summary names the cycle."""
    with SiteServer() as server:
        server.routes.update(
            {"/": page("Home", "/ra", "/rb"), "/ra": redirect("/rb", 302), "/rb": redirect("/ra", 302)}
        )
        summary, records = run_crawl(tmp_path, server.url("/"), workers=2, threads=1)
        hits = dict(server.hits)
    assert hits == {"/": 1, "/ra": 1, "/rb": 1, "/robots.txt": 1}
    assert summary["redirect_cycles"] == [[server.url("/ra"), server.url("/rb")]]
    assert summary["reconciled"]


def test_an_empty_query_is_another_url_and_a_seed_keeps_its_query_order(tmp_path):
    with SiteServer() as server:
        server.routes.update(
            {
                "/s?b=1&a=2": page("Seed", "/p", "/p?", "/self"),
                "/p": page("P"),
                "/p?": page("P with empty query"),
                "/self": redirect("/self#again", 301),
            }
        )
        summary, records = run_crawl(tmp_path, server.url("/s?b=1&a=2"))
        hits = dict(server.hits)
    assert hits == {"/s?b=1&a=2": 1, "/p": 1, "/p?": 1, "/self": 1, "/robots.txt": 1}
    assert records[server.url("/s?a=2&b=1")]["request_url"] == server.url("/s?b=1&a=2")
    assert records[server.url("/p?")]["title"] == "P with empty query"
    assert records[server.url("/self")]["error"] == "redirect loop"
    assert summary["redirect_cycles"] == []  # caught in its chain, not reported twice
