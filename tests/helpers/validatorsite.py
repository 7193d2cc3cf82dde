"""A site on 127.0.0.1 whose paths answer conditional requests in four ways, for the
recrawl tests. Every request is logged with its path and validators.

- ``/etag/...``: a strong ETag from the content, no Last-Modified; If-None-Match that
  matches gives 304 (RFC 9110 §13.1.2);
- ``/lm/...``: a Last-Modified per page, no ETag; If-Modified-Since equal to it or later
  gives 304 (RFC 9110 §13.1.3);
- ``/newetag/...``: a new ETag on every response and a Last-Modified; If-None-Match never
  matches, and when it is present If-Modified-Since is not evaluated (RFC 9110 §13.2.2);
  If-Modified-Since alone is;
- ``/ignore/...``: ETag and Last-Modified sent, validators ignored (always 200).

``kind`` makes every path answer one way. Pages are HTML strings in
:attr:`ValidatorSite.pages` (path -> HTML), changed between crawls by the test; a path
not in it is a 404. ``/robots.txt`` is :attr:`ValidatorSite.robots`.
"""

from __future__ import annotations

import email.utils
import hashlib
import http.server
import itertools
import threading
import time

#: The Last-Modified of every page until the test edits it.
EPOCH = 1_700_000_000


class ValidatorSite:
    def __init__(self, pages: dict[str, str], delay_s: float = 0.0, kind: str | None = None) -> None:
        self.kind = kind  # every page answers as this kind, whatever its path
        self.pages = dict(pages)
        self.modified: dict[str, float] = {path: EPOCH for path in pages}
        self.robots = ""
        self.delay_s = delay_s
        self.log: list[tuple[str, int, str | None, str | None]] = []  # path, status, INM, IMS
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                site._answer(self)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def edit(self, path: str, html: str) -> None:
        """Change a page (or add one), with a Last-Modified a day later."""
        with self._lock:
            self.pages[path] = html
            self.modified[path] = self.modified.get(path, EPOCH) + 86400

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def requests(self, since: int = 0) -> list[tuple[str, int, str | None, str | None]]:
        with self._lock:
            return list(self.log[since:])

    def _answer(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        path = handler.path
        inm = handler.headers.get("If-None-Match")
        ims = handler.headers.get("If-Modified-Since")
        if self.delay_s and path != "/robots.txt":
            time.sleep(self.delay_s)
        with self._lock:
            if path == "/robots.txt":
                status, body, fields = 200, self.robots.encode(), {"Content-Type": "text/plain"}
            elif path not in self.pages:
                status, body, fields = 404, b"not here", {"Content-Type": "text/plain"}
            else:
                status, body, fields = self._page(path, inm, ims)
            self.log.append((path, status, inm, ims))
        handler.send_response(status)
        for name, value in fields.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _page(self, path: str, inm: str | None, ims: str | None) -> tuple[int, bytes, dict[str, str]]:
        body = self.pages[path].encode()
        modified = self.modified.get(path, EPOCH)
        date = email.utils.formatdate(modified, usegmt=True)
        fields = {"Content-Type": "text/html; charset=utf-8"}
        kind = self.kind or (path.split("/")[1] if path.count("/") > 1 else "etag")
        if kind == "etag":
            etag = '"' + hashlib.sha1(body).hexdigest()[:12] + '"'
            fields["ETag"] = etag
            if inm is not None and inm == etag:
                return 304, b"", {"ETag": etag}
        elif kind == "lm":
            fields["Last-Modified"] = date
            if ims is not None and email.utils.parsedate_to_datetime(ims).timestamp() >= modified:
                return 304, b"", {"Last-Modified": date}
        elif kind == "newetag":
            fields["ETag"] = f'W/"{next(self._counter)}"'
            fields["Last-Modified"] = date
            if inm is None and ims is not None and email.utils.parsedate_to_datetime(ims).timestamp() >= modified:
                return 304, b"", {"Last-Modified": date}
        else:  # ignore
            fields["ETag"] = '"fixed"'
            fields["Last-Modified"] = date
        return 200, body, fields

    def __enter__(self) -> ValidatorSite:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
