"""Helpers for end-to-end crawl tests: run a crawl and read its outputs back."""

from __future__ import annotations

import json
import os
import sys

from crawler.api import crawl
from crawler.config import CrawlConfig
from crawler.output.shards import iter_records


def read_records(out_dir: str) -> dict[str, dict]:
    """Every record of every page shard (plain or compressed), by URL; fails on a URL
    recorded twice."""
    records: dict[str, dict] = {}
    for record in iter_records(out_dir):
        assert record["url"] not in records, f"{record['url']} recorded twice"
        records[record["url"]] = record
    return records


def read_edges(out_dir: str) -> set[tuple[str, str, str, str]]:
    """The merged ``edges.tsv`` as a set of (source, target, kind, in_scope) rows."""
    with open(os.path.join(out_dir, "edges.tsv"), encoding="utf-8") as f:
        header, *rows = f.read().splitlines()
    assert header == "source\ttarget\tkind\tin_scope"
    return {tuple(row.split("\t")) for row in rows}


def crawl_command(url: str, out, *args: str, workers: int = 2, threads: int | None = 2) -> list[str]:
    """The command line of ``python -m crawler url --out out`` with ``workers`` fetchers
    of ``threads`` threads (None: the default) and ``args`` after them."""
    command = [sys.executable, "-m", "crawler", url, "--out", str(out), "--workers", str(workers)]
    if threads is not None:
        command += ["--threads", str(threads)]
    return command + list(args)


def run_crawl(tmp_path, seed: str, **settings) -> tuple[dict, dict[str, dict]]:
    """Crawl ``seed`` into ``tmp_path/out``; returns (summary, records by URL)."""
    out = str(tmp_path / "out")
    settings.setdefault("workers", 2)
    settings.setdefault("threads", 2)
    settings.setdefault("progress_interval_s", 60.0)
    summary = crawl(CrawlConfig(seeds=(seed,), out_dir=out, **settings))
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
        assert json.load(f) == summary
    return summary, read_records(out)
