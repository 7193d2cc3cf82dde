"""A redis-server (Debian's) on 127.0.0.1, a free port, its files in a temporary folder.

AOF on with ``appendfsync everysec`` (the setting the docs recommend), no RDB snapshots.
``kill()`` is a SIGKILL, and ``start()`` again restarts it from its AOF on the same port.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    """A TCP port on 127.0.0.1 free at the time of the call."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """``with RedisServer(folder) as server:`` ... ``server.url``."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start (or restart) the server and wait until it answers PING (10 s at most)."""
        self.proc = subprocess.Popen(
            [
                REDIS_SERVER,
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--dir",
                self.folder,
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec",
                "--save",
                "",
                "--protected-mode",
                "yes",
                "--logfile",
                "redis.log",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        return self
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port} (see {self.folder}/redis.log)")

    def kill(self) -> None:
        """SIGKILL the server and wait for it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def __enter__(self) -> RedisServer:
        if shutil.which("redis-server") is None:  # .ci/run installs it: a skip is a failure there
            pytest.fail("redis-server is not installed (apt-get install redis-server)")
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.kill()
