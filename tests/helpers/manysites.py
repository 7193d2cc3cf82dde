r"""Many small sites on 127.0.0.1, one listening port each, served by ONE asyncio process.

Usage:
    python tests/helpers/manysites.py --sites N [--seed S] --ports-file F --log F
                                      [--robots-pad BYTES] [--max-seconds S] [--control]

It listens on N ports of 127.0.0.1 (port 0 each, so the kernel picks them), writes them
to ``--ports-file`` as JSON (``{"pid", "sites", "seed", "robots_pad", "ports": [...]}``,
site i on ``ports[i]``), then prints one line ``ready PORTS_FILE``.

Every request is logged in memory, and the log is written to ``--log`` on SIGUSR1 (the
log so far) and on exit: SIGTERM, SIGINT, ``--max-seconds`` (default 3,600: it stops by
itself), or, with ``--control``, the command ``stop`` or the end of its stdin (the parent
is gone). It goes to a temporary file, then is renamed: a reader never sees half of it.
Tab-separated, after a header line: ``port method target status start_ms end_ms
wall_ms``; ``start_ms`` is when the server had read the request head, ``end_ms`` just
before it wrote the response (after the write, if the response did not fit in the
socket buffer at once), both ``time.monotonic()`` in ms, the clock every process of the
machine shares; ``wall_ms`` is ``time.time()`` at the start. The client sent the request
before ``start_ms`` and got the response after ``end_ms``, so the client's own gap
between two requests is never longer than the gap measured here: a gap under the delay,
or an overlap, in this log is the client's doing.

``--control`` reads one command a line on stdin and answers one line on stdout:
``count`` -> ``count N`` (requests so far), ``flush`` -> ``flushed N`` (the log is
written), ``stop`` -> ``stopped N`` (written, then exit).

Pure standard library: asyncio streams and a minimal HTTP/1.1 server (GET and HEAD,
keep-alive, ``Content-Length`` on every response, ``Connection: close`` honoured, HTTP/1.0
closes unless it asks for keep-alive, an idle connection is closed after
:data:`IDLE_TIMEOUT_S`). The soft limit of open files is raised to the hard limit: 10,000
listening sockets plus the crawler's connections need more than the usual 1,024.

Each site is deterministic from (site index, seed) (:func:`site_plan`): a home page ``/``
linking to some of its 3-5 pages ``/page-J.html`` (the others are linked from those:
depth 2 or more), every page linking home; about 25% of the pages link to
``/page-1.html`` of another site and about 30% of the home pages to ``/guest.html`` of
another site, a page that only such links reach (about 30% of the sites have one). About
10% of the sites have a broken link (``/missing.html``, 404). robots.txt: about 84% answer
200 allowing everything, 10% 404 (allow everything, RFC 9309 2.3.1.3), 6% ``Disallow:
/private/`` with the home page linking to ``/private/report.html`` (a URL the crawler must
skip; the server would answer it). ``--robots-pad`` puts at least that many bytes of comment
lines first in every 200 robots.txt (a big robots.txt makes each robots.txt result a big message).

:func:`expected_crawl` gives the exact outcome a crawl from home pages must have (the URLs
to request once each, which of them answer 404, the URLs robots.txt makes it skip, the
requests per origin); :func:`analyse_log` checks a server log against it (each URL once,
nothing else, never two requests at once to one origin, the smallest gap between two
requests to one origin). :class:`ManySites` starts the server as a subprocess for tests
and benchmarks. Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import functools
import heapq
import json
import os
import random
import resource
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable

HOST = "127.0.0.1"
#: Seconds a keep-alive connection may stay idle before the server closes it.
IDLE_TIMEOUT_S = 30.0
#: Longest request head read (bytes); a longer one gets 431 and the connection closed.
MAX_HEAD_BYTES = 16 * 1024
#: Seconds the server runs at most unless ``--max-seconds`` says otherwise.
DEFAULT_MAX_SECONDS = 3600.0
#: Share of the sites whose robots.txt is missing (404) / disallows ``/private/``.
ROBOTS_MISSING_SHARE, ROBOTS_DISALLOW_SHARE = 0.10, 0.06
#: Share of the sites with a broken link, with a guest page; of pages linking across.
BROKEN_SHARE, GUEST_SHARE, CROSS_LINK_SHARE, GUEST_LINK_SHARE = 0.10, 0.30, 0.25, 0.30
PRIVATE_PATH, BROKEN_PATH, GUEST_PATH = "/private/report.html", "/missing.html", "/guest.html"
LOG_HEADER = "port\tmethod\ttarget\tstatus\tstart_ms\tend_ms\twall_ms"
REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    431: "Request Header Fields Too Large",
}
WORDS = (
    "corpus crawler origin politeness robots frontier fetcher dispatcher manager shard "
    "record markdown page link graph tree queue thread process delay keep alive socket "
    "port server client request response header body length close deterministic seed "
    "site index home guest private broken depth scope claim settle visited"
).split()


# -- the sites --------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SitePlan:
    """One site: its pages (path -> links, each ``(site index, path)``), its robots.txt
    kind (``allow``, ``missing`` or ``disallow``)."""

    index: int
    pages: dict[str, tuple[tuple[int, str], ...]]
    robots: str


def _rng(seed: int, index: int, part: str) -> random.Random:
    # a str seed goes through SHA-512: the same numbers on every run and platform
    return random.Random(f"manysites:{seed}:{index}:{part}")


def has_guest(index: int, seed: int) -> bool:
    """True if site ``index`` has a ``/guest.html`` page (reached only from other sites)."""
    return _rng(seed, index, "guest").random() < GUEST_SHARE


def site_plan(index: int, sites: int, seed: int) -> SitePlan:
    """The pages, links and robots.txt kind of site ``index`` of ``sites`` (pure)."""
    rng = _rng(seed, index, "plan")
    count = rng.randint(3, 5)
    pages = [f"/page-{j}.html" for j in range(1, count + 1)]
    from_home = rng.randint(1, count - 1)  # the rest hang below these: depth 2 or more
    links: dict[str, list[tuple[int, str]]] = {"/": [(index, p) for p in pages[:from_home]]}
    for path in pages:
        links[path] = [(index, "/")]
    for j in range(from_home, count):
        links[pages[rng.randrange(j)]].append((index, pages[j]))
    roll = rng.random()
    robots = (
        "missing"
        if roll < ROBOTS_MISSING_SHARE
        else "disallow"
        if roll < ROBOTS_MISSING_SHARE + ROBOTS_DISALLOW_SHARE
        else "allow"
    )
    if robots == "disallow":
        links["/"].append((index, PRIVATE_PATH))
    if rng.random() < BROKEN_SHARE:
        links[pages[0]].append((index, BROKEN_PATH))
    others = sites > 1
    for path in pages:
        if others and rng.random() < CROSS_LINK_SHARE:
            links[path].append(((index + rng.randrange(1, sites)) % sites, "/page-1.html"))
    if others and rng.random() < GUEST_LINK_SHARE:
        target = (index + rng.randrange(1, sites)) % sites
        if has_guest(target, seed):
            links["/"].append((target, GUEST_PATH))
    if has_guest(index, seed):
        links[GUEST_PATH] = [(index, "/"), (index, pages[-1])]
    if robots == "disallow":
        links[PRIVATE_PATH] = [(index, "/")]  # served, never to be requested
    return SitePlan(index, {path: tuple(targets) for path, targets in links.items()}, robots)


def robots_txt(plan: SitePlan, pad_bytes: int = 0) -> bytes | None:
    """The robots.txt body of a site, ``None`` for a 404; first whole comment lines, at
    least ``pad_bytes`` of them."""
    if plan.robots == "missing":
        return None
    rules = "User-agent: *\n" + ("Disallow: /private/\n" if plan.robots == "disallow" else "Disallow:\n")
    line = f"# site {plan.index}: padding of a long robots.txt, comments only\n"
    return (line * -(-pad_bytes // len(line)) + rules).encode()


def render_page(plan: SitePlan, path: str, ports: list[int], seed: int) -> bytes:
    """The HTML of ``path`` on the site (links to other sites are absolute URLs)."""
    rng = _rng(seed, plan.index, "text" + path)
    items = []
    for target, target_path in plan.pages[path]:
        href = target_path if target == plan.index else f"http://{HOST}:{ports[target]}{target_path}"
        items.append(f'<li><a href="{href}">site {target} {target_path}</a></li>')
    paragraphs = "".join(
        "<p>" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 80))) + ".</p>"
        for _ in range(rng.randint(1, 3))
    )
    title = f"Site {plan.index} {path}"
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>{title}</title></head>"
        f"<body><nav><a href=\"/\">home</a></nav><main><h1>{title}</h1>{paragraphs}"
        f"<ul>{''.join(items)}</ul></main></body></html>"
    ).encode()


# -- what a crawl must do ---------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Expected:
    """The exact outcome of a crawl from the home pages of some sites.

    Attributes:
        fetched: URLs the crawl must request exactly once (robots.txt aside).
        failed: those of ``fetched`` that answer 404 (recorded as failed).
        skipped: URLs the crawl claims and robots.txt makes it skip (never requested).
        robots_ports: ports whose robots.txt must be requested (once each).
        requests_by_port: requests each origin must get, robots.txt included.
        pages_by_port: URLs of ``fetched`` on each port (the politeness bound's factor).
    """

    fetched: frozenset[str]
    failed: frozenset[str]
    skipped: frozenset[str]
    robots_ports: frozenset[int]
    requests_by_port: dict[int, int]
    pages_by_port: dict[int, int]

    def politeness_bound_s(self, delay_s: float) -> float:
        """The least wall time the delay allows: the busiest origin's requests (robots.txt
        and its pages) one after the other, ``delay_s`` apart (the requests themselves take
        no time in this bound)."""
        return max((n - 1 for n in self.requests_by_port.values()), default=0) * delay_s


def expected_crawl(sites: int, seed: int, ports: list[int], seed_sites: Iterable[int] | None = None) -> Expected:
    """What a crawl of the sites from the home pages of ``seed_sites`` (default: all)
    must fetch: breadth-first over the links of the seed sites (the crawler's default
    scope: the seeds' host:port), a URL robots.txt disallows is skipped and not expanded,
    a 404 is fetched and not expanded."""
    seeds = sorted(set(range(sites) if seed_sites is None else seed_sites))
    in_scope = set(seeds)
    plans: dict[int, SitePlan] = {}

    def plan(i: int) -> SitePlan:
        if i not in plans:
            plans[i] = site_plan(i, sites, seed)
        return plans[i]

    seen = {(i, "/") for i in seeds}
    todo = collections.deque(sorted(seen))
    fetched, failed, skipped = set(), set(), set()
    while todo:
        i, path = todo.popleft()
        url = f"http://{HOST}:{ports[i]}{path}"
        p = plan(i)
        if p.robots == "disallow" and path.startswith("/private/"):
            skipped.add(url)
            continue
        fetched.add(url)
        if path not in p.pages:
            failed.add(url)
            continue
        for link in p.pages[path]:
            if link[0] in in_scope and link not in seen:
                seen.add(link)
                todo.append(link)
    pages_by_port = collections.Counter(int(u.split(":")[2].split("/")[0]) for u in fetched)
    requests_by_port = {port: n + 1 for port, n in pages_by_port.items()}
    return Expected(
        frozenset(fetched),
        frozenset(failed),
        frozenset(skipped),
        frozenset(pages_by_port),
        requests_by_port,
        dict(pages_by_port),
    )


# -- the server log ---------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Request:
    """One logged request (times in ms: ``start_ms``/``end_ms`` monotonic, ``wall_ms`` epoch)."""

    port: int
    method: str
    target: str
    status: int
    start_ms: float
    end_ms: float
    wall_ms: float

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}{self.target}"


def read_log(path: str) -> list[Request]:
    """The requests of a server log file, in the order they ended."""
    with open(path, encoding="utf-8") as f:
        header, *rows = f.read().splitlines()
    assert header == LOG_HEADER, header
    out = []
    for row in rows:
        port, method, target, status, start, end, wall = row.split("\t")
        out.append(Request(int(port), method, target, int(status), float(start), float(end), float(wall)))
    return out


def analyse_log(requests: list[Request], expected: Expected, delay_s: float) -> dict:
    """Check a server log against :func:`expected_crawl`.

    Returns a dict: ``requests``, ``robots_requests``, ``page_requests``; ``missing``
    (expected URLs never requested), ``unexpected`` (requested, not expected: a skipped
    URL, a path no link names), ``repeated`` (URL -> requests, for more than one; robots.txt
    included), ``robots_missing`` (ports whose robots.txt was never requested),
    ``overlaps`` (pairs of requests to one origin under way at once) with the ports where
    they happened, ``min_gap_ms`` (the shortest time from the end of a request to the
    start of the next to the same origin, over every origin), ``gaps_under_delay`` (how
    many gaps were shorter than ``delay_s``) and ``shortest_gaps`` (the ten shortest: gap
    ms, port, the two targets, the start of the second in monotonic ms), and ``ok``
    (nothing missing, unexpected or repeated, no overlap, no gap under the delay).
    """
    by_url = collections.Counter(r.url for r in requests)
    robots = {r.port for r in requests if r.target == "/robots.txt"}
    pages = collections.Counter(r.url for r in requests if r.target != "/robots.txt")
    missing = sorted(expected.fetched - set(pages))
    unexpected = sorted(set(pages) - expected.fetched)
    repeated = {url: n for url, n in sorted(by_url.items()) if n > 1}
    by_port: dict[int, list[Request]] = collections.defaultdict(list)
    for r in requests:
        by_port[r.port].append(r)
    overlaps, overlap_ports, gaps = 0, set(), []
    for port, rows in by_port.items():
        rows.sort(key=lambda r: r.start_ms)
        end, previous = None, None
        for r in rows:
            if end is not None:
                gap = r.start_ms - end
                if gap < 0:
                    overlaps += 1
                    overlap_ports.add(port)
                else:
                    gaps.append((round(gap, 3), port, previous.target, r.target, r.start_ms))
            if end is None or r.end_ms > end:
                end, previous = r.end_ms, r
    min_gap = min(gaps)[0] if gaps else None
    gaps_under = sum(1 for gap in gaps if gap[0] < delay_s * 1000)
    report = {
        "requests": len(requests),
        "robots_requests": sum(1 for r in requests if r.target == "/robots.txt"),
        "page_requests": sum(pages.values()),
        "expected_urls": len(expected.fetched),
        "missing": missing,
        "unexpected": unexpected,
        "repeated": repeated,
        "robots_missing": sorted(expected.robots_ports - robots),
        "overlaps": overlaps,
        "overlap_ports": sorted(overlap_ports),
        "min_gap_ms": min_gap,
        "gaps_under_delay": gaps_under,
        "shortest_gaps": heapq.nsmallest(10, gaps),
    }
    report["ok"] = not (missing or unexpected or repeated or report["robots_missing"] or overlaps or gaps_under)
    return report


# -- the server -------------------------------------------------------------------------
def raise_nofile_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit; returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class ManySitesServer:
    """The asyncio server of :func:`main` (one process, ``sites`` listening sockets)."""

    def __init__(self, sites: int, seed: int, log_path: str, robots_pad: int = 0) -> None:
        self.sites, self.seed, self.log_path, self.robots_pad = sites, seed, log_path, robots_pad
        self.ports: list[int] = []
        self.log: list[tuple] = []
        self.plans: list[SitePlan] = []
        self.stopped = asyncio.Event()
        self._servers: list[asyncio.base_events.Server] = []

    async def start(self) -> None:
        """Plan every site and listen on one port of 127.0.0.1 for each."""
        self.plans = [site_plan(i, self.sites, self.seed) for i in range(self.sites)]
        for i in range(self.sites):
            server = await asyncio.start_server(
                functools.partial(self._client, i), HOST, 0, backlog=128, limit=MAX_HEAD_BYTES
            )
            self._servers.append(server)
            self.ports.append(server.sockets[0].getsockname()[1])

    def answer(self, index: int, method: str, target: str) -> tuple[int, str, bytes]:
        """(status, Content-Type, body) for a request to site ``index``."""
        plan = self.plans[index]
        if method not in ("GET", "HEAD"):
            return 405, "text/plain", b"GET or HEAD only\n"
        path = target.split("?", 1)[0]
        if path == "/robots.txt":
            body = robots_txt(plan, self.robots_pad)
            return (404, "text/plain", b"no robots.txt\n") if body is None else (200, "text/plain", body)
        if path in plan.pages:
            return 200, "text/html; charset=utf-8", render_page(plan, path, self.ports, self.seed)
        return 404, "text/html; charset=utf-8", b"<!doctype html><title>404</title><h1>not found</h1>"

    async def _client(self, index: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        port = self.ports[index]
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), IDLE_TIMEOUT_S)
                except asyncio.LimitOverrunError:
                    await self._respond(
                        writer, port, "?", "?", 431, "text/plain", b"", False, time.monotonic(), time.time()
                    )
                    return
                except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                    return
                started, wall = time.monotonic(), time.time()
                lines = head.decode("latin-1").split("\r\n")
                parts = lines[0].split(" ")
                headers = {}
                for line in lines[1:]:
                    name, sep, value = line.partition(":")
                    if sep:
                        headers[name.strip().lower()] = value.strip()
                if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
                    await self._respond(
                        writer, port, "?", lines[0][:100], 400, "text/plain", b"bad request\n", False, started, wall
                    )
                    return
                method, target, version = parts
                tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
                keep = "close" not in tokens if version == "HTTP/1.1" else "keep-alive" in tokens
                length = headers.get("content-length", "0")
                if "transfer-encoding" in headers or not length.isdigit() or int(length) > MAX_HEAD_BYTES:
                    await self._respond(
                        writer, port, method, target, 400, "text/plain", b"bad body\n", False, started, wall
                    )
                    return
                if int(length):
                    await reader.readexactly(int(length))
                status, ctype, body = self.answer(index, method, target)
                await self._respond(writer, port, method, target, status, ctype, body, keep, started, wall)
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    async def _respond(
        self,
        writer,
        port: int,
        method: str,
        target: str,
        status: int,
        ctype: str,
        body: bytes,
        keep: bool,
        started: float,
        wall: float,
    ) -> None:
        """Write one response and log it (``started``: monotonic s, ``wall``: epoch s)."""
        head = [f"HTTP/1.1 {status} {REASONS[status]}", f"Content-Type: {ctype}", f"Content-Length: {len(body)}"]
        if not keep:
            head.append("Connection: close")
        # The end is taken before write(), which sends at once what fits in the socket
        # buffer: the client cannot have the answer earlier. Taken after it, a
        # preemption of this process (a busy machine) would count as request time.
        ended = time.monotonic()
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (b"" if method == "HEAD" else body))
        try:
            if writer.transport.get_write_buffer_size():  # it did not fit: ends once sent
                await writer.drain()
                ended = time.monotonic()
        finally:
            self.log.append((port, method, target, status, started * 1000, ended * 1000, wall * 1000))

    def write_log(self) -> int:
        """Write the log so far (temporary file, then rename); returns its requests."""
        rows = list(self.log)
        tmp = self.log_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(LOG_HEADER + "\n")
            for port, method, target, status, start, end, wall in rows:
                target = target.replace("\t", "%09")
                f.write(f"{port}\t{method}\t{target}\t{status}\t{start:.3f}\t{end:.3f}\t{wall:.3f}\n")
        os.replace(tmp, self.log_path)
        return len(rows)

    async def close(self) -> None:
        for server in self._servers:
            server.close()


def _write_json(path: str, value) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f)
    os.replace(tmp, path)


async def _control(server: ManySitesServer) -> None:
    """The ``--control`` commands on stdin (see the module docstring); EOF stops."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = (await reader.readline()).decode().strip()
        if line == "count":
            print(f"count {len(server.log)}", flush=True)
        elif line == "flush":
            print(f"flushed {server.write_log()}", flush=True)
        elif line in ("stop", ""):  # "" is EOF: the parent is gone
            server.stopped.set()
            return
        else:
            print(f"error unknown command {line!r}", flush=True)


async def serve(args) -> int:
    limit = raise_nofile_limit()
    if args.sites + 64 > limit:
        print(f"manysites: {args.sites} sites need more than the open-file limit {limit}", file=sys.stderr)
        return 2
    server = ManySitesServer(args.sites, args.seed, args.log, args.robots_pad)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.stopped.set)
    loop.add_signal_handler(signal.SIGUSR1, server.write_log)
    loop.call_later(args.max_seconds, server.stopped.set)
    await server.start()
    _write_json(
        args.ports_file,
        {
            "pid": os.getpid(),
            "sites": args.sites,
            "seed": args.seed,
            "robots_pad": args.robots_pad,
            "ports": server.ports,
        },
    )
    control = asyncio.ensure_future(_control(server)) if args.control else None
    print(f"ready {args.ports_file}", flush=True)
    await server.stopped.wait()
    count = server.write_log()
    await server.close()
    if control is not None:
        print(f"stopped {count}", flush=True)
        control.cancel()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, required=True, help="number of sites (one port each)")
    parser.add_argument("--seed", type=int, default=1, help="generation seed (default: %(default)s)")
    parser.add_argument("--ports-file", required=True, help="JSON file written once listening")
    parser.add_argument("--log", required=True, help="request log, written on SIGUSR1 and on exit")
    parser.add_argument("--robots-pad", type=int, default=0, help="bytes of comments in each robots.txt")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=DEFAULT_MAX_SECONDS,
        help="stop by itself after this long (default: %(default)s)",
    )
    parser.add_argument("--control", action="store_true", help="read commands on stdin (see above)")
    return asyncio.run(serve(parser.parse_args(argv)))


# -- the subprocess, for tests and benchmarks -------------------------------------------
class ManySites:
    """Run :func:`main` as a subprocess; a context manager.

    ``ports`` (site i on ``ports[i]``), ``home_urls``, ``expected()``, ``count()`` (requests
    so far), ``requests()`` (the log so far, read from the file the server writes) and
    ``seeds_file`` (the home pages, one a line). On exit the server is stopped (``stop``,
    then SIGKILL after :attr:`STOP_TIMEOUT_S`) and :attr:`final_requests` holds its log.

    Args:
        sites, seed, robots_pad: as the command's options.
        folder: where the ports file, the log and the seeds file go (default: a new
            temporary folder, left in place).
        max_seconds: the server stops by itself after this long.
        start_timeout_s: seconds to wait for ``ready``.
    """

    STOP_TIMEOUT_S = 10.0
    REPLY_TIMEOUT_S = 30.0

    def __init__(
        self,
        sites: int,
        seed: int = 1,
        robots_pad: int = 0,
        folder: str | None = None,
        max_seconds: float = DEFAULT_MAX_SECONDS,
        start_timeout_s: float = 120.0,
    ) -> None:
        self.sites, self.seed, self.robots_pad = sites, seed, robots_pad
        self.folder = folder or tempfile.mkdtemp(prefix="manysites-")
        os.makedirs(self.folder, exist_ok=True)
        self.ports_file = os.path.join(self.folder, "ports.json")
        self.log_path = os.path.join(self.folder, "requests.tsv")
        self.seeds_file = os.path.join(self.folder, "seeds.txt")
        self.max_seconds, self.start_timeout_s = max_seconds, start_timeout_s
        self.ports: list[int] = []
        self.proc: subprocess.Popen | None = None
        self.final_requests: list[Request] | None = None
        self._buffer = b""

    def __enter__(self) -> ManySites:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                os.path.abspath(__file__),
                "--sites",
                str(self.sites),
                "--seed",
                str(self.seed),
                "--ports-file",
                self.ports_file,
                "--log",
                self.log_path,
                "--robots-pad",
                str(self.robots_pad),
                "--max-seconds",
                str(self.max_seconds),
                "--control",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        try:
            line = self._line(self.start_timeout_s)
            if line != f"ready {self.ports_file}":
                raise RuntimeError(f"manysites server did not start: {line!r}")
            with open(self.ports_file, encoding="utf-8") as f:
                self.ports = json.load(f)["ports"]
            with open(self.seeds_file, "w", encoding="utf-8") as f:
                f.writelines(url + "\n" for url in self.home_urls)
        except BaseException:
            self.proc.kill()
            self.proc.wait()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._command("stop")
            self.proc.wait(self.STOP_TIMEOUT_S)
        except (OSError, RuntimeError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        if os.path.exists(self.log_path):
            self.final_requests = read_log(self.log_path)

    def _line(self, timeout_s: float) -> str:
        """The next line the server prints, within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise RuntimeError(f"manysites server: no answer in {timeout_s} s")
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"manysites server exited (code {self.proc.poll()})")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def _command(self, command: str) -> int:
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()
        reply = self._line(self.REPLY_TIMEOUT_S)
        word, _, number = reply.partition(" ")
        if not number.isdigit():
            raise RuntimeError(f"manysites server: {reply!r} to {command!r}")
        return int(number)

    @property
    def home_urls(self) -> list[str]:
        return [f"http://{HOST}:{port}/" for port in self.ports]

    def url(self, site: int, path: str = "/") -> str:
        return f"http://{HOST}:{self.ports[site]}{path}"

    def expected(self, seed_sites: Iterable[int] | None = None) -> Expected:
        return expected_crawl(self.sites, self.seed, self.ports, seed_sites)

    def count(self) -> int:
        """Requests answered so far."""
        return self._command("count")

    def requests(self) -> list[Request]:
        """The log so far (the server writes it, then this reads it)."""
        self._command("flush")
        return read_log(self.log_path)


def seed_arguments(seeds_file: str, urls: list[str]) -> list[str]:
    """The crawler's command-line arguments that give it these seeds: ``--seeds FILE``
    (the file holds the same URLs, one a line), as a user with a batch would."""
    return ["--seeds", seeds_file]


if __name__ == "__main__":
    sys.exit(main())
