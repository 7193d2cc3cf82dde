"""HTTP only: one GET per call, streamed, capped in bytes and in wall-clock time.

This is the one place where requests/urllib3 exceptions are translated: every failure
leaves :meth:`HttpClient.get` as a :class:`FetchError` with a short ``reason``. Redirects
are *not* followed here: a 3xx comes back as a :class:`Response` with ``location`` set,
so the fetcher can normalize and claim the target like any other link (RFC 9110 §15.4).
"""

from __future__ import annotations

import dataclasses
import socket
import threading
import time

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from crawler import __version__
from crawler.errors import CrawlerError

#: Default User-Agent: project name and version, so site owners can tell who we are.
DEFAULT_USER_AGENT = f"crawler/{__version__} (corpus crawler; python-requests)"
#: Bytes asked of the socket per read; read1 returns as soon as any data arrived.
READ_CHUNK_BYTES = 64 * 1024


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
        """Timer callback: mark expired and shut the socket down."""
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


class _WatchedConnectionMixin:
    """Hands the connection's socket to the running request's :class:`_Deadline` once the
    request is sent, before urllib3 starts reading the status line and headers."""

    def request(self, *args, **kwargs):
        result = super().request(*args, **kwargs)
        deadline = getattr(_ACTIVE, "deadline", None)
        if deadline is not None:
            deadline.attach(self.sock)
        return result


class _WatchedHTTPConnection(_WatchedConnectionMixin, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_WatchedConnectionMixin, HTTPSConnection):
    pass


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_WATCHED_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class _WatchedAdapter(HTTPAdapter):
    """requests adapter whose pools use the watched connection classes, and which sends
    an empty query (``/p?``) as written: requests would send ``/p``, another URL
    (RFC 3986 §6.2.3 keeps an empty query distinct from none)."""

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _WATCHED_POOLS

    def proxy_manager_for(self, proxy, **proxy_kwargs):
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = _WATCHED_POOLS  # HTTP(S)_PROXY: watched too
        return manager

    def request_url(self, request, proxies):
        target = super().request_url(request, proxies)
        if request.url.endswith("?") and not target.endswith("?"):
            target += "?"
        return target


class FetchError(CrawlerError):
    """A fetch that produced no usable response.

    Attributes:
        reason: short machine-friendly reason: "timeout", "connection", "ssl",
            "invalid url", "incomplete body", "decoding", "http error".
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


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


class HttpClient:
    """One ``requests.Session`` (keep-alive pool) with the crawl's limits.

    Args:
        user_agent: User-Agent header value ('' selects :data:`DEFAULT_USER_AGENT`).
        connect_timeout_s, read_timeout_s: per-socket timeouts (seconds).
        total_timeout_s: wall-clock cap on one GET including the body (seconds); a
            server trickling bytes is cut off after at most this plus one read timeout.
        max_body_bytes: the body is streamed and cut at this many bytes.
    """

    def __init__(self, user_agent: str = "", connect_timeout_s: float = 10.0,
                 read_timeout_s: float = 30.0, total_timeout_s: float = 120.0,
                 max_body_bytes: int = 20 * 1024 * 1024) -> None:
        self.session = requests.Session()
        for prefix in ("http://", "https://"):
            self.session.mount(prefix, _WatchedAdapter())
        self.session.headers["User-Agent"] = user_agent or DEFAULT_USER_AGENT
        self.session.headers["Accept"] = "text/html,application/xhtml+xml,*/*;q=0.8"
        self.timeout = (connect_timeout_s, read_timeout_s)
        self.total_timeout_s = total_timeout_s
        self.max_body_bytes = max_body_bytes
        self._env_cache: dict[str, dict] = {}

    @classmethod
    def from_config(cls, config) -> "HttpClient":
        """Build a client from a :class:`crawler.config.CrawlConfig`."""
        return cls(config.user_agent, config.connect_timeout_s, config.read_timeout_s,
                   config.total_timeout_s, config.max_body_bytes)

    def get(self, url: str, max_body_bytes: int | None = None, *, method: str = "GET",
            body_wanted=None) -> Response:
        """GET ``url`` without following redirects; the body is cut at
        ``max_body_bytes`` (default: the client's).

        ``method="HEAD"`` sends a HEAD instead (RFC 9110 §9.3.2: the headers a GET would
        get, no body). ``body_wanted``, a function of the Content-Type header (or None),
        decides after the headers whether the body is read at all; when it says no, the
        body is left unread (``b""``) and the connection closed.

        Raises:
            FetchError: no complete response (see :attr:`FetchError.reason`).
        """
        started = time.monotonic()
        deadline = _Deadline()
        timer = threading.Timer(self.total_timeout_s, deadline.expire)
        timer.daemon = True
        _ACTIVE.deadline = deadline
        timer.start()
        try:
            response = self._get(url, started, max_body_bytes or self.max_body_bytes,
                                 method, body_wanted)
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
            timer.cancel()
            _ACTIVE.deadline = None

    def head(self, url: str) -> Response:
        """HEAD ``url`` (see :meth:`get`): status and headers, never a body.

        Raises:
            FetchError: no complete response.
        """
        return self.get(url, method="HEAD", body_wanted=_no_body)

    def _get(self, url: str, started: float, cap: int, method: str = "GET",
             body_wanted=None) -> Response:
        """:meth:`get` without the watchdog; translates every foreign exception."""
        try:
            prepared = self.session.prepare_request(requests.Request(method, url))
            prepared.url = url  # already normalized; requests would drop an empty query
            settings = dict(self._environment_settings(url), stream=True)
            with self.session.send(prepared, allow_redirects=False, timeout=self.timeout,
                                   **settings) as resp:
                # requests re-reads the Latin-1-decoded header bytes as UTF-8, as browsers do
                location = self.session.get_redirect_target(resp)
                if location is not None:
                    body, truncated = b"", False
                elif body_wanted is not None and not body_wanted(resp.headers.get("Content-Type")):
                    body, truncated = b"", False
                else:
                    body, truncated = self._read_body(resp.raw, cap)
                return Response(url, resp.status_code, resp.headers.get("Content-Type"),
                                location, body, truncated,
                                (time.monotonic() - started) * 1000.0,
                                resp.headers.get("Retry-After"), resp.headers.get("Date"),
                                _content_length(resp.headers.get("Content-Length")), method)
        except FetchError:
            raise
        except (requests.Timeout, urllib3.exceptions.TimeoutError) as exc:
            raise FetchError("timeout", str(exc)) from exc
        except requests.exceptions.SSLError as exc:
            raise FetchError("ssl", str(exc)) from exc
        except (requests.exceptions.ChunkedEncodingError,
                urllib3.exceptions.ProtocolError) as exc:
            raise FetchError("incomplete body", str(exc)) from exc
        except (requests.exceptions.ContentDecodingError,
                urllib3.exceptions.DecodeError) as exc:
            raise FetchError("decoding", str(exc)) from exc
        except requests.ConnectionError as exc:
            raise FetchError("connection", str(exc)) from exc
        except (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
                requests.exceptions.MissingSchema, UnicodeError, ValueError) as exc:
            raise FetchError("invalid url", str(exc)) from exc
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise FetchError("http error", f"{type(exc).__name__}: {exc}") from exc

    def _environment_settings(self, url: str) -> dict:
        """requests' per-request environment settings (proxies, ``NO_PROXY``, CA bundle),
        worked out once per origin: requests reads ``os.environ`` on every call, which
        cost about a third of a GET's CPU on loopback. The environment does not change
        during a crawl."""
        origin = url.split("/", 3)[:3]
        key = "/".join(origin)
        settings = self._env_cache.get(key)
        if settings is None:
            settings = self._env_cache[key] = self.session.merge_environment_settings(
                url, {}, True, None, None)
        return settings

    def _read_body(self, raw, cap: int) -> tuple[bytes, bool]:
        """Read the decoded body in ``read1`` steps (each returns as soon as any data
        arrived), up to the size cap. The deadline is the watchdog's (:meth:`get`)."""
        chunks, size = [], 0
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


def _no_body(_content_type) -> bool:
    """``body_wanted`` of a HEAD: there is no body to read."""
    return False


def _content_length(value: str | None) -> int | None:
    """A ``Content-Length`` header as a number (RFC 9110 §8.6: digits only), else None."""
    value = (value or "").strip()
    return int(value) if value.isdigit() else None


def _more_follows(raw) -> bool:
    """After exactly ``max_body_bytes``: does the body go on? A stall or error counts as
    yes (the cap was reached, so the record is marked truncated rather than failed)."""
    try:
        return bool(raw.read1(1, decode_content=True))
    except (urllib3.exceptions.HTTPError, OSError):
        return True
