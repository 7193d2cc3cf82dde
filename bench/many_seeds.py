"""Many seeds from one seed file: does the cost per URL stay flat in the number of seeds?

Usage:
    .venv/bin/python bench/many_seeds.py [--sites 10] [--seeds-per-site 300 1000]
                                         [--workers 2] [--threads 4] [--timeout 600]

(Many origins are ``bench/many_sites.py``'s subject; this one keeps the origins few and
the seeds many, each origin with hundreds of seed URLs.)

Each site is its own origin, a port of 127.0.0.1 (nothing else is contacted), served by
one asyncio server in a child process: ``/robots.txt`` disallows ``/private``, ``/``
links to ``/a``, ``/b`` and ``/private``, ``/a`` links back to ``/``, ``/b`` and every
``/sN`` are leaves. The seeds, ``/`` and ``/s1`` ... ``/s(K-1)`` of every site for
``--seeds-per-site K``, go to a seed file, so every site gives 3 + K - 1 pages and 1
skipped URL. The crawler runs as its own command,
``python -m crawler --seeds FILE --out DIR --workers W --threads T --quiet``, once per
(``--sites``, ``--seeds-per-site``) pair. Printed per run: pages, skipped, sites and
sites_done (summary.json), wall s, each process role's CPU ms per URL done (summary.json
``processes``), the rows of ``sites.tsv`` and the CPU seconds of writing it once more
alone (every record read); a run whose counts are not exactly as above is a FAIL (exit
1). If the dispatcher's CPU per URL grows with the number of seeds, something in it
costs O(seeds) per URL. A crawl still running after ``--timeout`` seconds is killed (its
process group only) and is a FAIL too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crawler.output.sites import write_sites  # noqa: E402

ROBOTS = b"User-agent: *\nDisallow: /private\n"
PAGES = {
    "/": b"<html><title>home</title><a href='/a'>a</a> <a href='/b'>b</a> <a href='/private'>p</a></html>",
    "/a": b"<html><title>a</title><p>page a</p><a href='/'>home</a></html>",
    "/b": b"<html><title>b</title><p>page b</p></html>",
}


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1].decode()
            if path == "/robots.txt":
                status, ctype, body = "200 OK", "text/plain", ROBOTS
            elif path in PAGES or path.startswith("/s"):
                status, ctype, body = "200 OK", "text/html; charset=utf-8", PAGES.get(path, PAGES["/b"])
            else:
                status, ctype, body = "404 Not Found", "text/html", b"<p>not found</p>"
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
        pass  # the client left, or the server stops
    finally:
        writer.close()


def _serve(count: int, ports: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    async def main() -> None:
        servers = [await asyncio.start_server(_answer, "127.0.0.1", 0) for _ in range(count)]
        ports.put([s.sockets[0].getsockname()[1] for s in servers])
        while not stop.is_set():
            await asyncio.sleep(0.2)

    asyncio.run(main())


def run(sites: int, per_site: int, workers: int, threads: int, timeout_s: float) -> dict:
    ports_queue, stop = multiprocessing.Queue(), multiprocessing.Event()
    server = multiprocessing.Process(target=_serve, args=(sites, ports_queue, stop), daemon=True)
    server.start()
    try:
        ports = ports_queue.get(timeout=120)
        with tempfile.TemporaryDirectory() as tmp:
            seed_file = os.path.join(tmp, "sites.txt")
            with open(seed_file, "w") as f:
                for port in ports:
                    f.write(f"http://127.0.0.1:{port}/\n")
                    f.writelines(f"http://127.0.0.1:{port}/s{j}\n" for j in range(1, per_site))
            out = os.path.join(tmp, "out")
            started = time.monotonic()
            command = [
                sys.executable,
                "-m",
                "crawler",
                "--seeds",
                seed_file,
                "--out",
                out,
                "--workers",
                str(workers),
                "--threads",
                str(threads),
                "--quiet",
            ]
            crawl = subprocess.Popen(
                command, cwd=ROOT, stdout=subprocess.DEVNULL, start_new_session=True
            )  # its own group, to kill on a hang
            try:
                code = crawl.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(crawl.pid, signal.SIGKILL)  # the crawler and its children only
                crawl.wait()
                return {
                    "sites": sites,
                    "seeds": sites * per_site,
                    "ok": False,
                    "hang": f"no end after {timeout_s:g} s: killed",
                }
            if code != 0:
                return {"sites": sites, "seeds": sites * per_site, "ok": False, "exit": code}
            wall = time.monotonic() - started
            with open(os.path.join(out, "summary.json")) as f:
                summary = json.load(f)
            with open(os.path.join(out, "sites.tsv")) as f:
                rows = sum(1 for _ in f) - 1
            report_started = time.process_time()  # sites.tsv again, alone: its CPU cost
            write_sites(out, (), {})
            report_s = time.process_time() - report_started
    finally:
        stop.set()
        server.join(10)
        if server.is_alive():
            server.kill()
    done = summary["visited"] + summary["failed"]
    return {
        "sites": sites,
        "seeds": sites * per_site,
        "pages": summary["pages"],
        "skipped": summary["skipped"],
        "summary_sites": summary.get("sites"),
        "sites_done": summary.get("sites_done"),
        "tsv_rows": rows,
        "sites_tsv_cpu_s": round(report_s, 3),
        "wall_s": round(wall, 1),
        "urls_done": done,
        "cpu_ms_per_url": {role: round(1000 * p["cpu_s"] / done, 3) for role, p in summary["processes"].items()},
        "ok": summary["pages"] == (2 + per_site) * sites and summary["skipped"] == sites,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, nargs="+", default=[10])
    parser.add_argument("--seeds-per-site", type=int, nargs="+", default=[300, 1000])
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    failed = False
    for sites in args.sites:
        for per_site in args.seeds_per_site:
            row = run(sites, per_site, args.workers, args.threads, args.timeout)
            print(json.dumps(row), flush=True)
            if not row["ok"]:
                print(
                    f"FAIL: {sites} sites x {per_site} seeds: expected {(2 + per_site) * sites} "
                    f"pages and {sites} skipped",
                    flush=True,
                )
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
