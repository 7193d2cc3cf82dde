"""Serve a documentation folder with nginx on 127.0.0.1, crawl it, and check the server log.

Usage:
    .venv/bin/python bench/docsite.py [--root /usr/share/doc/python3.11/html] [--workers 2]
                                      [--threads 4] [--out DIR] [--warc]

Prints the crawl's summary (with the CPU ms per page of each process role: dispatcher,
manager, fetchers), the requests nginx logged, the paths requested more than once
(there should be none) and the bytes of the output folder (of which WARC files). nginx
(Debian package nginx or nginx-light) runs with one worker process and its own temporary
config; it listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..")]

from nginx import Nginx, nginx_binary  # noqa: E402

from crawler.output.shards import iter_records  # noqa: E402
from tests.helpers.reachable import reachable_html_pages  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/usr/share/doc/python3.11/html")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--out", default=None)
    parser.add_argument("--warc", action="store_true", help="crawl with --warc; print the WARC bytes")
    args = parser.parse_args()
    if nginx_binary() is None:
        print("docsite: nginx is not installed (apt-get install nginx-light)", file=sys.stderr)
        return 2
    with Nginx(args.root) as server:
        out = args.out or os.path.join(server.tmp, "out")  # read before nginx's folder goes
        started = time.monotonic()
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "crawler",
                server.url("/index.html"),
                "--out",
                out,
                "--workers",
                str(args.workers),
                "--threads",
                str(args.threads),
                "--quiet",
                *(["--warc"] if args.warc else []),
            ],
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - started
        if result.returncode != 0:
            print(result.stderr, file=sys.stderr)
            return result.returncode
        requests = server.requests()
        with open(os.path.join(out, "summary.json")) as f:
            summary = json.load(f)
        twice = {path: n for path, n in requests.items() if n > 1}
        sizes = {name: os.path.getsize(os.path.join(out, name)) for name in os.listdir(out)}
        pages = set()
        for record in iter_records(out):
            if record["markdown"] is not None and not record["error"]:
                path = urllib.parse.urlsplit(record["url"]).path
                pages.add(urllib.parse.unquote(path).lstrip("/"))
    expected = reachable_html_pages(args.root, "index.html")
    print(
        json.dumps(
            {
                "root": args.root,
                "workers": args.workers,
                "threads": args.threads,
                "pages": summary["pages"],
                "non_html": summary["non_html"],
                "failed": summary["failed"],
                "failed_by_reason": summary["failed_by_reason"],
                "claimed": summary["claimed"],
                "reconciled": summary["reconciled"],
                "crawl_wall_s": summary["wall_s"],
                "command_wall_s": round(wall, 2),
                "pages_per_s": summary["pages_per_s"],
                "cpu_s": summary["cpu_s"],
                "peak_rss_mib": round(summary["peak_rss_bytes"] / 2**20, 1),
                "cpu_ms_per_page_by_role": {
                    role: round(1000 * row["cpu_s"] / max(summary["pages"], 1), 2)
                    for role, row in summary["processes"].items()
                },
                "server_requests": sum(requests.values()),
                "distinct_paths": len(requests),
                "paths_requested_twice": twice,
                "output_bytes": sum(sizes.values()),
                "warc_bytes": sum(n for name, n in sizes.items() if name.startswith("warc-")),
                "reachable_html_pages": len(expected),
                "records_for_reachable": len(pages & expected),
                "missing": sorted(expected - pages),
                "unexpected": sorted(pages - expected),
                "output": out,
            },
            indent=2,
        )
    )
    return 0 if not twice and summary["reconciled"] and pages == expected else 1


if __name__ == "__main__":
    sys.exit(main())
