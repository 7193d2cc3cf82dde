"""Crawler-trap guards: crawler.web.traps tables, a property against the Heritrix and Nutch
rules they must cover, and one crawl of a site with the three classic traps under one
origin (session ids, a catch-all route with a relative link, an ever-deeper path)."""

from __future__ import annotations

import itertools
import re
import time
import urllib.parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.config import DEFAULT_MAX_PATH_REPEATS, DEFAULT_MAX_PATH_SEGMENTS
from crawler.web.traps import (
    REPEATED_PATH_SEGMENT,
    TOO_MANY_PATH_SEGMENTS,
    has_repeated_segments,
    path_segments,
    trap_reason,
)
from tests.helpers.crawlutil import run_crawl
from tests.helpers.siteserver import Route, SiteServer

REPEATED, TOO_MANY = REPEATED_PATH_SEGMENT, TOO_MANY_PATH_SEGMENTS
DEEP_20 = "/" + "/".join(str(i) for i in range(1, 21))  # 20 segments: allowed
DEEP_21 = DEEP_20 + "/21"


def test_reasons_are_distinct():
    assert REPEATED == "repeated path segment" and TOO_MANY == "too many path segments"


@pytest.mark.parametrize(
    "url, expected",
    [
        ("http://h/", [""]),
        ("http://h/a/b/", ["a", "b", ""]),
        ("http://h/a/b?x=/c/d", ["a", "b"]),  # the query is not the path
        ("http://h/a%2Fb;p=1/c", ["a%2Fb;p=1", "c"]),  # %2F is not a separator
        ("http://h", []),
    ],
)
def test_path_segments(url, expected):
    assert path_segments(url) == expected


@pytest.mark.parametrize(
    "url, expected",
    [
        # Heritrix PathologicalPathDecideRule, maxRepetitions 2: a run repeated 3 times in a row
        ("http://h/", None),
        ("http://h/a/a/b", None),
        ("http://h/docs/docs/", None),
        ("http://h/docs/docs/intro.html", None),
        ("http://h/docs/docs/docs/", REPEATED),
        ("http://h/a/a/a", REPEATED),  # the last segment counts too (Heritrix needs a '/')
        ("http://h/x/a/a/a/y", REPEATED),
        ("http://h/a/b/a/b/", None),
        ("http://h/a/b/a/b/a/b/", REPEATED),  # a run of two segments
        ("http://h/a/b/c/a/b/c/a/b/c", REPEATED),  # of three
        ("http://h/a/b/c/a/b/c/a/b/d", None),
        ("http://h/a////b", REPEATED),  # three empty segments in a row
        ("http://h/a//b", None),
        # Nutch's (/[^/]+)/[^/]+\1/[^/]+\1/: one segment at every other position 3 times
        ("http://h/a/x/a/y/a/", REPEATED),
        ("http://h/a/x/a/y/a", REPEATED),
        ("http://h/a/x/a/y/b/", None),
        ("http://h/a/x/a/", None),
        ("http://h/en/docs/en/api/", None),
        ("http://h/a//b//c/", None),  # empty segments are not Nutch's [^/]+
        # neither
        ("http://h/a%2Fa%2Fa%2F", None),  # one segment
        ("http://h/p?x=a/a/a/", None),  # the query is not the path
        ("http://h/A/a/A", None),  # case-sensitive, as paths are
        # TooManyPathSegmentsDecideRule, maxPathDepth 20: more than 20 '/' in the path
        ("http://h" + DEEP_20, None),
        ("http://h" + DEEP_21, TOO_MANY),
        ("http://h" + DEEP_20 + "/", TOO_MANY),  # 21 segments, the last empty
        ("http://h" + "/a" * 21, TOO_MANY),  # both apply: the count is checked first
    ],
)
def test_trap_reason_defaults(url, expected):
    assert (DEFAULT_MAX_PATH_REPEATS, DEFAULT_MAX_PATH_SEGMENTS) == (2, 20)
    assert trap_reason(url, DEFAULT_MAX_PATH_REPEATS, DEFAULT_MAX_PATH_SEGMENTS) == expected


@pytest.mark.parametrize(
    "url, repeats, segments, expected",
    [
        ("http://h/a/a", 1, 20, REPEATED),
        ("http://h/a/b", 1, 20, None),
        ("http://h/a/x/a", 1, 20, REPEATED),
        ("http://h/a/a/a", 3, 20, None),
        ("http://h/a/a/a/a", 3, 20, REPEATED),
        ("http://h/a/x/a/y/a", 3, 20, None),
        ("http://h/a/x/a/y/a/z/a", 3, 20, REPEATED),
        ("http://h/a/a/a/a", None, 20, None),  # None: unlimited
        ("http://h" + DEEP_21, 2, None, None),
        ("http://h" + "/x" * 500, None, None, None),
        ("http://h/a/b/c", 2, 3, None),
        ("http://h/a/b/c/", 2, 3, TOO_MANY),
        ("http://h/a", 2, 1, None),
        ("http://h/a/", 2, 1, TOO_MANY),
    ],
)
def test_trap_reason_limits(url, repeats, segments, expected):
    assert trap_reason(url, repeats, segments) == expected


@pytest.mark.parametrize(
    "segments, repeats, expected",
    [
        ([], 2, False),
        ([""], 2, False),
        (["a"] * 3, 2, True),
        (["a", "b"] * 3, 2, True),
        (["a", "b"] * 3, 3, False),
        (["a", "b"] * 4, 3, True),
        (["x", "a", "y", "a", "z", "a"], 2, True),
    ],
)
def test_has_repeated_segments(segments, repeats, expected):
    assert has_repeated_segments(segments, repeats) is expected


HERITRIX_PATHOLOGICAL = re.compile(r".*?/(.*?/)\1{2,}.*")  # maxRepetitions 2
NUTCH_REPEATS = re.compile(r"(/[^/]+)/[^/]+\1/[^/]+\1/")  # regex-urlfilter.txt


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "", "ab"]), max_size=12), st.booleans())
def test_property_catches_every_path_heritrix_and_nutch_reject(segments, slash):
    path = "/" + "/".join(segments) + ("/" if slash else "")
    url = "http://h" + path
    reason = trap_reason(url, DEFAULT_MAX_PATH_REPEATS, DEFAULT_MAX_PATH_SEGMENTS)
    if HERITRIX_PATHOLOGICAL.fullmatch(path) or NUTCH_REPEATS.search(path):
        assert reason is not None, path
    if path.count("/") > 20:  # TooManyPathSegmentsDecideRule counts '/' in the path
        assert reason == TOO_MANY, path


# ---------------------------------------------------------------- one crawl, three traps


def _page(title: str, *hrefs: str) -> Route:
    links = "".join(f'<li><a href="{h}">{h}</a></li>' for h in hrefs)
    return Route(
        f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
        f"<p>The {title} page of the trap site.</p><ul>{links}</ul></body></html>"
    )


class TrapSite(SiteServer):
    """Every response mints fresh session ids into its links; ``/docs/...`` is a
    catch-all whose page links ``docs/``; ``/1/2/.../n`` links one segment deeper.
    Routing ignores path parameters and PHPSESSID/sid tokens, as such servers do."""

    def __init__(self) -> None:
        super().__init__()
        self._ids = itertools.count(1)

    def token(self) -> str:
        return f"{next(self._ids):032x}"  # 32 hex digits, as Tomcat and PHP mint them

    def lookup(self, target: str) -> Route | None:
        split = urllib.parse.urlsplit(target)
        path = "/".join(segment.split(";")[0] for segment in split.path.split("/"))
        query = dict(urllib.parse.parse_qsl(split.query))
        t = self.token
        if path == "/":
            return _page(
                "Home", f"/app/;jsessionid={t()}", f"/shop?PHPSESSID={t()}", f"/news?sid={t()}", "/docs/", "/1"
            )
        if path == "/app/":
            return _page("App", f"cart;jsessionid={t()}", f";jsessionid={t()}")
        if path == "/app/cart":
            return _page("Cart", f"/app/;jsessionid={t()}", f"help;JSESSIONID={t()}")
        if path == "/app/help":
            return _page("Help", f"/app/cart;jsessionid={t()}", f"/app/help;jsessionid={t()}")
        if path == "/shop":
            item = query.get("item", "all")
            return _page(
                f"Shop {item}",
                f"/shop?PHPSESSID={t()}&item=1",
                f"/shop?item=2&PHPSESSID={t()}",
                f"/shop?PHPSESSID={t()}",
            )
        if path == "/news":
            return _page(
                f"News {query.get('page', '1')}",
                f"/news?sid={t()}&page=2",
                f"/news?sid={t()}",
                "/story?sid=5",
                "/story?sid=6",
            )
        if path == "/story":  # sid=5 is a story id, not a session
            return _page(f"Story {query['sid']}", f"/news?page=2&sid={t()}", f"/news?sid={t()}")
        if path.startswith("/docs/"):  # catch-all: the same page under every path
            return _page("Docs", "docs/", "intro.html")
        if re.fullmatch(r"(/\d+)+", path):
            depth = path.count("/")
            return _page(f"Level {depth}", f"{path}/{depth + 1}")
        return super().lookup(target)


def test_a_site_of_three_traps_ends_with_each_page_fetched_once(tmp_path):
    started = time.monotonic()
    with TrapSite() as server:
        summary, records = run_crawl(tmp_path, server.url("/"))
        hits = dict(server.hits)
    elapsed = time.monotonic() - started
    deep = ["/" + "/".join(str(i) for i in range(1, n + 1)) for n in range(1, 21)]
    pages = [
        "/",
        "/app/",
        "/app/cart",
        "/app/help",
        "/shop",
        "/shop?item=1",
        "/shop?item=2",
        "/news",
        "/news?page=2",
        "/story?sid=5",
        "/story?sid=6",
        "/docs/",
        "/docs/docs/",
        "/docs/intro.html",
        "/docs/docs/intro.html",
        *deep,
    ]
    assert sorted(records) == sorted(server.url(p) for p in pages)
    # the server's log: each real page requested once, no session id ever sent
    assert hits == {"/robots.txt": 1, **{p: 1 for p in pages}}
    skipped = {server.url("/docs/docs/docs/"): REPEATED, server.url(DEEP_21): TOO_MANY}
    with open(tmp_path / "out" / "skipped.tsv", encoding="utf-8") as f:
        header, *rows = f.read().splitlines()
    assert header == "url\tdepth\tparent\treason"
    assert {row.split("\t")[0]: row.split("\t")[3] for row in rows} == skipped
    assert len(rows) == 2
    assert summary["skipped_by_reason"] == {REPEATED: 1, TOO_MANY: 1}
    assert (summary["pages"], summary["failed"], summary["reconciled"]) == (len(pages), 0, True)
    assert elapsed < 30, elapsed
