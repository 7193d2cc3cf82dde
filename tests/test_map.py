"""Map mode: ``python -m crawler map`` walks the site, converts nothing, sizes non-HTML
links with HEAD, writes map.json and tree.txt; a later crawl reuses the map's count."""

from __future__ import annotations

import collections
import glob
import json
import logging
import os
import subprocess
import sys

import pytest

from crawler.api import crawl, map_site
from crawler.config import CrawlConfig
from crawler.errors import ConfigError
from crawler.output.map_report import expected_urls, format_map, link_distances, section_of, tree_excerpt
from crawler.web.fetch import HttpClient
from crawler.web.probe import body_needed, head_decides, probably_not_html
from tests.helpers.crawlutil import read_records
from tests.helpers.siteserver import Route, SiteServer, page, redirect

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PDF = b"%PDF-1.4 " + b"x" * 991  # 1,000 bytes
ZIP = b"PK\x03\x04" + b"z" * 496  # 500 bytes


def serve_head(server: SiteServer, refused=()) -> collections.Counter:
    """Teach ``server`` HEAD (RFC 9110 §9.3.2: a GET's status and headers, no body),
    answering 405 for the paths in ``refused``; returns the HEAD requests by path."""
    heads: collections.Counter[str] = collections.Counter()

    def do_HEAD(handler):
        with server._lock:
            heads[handler.path] += 1
        route = server.lookup(handler.path)
        if handler.path in refused:
            route = Route(b"", 405, {"Allow": "GET"})
        elif route is None:
            route = Route("<h1>not found</h1>", 404)
        handler.send_response(route.status)
        for name, value in route.headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(route.body)))
        handler.end_headers()

    server.httpd.RequestHandlerClass.do_HEAD = do_HEAD  # this server's own handler class
    return heads


def mixed_site(server: SiteServer) -> None:
    server.routes.update(
        {
            "/robots.txt": Route("User-agent: *\nDisallow: /private/\n", content_type="text/plain"),
            "/": page(
                "Home",
                "a.html",
                "doc.pdf",
                "nohead.zip",
                "old",
                "missing.html",
                "fake.pdf",
                "sub/",
                "private/secret.html",
                "http://external.invalid/x",
                "http://other.invalid/y",
                "http://other.invalid/z",
            ),
            "/a.html": page("A", "/sub/", "http://other.invalid/y", "doc.pdf"),
            "/doc.pdf": Route(PDF, content_type="application/pdf"),
            "/nohead.zip": Route(ZIP, content_type="application/zip"),
            "/old": redirect("/moved.html"),
            "/moved.html": page("Moved"),
            "/fake.pdf": page("Not a PDF"),  # HTML behind a .pdf name: HEAD says so, GET reads it
            "/sub/": page("Sub", "deep.html"),  # HTML without an extension
            "/sub/deep.html": page("Deep", "../a.html"),
            "/private/secret.html": page("Secret"),
        }
    )


PAGES = ("/", "/a.html", "/moved.html", "/fake.pdf", "/sub/", "/sub/deep.html")


def html_bytes(server: SiteServer) -> int:
    return sum(len(server.routes[p].body) for p in PAGES)


def config(server, out, **settings) -> CrawlConfig:
    settings.setdefault("workers", 2)
    settings.setdefault("threads", 2)
    settings.setdefault("progress_interval_s", 60.0)
    return CrawlConfig(seeds=(server.url("/"),), out_dir=str(out), **settings)


def test_map_counts_exactly_and_the_crawl_writes_that_many_pages(tmp_path, caplog):
    out = tmp_path / "out"
    with SiteServer() as server:
        mixed_site(server)
        heads = serve_head(server, refused={"/nohead.zip"})
        report = map_site(config(server, out))
        map_gets, map_heads = dict(server.hits), dict(heads)
        server.hits.clear()
        heads.clear()
        with caplog.at_level(logging.INFO, logger="crawler"):
            summary = crawl(config(server, out))
        crawl_gets = dict(server.hits)
    site = f"127.0.0.1:{server.port}"
    assert {
        k: report[k]
        for k in (
            "pages",
            "urls",
            "outcomes",
            "skipped",
            "by_host",
            "by_section",
            "depth",
            "out_of_scope",
            "bytes_by_type",
            "unknown_size_by_type",
            "complete",
            "stopped",
        )
    } == {
        "pages": 6,
        "urls": 10,
        "outcomes": {"page": 6, "non_html": 2, "redirect": 1, "failed": 1},
        "skipped": 1,  # /private/secret.html: robots.txt
        "by_host": {site: 6},
        "by_section": {"/": 4, "/sub/": 2},
        "depth": {"0": 1, "1": 4, "2": 1},
        "out_of_scope": {"hosts": 2, "links": 4, "top": [["other.invalid", 3], ["external.invalid", 1]]},
        "bytes_by_type": {"application/pdf": 1000, "application/zip": 500, "text/html": html_bytes(server)},
        "unknown_size_by_type": {},
        "complete": True,
        "stopped": None,
    }
    assert report["seeds"] == [server.url("/")]
    with open(out / "map.json", encoding="utf-8") as f:
        assert json.load(f) == report
    # HEAD for the non-HTML file, never its GET; GET after a 405; HEAD then GET for HTML named .pdf
    assert map_heads == {"/doc.pdf": 1, "/nohead.zip": 1, "/fake.pdf": 1}
    assert map_gets == {
        "/robots.txt": 1,
        "/": 1,
        "/a.html": 1,
        "/nohead.zip": 1,
        "/old": 1,
        "/moved.html": 1,
        "/missing.html": 1,
        "/fake.pdf": 1,
        "/sub/": 1,
        "/sub/deep.html": 1,
    }
    # no Markdown anywhere in the map; its files in out/map, the tree in out
    records = read_records(str(out / "map"))
    assert len(records) == 10 and all(r["markdown"] is None for r in records.values())
    assert records[server.url("/doc.pdf")]["method"] == "HEAD"
    assert records[server.url("/nohead.zip")]["content_length"] == 500
    assert records[server.url("/nohead.zip")]["bytes"] == 0  # the body was never read
    with open(out / "tree.txt", encoding="utf-8") as f:
        tree = f.read()
    with open(out / "map" / "tree.txt", encoding="utf-8") as f:
        assert f.read() == tree
    assert tree.splitlines()[0] == server.url("/")
    assert sorted(line.strip() for line in tree.splitlines()) == sorted(
        server.url(p) for p in PAGES + ("/doc.pdf", "/nohead.zip", "/old", "/missing.html")
    )
    # the crawl: as many page records as the map's pages, the map's urls as its total
    crawled = read_records(str(out))
    assert sum(r["markdown"] is not None for r in crawled.values()) == summary["pages"] == 6
    assert summary["visited"] + summary["failed"] == report["urls"]
    assert f"progress total from {out / 'map.json'}: 10 URLs (6 pages)" in caplog.messages
    assert crawl_gets["/doc.pdf"] == 1 and crawl_gets["/nohead.zip"] == 1  # a crawl downloads them
    assert os.path.exists(out / "map.json")


def test_restart_of_a_crawl_keeps_the_map_and_another_scope_does_not_use_it(tmp_path, caplog):
    out = tmp_path / "out"
    with SiteServer() as server:
        mixed_site(server)
        serve_head(server)
        map_site(config(server, out))
        crawl(config(server, out, restart=True))
        assert os.path.exists(out / "map.json") and glob.glob(str(out / "map" / "pages-*.jsonl"))
        with caplog.at_level(logging.INFO, logger="crawler"):
            assert expected_urls(config(server, out, max_pages=4)) == 4
            assert expected_urls(config(server, out, exclude=("deep",))) is None
            assert expected_urls(config(server, out, max_depth=1)) is None
            assert expected_urls(config(server, out, max_pages_per_site=5)) is None
    assert caplog.messages[-3] == (
        f"{out / 'map.json'} not used for the progress total: it maps exclude [] , this crawl has ['deep']".replace(
            " ,", ","
        )
    )
    assert "it maps max_depth None, this crawl has 1" in caplog.messages[-2]
    assert "it maps max_pages_per_site None, this crawl has 5" in caplog.messages[-1]


def test_a_map_cut_by_max_pages_is_incomplete_and_not_reused(tmp_path, caplog):
    out = tmp_path / "out"
    with SiteServer() as server:
        mixed_site(server)
        serve_head(server)
        report = map_site(config(server, out, max_pages=3, workers=1, threads=1))
    assert (report["urls"], report["complete"]) == (3, False)
    assert "incomplete: cut by --max-pages" in format_map(report)
    with caplog.at_level(logging.INFO, logger="crawler"):
        assert expected_urls(config(server, out, max_pages=3)) is None
    assert "the map is incomplete" in caplog.messages[-1]


def test_a_server_without_head_gets_a_get_whose_body_is_not_read(tmp_path):
    """SiteServer without do_HEAD answers 501: the map falls back to GET, stops after
    the headers of the PDF, and still sizes it by Content-Length."""
    out = tmp_path / "out"
    with SiteServer() as server:
        mixed_site(server)
        report = map_site(config(server, out))
        gets = dict(server.hits)
    assert gets["/doc.pdf"] == 1 and gets["/nohead.zip"] == 1
    assert report["bytes_by_type"]["application/pdf"] == 1000
    records = read_records(str(out / "map"))
    assert (records[server.url("/doc.pdf")]["method"], records[server.url("/doc.pdf")]["bytes"]) == ("GET", 0)
    assert report["pages"] == 6


@pytest.mark.parametrize(
    "url, expected",
    [
        ("http://h/f.pdf", True),
        ("http://h/a.tar.gz?x=1", True),
        ("http://h/IMG.PNG#top", True),
        ("http://h/page", False),
        ("http://h/page.html", False),
        ("http://h/dir.pdf/", False),
        ("http://h.pdf", False),
        ("http://h/.zip", False),
        ("http://h/x.php?f=a.pdf", False),
    ],
)
def test_probably_not_html(url, expected):
    assert probably_not_html(url) is expected


def test_head_decides_only_a_2xx_non_html_answer():
    assert head_decides(200, "application/pdf", None)
    assert not head_decides(200, "text/html; charset=utf-8", None)
    assert not head_decides(200, None, None)  # a missing type is sniffed from the body
    assert not head_decides(405, "text/plain", None)
    assert not head_decides(301, "application/pdf", "/x.pdf")
    assert body_needed("application/xhtml+xml") and body_needed("") and not body_needed("image/png")


def test_head_of_the_client_reads_no_body():
    with SiteServer({"/f.pdf": Route(PDF, content_type="application/pdf")}) as server:
        heads = serve_head(server)
        client = HttpClient()
        response = client.head(server.url("/f.pdf"))
        client.close()
    assert (response.status, response.body, response.content_length, response.method) == (200, b"", 1000, "HEAD")
    assert dict(heads) == {"/f.pdf": 1} and dict(server.hits) == {}


@pytest.mark.parametrize(
    "url, section",
    [
        ("http://h/", "/"),
        ("http://h/index.html", "/"),
        ("http://h/library/os.html", "/library/"),
        ("http://h/library/", "/library/"),
        ("http://h/a/b/c.html", "/a/"),
        ("http://h", "/"),
    ],
)
def test_section_of(url, section):
    assert section_of(url) == section


def test_mode_is_validated(tmp_path):
    with pytest.raises(ConfigError, match="unknown mode 'survey'"):
        CrawlConfig(seeds=("http://h/",), out_dir=str(tmp_path), mode="survey").validated()


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "crawler", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_command_line_map_then_crawl(tmp_path):
    out = str(tmp_path / "out")
    with SiteServer() as server:
        mixed_site(server)
        serve_head(server)
        mapped = run_cli("map", server.url("/"), "--out", out, "--workers", "1")
        crawled = run_cli("crawl", server.url("/"), "--out", out, "--workers", "1")
    assert mapped.returncode == 0, mapped.stderr
    lines = mapped.stdout.splitlines()
    assert lines[0] == "pages: 6"
    assert lines[1] == "urls: 10 (pages 6, non-HTML 2, redirects 1, failed 1; skipped 1)"
    assert "by section:" in lines and "  /sub/  2" in lines
    with open(os.path.join(out, "tree.txt"), encoding="utf-8") as f:
        tree = f.read().splitlines()
    start = lines.index(f"tree ({len(tree)} lines; all in tree.txt):")
    assert lines[start + 1 : -1] == ["  " + line for line in tree]
    assert lines[-1] == (
        f"output: {out} (map.json, tree.txt); crawl with the same --out and the progress bar knows the total"
    )
    assert crawled.returncode == 0, crawled.stderr
    assert json.loads(crawled.stdout.splitlines()[0])["pages"] == 6
    assert "progress total from" in crawled.stderr


def test_command_line_map_of_a_bad_url_is_one_line(tmp_path):
    result = run_cli("map", "not a url", "--out", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "crawler: error: invalid seed URL 'not a url': need an absolute http:// or https:// URL"
    ]
    assert result.stdout == ""


FLASK_DOC = "/usr/share/doc/python-flask-doc/html"


@pytest.mark.skipif(
    not os.path.isdir(FLASK_DOC), reason="Debian's python-flask-doc is not installed (.ci/run installs it)"
)
def test_flask_doc_map_pages_equal_the_crawl_pages(tmp_path):
    from tests.helpers.reachable import reachable_html_pages

    out = tmp_path / "out"
    with SiteServer(root=FLASK_DOC) as server:
        heads = serve_head(server)
        seed = CrawlConfig(
            seeds=(server.url("/index.html"),), out_dir=str(out), workers=2, threads=4, progress_interval_s=60.0
        )
        report = map_site(seed)
        map_gets = sum(server.hits.values())
        summary = crawl(seed)
    expected = len(reachable_html_pages(FLASK_DOC, "index.html"))
    assert report["pages"] == summary["pages"] == expected
    assert report["urls"] == summary["visited"] + summary["failed"]
    assert map_gets == report["urls"] + 1 - sum(  # robots.txt; non-HTML sized by HEAD alone
        1 for r in read_records(str(out / "map")).values() if r.get("method") == "HEAD"
    )
    assert all(path.rsplit(".", 1)[-1] not in ("html", "") for path in heads)


def test_a_stopped_map_resumes_to_the_full_map(tmp_path):
    """A map cut by --max-pages, run again without it, resumes from out/map (its
    records have no Markdown: their outcome field says page or non-HTML)."""
    out = tmp_path / "out"
    with SiteServer() as server:
        mixed_site(server)
        serve_head(server)
        first = map_site(config(server, out, max_pages=4, workers=1, threads=1))
        second = map_site(config(server, out))
        gets = dict(server.hits)
    assert (first["urls"], first["complete"]) == (4, False)
    assert (second["pages"], second["urls"], second["outcomes"], second["complete"]) == (
        6,
        10,
        {"page": 6, "non_html": 2, "redirect": 1, "failed": 1},
        True,
    )
    assert second["depth"] == {"0": 1, "1": 4, "2": 1}
    assert all(n == 1 for path, n in gets.items() if path != "/robots.txt")  # nothing fetched twice


def test_tree_excerpt_is_capped_and_says_how_long_the_tree_is(tmp_path):
    path = tmp_path / "tree.txt"
    path.write_text("".join(f"{'  ' * (n % 3)}http://h/{n}\n" for n in range(5)), encoding="utf-8")
    assert tree_excerpt(str(path), limit=2) == (
        "tree (first 2 of 5 lines; all in tree.txt):\n  http://h/0\n    http://h/1"
    )
    assert tree_excerpt(str(path)).splitlines()[0] == "tree (5 lines; all in tree.txt):"
    assert tree_excerpt(str(tmp_path / "missing.txt")) == ""


def test_command_line_map_into_a_closed_pipe_exits_0_without_a_traceback(tmp_path):
    with SiteServer() as server:
        mixed_site(server)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "crawler",
                "map",
                server.url("/"),
                "--out",
                str(tmp_path / "out"),
                "--workers",
                "1",
                "--quiet",
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        proc.stdout.close()  # as `| head` does: the report finds no reader
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == ""
    assert os.path.exists(tmp_path / "out" / "map.json")


def test_link_distances_are_shortest_and_a_redirect_is_no_step(tmp_path):
    # /x is linked from /b (distance 2) and from /c (3); whichever page a fetcher finished
    # first claimed it, the map counts 2. /old redirects to /new: the same distance.
    rows = [
        ("/", "/a", "link"),
        ("/", "/b", "link"),
        ("/a", "/c", "link"),
        ("/c", "/x", "link"),
        ("/b", "/x", "link"),
        ("/", "/old", "link"),
        ("/old", "/new", "redirect"),
        ("/new", "/y", "link"),
        ("/b", "/unrecorded", "link"),
    ]
    (tmp_path / "edges.tsv").write_text(
        "source\ttarget\tkind\tin_scope\n" + "".join(f"http://h{s}\thttp://h{t}\t{k}\t1\n" for s, t, k in rows),
        encoding="utf-8",
    )
    recorded = {f"http://h{p}" for p in ("/", "/a", "/b", "/c", "/x", "/old", "/new", "/y", "/lone")}
    assert link_distances(str(tmp_path), ("http://h/",), recorded) == {
        "http://h/": 0,
        "http://h/a": 1,
        "http://h/b": 1,
        "http://h/old": 1,
        "http://h/new": 1,
        "http://h/c": 2,
        "http://h/x": 2,
        "http://h/y": 2,
    }
