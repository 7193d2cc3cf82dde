"""Cost of page-record shards: writing, compressing (gzip, zstd) and the manifest, on the
records of a real documentation site.

Usage:
    .venv/bin/python bench/shards.py [--root /usr/share/doc/python3.11/html] [--copies 4]
        [--shard-mib 16] [--workers 2]

Builds one record per ``.html`` file under ``--root`` the way a fetcher does (decode,
Markdown with crawler.content.markdown, the record's fields; fetch metadata made up), ``--copies``
times (the Markdown made once per file, URLs distinct per copy), and writes them round-robin
over ``--workers`` shard writers (the crawler's :class:`crawler.output.writers.ShardWriter`)
with ``--shard-mib``. Then, for no
compression, gzip and zstd, in a fresh folder each: the write wall time (closed shards
compressed by the writer, as a fetcher does), :func:`crawler.output.shards.finish_shards` (the
end-of-crawl compression of the last shards), :func:`crawler.output.shards.write_manifest`
(one read of every file: SHA-256 plus decompression to count records) and a full
:func:`crawler.output.shards.iter_records` read. Prints one JSON line per compression.
Single process, wall seconds on an otherwise busy machine: an upper bound.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from crawler.content.links import extract  # noqa: E402
from crawler.content.markdown import to_markdown  # noqa: E402
from crawler.output.shards import finish_shards, iter_records, write_manifest  # noqa: E402
from crawler.output.writers import ShardWriter  # noqa: E402
from crawler.web.decode import decode_html  # noqa: E402


def build_lines(root: str, copies: int) -> list[str]:
    """One JSON line per HTML file and copy, shaped like a fetcher's record (the Markdown
    is made once per file; copies differ in their URLs)."""
    paths = sorted(os.path.join(d, n) for d, _, names in os.walk(root) for n in names if n.endswith(".html"))
    pages = []
    for path in paths:
        with open(path, "rb") as f:
            body = f.read()
        text, _ = decode_html(body, "text/html")
        rel = os.path.relpath(path, root)
        pages.append((rel, len(body), extract(text).title, to_markdown(text, f"http://docs.example/{rel}")))
    lines = []
    for copy in range(copies):
        for rel, size, title, markdown in pages:
            url = f"http://docs.example/{copy}/{rel}"
            record = {
                "url": url,
                "request_url": url,
                "final_url": url,
                "status": 200,
                "content_type": "text/html",
                "depth": 2,
                "parent": f"http://docs.example/{copy}/",
                "redirect_chain": [],
                "title": title,
                "markdown": markdown,
                "fingerprint": "0123456789abcdef",
                "canonical": None,
                "duplicate_of": None,
                "fetched_at": "2025-01-01T00:00:00.000Z",
                "elapsed_ms": 3.1,
                "bytes": size,
                "truncated": False,
                "attempts": 1,
                "error": None,
            }
            lines.append(json.dumps(record, ensure_ascii=False))
    return lines


def run(lines: list[str], compression: str | None, shard_bytes: int, workers: int) -> dict:
    out = tempfile.mkdtemp(prefix="shards-bench-")
    try:
        writers = [ShardWriter(out, n, shard_bytes, compression) for n in range(workers)]
        started = time.monotonic()
        for i, line in enumerate(lines):
            writers[i % workers].write_lines((line,))
        for writer in writers:
            writer.close()
        write_s = time.monotonic() - started
        started = time.monotonic()
        compressed_now = finish_shards(out, compression)
        finish_s = time.monotonic() - started
        started = time.monotonic()
        manifest = write_manifest(out, shard_bytes)
        manifest_s = time.monotonic() - started
        started = time.monotonic()
        count = sum(1 for _ in iter_records(out))
        read_s = time.monotonic() - started
        assert count == manifest["records"] == len(lines), (count, manifest["records"], len(lines))
        plain = sum(e["uncompressed_bytes"] for e in manifest["shards"])
        disk = sum(e["bytes"] for e in manifest["shards"])
        return {
            "compression": compression,
            "records": count,
            "shards": len(manifest["shards"]),
            "compressed_at_end": len(compressed_now),
            "uncompressed_mib": round(plain / 2**20, 2),
            "on_disk_mib": round(disk / 2**20, 2),
            "ratio": round(plain / disk, 2),
            "write_s": round(write_s, 2),
            "finish_s": round(finish_s, 2),
            "manifest_s": round(manifest_s, 2),
            "read_all_s": round(read_s, 2),
        }
    finally:
        shutil.rmtree(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/usr/share/doc/python3.11/html")
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--shard-mib", type=float, default=16.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if not os.path.isdir(args.root):
        print(f"no folder {args.root} (install python3.11-doc)", file=sys.stderr)
        return 2
    started = time.monotonic()
    lines = build_lines(args.root, args.copies)
    print(
        json.dumps(
            {
                "root": args.root,
                "records": len(lines),
                "copies": args.copies,
                "shard_mib": args.shard_mib,
                "workers": args.workers,
                "build_s": round(time.monotonic() - started, 1),
            }
        )
    )
    plain_write_s = None
    for compression in (None, "gzip", "zstd"):
        result = run(lines, compression, int(args.shard_mib * 2**20), args.workers)
        if compression is None:
            plain_write_s = result["write_s"]
        else:  # the time compression added, writer and end of crawl together
            result["compress_s"] = round(result["write_s"] + result["finish_s"] - plain_write_s, 2)
            result["compress_mib_per_s"] = round(result["uncompressed_mib"] / result["compress_s"], 1)
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
