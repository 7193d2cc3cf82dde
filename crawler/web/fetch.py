"""HTTP only: one GET per call, streamed, capped in bytes and in wall-clock time.

This is the one place where requests/urllib3 exceptions are translated: every failure
leaves :meth:`HttpClient.get` as a :class:`FetchError` with a short ``reason``. Redirects
are *not* followed here: a 3xx comes back as a :class:`Response` with ``location`` set,
so the fetcher can normalize and claim the target like any other link (RFC 9110 §15.4).

Cookies are not kept by the client: its session's cookie policy is
:class:`crawler.web.cookies.NoCookies`. A caller that wants cookies hands
:meth:`HttpClient.get` a jar, whose cookies are sent and into which the response's
``Set-Cookie`` go (RFC 6265, by the standard library's cookie policy).
"""

from __future__ import annotations

import dataclasses
import datetime
import http.cookiejar
import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import requests
import urllib3
from requests.adapters import HTTPAdapter
from requests.cookies import extract_cookies_to_jar, get_cookie_header
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from crawler import __version__
from crawler.errors import FetchError
from crawler.web import deadlines
from crawler.web.cookies import NoCookies

log = logging.getLogger("crawler")

#: Default User-Agent: project name and version, so site owners can tell who we are.
DEFAULT_USER_AGENT = f"crawler/{__version__} (corpus crawler; python-requests)"
#: Bytes asked of the socket per read; read1 returns as soon as any data arrived.
READ_CHUNK_BYTES = 64 * 1024
#: WARC 1.1 ``WARC-Truncated`` value of a body ended by a FetchError of this reason.
_CUT_BY_REASON = {"timeout": "time", "incomplete body": "disconnect", "connection": "disconnect"}


class _Deadline:
    """The wall-clock limit of one GET. When it expires it shuts the request's socket
    down, which wakes a read blocked in the headers or the body of a trickling server
    (a read timeout alone restarts with every byte that arrives)."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.expired = False
        self._lock = threading.Lock()

    def attach(self, sock: socket.socket | None) -> None:
        """Watch ``sock``; shut it down at once if the deadline already passed."""
        with self._lock:
            self.sock = sock
            expired = self.expired
        if expired:
            self._shutdown(sock)

    def expire(self) -> None:
        """The deadline's callback (:mod:`crawler.web.deadlines`): mark expired and shut
        the socket down."""
        with self._lock:
            self.expired = True
            sock = self.sock
        self._shutdown(sock)

    @staticmethod
    def _shutdown(sock: socket.socket | None) -> None:
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed
                pass


#: The deadline of the GET running in this thread (each HttpClient is used by one thread).
_ACTIVE = threading.local()


if TYPE_CHECKING:  # the connection classes the mixin goes before (below)
    _ConnectionBase = HTTPConnection
else:
    _ConnectionBase = object


class _WatchedConnectionMixin(_ConnectionBase):
    """Hands the connection's socket to the running request's :class:`_Deadline` once the
    request is sent, before urllib3 starts reading the status line and headers. When the
    GET is recorded (an :class:`Exchange` is active), it also keeps the bytes of the
    request head as written to the socket, the time it was sent and the peer address."""

    _sent: list[bytes] | None = None  # the request head's pieces while recording

    def request(self, *args: Any, **kwargs: Any) -> None:
        exchange = getattr(_ACTIVE, "exchange", None)
        if exchange is not None:
            exchange.sent_at = datetime.datetime.now(datetime.UTC)
            self._sent = []
        try:
            result = super().request(*args, **kwargs)
        finally:
            if exchange is not None:
                exchange.request_head, self._sent = b"".join(self._sent), None  # type: ignore[arg-type]  # set above
        if exchange is not None:
            exchange.peer_ip = _peer_ip(self.sock)
        deadline = getattr(_ACTIVE, "deadline", None)
        if deadline is not None:
            deadline.attach(self.sock)
        return result

    def send(self, data: Any) -> None:  # http.client's _DataType, private to typeshed
        super().send(data)
        if self._sent is not None and isinstance(data, (bytes, bytearray)):
            self._sent.append(bytes(data))


class _WatchedHTTPConnection(_WatchedConnectionMixin, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_WatchedConnectionMixin, HTTPSConnection):
    pass


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


def _peer_ip(sock: Any) -> str | None:  # Any: None or a non-socket is caught below
    """The IP address the socket is connected to, or None (closed, or not an IP socket)."""
    try:
        return sock.getpeername()[0]
    except (OSError, AttributeError, IndexError, TypeError):
        return None


_WATCHED_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class _WatchedAdapter(HTTPAdapter):
    """requests adapter whose pools use the watched connection classes, and which sends
    an empty query (``/p?``) as written: requests would send ``/p``, another URL
    (RFC 3986 §6.2.3 keeps an empty query distinct from none)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _WATCHED_POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = _WATCHED_POOLS  # HTTP(S)_PROXY: watched too
        return manager

    # request: a requests.PreparedRequest, as Any: its url is typed str | None (_get sets it)
    def request_url(self, request: Any, proxies: dict[str, str] | None) -> str:
        target = super().request_url(request, proxies)
        if request.url.endswith("?") and not target.endswith("?"):
            target += "?"
        return target


@dataclasses.dataclass(frozen=True, slots=True)
class Revisit:
    """The earlier capture of a URL that a request repeats (a recrawl's conditional
    request), for a WARC ``revisit`` record (WARC 1.1 §6.7).

    Attributes:
        target_uri: the URL the earlier capture requested (``WARC-Refers-To-Target-URI``).
        date: when it was fetched, ISO 8601 UTC (``WARC-Refers-To-Date``).
        payload_digest: ``sha1:`` and the base32 SHA-1 of its body as received with any
            content-coding undone, or None: a body with this digest (and no
            content-coding) is an identical payload.
    """

    target_uri: str
    date: str
    payload_digest: str | None


@dataclasses.dataclass(slots=True)
class Exchange:
    """The raw HTTP exchange of one GET, kept only for a recording client
    (``HttpClient(on_exchange=...)``, the WARC output). Filled in as the GET goes on:
    a GET that failed before its request was written has an empty ``request_head``, one
    that got no status line has ``status`` None.

    Attributes:
        url: the URL requested (the request target sent is in ``request_head``).
        sent_at: when the request started to be written (UTC), or None.
        request_head: the request line and header lines exactly as written to the
            socket, ending with the empty line (a GET has no body).
        peer_ip: the IP address of the server (or proxy) the request went to, or None.
        http_version: the response's HTTP version, ``"HTTP/1.1"`` or ``"HTTP/1.0"``.
        status: the response's status code, or None when no response came.
        reason: the reason phrase as sent.
        headers: the response header fields as received, in order, repeated fields
            kept (``(name, value)``; values as http.client reads them: Latin-1,
            leading whitespace dropped, folded lines kept).
        body_parts: the body bytes as received, content-encoding (gzip...) not undone,
            chunked transfer-coding removed (:attr:`body` joins them).
        cut: why the body is not the whole body, in WARC 1.1's ``WARC-Truncated`` terms:
            ``"length"`` (the body went on past ``max_body_bytes``), ``"time"`` (the
            total timeout), ``"disconnect"`` (the connection failed mid-body),
            ``"unspecified"`` (another failure, or a content-encoded redirect body,
            see :meth:`record_redirect_body`); None when complete.
        revisit: the earlier capture of this URL (:class:`Revisit`) when the request
            was conditional or a repeat of a recorded one, else None.
    """

    url: str
    sent_at: datetime.datetime | None = None
    request_head: bytes = b""
    peer_ip: str | None = None
    http_version: str = "HTTP/1.1"
    status: int | None = None
    reason: str = ""
    headers: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    body_parts: list[bytes] = dataclasses.field(default_factory=list)
    cut: str | None = None
    revisit: Revisit | None = None

    @property
    def body(self) -> bytes:
        """The body bytes received (see the class docstring)."""
        return b"".join(self.body_parts)

    @property
    def warc_date(self) -> str | None:
        """:attr:`sent_at` as a WARC record's ``WARC-Date`` (W3C ISO 8601 in UTC with the
        microseconds, as warcio writes it: none when they are 0), or None."""
        if self.sent_at is None:
            return None
        return self.sent_at.astimezone(datetime.UTC).replace(tzinfo=None).isoformat() + "Z"

    # original: an http.client.HTTPResponse, as Any: its read1 method is replaced below
    def record_response(self, original: Any) -> None:
        """Keep the status line and headers of ``original`` (the ``http.client``
        response under urllib3's, as requests' cookie code reads it) and tee its body
        reads into :attr:`body_parts`: urllib3 reads the body through its ``read1``,
        after http.client has removed any chunking and before urllib3 decodes it."""
        self.http_version = "HTTP/1.0" if original.version == 10 else "HTTP/1.1"
        self.status, self.reason = original.status, original.reason or ""
        self.headers = list(original.msg.raw_items())
        read1, parts = original.read1, self.body_parts

        def recording_read1(n: int = -1) -> bytes:
            data = read1(n)
            if data:
                parts.append(data)
            return data

        original.read1 = recording_read1

    def record_redirect_body(self, resp: requests.Response) -> None:
        """Keep the body of a redirect, which requests has already read (its
        ``Session.send`` reads a redirect's body to release the connection, decoded):
        without a Content-Encoding those are the bytes as sent; with one, the bytes sent
        are lost and the body is marked ``cut = "unspecified"``."""
        content = resp.__dict__.get("_content")
        if isinstance(content, bytes) and (not content or "Content-Encoding" not in resp.headers):
            self.body_parts = [content]
        else:
            self.body_parts, self.cut = [], "unspecified"


@dataclasses.dataclass(frozen=True, slots=True)
class Response:
    """What one GET returned.

    Attributes:
        url: the URL requested.
        status: HTTP status code.
        content_type: the Content-Type header, or None.
        location: the Location header of a redirect (301, 302, 303, 307 or 308 with a
            Location, RFC 9110 §15.4), as requests reads it (raw UTF-8 bytes decoded
            as UTF-8), else None.
        body: the decoded (gzip/deflate undone) body, at most ``max_body_bytes``;
            empty for redirects.
        truncated: True if the body was cut at ``max_body_bytes``.
        elapsed_ms: wall-clock milliseconds from request to last byte.
        retry_after: the ``Retry-After`` header as sent, or None.
        date: the ``Date`` header as sent, or None (a Retry-After date is relative to it).
        content_length: the ``Content-Length`` header as a number of bytes (RFC 9110
            §8.6: of the content as sent, before gzip is undone), or None when absent or
            not a number.
        method: the request method, ``"GET"`` or ``"HEAD"``.
        warc_date: with a recording client, the ``WARC-Date`` of this GET's records
            (:attr:`Exchange.warc_date`), else None.
        etag: the ``ETag`` header exactly as sent, or None (RFC 9110 §8.8.3).
        last_modified: the ``Last-Modified`` header exactly as sent, or None (RFC 9110
            §8.8.2).
    """

    url: str
    status: int
    content_type: str | None
    location: str | None
    body: bytes
    truncated: bool
    elapsed_ms: float
    retry_after: str | None = None
    date: str | None = None
    content_length: int | None = None
    method: str = "GET"
    etag: str | None = None
    last_modified: str | None = None
    warc_date: str | None = None


class _ClientSettings(Protocol):
    """What :meth:`HttpClient.from_config` reads of a :class:`crawler.config.CrawlConfig`
    (not imported: the config is a higher layer, see tests/test_layers.py)."""

    @property
    def user_agent(self) -> str: ...
    @property
    def connect_timeout_s(self) -> float: ...
    @property
    def read_timeout_s(self) -> float: ...
    @property
    def total_timeout_s(self) -> float: ...
    @property
    def max_body_bytes(self) -> int: ...


class HttpClient:
    """One ``requests.Session`` (keep-alive pool) with the crawl's limits. The session
    keeps no cookie (:class:`crawler.web.cookies.NoCookies`): only the jar handed to
    :meth:`get` does.

    Args:
        user_agent: User-Agent header value ('' selects :data:`DEFAULT_USER_AGENT`).
        connect_timeout_s, read_timeout_s: per-socket timeouts (seconds).
        total_timeout_s: wall-clock cap on one GET including the body (seconds); a
            server trickling bytes is cut off after at most this plus one read timeout.
        max_body_bytes: the body is streamed and cut at this many bytes.
        on_exchange: if given, called after every GET whose request was written (it
            succeeded or raised :class:`FetchError`) with its raw :class:`Exchange`, in
            the calling thread; None (the default) records nothing and costs nothing.
    """

    def __init__(
        self,
        user_agent: str = "",
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 30.0,
        total_timeout_s: float = 120.0,
        max_body_bytes: int = 20 * 1024 * 1024,
        on_exchange: Callable[[Exchange], object] | None = None,
    ) -> None:
        self.session = requests.Session()
        self.session.cookies.set_policy(NoCookies())  # a cookie lives in the caller's jar only
        for prefix in ("http://", "https://"):
            self.session.mount(prefix, _WatchedAdapter())
        self.session.headers["User-Agent"] = user_agent or DEFAULT_USER_AGENT
        self.session.headers["Accept"] = "text/html,application/xhtml+xml,*/*;q=0.8"
        self.timeout = (connect_timeout_s, read_timeout_s)
        self.total_timeout_s = total_timeout_s
        self.max_body_bytes = max_body_bytes
        self._origin_cache: dict[str, tuple[dict, tuple[str, str] | None]] = {}
        self.on_exchange = on_exchange

    @classmethod
    def from_config(
        cls, config: _ClientSettings, on_exchange: Callable[[Exchange], object] | None = None
    ) -> HttpClient:
        """Build a client from a :class:`crawler.config.CrawlConfig` (``on_exchange``: see
        the class)."""
        return cls(
            config.user_agent,
            config.connect_timeout_s,
            config.read_timeout_s,
            config.total_timeout_s,
            config.max_body_bytes,
            on_exchange,
        )

    def get(
        self,
        url: str,
        max_body_bytes: int | None = None,
        *,
        method: str = "GET",
        body_wanted: Callable[[str | None], bool] | None = None,
        headers: Mapping[str, str] | None = None,
        revisit: Revisit | None = None,
        cookies: http.cookiejar.CookieJar | None = None,
    ) -> Response:
        """GET ``url`` without following redirects; the body is cut at
        ``max_body_bytes`` (default: the client's). A recording client hands the
        exchange to ``on_exchange`` before returning or raising.

        ``headers``: more request header fields for this request only (the validators
        of a conditional request, RFC 9110 §13.1). ``revisit``: the earlier capture of
        this URL, kept on the :class:`Exchange` so that a recording client can write a
        304, or a body identical to the earlier one, as a WARC ``revisit`` record.

        ``method="HEAD"`` sends a HEAD instead (RFC 9110 §9.3.2: the headers a GET would
        get, no body). ``body_wanted``, a function of the Content-Type header (or None),
        decides after the headers whether the body is read at all; when it says no, the
        body is left unread (``b""``) and the connection closed.

        ``cookies``: a jar whose cookies for ``url`` are sent (its policy decides which:
        domain, path, ``Secure``, expiry) and into which the response's ``Set-Cookie``
        are stored, even when the body then fails; None (the default): no cookie is
        sent and none kept.

        Raises:
            FetchError: no complete response (see :attr:`FetchError.reason`).
        """
        if self.on_exchange is None:
            return self._watched_get(url, max_body_bytes, None, method, body_wanted, headers, cookies)
        exchange = Exchange(url, revisit=revisit)
        try:
            response = self._watched_get(url, max_body_bytes, exchange, method, body_wanted, headers, cookies)
        except FetchError as exc:
            if exchange.status is not None:  # the headers came, the body did not end
                exchange.cut = _CUT_BY_REASON.get(exc.reason, "unspecified")
            if exchange.request_head:
                self._record(exchange)
            raise
        self._record(exchange)
        return dataclasses.replace(response, warc_date=exchange.warc_date)

    def _record(self, exchange: Exchange) -> None:
        """Hand ``exchange`` to ``on_exchange``; a failure there (a header warcio cannot
        write, a full disk) loses that WARC record, never the fetch."""
        try:
            self.on_exchange(exchange)  # type: ignore[misc]  # get() calls this only when it is set
        except Exception as exc:
            log.warning("WARC record of %s not written: %s: %s", exchange.url, type(exc).__name__, exc)

    def _watched_get(
        self,
        url: str,
        max_body_bytes: int | None,
        exchange: Exchange | None,
        method: str = "GET",
        body_wanted: Callable[[str | None], bool] | None = None,
        headers: Mapping[str, str] | None = None,
        cookies: http.cookiejar.CookieJar | None = None,
    ) -> Response:
        """:meth:`get` under the wall-clock watchdog, ``exchange`` filled in if given."""
        started = time.monotonic()
        deadline = _Deadline()
        armed = deadlines.arm(self.total_timeout_s, deadline.expire)
        _ACTIVE.deadline = deadline
        _ACTIVE.exchange = exchange
        try:
            response = self._get(
                url, started, max_body_bytes or self.max_body_bytes, method, body_wanted, exchange, headers, cookies
            )
        except FetchError as exc:
            if deadline.expired and exc.reason != "timeout":
                raise FetchError("timeout", f"no complete response after {self.total_timeout_s:g} s") from exc
            raise
        else:
            # The watchdog shut the socket: a body ended by connection close looks complete.
            if deadline.expired:
                raise FetchError("timeout", f"body cut at {self.total_timeout_s:g} s")
            return response
        finally:
            armed.disarm()
            _ACTIVE.deadline = _ACTIVE.exchange = None

    def head(self, url: str, cookies: http.cookiejar.CookieJar | None = None) -> Response:
        """HEAD ``url`` (see :meth:`get`, and for ``cookies``): status and headers, never
        a body.

        Raises:
            FetchError: no complete response.
        """
        return self.get(url, method="HEAD", body_wanted=_no_body, cookies=cookies)

    def _get(
        self,
        url: str,
        started: float,
        cap: int,
        method: str = "GET",
        body_wanted: Callable[[str | None], bool] | None = None,
        exchange: Exchange | None = None,
        headers: Mapping[str, str] | None = None,
        cookies: http.cookiejar.CookieJar | None = None,
    ) -> Response:
        """:meth:`get` without the watchdog; translates every foreign exception."""
        try:
            settings, auth = self._origin_settings(url)
            prepared = self._prepare(method, url, headers, auth)
            if cookies is not None:
                header = get_cookie_header(cookies, prepared)  # the jar's policy picks them
                if header:
                    prepared.headers["Cookie"] = header
            with self.session.send(prepared, allow_redirects=False, timeout=self.timeout, **settings) as resp:
                if cookies is not None:
                    extract_cookies_to_jar(cookies, prepared, resp.raw)
                if exchange is not None:
                    original = resp.raw._original_response
                    exchange.record_response(original)
                # requests re-reads the Latin-1-decoded header bytes as UTF-8, as browsers do
                location = self.session.get_redirect_target(resp)
                if location is not None:
                    body, truncated = b"", False
                    if exchange is not None:
                        exchange.record_redirect_body(resp)
                elif body_wanted is not None and not body_wanted(resp.headers.get("Content-Type")):
                    body, truncated = b"", False
                else:
                    body, truncated = self._read_body(resp.raw, cap)
                    if truncated and exchange is not None and not original.isclosed():
                        exchange.cut = "length"  # the body went on past what was read
                return Response(
                    url,
                    resp.status_code,
                    resp.headers.get("Content-Type"),
                    location,
                    body,
                    truncated,
                    (time.monotonic() - started) * 1000.0,
                    resp.headers.get("Retry-After"),
                    resp.headers.get("Date"),
                    _content_length(resp.headers.get("Content-Length")),
                    method,
                    resp.headers.get("ETag"),
                    resp.headers.get("Last-Modified"),
                )
        except FetchError:
            raise
        except (requests.Timeout, urllib3.exceptions.TimeoutError) as exc:
            raise FetchError("timeout", str(exc)) from exc
        except requests.exceptions.SSLError as exc:
            raise FetchError("ssl", str(exc)) from exc
        except (requests.exceptions.ChunkedEncodingError, urllib3.exceptions.ProtocolError) as exc:
            raise FetchError("incomplete body", str(exc)) from exc
        except (requests.exceptions.ContentDecodingError, urllib3.exceptions.DecodeError) as exc:
            raise FetchError("decoding", str(exc)) from exc
        except requests.ConnectionError as exc:
            raise FetchError("connection", str(exc)) from exc
        except requests.exceptions.InvalidHeader as exc:  # a ValueError, but not about the URL
            raise FetchError("http error", f"{type(exc).__name__}: {exc}") from exc
        except (
            requests.exceptions.InvalidURL,
            requests.exceptions.InvalidSchema,
            requests.exceptions.MissingSchema,
            UnicodeError,
            ValueError,
        ) as exc:
            raise FetchError("invalid url", str(exc)) from exc
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise FetchError("http error", f"{type(exc).__name__}: {exc}") from exc

    def _prepare(
        self, method: str, url: str, headers: Mapping[str, str] | None, auth: tuple[str, str] | None
    ) -> requests.PreparedRequest:
        """The request as ``Session.prepare_request`` would build it for this client: the
        session's headers, then ``headers``; ``auth`` from ``~/.netrc``, else the URL's
        user and password (Basic, as requests sends them); no body, no
        cookie (the session's jar keeps none). Built directly, because requests merges
        the session's cookies, parameters and hooks anew on every call (about 0.1 ms a
        GET). The URL is validated by requests but sent as given: it is already
        normalized (RFC 3986), and requests would drop an empty query.

        Raises:
            requests.exceptions.InvalidURL, MissingSchema, InvalidHeader: as
                ``prepare_request`` would.
        """
        prepared = requests.PreparedRequest()
        prepared.prepare_method(method)
        prepared.prepare_url(url, None)
        prepared.url = url
        prepared.prepare_headers({**self.session.headers, **headers} if headers else self.session.headers)
        prepared.prepare_body(None, None)
        prepared.prepare_cookies(self.session.cookies)  # keeps none; requests reads a redirect's into it
        prepared.prepare_auth(auth, url)  # None: the URL's own user and password, if any
        return prepared

    def _origin_settings(self, url: str) -> tuple[dict, tuple[str, str] | None]:
        """requests' per-request environment settings (proxies, ``NO_PROXY``, CA bundle)
        and the origin's ``~/.netrc`` credentials, worked out once per origin: requests
        reads ``os.environ`` and stats ``~/.netrc`` on every call, which cost about a
        third of a GET's CPU on loopback. The environment does not change during a
        crawl."""
        key = "/".join(url.split("/", 3)[:3])
        settings = self._origin_cache.get(key)
        if settings is None:
            environment = self.session.merge_environment_settings(url, {}, True, None, None)  # stream=True
            auth = requests.utils.get_netrc_auth(url) if self.session.trust_env else None
            settings = self._origin_cache[key] = (environment, auth)
        return settings

    def _read_body(self, raw: urllib3.BaseHTTPResponse, cap: int) -> tuple[bytes, bool]:
        """Read the decoded body in ``read1`` steps (each returns as soon as any data
        arrived), up to the size cap. The deadline is the watchdog's (:meth:`get`)."""
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = raw.read1(READ_CHUNK_BYTES, decode_content=True)
            if not chunk:
                return b"".join(chunks), False
            chunks.append(chunk)
            size += len(chunk)
            if size >= cap:
                body = b"".join(chunks)
                return body[:cap], size > cap or _more_follows(raw)

    def close(self) -> None:
        """Close the session's connection pool."""
        self.session.close()


def _no_body(_content_type: str | None) -> bool:
    """``body_wanted`` of a HEAD: there is no body to read."""
    return False


def _content_length(value: str | None) -> int | None:
    """A ``Content-Length`` header as a number (RFC 9110 §8.6: digits only), else None."""
    value = (value or "").strip()
    return int(value) if value.isascii() and value.isdigit() else None  # not "²"


def _more_follows(raw: urllib3.BaseHTTPResponse) -> bool:
    """After exactly ``max_body_bytes``: does the body go on? A stall or error counts as
    yes (the cap was reached, so the record is marked truncated rather than failed)."""
    try:
        return bool(raw.read1(1, decode_content=True))
    except (urllib3.exceptions.HTTPError, OSError):
        return True
