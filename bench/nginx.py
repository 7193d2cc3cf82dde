"""nginx from Debian, serving a folder on 127.0.0.1 with one worker process, for benchmarks.

``with Nginx(root) as server:`` gives ``server.url(path)``, ``server.requests()`` (a
Counter of request paths logged since the last call) and ``server.cpu_s()`` (user+sys
CPU seconds of the nginx processes so far).
"""

from __future__ import annotations

import collections
import os
import shutil
import socket
import subprocess
import tempfile
import time

import psutil

CONF = """
daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{ worker_connections 1024; }}
http {{
    include /etc/nginx/mime.types;
    access_log {tmp}/access.log;
    client_body_temp_path {tmp};
    proxy_temp_path {tmp};
    fastcgi_temp_path {tmp};
    uwsgi_temp_path {tmp};
    scgi_temp_path {tmp};
    server {{
        listen 127.0.0.1:{port};
        root {root};
        charset utf-8;
    }}
}}
"""


def nginx_binary() -> str | None:
    """Path of nginx, or None when it is not installed (apt-get install nginx-light)."""
    return shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)


class Nginx:
    """nginx on a free 127.0.0.1 port serving ``root``; a context manager."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self.tmp = tempfile.mkdtemp(prefix="crawler-nginx-")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._log_offset = 0
        self.process: subprocess.Popen | None = None

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> Nginx:
        conf = os.path.join(self.tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(CONF.format(tmp=self.tmp, port=self.port, root=self.root))
        self.process = subprocess.Popen([nginx_binary(), "-c", conf, "-p", self.tmp])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not start")

    def requests(self) -> collections.Counter:
        """Request paths logged since the previous call."""
        counts: collections.Counter[str] = collections.Counter()
        path = os.path.join(self.tmp, "access.log")
        if not os.path.exists(path):
            return counts
        with open(path) as f:
            f.seek(self._log_offset)
            for line in f:
                counts[line.split('"')[1].split()[1]] += 1
            self._log_offset = f.tell()
        return counts

    def cpu_s(self) -> float:
        """User + system CPU seconds of the nginx master and worker so far."""
        total = 0.0
        root = psutil.Process(self.process.pid)
        for proc in [root, *root.children(recursive=True)]:
            times = proc.cpu_times()
            total += times.user + times.system
        return total

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait(10)
        shutil.rmtree(self.tmp, ignore_errors=True)
