"""HttpClient against tests/helpers/siteserver.py routes and, for what a route cannot
express (trickling, resets, request capture), the raw socket server of
tests/helpers/rawserver.py."""

from __future__ import annotations

import gzip
import socket
import time
import zlib

import pytest
import requests

from crawler import __version__
from crawler.config import CrawlConfig
from crawler.web import fetch
from crawler.web.fetch import DEFAULT_USER_AGENT, FetchError, HttpClient
from tests.helpers.rawserver import WAIT_S, RawServer
from tests.helpers.siteserver import Route, SiteServer, redirect


def client(**kwargs) -> HttpClient:
    kwargs.setdefault("connect_timeout_s", 5)
    kwargs.setdefault("read_timeout_s", 5)
    kwargs.setdefault("total_timeout_s", 10)
    return HttpClient(**kwargs)


# --- plain responses ------------------------------------------------------------------


def test_200_body_and_content_type():
    body = "<html><title>t</title><p>héllo</p></html>"
    with SiteServer({"/page?x=1": Route(body)}) as site:
        http = client()
        resp = http.get(site.url("/page?x=1"))
        http.close()
    assert resp.url == site.url("/page?x=1")
    assert resp.status == 200
    assert resp.content_type == "text/html; charset=utf-8"
    assert resp.body == body.encode("utf-8")
    assert resp.location is None
    assert resp.truncated is False
    assert resp.elapsed_ms > 0
    assert site.hits == {"/page?x=1": 1}


def test_missing_content_type_is_none():
    with SiteServer({"/raw": Route(b"bytes", content_type=None)}) as site:
        resp = client().get(site.url("/raw"))
    assert (resp.status, resp.content_type, resp.body) == (200, None, b"bytes")


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirect_returns_location_and_empty_body_without_following(status):
    routes = {
        "/old": Route(b"moved body", status, {"Location": "/new?a=1"}, content_type="text/html"),
        "/new?a=1": Route("new page"),
    }
    with SiteServer(routes) as site:
        resp = client().get(site.url("/old"))
    assert resp.status == status
    assert resp.location == "/new?a=1"
    assert resp.body == b""
    assert resp.truncated is False
    assert site.hits == {"/old": 1}


def test_redirect_location_is_returned_raw():
    with SiteServer({"/r": redirect("HTTP://Other.example/../x#frag")}) as site:
        resp = client().get(site.url("/r"))
    assert (resp.status, resp.location, resp.body) == (301, "HTTP://Other.example/../x#frag", b"")


def test_3xx_without_location_is_an_ordinary_response():
    with SiteServer({"/nl": Route("no location here", 302)}) as site:
        resp = client().get(site.url("/nl"))
    assert (resp.status, resp.location, resp.body) == (302, None, b"no location here")


def test_300_and_304_are_not_redirects_even_with_location():
    routes = {"/choices": Route("pick one", 300, {"Location": "/a"})}
    with SiteServer(routes) as site:
        resp = client().get(site.url("/choices"))
    assert (resp.status, resp.location, resp.body) == (300, None, b"pick one")


def test_404_is_a_response_not_an_error():
    with SiteServer({}) as site:
        resp = client().get(site.url("/missing"))
    assert resp.status == 404
    assert resp.body == b"<h1>not found</h1>"
    assert resp.content_type == "text/html; charset=utf-8"
    assert resp.location is None


def test_500_is_a_response_not_an_error():
    with SiteServer({"/boom": Route("oops", 500, content_type="text/plain")}) as site:
        resp = client().get(site.url("/boom"))
    assert (resp.status, resp.content_type, resp.body) == (500, "text/plain", b"oops")


# --- the byte cap ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "size, limit, expected_len, truncated",
    [
        (25, 10, 10, True),
        (11, 10, 10, True),
        (10, 10, 10, False),
        (9, 10, 9, False),
        (0, 10, 0, False),
        (300_000, 200_000, 200_000, True),  # several socket reads before the cap
        (200_000, 200_000, 200_000, False),
    ],
)
def test_body_is_cut_at_max_body_bytes(size, limit, expected_len, truncated):
    body = bytes(i % 251 for i in range(size))
    with SiteServer({"/b": Route(body, content_type="application/octet-stream")}) as site:
        resp = client(max_body_bytes=limit).get(site.url("/b"))
    assert resp.body == body[:expected_len]
    assert len(resp.body) == expected_len
    assert resp.truncated is truncated


def test_exactly_at_limit_on_a_close_delimited_body_is_not_truncated():
    def handler(conn, server):
        server.read_head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n")
        conn.sendall(b"0123456789")

    with RawServer(handler) as raw:
        resp = client(max_body_bytes=10).get(raw.url())
    assert (resp.body, resp.truncated) == (b"0123456789", False)


def test_more_data_after_a_chunk_that_fills_the_cap_is_truncated():
    # the first read returns exactly the cap; the rest arrives later on the same body
    def handler(conn, server):
        server.read_head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n0123456789")
        server.stop.wait(0.2)
        conn.sendall(b"abcde")

    with RawServer(handler) as raw:
        resp = client(max_body_bytes=10).get(raw.url())
    assert (resp.body, resp.truncated) == (b"0123456789", True)


def test_body_stalling_after_the_cap_is_truncated_not_a_timeout():
    def handler(conn, server):
        server.read_head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
        server.stop.wait(WAIT_S)

    with RawServer(handler) as raw:
        resp = client(max_body_bytes=10, read_timeout_s=0.5).get(raw.url())
    assert (resp.body, resp.truncated) == (b"0123456789", True)


# --- content encodings ----------------------------------------------------------------

PLAIN = ("<html><body>" + "compressible text " * 500 + "</body></html>").encode("utf-8")


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    "encoding, encoded",
    [
        ("gzip", gzip.compress(PLAIN)),
        ("deflate", zlib.compress(PLAIN)),
        ("deflate", _raw_deflate(PLAIN)),
    ],
)
def test_encoded_bodies_are_decoded(encoding, encoded):
    assert len(encoded) < len(PLAIN) // 10
    route = Route(encoded, headers={"Content-Encoding": encoding})
    with SiteServer({"/z": route}) as site:
        resp = client().get(site.url("/z"))
    assert resp.body == PLAIN
    assert resp.truncated is False


def test_byte_cap_applies_to_the_decoded_body():
    bomb = gzip.compress(b"\0" * 2_000_000)
    assert len(bomb) < 10_000
    with SiteServer({"/bomb": Route(bomb, headers={"Content-Encoding": "gzip"})}) as site:
        resp = client(max_body_bytes=50_000).get(site.url("/bomb"))
    assert resp.body == b"\0" * 50_000
    assert resp.truncated is True


def test_corrupt_gzip_is_a_decoding_error():
    route = Route(b"this is not gzip at all", headers={"Content-Encoding": "gzip"})
    with SiteServer({"/bad": route}) as site:
        with pytest.raises(FetchError) as info:
            client().get(site.url("/bad"))
    assert info.value.reason == "decoding"


# --- failures -------------------------------------------------------------------------


def test_connection_refused():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(FetchError) as info:
        client().get(f"http://127.0.0.1:{port}/")
    assert info.value.reason == "connection"
    assert str(info.value).startswith("connection: ")


@pytest.mark.parametrize("url", ["http://", "ftp://127.0.0.1/x", "not a url", "http://[::1/"])
def test_invalid_urls(url):
    with pytest.raises(FetchError) as info:
        client().get(url)
    assert info.value.reason == "invalid url"


def test_fetch_error_is_a_crawler_error_with_reason():
    from crawler.errors import CrawlerError

    err = FetchError("timeout", "after 3 s")
    assert isinstance(err, CrawlerError)
    assert (err.reason, str(err)) == ("timeout", "timeout: after 3 s")
    assert str(FetchError("ssl")) == "ssl"


def _trickle_body(conn, server):
    """C23: status line and headers at once, then one body byte every 0.3 s, forever."""
    server.read_head(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n")
    while not server.stop.wait(0.3):
        conn.sendall(b"x")
        server.sent += 1


def test_c23_trickling_body_hits_the_total_timeout():
    with RawServer(_trickle_body) as raw:
        http = client(read_timeout_s=2, total_timeout_s=1.5)
        started = time.monotonic()
        with pytest.raises(FetchError) as info:
            http.get(raw.url("/slow"))
        elapsed = time.monotonic() - started
        http.close()
        raw.done.wait(WAIT_S)  # the server saw the client hang up
    assert info.value.reason == "timeout"
    assert 1.5 <= elapsed < 4
    assert raw.sent >= 3  # bytes really kept arriving, faster than the read timeout
    assert raw.done.is_set()


def _silent_after_headers(conn, server):
    server.read_head(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
    server.stop.wait(WAIT_S)


def _silent_before_headers(conn, server):
    server.read_head(conn)
    server.stop.wait(WAIT_S)


@pytest.mark.parametrize("handler", [_silent_after_headers, _silent_before_headers])
def test_a_silent_server_hits_the_read_timeout(handler):
    with RawServer(handler) as raw:
        started = time.monotonic()
        with pytest.raises(FetchError) as info:
            client(read_timeout_s=0.5, total_timeout_s=5).get(raw.url())
        elapsed = time.monotonic() - started
    assert info.value.reason == "timeout"
    assert elapsed < 3


def _trickle_headers(conn, server):
    """Status line, then a header value one byte every 0.3 s; gives up after 4.2 s."""
    server.read_head(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    deadline = time.monotonic() + 4.2
    while time.monotonic() < deadline and not server.stop.wait(0.3):
        conn.sendall(b"x")
        server.sent += 1


@pytest.mark.parametrize("through_proxy", [False, True])
def test_trickling_headers_also_hit_the_total_timeout(through_proxy, monkeypatch):
    """Also through an HTTP proxy from the environment (the trickling server plays it)."""
    with RawServer(_trickle_headers) as raw:
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        if through_proxy:
            monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{raw.port}")
        http = client(read_timeout_s=2, total_timeout_s=1.5)
        started = time.monotonic()
        with pytest.raises(FetchError) as info:
            http.get(raw.url("/slow-headers"))
        elapsed = time.monotonic() - started
        http.close()
    assert info.value.reason == "timeout"
    assert elapsed < 4


def test_connection_closed_mid_body_is_incomplete_body():
    def handler(conn, server):
        server.read_head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n<html>only part")
        conn.shutdown(socket.SHUT_WR)

    with RawServer(handler) as raw:
        with pytest.raises(FetchError) as info:
            client().get(raw.url())
    assert info.value.reason == "incomplete body"


def test_connection_reset_mid_body_is_incomplete_body():
    def handler(conn, server):
        server.read_head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n<html>only part")
        server.stop.wait(0.1)
        # SO_LINGER 0: close sends RST instead of FIN
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")

    with RawServer(handler) as raw:
        with pytest.raises(FetchError) as info:
            client().get(raw.url())
    assert info.value.reason == "incomplete body"


def test_truncated_chunked_body_is_incomplete_body():
    def handler(conn, server):
        server.read_head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n10\r\nonly-")
        conn.shutdown(socket.SHUT_WR)

    with RawServer(handler) as raw:
        with pytest.raises(FetchError) as info:
            client().get(raw.url())
    assert info.value.reason == "incomplete body"


# --- request headers ------------------------------------------------------------------


def _ok(conn, server):
    server.read_head(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")


def _header(request: bytes, name: str) -> str:
    for line in request.decode("latin-1").split("\r\n")[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == name.lower():
            return value.strip()
    raise AssertionError(f"no {name} header in {request!r}")


def test_default_user_agent_names_the_crawler():
    with RawServer(_ok) as raw:
        resp = client().get(raw.url("/ua"))
    assert resp.body == b"ok"
    assert len(raw.requests) == 1
    assert raw.requests[0].startswith(b"GET /ua HTTP/1.1\r\n")
    agent = _header(raw.requests[0], "User-Agent")
    assert "crawler/" in agent
    assert agent == DEFAULT_USER_AGENT == f"crawler/{__version__} (corpus crawler; python-requests)"
    assert "gzip" in _header(raw.requests[0], "Accept-Encoding")
    assert _header(raw.requests[0], "Accept").startswith("text/html")


def test_configured_user_agent_is_sent():
    cfg = CrawlConfig(
        seeds=("http://127.0.0.1/",),
        out_dir="/tmp/unused",
        workers=1,
        user_agent="TestBot/9.9",
        max_body_bytes=1,
        read_timeout_s=3.0,
    )
    http = HttpClient.from_config(cfg)
    assert http.timeout == (10.0, 3.0)
    assert http.max_body_bytes == 1
    with RawServer(_ok) as raw:
        resp = http.get(raw.url())
    assert (resp.body, resp.truncated) == (b"o", True)
    assert _header(raw.requests[0], "User-Agent") == "TestBot/9.9"


def _head_lines(request: bytes) -> list[str]:
    """The request line and header fields, the Host field's port left out."""
    lines = request.decode("latin-1").split("\r\n")
    return [line if not line.startswith("Host:") else line.rsplit(":", 1)[0] for line in lines]


def test_request_heads_carry_the_session_headers_then_the_requests_own(tmp_path, monkeypatch):
    """The exact heads, as requests' ``Session.prepare_request`` builds them: the
    session's fields in order, a request's own fields replacing or following them, the
    URL's user and password and a ``~/.netrc`` entry for the host as Basic credentials,
    no body framing on GET/HEAD."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login u password p\n")
    netrc.chmod(0o600)
    common = [
        "Host: 127.0.0.1",
        f"User-Agent: {DEFAULT_USER_AGENT}",
        f"Accept-Encoding: {requests.utils.DEFAULT_ACCEPT_ENCODING}",  # br and zstd where installed
    ]
    with RawServer(_ok) as raw:
        http = client()
        http.get(raw.url("/a"))
        http.get(raw.url("/a"), headers={"Accept": "text/plain", "If-None-Match": '"x"'})
        http.head(raw.url("/h"))
        http.get(raw.url("/u").replace("://", "://v:w@"))
        monkeypatch.setenv("NETRC", str(netrc))
        client().get(raw.url("/n"))
    accept = "Accept: text/html,application/xhtml+xml,*/*;q=0.8"
    assert [_head_lines(r) for r in raw.requests] == [
        ["GET /a HTTP/1.1", *common, accept, "Connection: keep-alive", "", ""],
        ["GET /a HTTP/1.1", *common, "Accept: text/plain", "Connection: keep-alive", 'If-None-Match: "x"', "", ""],
        ["HEAD /h HTTP/1.1", *common, accept, "Connection: keep-alive", "", ""],
        ["GET /u HTTP/1.1", *common, accept, "Connection: keep-alive", "Authorization: Basic djp3", "", ""],
        ["GET /n HTTP/1.1", *common, accept, "Connection: keep-alive", "Authorization: Basic dTpw", "", ""],
    ]


def test_a_header_value_with_a_line_break_is_refused_before_sending():
    """A validator from a server's ETag holding a line break is never written (header
    injection): requests' header check raises, and the GET fails as an invalid request."""
    with RawServer(_ok) as raw:
        with pytest.raises(FetchError) as info:
            client().get(raw.url("/a"), headers={"If-None-Match": '"x"\r\nX-Evil: 1'})
    assert raw.requests == []
    assert info.value.reason == "http error"


def _trickle_close_delimited(conn, server):
    """No Content-Length: the body ends when the server closes. One line every 0.5 s."""
    server.read_head(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n")
    for n in range(20):
        if server.stop.wait(0.5):
            return
        conn.sendall(b"<p>%d</p>" % n)


def test_a_close_delimited_body_cut_by_the_deadline_is_a_timeout_not_a_page():
    with RawServer(_trickle_close_delimited) as raw:
        http = client(read_timeout_s=5, total_timeout_s=1.2)
        with pytest.raises(FetchError) as info:
            http.get(raw.url("/trickle"))
        http.close()
    assert info.value.reason == "timeout"


def test_a_utf8_location_header_is_read_as_utf8():
    def handler(conn, server):
        server.read_head(conn)
        conn.sendall("HTTP/1.1 302 Found\r\nLocation: /café\r\nContent-Length: 0\r\n\r\n".encode())

    with RawServer(handler) as raw:
        response = client().get(raw.url("/old"))
    assert (response.status, response.location) == (302, "/café")


def test_an_empty_query_is_sent_as_written():
    """RFC 3986 §6.2.3: /p? and /p are different URLs; requests alone sends /p for both."""
    with SiteServer({"/p?": Route("with"), "/p": Route("without")}) as site:
        http = client()
        bodies = [http.get(site.url(path)).body for path in ("/p?", "/p", "/p?")]
        hits = dict(site.hits)
    assert bodies == [b"with", b"without", b"with"]
    assert hits == {"/p?": 2, "/p": 1}


@pytest.mark.parametrize(
    "value, length", [("12", 12), (" 7 ", 7), ("\u00b2", None), ("1e3", None), ("", None), (None, None), ("-1", None)]
)
def test_content_length_is_ascii_digits_only(value, length):
    # "²" is a digit to str.isdigit() and made int() raise, failing the page as "invalid url"
    assert fetch._content_length(value) == length
