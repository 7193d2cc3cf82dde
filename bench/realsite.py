"""Real-site throughput: the crawler against Scrapy and a one-process loop, side by side.

Usage:
    .venv/bin/python bench/realsite.py [--root /usr/share/doc/python3.11/html] [--rounds 3]
                                       [--workers 1 2 4]
    (BENCH_QUICK=1 runs one round)

nginx (one worker) serves ``--root`` on 127.0.0.1. Every contender crawls from
``index.html``, same host only, converts every HTML page and writes JSONL. Contenders
run alternately in rounds (A B C ... A B C ...): ``crawler`` with each ``--workers``
value (4 threads; by default, which converts the main content with html-to-markdown, and
with ``--keep-boilerplate --converter html2text``, html2text on the whole page as the
html2text contenders do), the Scrapy spider (html2text on the whole page; the same with
the crawler's default converter, ``scrapy h2m``; tuned: links de-duplicated per page)
and the plain loop (html2text; ``bench/contenders``). Scrapy and beautifulsoup4 come
from the benchmark extra: ``pip install -e '.[bench]'``.

For each run: pages written, wall s, pages/s, CPU s of the contender's whole process
tree (rusage of waited children), peak resident memory of the tree (psutil, sampled every
0.1 s), requests nginx logged and duplicates (requests - distinct paths), nginx CPU s.
Prints a table of medians with min-max and the ratios to Scrapy and to the loop, and
saves every run to ``bench/results/realsite.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..")]

from nginx import Nginx, nginx_binary  # noqa: E402

from crawler.output.shards import iter_records  # noqa: E402


def measured(cmd: list[str]) -> dict:
    """Run ``cmd``; wall s, CPU s of it and its descendants, peak RSS of the tree."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        try:
            root = psutil.Process(proc.pid)
            peak = max(peak, sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]))
        except psutil.Error:
            pass
        time.sleep(0.1)
    wall = time.monotonic() - started
    err = proc.stderr.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed ({proc.returncode}): {err[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mib": peak / 2**20}


def contenders(workers) -> dict[str, callable]:
    py = sys.executable
    table = {}
    for w in workers:
        table[f"crawler w={w}"] = lambda seed, out, w=w: (
            [py, "-m", "crawler", seed, "--out", out, "--workers", str(w), "--threads", "4", "--quiet"],
            out,
        )
        # the same work as the html2text contenders: html2text on the whole page
        table[f"crawler w={w} whole page"] = lambda seed, out, w=w: (
            [
                py,
                "-m",
                "crawler",
                seed,
                "--out",
                out,
                "--workers",
                str(w),
                "--threads",
                "4",
                "--quiet",
                "--keep-boilerplate",
                "--converter",
                "html2text",
            ],
            out,
        )
    table["scrapy"] = lambda seed, out: (
        [py, os.path.join(HERE, "contenders", "scrapy_spider.py"), seed, out + ".jsonl"],
        out + ".jsonl",
    )
    table["scrapy h2m"] = lambda seed, out: (
        [py, os.path.join(HERE, "contenders", "scrapy_spider.py"), seed, out + ".jsonl", "--html-to-markdown"],
        out + ".jsonl",
    )
    table["scrapy tuned"] = lambda seed, out: (
        [py, os.path.join(HERE, "contenders", "scrapy_spider.py"), seed, out + ".jsonl", "--tuned"],
        out + ".jsonl",
    )
    table["loop"] = lambda seed, out: (
        [py, os.path.join(HERE, "contenders", "plain_loop.py"), seed, out + ".jsonl"],
        out + ".jsonl",
    )
    return table


def pages_written(path: str) -> int:
    """Records with Markdown: all lines of a JSONL file, or the crawler's page records."""
    if os.path.isdir(path):
        return sum(1 for record in iter_records(path) if record.get("markdown") is not None)
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if json.loads(line).get("markdown") is not None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/usr/share/doc/python3.11/html")
    parser.add_argument("--rounds", type=int, default=1 if os.environ.get("BENCH_QUICK") else 3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    if nginx_binary() is None:
        print("realsite: nginx is not installed (apt-get install nginx-light)", file=sys.stderr)
        return 2
    runs = []
    with Nginx(args.root) as server, tempfile.TemporaryDirectory() as tmp:
        seed = server.url("/index.html")
        for round_no in range(args.rounds):
            for name, build in contenders(args.workers).items():
                cmd, output = build(seed, os.path.join(tmp, f"{name}-{round_no}".replace(" ", "_")))
                cpu_nginx = server.cpu_s()
                run = measured(cmd)
                hits = server.requests()
                run.update(
                    name=name,
                    round=round_no,
                    pages=pages_written(output),
                    requests=sum(hits.values()),
                    duplicates=sum(hits.values()) - len(hits),
                    nginx_cpu_s=server.cpu_s() - cpu_nginx,
                )
                run["pages_per_s"] = run["pages"] / run["wall_s"]
                runs.append(run)
                print(
                    f"round {round_no} {name:<14} {run['pages']:>4} pages {run['wall_s']:6.2f} s "
                    f"{run['pages_per_s']:6.1f}/s cpu {run['cpu_s']:6.1f} s "
                    f"rss {run['peak_rss_mib']:6.0f} MiB dups {run['duplicates']}",
                    flush=True,
                )
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "realsite.json"), "w") as f:
        json.dump({"root": args.root, "rounds": args.rounds, "runs": runs}, f, indent=1)
    names = list(dict.fromkeys(r["name"] for r in runs))
    median = {n: statistics.median(r["pages_per_s"] for r in runs if r["name"] == n) for n in names}
    print(
        f"\n{'contender':<14} {'pages':>5} {'pages/s median (min-max)':>26} {'cpu s':>6} "
        f"{'MiB':>5} {'dups':>4} {'x scrapy':>8} {'x h2m':>6} {'x tuned':>7} {'x loop':>6}"
    )
    for n in names:
        mine = [r for r in runs if r["name"] == n]
        rates = [r["pages_per_s"] for r in mine]
        print(
            f"{n:<14} {mine[0]['pages']:>5} {median[n]:>10.1f} ({min(rates):.1f}-{max(rates):.1f})"
            f"{'':>6} {statistics.median(r['cpu_s'] for r in mine):>6.1f} "
            f"{max(r['peak_rss_mib'] for r in mine):>5.0f} {max(r['duplicates'] for r in mine):>4} "
            f"{median[n] / median['scrapy']:>8.2f} {median[n] / median['scrapy h2m']:>6.2f} "
            f"{median[n] / median['scrapy tuned']:>7.2f} "
            f"{median[n] / median['loop']:>6.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
