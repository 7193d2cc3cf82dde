"""Slow-server benchmark: do fetcher threads overlap network waits?

A generated site (``--pages`` pages, each linking to ``--links`` others chosen by a fixed
seed) is served on 127.0.0.1 by a threaded server that answers every request after
``--delay-ms``. The crawler runs with ``--workers`` processes and each ``--threads``
value; the bound is ``workers * threads / delay`` pages per second (no design can beat
it with that many requests in flight).

Usage:
    .venv/bin/python bench/slow_server.py [--pages 1000] [--delay-ms 50] [--workers 2]
                                          [--threads 1 2 4 8]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from siteserver import Route, SiteServer  # noqa: E402

from crawler.api import crawl  # noqa: E402
from crawler.config import CrawlConfig  # noqa: E402


class SlowSite(SiteServer):
    """A :class:`SiteServer` whose every answer waits ``delay_s`` first."""

    def __init__(self, routes, delay_s: float) -> None:
        super().__init__(routes)
        self.delay_s = delay_s

    def lookup(self, target):
        time.sleep(self.delay_s)
        return super().lookup(target)


def generated_site(pages: int, links: int) -> dict[str, Route]:
    rng = random.Random(1)
    routes = {}
    for i in range(pages):
        targets = [(i + 1) % pages] + rng.sample(range(pages), links - 1)
        body = "".join(f'<p>Paragraph {j} of page {i}. <a href="/p{t}.html">page {t}</a></p>'
                       for j, t in enumerate(targets))
        routes[f"/p{i}.html"] = Route(f"<html><head><title>Page {i}</title></head><body>{body}</body></html>")
    return routes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--links", type=int, default=20)
    parser.add_argument("--delay-ms", type=float, default=50.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()
    routes = generated_site(args.pages, args.links)
    rows = []
    for threads in args.threads:
        with SlowSite(routes, args.delay_ms / 1000) as server, tempfile.TemporaryDirectory() as out:
            summary = crawl(CrawlConfig(seeds=(server.url("/p0.html"),), out_dir=out,
                                        workers=args.workers, threads=threads,
                                        progress_interval_s=3600))
            hits = dict(server.hits)
        bound = args.workers * threads / (args.delay_ms / 1000)
        rows.append({"workers": args.workers, "threads": threads, "pages": summary["pages"],
                     "wall_s": summary["wall_s"], "pages_per_s": summary["pages_per_s"],
                     "bound_pages_per_s": round(bound, 1),
                     "fraction_of_bound": round(summary["pages_per_s"] / bound, 3),
                     "duplicate_requests": sum(hits.values()) - len(hits)})
    print(f"{'workers':>7} {'threads':>7} {'pages':>6} {'wall s':>7} {'pages/s':>8} {'bound':>7} {'fraction':>8} {'dups':>5}")
    for r in rows:
        print(f"{r['workers']:>7} {r['threads']:>7} {r['pages']:>6} {r['wall_s']:>7.2f} "
              f"{r['pages_per_s']:>8.1f} {r['bound_pages_per_s']:>7.1f} {r['fraction_of_bound']:>8.3f} "
              f"{r['duplicate_requests']:>5}")
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
