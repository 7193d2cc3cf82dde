"""Cookies (RFC 6265): the HTTP client keeps none in its session and uses the jar it is
handed; a redirect chain's cookies reach its hops; without ``--cookies`` none outlives
its chain; with ``--cookies`` the crawl's store is shared by every fetcher process.
Every server is a :class:`tests.helpers.siteserver.SiteServer` on 127.0.0.1 that logs
each request's target and ``Cookie`` header."""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import pickle
import time
import urllib.request

import pytest

from crawler.cli import build_parser, config_from_args
from crawler.config import CrawlConfig
from crawler.engine.cookiestore import CookieStore
from crawler.engine.messages import FetchTask
from crawler.engine.rediscrawl import decode_task, encode_task
from crawler.errors import ConfigError
from crawler.web.cookies import MAX_COOKIE_BYTES, MAX_COOKIES, BoundedJar, cookie_tuples
from crawler.web.fetch import HttpClient
from tests.helpers.siteserver import Route, page, redirect


def _set(cookie: str) -> Route:
    """An HTML page that sets ``cookie`` (a ``Set-Cookie`` value)."""
    return Route("<html><body><p>set</p></body></html>", headers={"Set-Cookie": cookie})


@pytest.fixture
def client():
    client = HttpClient(connect_timeout_s=5.0, read_timeout_s=5.0, total_timeout_s=10.0)
    yield client
    client.close()


# -- the HTTP client ------------------------------------------------------------------


def test_the_session_keeps_no_cookie(site_server, client):
    server = site_server({"/set": _set("sid=abc; Path=/"), "/next": Route("next")})
    client.get(server.url("/set"))
    client.get(server.url("/next"))
    assert server.cookie_log == [("/set", None), ("/next", None)]
    assert len(client.session.cookies) == 0


def test_a_jar_is_sent_and_keeps_what_the_response_sets(site_server, client):
    server = site_server(
        {
            "/set": _set("sid=abc; Path=/"),
            "/private/set": _set("inner=1; Path=/private"),
            "/secure": _set("token=s; Secure"),
            "/clear": _set("sid=gone; Max-Age=0; Path=/"),
            "/next": Route("next"),
            "/private/page": Route("page"),
        }
    )
    jar = BoundedJar()
    for path in ("/set", "/next", "/private/set", "/next", "/private/page", "/secure", "/next", "/clear", "/next"):
        client.get(server.url(path), cookies=jar)
    assert server.cookie_log == [
        ("/set", None),
        ("/next", "sid=abc"),
        ("/private/set", "sid=abc"),
        ("/next", "sid=abc"),  # inner has Path=/private
        ("/private/page", "inner=1; sid=abc"),  # the longer path first (RFC 6265 5.4)
        ("/secure", "sid=abc"),
        ("/next", "sid=abc"),  # a Secure cookie goes over https only
        ("/clear", "sid=abc"),
        ("/next", None),  # Max-Age=0 removed sid; the others do not match /next
    ]
    assert [c[0] for c in cookie_tuples(jar)] == ["inner", "token"]


def test_a_jar_keeps_at_most_max_cookies_of_at_most_max_cookie_bytes(site_server, client):
    jar = BoundedJar((f"c{n:02}", "v", "127.0.0.1", False, "/", True, False, None) for n in range(MAX_COOKIES + 5))
    assert len(jar) == MAX_COOKIES
    server = site_server({"/big": _set("big=" + "x" * MAX_COOKIE_BYTES), "/again": _set("c00=new")})
    client.get(server.url("/big"), cookies=jar)
    client.get(server.url("/again"), cookies=jar)
    kept = {c[0]: c[1] for c in cookie_tuples(jar)}
    assert len(kept) == MAX_COOKIES and "big" not in kept
    # the five oldest made room for the last five; a new cookie then takes the oldest's place
    assert kept["c00"] == "new" and sorted(kept)[:2] == ["c00", "c06"]


def test_a_host_only_cookie_goes_to_its_host_only_and_a_domain_cookie_to_its_subdomains():
    jar = BoundedJar(
        [
            ("host", "1", "example.org", False, "/", True, False, None),  # set without Domain
            ("wide", "2", ".example.org", True, "/", True, False, None),  # Domain=example.org
        ]
    )
    sent = {}
    for url in ("http://example.org/", "http://www.example.org/", "http://example.com/"):
        request = urllib.request.Request(url)
        jar.add_cookie_header(request)
        sent[url] = request.get_header("Cookie")
    assert sent == {
        "http://example.org/": "host=1; wide=2",
        "http://www.example.org/": "wide=2",  # RFC 6265 5.4; the stdlib's default sends host=1 too
        "http://example.com/": None,
    }


def test_a_task_with_cookies_pickles_to_an_equal_task():
    cookie = ("sid", "abc", "127.0.0.1", False, "/", True, False, None)
    task = FetchTask("http://127.0.0.1:1/b", 0, "http://127.0.0.1:1/a", ("http://127.0.0.1:1/a",), cookies=(cookie,))
    assert pickle.loads(pickle.dumps(task)) == task
    assert FetchTask("http://127.0.0.1:1/", 0).cookies == ()


def test_a_task_with_cookies_crosses_redis_as_json_and_back():
    cookie = ("sid", None, ".a.example", True, "/", True, True, 4102444800)
    task = FetchTask("http://a.example/b", 2, "http://a.example/a", ("http://a.example/a",), cookies=(cookie,))
    assert decode_task(encode_task(task), "t") == dataclasses.replace(task, ticket="t")
    plain = FetchTask("http://a.example/c", 1)
    assert len(json.loads(encode_task(plain))) == 6  # no cookies: the entry is as before
    assert decode_task(encode_task(plain), None) == plain


# -- crawls ---------------------------------------------------------------------------


def _wall(path: str, cookie: str, text: str):
    """A page at ``path`` that answers with a redirect to itself setting ``cookie``
    (``name=value``) until the request carries it, then with a page saying ``text``."""

    def route(headers):
        if cookie in (headers.get("Cookie") or "").split("; "):
            return page("Article", "/later", body=f"<p>{text}</p>")
        return Route(b"", 302, {"Location": path, "Set-Cookie": f"{cookie}; Path=/"}, content_type=None)

    return route


def _pages(log) -> list[tuple[str, str | None]]:
    return [(target, cookie) for target, cookie in log if target != "/robots.txt"]


@pytest.mark.parametrize("keep", [False, True])
def test_a_wall_that_sets_a_cookie_and_redirects_to_itself_is_crawled(site_server, crawl_into, keep):
    server = site_server(
        {"/article": _wall("/article", "consent=yes", "The text behind the wall."), "/later": page("Later")}
    )
    summary, records = crawl_into(server.url("/article"), cookies=keep)
    record = records[server.url("/article")]
    assert (record["status"], record["error"], record["redirect_chain"]) == (200, None, [])
    assert record["markdown"] == f"# Article\n\nThe text behind the wall.\n\n- [/later]({server.url('/later')})"
    assert _pages(server.cookie_log) == [
        ("/article", None),
        ("/article", "consent=yes"),
        ("/later", "consent=yes" if keep else None),  # a link: without --cookies no cookie outlives its chain
    ]
    assert (summary["pages"], summary["redirects"], summary["failed"]) == (2, 0, 0)


@pytest.mark.parametrize("keep", [False, True])
def test_a_cookie_set_by_a_redirect_reaches_the_next_hop(site_server, crawl_into, keep):
    def members(headers):
        if "pass=1" in (headers.get("Cookie") or ""):
            return page("Members", "/after", body="<p>Members only.</p>")
        return redirect("/wall", 302)

    server = site_server(
        {
            "/a": Route(b"", 302, {"Location": "/b", "Set-Cookie": "pass=1; Path=/"}, content_type=None),
            "/b": members,
            "/wall": page("Wall"),
            "/after": page("After"),
        }
    )
    summary, records = crawl_into(server.url("/a"), cookies=keep)
    a, b = records[server.url("/a")], records[server.url("/b")]
    assert (a["status"], a["final_url"]) == (302, server.url("/b"))
    assert (b["status"], b["error"], b["title"], b["redirect_chain"]) == (200, None, "Members", [server.url("/a")])
    assert "Members only." in b["markdown"]
    assert _pages(server.cookie_log) == [("/a", None), ("/b", "pass=1"), ("/after", "pass=1" if keep else None)]
    assert server.url("/wall") not in records
    assert (summary["pages"], summary["redirects"], summary["failed"]) == (2, 1, 0)


def test_a_redirect_to_itself_that_sets_no_cookie_is_still_a_loop(site_server, crawl_into):
    server = site_server({"/": page("Home", "/loop"), "/loop": redirect("/loop", 302)})
    summary, records = crawl_into(server.url("/"), obey_robots=False)
    record = records[server.url("/loop")]
    assert (record["status"], record["error"]) == (302, "redirect loop")
    assert server.cookie_log == [("/", None), ("/loop", None)]
    assert summary["failed"] == 1


def test_a_wall_that_never_takes_its_cookie_stops_at_max_redirects(site_server, crawl_into):
    sent = iter(range(1, 100))

    def stubborn(_headers):
        return Route(b"", 302, {"Location": "/w", "Set-Cookie": f"n={next(sent)}"}, content_type=None)

    server = site_server({"/": page("Home", "/w"), "/w": stubborn})
    _summary, records = crawl_into(server.url("/"), obey_robots=False, max_redirects=3)
    assert records[server.url("/w")]["error"] == "redirect loop"
    assert server.cookie_log == [("/", None), ("/w", None), ("/w", "n=1"), ("/w", "n=2"), ("/w", "n=3")]


def _fetchers_of(out_dir) -> dict[str, int]:
    """URL -> the fetcher process whose page shard holds its record (``pages-NN-*``)."""
    fetchers = {}
    for path in glob.glob(os.path.join(out_dir, "pages-*.jsonl")):
        worker_id = int(os.path.basename(path).split("-")[1])
        with open(path, encoding="utf-8") as f:
            for line in f:
                fetchers[json.loads(line)["url"]] = worker_id
    return fetchers


LINKS = [f"/p{n}" for n in range(1, 7)]


def _site_that_sets_a_cookie_on_its_seed(site_server):
    """The seed ``/`` sets ``sid=abc`` and links to six pages, each answered after 0.2 s
    (so the first two are fetched at once, one by each fetcher process)."""
    routes = {"/": Route(page("Home", *LINKS).body, headers={"Set-Cookie": "sid=abc; Path=/"})}
    routes.update({path: Route(page(path).body, delay_s=0.2) for path in LINKS})
    return site_server(routes)


def test_without_cookies_no_later_page_of_the_origin_gets_a_cookie(site_server, crawl_into):
    server = _site_that_sets_a_cookie_on_its_seed(site_server)
    summary, _records = crawl_into(server.url("/"), obey_robots=False, per_host=2)
    assert summary["pages"] == 7
    assert sorted(server.cookie_log) == sorted([("/", None)] + [(path, None) for path in LINKS])


@pytest.mark.parametrize("start_method", [None, "spawn"])
def test_with_cookies_every_fetcher_process_sends_the_cookie_a_page_set(
    site_server, crawl_into, tmp_path, start_method
):
    server = _site_that_sets_a_cookie_on_its_seed(site_server)
    summary, _records = crawl_into(
        server.url("/"), obey_robots=False, per_host=2, threads=1, cookies=True, start_method=start_method
    )
    assert summary["pages"] == 7
    assert server.cookie_log[0] == ("/", None)
    assert sorted(server.cookie_log[1:]) == [(path, "sid=abc") for path in LINKS]
    fetchers = _fetchers_of(tmp_path / "out")
    assert {fetchers[server.url(path)] for path in LINKS} == {0, 1}  # both processes sent it


def test_with_cookies_a_stored_cookie_is_sent_by_its_path(site_server, crawl_into):
    server = site_server(
        {
            "/": Route(page("Home", "/p1").body, headers={"Set-Cookie": "sid=abc; Path=/"}),
            "/p1": Route(page("p1", "/p2", "/docs/p3").body, headers={"Set-Cookie": "docs=1; Path=/docs"}),
            "/p2": page("p2"),
            "/docs/p3": page("p3"),
        }
    )
    crawl_into(server.url("/"), obey_robots=False, cookies=True)
    log = dict(server.cookie_log)
    assert (log["/"], log["/p1"], log["/p2"], log["/docs/p3"]) == (None, "sid=abc", "sid=abc", "docs=1; sid=abc")


# -- the store, the setting -------------------------------------------------------------


def _cookie(name, value="1", domain="www.example.org", path="/", expires=None, specified=False):
    return (name, value, domain, specified, path, True, False, expires)


def test_the_store_answers_a_host_with_its_own_and_its_parent_domains_cookies():
    store = CookieStore()
    own, parent, other = (
        _cookie("own"),
        _cookie("wide", domain=".example.org", specified=True),
        _cookie("x", domain="a.example.org"),
    )
    store.update([own, parent, other])
    assert sorted(store.cookies_for("www.example.org")) == sorted([own, parent])
    assert store.cookies_for("example.org") == [parent]  # which are sent is the jar's policy
    assert store.cookies_for("127.0.0.1") == []


def test_the_store_replaces_removes_and_drops_expired_cookies():
    store = CookieStore()
    store.update([_cookie("a"), _cookie("b"), _cookie("old", expires=int(time.time()) - 1)])
    store.update([_cookie("a", "2")], [("www.example.org", "/", "b")])
    assert store.cookies_for("www.example.org") == [_cookie("a", "2")]
    assert len(store) == 1  # the expired one went when read


def test_the_store_keeps_at_most_max_cookies_per_domain():
    store = CookieStore()
    store.update(_cookie(f"c{n}") for n in range(MAX_COOKIES + 3))
    store.update([_cookie("c0", "new")])
    kept = store.cookies_for("www.example.org")
    assert len(kept) == MAX_COOKIES and _cookie("c0", "new") in kept
    assert {c[0] for c in kept} == {"c0", *(f"c{n}" for n in range(4, MAX_COOKIES + 3))}  # c1-c3 evicted


def test_cookies_with_redis_is_a_one_line_config_error(tmp_path):
    config = CrawlConfig(
        seeds=("http://a.example/",), out_dir=str(tmp_path), cookies=True, redis="redis://127.0.0.1:6379/0"
    )
    with pytest.raises(ConfigError, match=r"^--cookies is not supported with --redis yet") as raised:
        config.validated()
    assert "\n" not in str(raised.value)


def test_the_command_line_flag_sets_the_config(tmp_path):
    args = build_parser().parse_args(["http://a.example/", "--out", str(tmp_path)])
    assert config_from_args(args).cookies is False
    args = build_parser().parse_args(["http://a.example/", "--out", str(tmp_path), "--cookies"])
    assert config_from_args(args).cookies is True


def test_a_cookie_without_a_value_beside_one_with_a_value_is_kept(site_server, client):
    page = Route("<p>set</p>", headers={"Set-Cookie": ["a; Path=/", "a=1; Path=/x"]})
    server = site_server({"/": page})
    jar = BoundedJar()
    client.get(server.url("/"), cookies=jar)
    assert [(c[0], c[1], c[4]) for c in cookie_tuples(jar)] == [("a", None, "/"), ("a", "1", "/x")]
