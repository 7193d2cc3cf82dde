"""Slow-server benchmark: do fetcher threads overlap network waits?

Usage:
    .venv/bin/python bench/slow_server.py [--pages 10000] [--links 20] [--delay-ms 50]
                                          [--workers 2] [--threads 8 16 32]
    (BENCH_QUICK=1: same site, one crawl each for --threads 8 16 only, unless --threads
    is given; there are no rounds, every part runs once in either mode)

The default threads start at 8: with 1 thread the 10,000 pages alone take 250 s at the
bound (4 would take 62 s); 8 16 32 take about 40 + 20 + 17 s (32 is CPU-bound here), which
keeps ``make bench`` under 20 minutes. ``--per-host`` is set to 2 x workers x threads: the
per-host cap counts tasks handed to the fetchers (queued or under way), so a cap of
workers x threads would leave no task waiting in a queue for a thread that finishes,
and each thread would idle for a dispatcher round trip between pages; requests really
in flight never exceed workers x threads (one per thread).

A generated site (``--pages`` pages; page i links to page i+1 and to ``--links`` - 1
others chosen by a fixed seed, so every page is reachable from ``/p0.html``) is served on
127.0.0.1 only, by a threaded stdlib server (``tests/helpers/siteserver.py``) in
this process that answers every request after ``--delay-ms``. The crawler runs as its
own command,
``python -m crawler http://127.0.0.1:PORT/p0.html --workers W --threads T --per-host 2*W*T --quiet``,
once per ``--threads`` value, against a fresh server each time. The concurrency bound is
``workers * threads / delay`` pages per second (no design beats it with that many
requests in flight); the target is at least 80% of it.

Before the crawls, a server check: ``max(32, workers * max(threads))`` keep-alive
clients (plain sockets, in a separate process) send 20 requests each, to show that the
server itself answers at the delay at that concurrency (requests/s against the same
bound, client-side latency p50/p99).

For each crawl: pages, wall s, pages/s (the crawl's ``summary.json``), the bound and the
fraction of it reached, CPU s of the crawl (``summary.json`` ``cpu_s``: the crawler's
dispatcher, manager and fetchers; the server is not included) and CPU ms per page, the
CPU bound ``os.cpu_count() / (cpu_s / pages)`` and ``min(bound, CPU bound)`` (when the
CPU bound is the smaller, the machine, not the design, limits the crawl; on a machine
shared with other work the cores really available are fewer, so the CPU bound is an
upper bound), the server's CPU s (``getrusage`` of this process during the crawl: the
server threads, the main thread only waits), server-side handling time p50/p99 (request
parsed to response sent, the delay included), requests the server saw and duplicate
requests (requests - distinct paths), and how busy the whole machine was while the
crawler command ran (``busy``: CPU s of every process on it / wall s, in cores;
``other_cores``: the same less the crawl and the server, i.e. other people's work). A
``busy`` near the core count with ``other_cores`` well above 0 means the crawl shared the
cores and its figures are the shared machine's, not the design's (a NOTE line says so).
Every crawl must record every reachable page exactly once (pages = reachable pages,
requests = pages, duplicates = 0, and robots.txt requested once); a crawl that does not prints a ``FAIL`` line and the
script exits 1 after the other runs.

Prints a table row per crawl (``>=80%?`` shows the target) and saves the settings, which
crawler code ran (sha256 of ``crawler/*.py``, git commit and whether ``crawler/`` differs
from it), the server check and every row to ``bench/results/slow_server.json``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tests.helpers.siteserver import Route, SiteServer  # noqa: E402

TARGET = 0.8
PROBE_REQUESTS = 20  # per client connection in the server check
DEFAULT_THREADS = [8, 16, 32]
QUICK_THREADS = [8, 16]


class SlowSite(SiteServer):
    """A :class:`SiteServer` whose every answer waits ``delay_s`` first.

    ``handling_s`` holds each GET's server-side time, from the parsed request to the
    response written (the delay included).
    """

    def __init__(self, routes, delay_s: float) -> None:
        super().__init__(routes)
        self.delay_s = delay_s
        self.handling_s: list[float] = []
        # socketserver listens with a backlog of 5: more simultaneous connects than that
        # overflow it and wait for a SYN retransmit (about 1 s). Listen again, wider.
        self.httpd.socket.listen(1024)
        site = self
        base = self.httpd.RequestHandlerClass

        class TimedHandler(base):
            def do_GET(self):
                started = time.perf_counter()
                super().do_GET()
                site.handling_s.append(time.perf_counter() - started)

        self.httpd.RequestHandlerClass = TimedHandler

    def lookup(self, target):
        time.sleep(self.delay_s)
        return super().lookup(target)


def generated_links(pages: int, links: int) -> list[list[int]]:
    """Link targets of each page: the next page, then ``links - 1`` by a fixed seed."""
    rng = random.Random(1)
    return [[(i + 1) % pages] + rng.sample(range(pages), links - 1) for i in range(pages)]


def generated_site(pages: int, links: int) -> dict[str, Route]:
    routes = {}
    for i, targets in enumerate(generated_links(pages, links)):
        body = "".join(
            f'<p>Paragraph {j} of page {i}. <a href="/p{t}.html">page {t}</a></p>' for j, t in enumerate(targets)
        )
        routes[f"/p{i}.html"] = Route(f"<html><head><title>Page {i}</title></head><body>{body}</body></html>")
    return routes


def reachable(pages: int, links: int) -> set[str]:
    """Paths reachable from ``/p0.html`` by following the generated links."""
    graph = generated_links(pages, links)
    seen, stack = {0}, [0]
    while stack:
        for t in graph[stack.pop()]:
            if t not in seen:
                seen.add(t)
                stack.append(t)
    return {f"/p{i}.html" for i in seen}


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def crawler_source() -> dict:
    """Which crawler code ran: sha256 of ``crawler/*.py``, and the git commit with whether
    ``crawler/`` differs from it (None outside a git work tree)."""
    import hashlib

    digest = hashlib.sha256()
    folder = os.path.join(ROOT, "crawler")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            digest.update(name.encode() + b"\0")
            with open(os.path.join(folder, name), "rb") as f:
                digest.update(f.read())
    info = {"sources_sha256": digest.hexdigest(), "git_commit": None, "modified_since_commit": None}
    try:
        info["git_commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout.strip()
        info["modified_since_commit"] = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--", "crawler"], cwd=ROOT, check=True, capture_output=True, text=True
            ).stdout.strip()
        )
    except (OSError, subprocess.CalledProcessError):
        pass
    return info


def _process_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _machine_busy_s() -> float:
    """CPU seconds every process on the machine has used (all cores, since boot)."""
    t = psutil.cpu_times()  # Linux: guest time is already in user, steal is not ours
    return t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)


# -- server check ------------------------------------------------------------------------
def _probe_client(port: int, clients: int, requests_each: int, pages: int, conn) -> None:
    """In a child process: ``clients`` keep-alive connections to 127.0.0.1:``port``, each
    sending ``requests_each`` GETs one after the other; sends back wall s and latencies."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client(k: int) -> None:
        mine = []
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                f = s.makefile("rb")
                for i in range(requests_each):
                    started = time.perf_counter()
                    path = f"/p{(k * requests_each + i) % pages}.html"
                    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
                    length = 0
                    while True:
                        line = f.readline()
                        if not line:
                            raise ConnectionError("connection closed mid-response")
                        if line == b"\r\n":
                            break
                        if line.lower().startswith(b"content-length:"):
                            length = int(line.split(b":", 1)[1])
                    if len(f.read(length)) != length:
                        raise ConnectionError("short body")
                    mine.append(time.perf_counter() - started)
        except OSError as exc:
            with lock:
                errors.append(repr(exc))
        with lock:
            latencies.extend(mine)

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    conn.send({"wall_s": time.perf_counter() - started, "latencies": latencies, "errors": errors})
    conn.close()


def server_check(routes, delay_s: float, clients: int, pages: int) -> dict:
    """Throughput and latency of a fresh :class:`SlowSite` under ``clients`` connections."""
    ctx = multiprocessing.get_context("spawn")  # no fork of a process running server threads
    reader, writer = ctx.Pipe(duplex=False)
    with SlowSite(routes, delay_s) as server:
        cpu_before = _process_cpu_s()
        proc = ctx.Process(target=_probe_client, args=(server.port, clients, PROBE_REQUESTS, pages, writer))
        proc.start()
        writer.close()
        try:
            result = reader.recv()
        except EOFError:  # the client process died: no figures, said so
            result = {
                "wall_s": float("nan"),
                "latencies": [],
                "errors": [f"probe client exited {proc.exitcode} without a result"],
            }
        proc.join()
        server_cpu = _process_cpu_s() - cpu_before
    lat = result["latencies"]
    bound = clients / delay_s
    rate = len(lat) / result["wall_s"]
    return {
        "clients": clients,
        "requests": len(lat),
        "errors": result["errors"][:5],
        "wall_s": round(result["wall_s"], 3),
        "requests_per_s": round(rate, 1),
        "bound_requests_per_s": round(bound, 1),
        "fraction_of_bound": round(rate / bound, 3),
        "latency_ms_p50": round(percentile(lat, 0.5) * 1000, 1) if lat else None,
        "latency_ms_p99": round(percentile(lat, 0.99) * 1000, 1) if lat else None,
        "latency_ms_max": round(max(lat) * 1000, 1) if lat else None,
        "server_cpu_s": round(server_cpu, 3),
        "server_cpu_note": "getrusage of the benchmark process (server threads; the "
        "clients run in another process), includes process start-up work",
    }


# -- one crawl ---------------------------------------------------------------------------
def _local_only_env() -> dict:
    """This environment without proxy settings: the crawler talks to 127.0.0.1 directly."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env["NO_PROXY"] = env["no_proxy"] = "*"
    return env


def run_crawl(seed: str, out: str, workers: int, threads: int, timeout_s: float) -> dict:
    """``python -m crawler`` in its own process group; its ``summary.json``.

    Raises RuntimeError if it fails or outlasts ``timeout_s`` (then its group is killed).
    """
    cmd = [
        sys.executable,
        "-m",
        "crawler",
        seed,
        "--out",
        out,
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--per-host",
        str(2 * workers * threads),
        "--quiet",
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=_local_only_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except BaseException:  # a timeout or Ctrl-C: end the crawl's processes, then re-raise
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(10)
                break
            except subprocess.TimeoutExpired:
                continue
        raise
    if proc.returncode != 0:
        raise RuntimeError(f"crawler exited {proc.returncode}: {err.strip()[-500:]}")
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
        return json.load(f)


def measure(routes, expected: set[str], args, threads: int) -> dict:
    delay_s = args.delay_ms / 1000
    bound = args.workers * threads / delay_s
    row: dict = {"workers": args.workers, "threads": threads, "bound_pages_per_s": round(bound, 1)}
    with SlowSite(routes, delay_s) as server, tempfile.TemporaryDirectory() as out:
        cpu_before, busy_before, wall_before = _process_cpu_s(), _machine_busy_s(), time.monotonic()
        try:
            summary = run_crawl(
                server.url("/p0.html"), out, args.workers, threads, timeout_s=max(300.0, 10 * len(expected) / bound)
            )
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            summary = None
            row["error"] = str(exc)
        server_cpu = _process_cpu_s() - cpu_before
        busy, window = _machine_busy_s() - busy_before, time.monotonic() - wall_before
        hits = dict(server.hits)
        handling = list(server.handling_s)
    robots = hits.pop("/robots.txt", 0)  # RFC 9309: once per host, before any page
    requests = sum(hits.values())
    row.update(
        requests=requests,
        robots_requests=robots,
        duplicate_requests=requests - len(hits),
        server_cpu_s=round(server_cpu, 3),
        server_ms_p50=round(percentile(handling, 0.5) * 1000, 1) if handling else None,
        server_ms_p99=round(percentile(handling, 0.99) * 1000, 1) if handling else None,
    )
    if summary is not None:
        pages, cpu_s = summary["pages"], summary["cpu_s"]
        cores = os.cpu_count() or 1
        cpu_bound = cores * pages / cpu_s if pages and cpu_s else None
        limit = min(bound, cpu_bound) if cpu_bound else bound
        row.update(
            pages=pages,
            wall_s=summary["wall_s"],
            pages_per_s=summary["pages_per_s"],
            fraction_of_bound=round(summary["pages_per_s"] / bound, 3),
            meets_target=summary["pages_per_s"] >= TARGET * bound,
            cpu_s=cpu_s,
            cpu_ms_per_page=round(1000 * cpu_s / pages, 2) if pages else None,
            cpu_s_by_role={role: p["cpu_s"] for role, p in summary["processes"].items()},
            cores=cores,
            cpu_bound_pages_per_s=round(cpu_bound, 1) if cpu_bound else None,
            min_bound_pages_per_s=round(limit, 1),
            fraction_of_min_bound=round(summary["pages_per_s"] / limit, 3),
            cpu_limited=bool(cpu_bound and cpu_bound < bound),
            failed=summary["failed"],
            reconciled=summary["reconciled"],
            other_cores=round(max(0.0, busy - cpu_s - server_cpu) / window, 2),
        )
    row["machine_busy_cores"] = round(busy / window, 2)
    problems = []
    if summary is None:
        problems.append(row["error"])
    else:
        if row["pages"] != len(expected):
            problems.append(f"pages {row['pages']} != {len(expected)} reachable pages")
        if summary["failed"]:
            problems.append(f"{summary['failed']} failed fetches {summary['failed_by_reason']}")
        if not summary["reconciled"]:
            problems.append("summary not reconciled")
    if row["duplicate_requests"]:
        problems.append(f"{row['duplicate_requests']} duplicate requests")
    if robots != 1:
        problems.append(f"robots.txt requested {robots} times, not once")
    if set(hits) != expected:
        problems.append(
            f"requested paths != reachable pages ({len(set(hits) - expected)} extra, "
            f"{len(expected - set(hits))} never requested)"
        )
    row["server_cpu_note"] = (
        "getrusage of the benchmark process during the crawl: the "
        "server threads (the main thread only waits); not in cpu_s"
    )
    row["ok"] = not problems
    row["problems"] = problems
    return row


HEADER = (
    f"{'wrk':>3} {'thr':>3} {'pages':>6} {'wall s':>7} {'pages/s':>8} {'bound':>6} "
    f"{'frac':>5} {'>=80%?':>6} {'cpu s':>6} {'ms/pg':>6} {'cpu bnd':>7} {'min bnd':>7} "
    f"{'frac min':>8} {'cpu-lim?':>8} {'srv cpu':>7} {'srv p99':>7} {'reqs':>6} "
    f"{'dups':>4} {'busy':>4} {'check':>5}"
)


def format_row(r: dict) -> str:
    if "pages" not in r:
        return (
            f"{r['workers']:>3} {r['threads']:>3} {'-':>6} {'-':>7} {'-':>8} "
            f"{r['bound_pages_per_s']:>6.0f} {'-':>5} {'-':>6} {'-':>6} {'-':>6} {'-':>7} "
            f"{'-':>7} {'-':>8} {'-':>8} {r['server_cpu_s']:>7.2f} "
            f"{r['server_ms_p99'] or 0:>7.1f} {r['requests']:>6} {r['duplicate_requests']:>4} "
            f"{r['machine_busy_cores']:>4.1f} {'FAIL':>5}"
        )
    return (
        f"{r['workers']:>3} {r['threads']:>3} {r['pages']:>6} {r['wall_s']:>7.2f} "
        f"{r['pages_per_s']:>8.1f} {r['bound_pages_per_s']:>6.0f} {r['fraction_of_bound']:>5.2f} "
        f"{'yes' if r['meets_target'] else 'NO':>6} {r['cpu_s']:>6.1f} {r['cpu_ms_per_page']:>6.2f} "
        f"{r['cpu_bound_pages_per_s'] or 0:>7.0f} {r['min_bound_pages_per_s']:>7.0f} "
        f"{r['fraction_of_min_bound']:>8.2f} {'yes' if r['cpu_limited'] else 'no':>8} "
        f"{r['server_cpu_s']:>7.2f} {r['server_ms_p99'] or 0:>7.1f} {r['requests']:>6} "
        f"{r['duplicate_requests']:>4} {r['machine_busy_cores']:>4.1f} {'ok' if r['ok'] else 'FAIL':>5}"
    )


def main() -> int:
    quick = bool(os.environ.get("BENCH_QUICK"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10000)
    parser.add_argument("--links", type=int, default=20)
    parser.add_argument("--delay-ms", type=float, default=50.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, nargs="+", default=QUICK_THREADS if quick else DEFAULT_THREADS)
    args = parser.parse_args()
    if args.pages < 2 or not 1 <= args.links <= args.pages:
        parser.error("need --pages >= 2 and 1 <= --links <= --pages")
    if args.workers < 1 or min(args.threads) < 1 or args.delay_ms <= 0:
        parser.error("need --workers >= 1, every --threads >= 1 and --delay-ms > 0")
    started = time.monotonic()
    routes = generated_site(args.pages, args.links)
    expected = reachable(args.pages, args.links)
    result_path = os.path.join(HERE, "results", "slow_server.json")
    os.makedirs(os.path.dirname(result_path), exist_ok=True)
    results = {
        "pages": args.pages,
        "links": args.links,
        "delay_ms": args.delay_ms,
        "workers": args.workers,
        "threads": args.threads,
        "quick": quick,
        "cpu_count": os.cpu_count(),
        "target_fraction_of_bound": TARGET,
        "crawler": crawler_source(),
        "server_check": None,
        "rows": [],
    }

    def save() -> None:
        with open(result_path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
            f.write("\n")

    print(
        f"site: {args.pages} pages, {args.links} links each, {len(expected)} reachable from "
        f"/p0.html; delay {args.delay_ms:g} ms; {args.workers} workers; threads {args.threads}; "
        f"{os.cpu_count()} cores",
        flush=True,
    )
    clients = max(32, args.workers * max(args.threads))
    check = server_check(routes, args.delay_ms / 1000, clients, args.pages)
    results["server_check"] = check
    save()
    verdict = (
        "ok"
        if check["fraction_of_bound"] >= 0.9 and not check["errors"]
        else "WARNING: the server may limit the crawls"
    )
    print(
        f"server check: {clients} keep-alive clients x {PROBE_REQUESTS} requests: "
        f"{check['requests_per_s']:.0f} req/s of {check['bound_requests_per_s']:.0f} "
        f"({check['fraction_of_bound']:.2f}), latency p50 {check['latency_ms_p50']} ms "
        f"p99 {check['latency_ms_p99']} ms max {check['latency_ms_max']} ms, server CPU "
        f"{check['server_cpu_s']:.2f} s{', errors ' + str(check['errors']) if check['errors'] else ''}"
        f": {verdict}",
        flush=True,
    )
    print(HEADER, flush=True)
    failed = False
    for threads in args.threads:
        row = measure(routes, expected, args, threads)
        results["rows"].append(row)
        save()
        print(format_row(row), flush=True)
        others = row.get("other_cores", 0.0)
        if others > 0.25:
            print(
                f"NOTE threads={threads}: other processes used {others:.1f} cores on average "
                f"(machine busy {row['machine_busy_cores']:.1f} of {os.cpu_count()}): "
                f"the figures are the shared machine's",
                flush=True,
            )
        if not row["ok"]:
            failed = True
            print(f"FAIL workers={args.workers} threads={threads}: {'; '.join(row['problems'])}", flush=True)
    met = [r["threads"] for r in results["rows"] if r.get("meets_target")]
    print(
        f"target >= {TARGET:.0%} of workers*threads/delay met for threads {met or 'none'} "
        f"of {args.threads}; cpu-limited runs: "
        f"{[r['threads'] for r in results['rows'] if r.get('cpu_limited')] or 'none'}"
    )
    results["total_s"] = round(time.monotonic() - started, 1)
    save()
    print(f"total {results['total_s']:.0f} s; saved {os.path.relpath(result_path)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
