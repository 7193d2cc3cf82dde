"""A test web server on 127.0.0.1 (port 0) that counts every request.

It serves either a table of routes (path with query -> :class:`Route`, or a function of
the request's headers that returns one) or a folder of files, or both (routes first).
``hits`` counts GET requests per raw request target (path plus query, as the client
sent it), ``times`` lists when each arrived (``time.monotonic()``), ``cookie_log`` lists
each request's target and ``Cookie`` header (None without one) in order of arrival,
and ``max_concurrent`` is the most requests it was answering at
once (a per-host politeness check): a request counts from its arrival until just before
its response's last byte is written, the moment after which the client may end it.
"""

from __future__ import annotations

import collections
import http.server
import mimetypes
import os
import socket
import struct
import sys
import threading
import time
import urllib.parse


class Route:
    """A canned response: status, headers and body (bytes or str, str sent as UTF-8)."""

    def __init__(
        self,
        body=b"",
        status=200,
        headers=None,
        content_type="text/html; charset=utf-8",
        delay_s: float = 0.0,
        drip_s: float = 0.0,
        reset_after: int | None = None,
    ):
        self.body = body.encode("utf-8") if isinstance(body, str) else body
        self.status = status
        self.delay_s = delay_s  # seconds before the answer
        self.drip_s = drip_s  # > 0: the body is sent one byte at a time, this far apart
        self.reset_after = reset_after  # send this many body bytes, then a TCP reset
        self.headers = dict(headers or {})
        if content_type is not None:
            self.headers.setdefault("Content-Type", content_type)


class Sequence:
    """Routes answered in turn, one per request; the last one repeats (``429`` then
    ``200``: a rate limit that lifts)."""

    def __init__(self, *routes: Route) -> None:
        self.routes = list(routes)
        self._lock = threading.Lock()

    def next(self) -> Route:
        with self._lock:
            return self.routes.pop(0) if len(self.routes) > 1 else self.routes[0]


def redirect(location: str, status: int = 301) -> Route:
    """A redirect route to ``location``."""
    return Route(b"", status, {"Location": location}, content_type=None)


def page(title: str, *hrefs: str, head: str = "", body: str = "") -> Route:
    """An HTML page titled ``title`` (also its ``<h1>``) with ``body``, then a list of
    links to ``hrefs``; ``head`` goes into its ``<head>``."""
    links = "".join(f'<li><a href="{h}">{h}</a></li>' for h in hrefs)
    return Route(
        f"<html><head><title>{title}</title>{head}</head><body><h1>{title}</h1>{body}<ul>{links}</ul></body></html>"
    )


class _QuietServer(http.server.ThreadingHTTPServer):
    """A client hanging up mid-response (a killed fetcher, a timeout) is expected here."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class SiteServer:
    """Threaded HTTP/1.1 server; use as a context manager. ``url(path)`` builds URLs."""

    def __init__(self, routes=None, root: str | None = None) -> None:
        self.routes = dict(routes or {})
        self.root = root
        self.hits: collections.Counter[str] = collections.Counter()
        self.clients: set[tuple[str, int]] = set()  # distinct client sockets (keep-alive check)
        self.times: dict[str, list[float]] = collections.defaultdict(list)
        self.requests: list[tuple[float, str, str]] = []  # (monotonic time, target, User-Agent)
        self.cookie_log: list[tuple[str, str | None]] = []  # (target, Cookie header or None)
        self.concurrent = 0
        self.max_concurrent = 0
        self._lock = threading.Lock()
        self._local = threading.local()  # per request thread: the client's address
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no 40 ms Nagle/delayed-ACK stall per response

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                with server._lock:
                    server.hits[self.path] += 1
                    server.times[self.path].append(time.monotonic())
                    server.requests.append((time.monotonic(), self.path, self.headers.get("User-Agent", "")))
                    server.cookie_log.append((self.path, self.headers.get("Cookie")))
                    server.clients.add(self.client_address)
                    server.concurrent += 1
                    server.max_concurrent = max(server.max_concurrent, server.concurrent)
                self._answering = True
                try:
                    self._answer()
                finally:
                    self._answered()

            def _answered(self):
                """The request stops counting as answered at once: called (once) just
                before the response's last byte is sent, so a client that reads the
                whole response and then sends its next request is never seen
                overlapping with it because this thread had not yet run on."""
                if self._answering:
                    self._answering = False
                    with server._lock:
                        server.concurrent -= 1

            def _answer(self):
                server._local.client = self.client_address
                route = server.lookup(self.path)
                if isinstance(route, Sequence):
                    route = route.next()
                elif callable(route):  # a route that depends on the request (its cookies)
                    route = route(self.headers)
                if route is None:
                    route = Route("<h1>not found</h1>", 404)
                if route.delay_s:
                    time.sleep(route.delay_s)
                self.send_response(route.status)
                for name, value in route.headers.items():
                    for one in value if isinstance(value, list) else [value]:  # a list: the field repeated
                        self.send_header(name, one)
                self.send_header("Content-Length", str(len(route.body)))
                if not route.body and route.reset_after is None:
                    self._answered()  # the headers' end is the response's end
                self.end_headers()
                if route.reset_after is not None:
                    self.wfile.write(route.body[: route.reset_after])
                    self.wfile.flush()
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )  # close = RST
                    self.close_connection = True
                    return
                if route.drip_s:
                    for i in range(len(route.body)):
                        self.wfile.write(route.body[i : i + 1])
                        self.wfile.flush()
                        time.sleep(route.drip_s)
                    return
                self.wfile.write(route.body[:-1])
                self._answered()
                self.wfile.write(route.body[-1:])

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def lookup(self, target: str) -> Route | None:
        """The route for a request target, else a file under ``root``, else None."""
        if target in self.routes:
            return self.routes[target]
        if self.root is None:
            return None
        path = urllib.parse.unquote(urllib.parse.urlsplit(target).path)
        full = os.path.realpath(os.path.join(self.root, path.lstrip("/")))
        if os.path.isdir(full):
            full = os.path.join(full, "index.html")
        if not full.startswith(os.path.realpath(self.root)) or not os.path.isfile(full):
            return None
        ctype = mimetypes.guess_type(full)[0] or "application/octet-stream"
        if ctype == "text/html":
            ctype = "text/html; charset=utf-8"
        with open(full, "rb") as f:
            return Route(f.read(), 200, content_type=ctype)

    def current_client_port(self) -> int:
        """The client's TCP port of the request being answered (call from ``lookup``)."""
        return self._local.client[1]

    def url(self, path: str = "/") -> str:
        return self.base + path

    def __enter__(self) -> SiteServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
