"""``map`` then ``crawl`` of a documentation folder served by nginx: wall time, CPU,
requests by method, and the crawl's first progress line (with the map's total and ETA).

Usage:
    .venv/bin/python bench/map_vs_crawl.py [--root /usr/share/doc/python3.11/html]
                                           [--workers 2] [--threads 4] [--rounds 1]

Each round maps into a fresh folder, checks that no page record is in it before the
crawl, then crawls into the same folder (``--progress-interval 2``, so the log lines
show ``done N/TOTAL ... ETA``). CPU is user+sys of every crawler process
(``summary.json``'s ``cpu_s``: the map's is ``OUT/map/summary.json``). Prints one JSON
object per round.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..")]

from nginx import Nginx, nginx_binary  # noqa: E402

from tests.helpers.reachable import reachable_html_pages  # noqa: E402


def methods_since(server: Nginx, offset: int) -> tuple[collections.Counter, int]:
    """Requests by method in nginx's access log after ``offset``; the new offset."""
    counts: collections.Counter[str] = collections.Counter()
    with open(os.path.join(server.tmp, "access.log")) as f:
        f.seek(offset)
        for line in f:
            counts[line.split('"')[1].split()[0]] += 1
        return counts, f.tell()


def run(args: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "crawler", *args], capture_output=True, text=True)
    return result, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/usr/share/doc/python3.11/html")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    if nginx_binary() is None:
        print("map_vs_crawl: nginx is not installed (apt-get install nginx-light)", file=sys.stderr)
        return 2
    expected = len(reachable_html_pages(args.root, "index.html"))
    common = ["--workers", str(args.workers), "--threads", str(args.threads), "--progress-interval", "2"]
    ok = True
    with Nginx(args.root) as server:
        offset = 0
        for round_no in range(args.rounds):
            out = tempfile.mkdtemp(prefix="map-vs-crawl-")
            mapped, map_wall = run(["map", server.url("/index.html"), "--out", out, *common])
            map_requests, offset = methods_since(server, offset)
            records_before_crawl = glob.glob(os.path.join(out, "pages-*.jsonl"))
            crawled, crawl_wall = run([server.url("/index.html"), "--out", out, *common])
            crawl_requests, offset = methods_since(server, offset)
            if mapped.returncode or crawled.returncode:
                print(mapped.stderr, crawled.stderr, file=sys.stderr)
                return 1
            with open(os.path.join(out, "map.json")) as f:
                report = json.load(f)
            with open(os.path.join(out, "map", "summary.json")) as f:
                map_summary = json.load(f)
            with open(os.path.join(out, "summary.json")) as f:
                summary = json.load(f)
            progress = [line for line in crawled.stderr.splitlines() if re.search(r"done \d+/\d+", line)]
            row = {
                "round": round_no + 1,
                "reachable_html_pages": expected,
                "map": {
                    "first_stdout_line": mapped.stdout.splitlines()[0],
                    "pages": report["pages"],
                    "urls": report["urls"],
                    "bytes_by_type": report["bytes_by_type"],
                    "command_wall_s": round(map_wall, 2),
                    "walk_wall_s": map_summary["wall_s"],
                    "cpu_s": map_summary["cpu_s"],
                    "requests": dict(map_requests),
                    "page_records_in_out_before_crawl": len(records_before_crawl),
                },
                "crawl": {
                    "pages": summary["pages"],
                    "urls": summary["visited"] + summary["failed"],
                    "command_wall_s": round(crawl_wall, 2),
                    "crawl_wall_s": summary["wall_s"],
                    "cpu_s": summary["cpu_s"],
                    "requests": dict(crawl_requests),
                    "total_line": next(
                        (line for line in crawled.stderr.splitlines() if "progress total from" in line), None
                    ),
                    "first_progress_line": progress[0] if progress else None,
                    "last_progress_line": progress[-1] if progress else None,
                },
            }
            print(json.dumps(row, indent=2), flush=True)
            ok = ok and report["pages"] == summary["pages"] == expected and not records_before_crawl
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
