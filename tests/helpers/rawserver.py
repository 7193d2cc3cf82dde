"""A tiny raw TCP server on 127.0.0.1 for what a :class:`~tests.helpers.siteserver.Route`
cannot express: trickled bodies, resets, malformed heads, request capture."""

from __future__ import annotations

import socket
import threading

WAIT_S = 10  # ceiling on every blocking wait of the raw server


class RawServer:
    """Threaded TCP server on 127.0.0.1 (port 0). ``handler(conn, server)`` owns each
    connection; ``requests`` collects the raw request heads read by :meth:`read_head`;
    ``stop`` is set on exit so handlers that loop can end."""

    def __init__(self, handler) -> None:
        self.handler = handler
        self.requests: list[bytes] = []
        self.sent = 0
        self.stop = threading.Event()
        self.done = threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self._sock.settimeout(WAIT_S)
        self.port = self._sock.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._accepter = threading.Thread(target=self._accept, daemon=True)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed on exit, or the accept timeout
                return
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(WAIT_S)
        try:
            self.handler(conn, self)
        except OSError:
            pass
        finally:
            conn.close()
            self.done.set()

    def read_head(self, conn: socket.socket) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
        self.requests.append(data)
        return data

    def __enter__(self) -> RawServer:
        self._accepter.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        except OSError:
            pass
        self._sock.close()
        self._accepter.join(WAIT_S)
        for thread in self._threads:
            thread.join(WAIT_S)
