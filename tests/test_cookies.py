"""Cookies (RFC 6265): the HTTP client keeps none in its session and uses the jar it is
handed. Every server is a :class:`tests.helpers.siteserver.SiteServer` on 127.0.0.1 that logs
each request's target and ``Cookie`` header."""

from __future__ import annotations

import pytest

from crawler.web.cookies import MAX_COOKIE_BYTES, MAX_COOKIES, BoundedJar, cookie_tuples
from crawler.web.fetch import HttpClient
from tests.helpers.siteserver import Route


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
    assert kept["c00"] == "new"  # a cookie already kept is still replaced
