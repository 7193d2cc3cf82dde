"""Export throughput and memory: ``python -m crawler export`` on the memory benchmark's site.

Usage:
    .venv/bin/python bench/export.py [--pages 100000] [--out DIR] [--formats parquet,documents,llms-txt]

Without ``--out``, the memory benchmark's site (``bench/memory.py``: ``--pages`` generated
pages of 20 paragraphs and links each, a fixed seed) is generated into a temporary folder,
served by nginx on 127.0.0.1 and crawled once with ``--workers 2 --threads 4 --compress
zstd`` (so the shards are Zstandard JSONL, the form Parquet's size is compared with).
With ``--out``, that crawl folder is used as it is.

Then each format is exported once, in a subprocess (``python -m crawler export OUT --format
F --to TMP``), sampled every 0.2 s with psutil: wall seconds, CPU seconds (user+sys), peak
RSS of the export process, Markdown MB/s (the Markdown bytes of the records, UTF-8,
divided by the wall time), and the bytes written, against the Zstandard shards' bytes.
Saves ``bench/results/export.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT]

from memory import generate_site  # noqa: E402
from nginx import Nginx, nginx_binary  # noqa: E402

from crawler.output.shards import iter_records, list_shards  # noqa: E402

PY = sys.executable


def crawl(pages: int, out: str) -> float:
    """Generate, serve and crawl the site into ``out``; returns the crawl's wall seconds."""
    root = tempfile.mkdtemp(prefix="export-site-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    try:
        os.chmod(root, 0o755)
        generate_site(root, pages, 20)
        with Nginx(root) as server:
            started = time.monotonic()
            subprocess.run(
                [PY, "-m", "crawler", server.url("/p0.html"), "--out", out, "--workers", "2", "--threads", "4"]
                + ["--compress", "zstd", "--quiet"],
                cwd=ROOT,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            return time.monotonic() - started
    finally:
        shutil.rmtree(root, ignore_errors=True)


def measured(command: list[str]) -> dict:
    """Run ``command``; wall s, CPU s and peak RSS of its process tree (psutil, 0.2 s)."""
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    handle = psutil.Process(proc.pid)
    peak = cpu = 0.0
    while proc.poll() is None:
        try:
            tree = [handle, *handle.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree))
            cpu = sum(sum(p.cpu_times()[:2]) for p in tree)
        except psutil.Error:
            pass
        time.sleep(0.2)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {err.strip()}")
    return {"wall_s": time.monotonic() - started, "cpu_s": cpu, "peak_rss_bytes": int(peak), "stdout": out.strip()}


def folder_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(path, name)) for name in os.listdir(path) if not name.startswith("."))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--out", help="an existing crawl folder (default: crawl the generated site)")
    parser.add_argument("--formats", default="parquet,documents,llms-txt")
    parser.add_argument("--results", default=os.path.join(HERE, "results"))
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="export-bench-")
    try:
        out = args.out
        crawl_s = None
        if out is None:
            if nginx_binary() is None:
                print("export: nginx is not installed (apt-get install nginx-light)", file=sys.stderr)
                return 2
            out = os.path.join(work, "crawl")
            crawl_s = crawl(args.pages, out)
        records = markdown = 0
        for record in iter_records(out):
            records += 1
            markdown += len((record.get("markdown") or "").encode("utf-8"))
        shards = sum(os.path.getsize(s.path) for s in list_shards(out))
        rows = []
        for fmt in args.formats.split(","):
            to = os.path.join(work, f"export-{fmt}")
            run = measured([PY, "-m", "crawler", "export", out, "--format", fmt, "--to", to])
            run.update(
                format=fmt,
                written_bytes=folder_bytes(to),
                markdown_mb_s=markdown / run["wall_s"] / 1e6,
                counts=json.loads(run.pop("stdout").splitlines()[0]),
            )
            rows.append(run)
            shutil.rmtree(to, ignore_errors=True)
        print(
            f"crawl folder: {records:,} records, {markdown / 1e6:,.1f} MB of Markdown, "
            f"zstd shards {shards / 1e6:,.1f} MB" + (f", crawled in {crawl_s:.0f} s" if crawl_s else "")
        )
        print(f"{'format':10} {'wall s':>7} {'cpu s':>7} {'MB/s':>7} {'peak MiB':>9} {'written MB':>11} {'x zstd':>7}")
        for run in rows:
            print(
                f"{run['format']:10} {run['wall_s']:7.1f} {run['cpu_s']:7.1f} {run['markdown_mb_s']:7.2f} "
                f"{run['peak_rss_bytes'] / 2**20:9.0f} {run['written_bytes'] / 1e6:11.1f} "
                f"{run['written_bytes'] / shards:7.2f}"
            )
        os.makedirs(args.results, exist_ok=True)
        with open(os.path.join(args.results, "export.json"), "w", encoding="utf-8") as f:
            json.dump(
                {
                    "pages": args.pages if args.out is None else None,
                    "records": records,
                    "markdown_bytes": markdown,
                    "zstd_shard_bytes": shards,
                    "crawl_s": crawl_s,
                    "runs": rows,
                },
                f,
                indent=1,
            )
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
