"""``merge``: the output folders of the machines of one crawl (``--redis``), gathered into one.

Each machine writes its own folder. Once they are gathered in one place,
:func:`merge_folders` writes the whole crawl's outputs, as one machine would have:

- page shards (``pages-00-SSSSS.jsonl``, then ``manifest.json``) with **one record per
  URL**: a URL recorded twice (by a machine that died after writing it, and by the one
  that took its work over) keeps its first successful record, else its first record;
- ``edges.tsv`` and ``tree.txt`` from every folder's ``edges-NN.tsv`` (a killed machine's
  folder has no ``edges.tsv`` of its own), the tree breadth-first from the seeds;
- ``skipped.tsv`` from every folder's ``skip-log.tsv``, without the URLs that have a record;
- ``sites.tsv`` and ``summary.json`` (the counts, and ``reconciled``: they equal the
  crawl's counts in Redis that the last machine to finish wrote).

Partial last lines (a machine killed mid-write) are skipped, as everywhere.
"""

from __future__ import annotations

import collections
import glob
import json
import os
from collections.abc import Iterator, Sequence

from crawler.errors import OutputError
from crawler.output import folderlock
from crawler.output.card import write_card
from crawler.output.graph import LinkGraph, write_tree
from crawler.output.shards import (
    DEFAULT_SHARD_BYTES,
    finish_shards,
    iter_records,
    list_shards,
    outcome_of,
    write_manifest,
)
from crawler.output.sites import write_sites
from crawler.output.writers import SKIP_LOG, ShardWriter
from crawler.vocabulary import UrlState
from crawler.web.urlnorm import key_of, origin_of

#: The file every machine of a ``--redis`` crawl writes first in its folder: the crawl's
#: name (and Redis without its password), so ``merge`` never mixes two crawls.
CLUSTER_JSON = "cluster.json"


def merge_folders(
    folders: Sequence[str], out_dir: str, shard_bytes: int = DEFAULT_SHARD_BYTES, compression: str | None = None
) -> dict:
    """Write the merged outputs of ``folders`` into ``out_dir`` (new or empty).

    Returns:
        the merged ``summary.json`` dict.

    Raises:
        OutputError: a folder is missing or holds no crawl output, the folders come from
            different crawls, or ``out_dir`` is one of them or not empty.
    """
    folders = [os.path.abspath(f) for f in folders]
    out_dir = os.path.abspath(out_dir)
    _check(folders, out_dir)
    try:
        return _merge(folders, out_dir, shard_bytes, compression)
    except OutputError:
        raise
    except OSError as exc:
        raise OutputError(f"cannot write the merged outputs in {out_dir}: {exc.strerror or exc}") from None


def _merge(folders: list[str], out_dir: str, shard_bytes: int, compression: str | None) -> dict:
    summaries = [_summary(f) for f in folders]
    names = {_crawl_name(f) for f in folders}
    if len(names) > 1:
        raise OutputError(f"the folders come from different crawls: {', '.join(sorted(names))}")
    seeds = next((s["seeds"] for s in summaries if s), None)
    if seeds is None:
        raise OutputError(
            "no folder has a summary.json to read the seeds from: merge the folders of finished machines too"
        )
    os.makedirs(out_dir, exist_ok=True)

    chosen = _choose(folders)
    writer = ShardWriter(out_dir, 0, shard_bytes, compression)
    counts: collections.Counter[str] = collections.Counter()
    recorded: set[str] = set()
    for index, folder in enumerate(folders):
        for ordinal, record in enumerate(iter_records(folder)):
            if chosen[record["url"]] != (index, ordinal):
                counts["repeated"] += 1
                continue
            writer.write_lines((json.dumps(record, ensure_ascii=False),))
            recorded.add(record["url"])
            state, reason = outcome_of(record)
            counts[state] += 1
            counts[reason if state == UrlState.VISITED else "failed_reason"] += 1
            counts["duplicates"] += record.get("duplicate_of") is not None
    writer.close()
    finish_shards(out_dir, compression)
    manifest = write_manifest(out_dir, shard_bytes)

    with open(os.path.join(out_dir, "edges-00.tsv"), "w", encoding="utf-8", newline="\n") as edges:
        for folder in folders:
            for path in sorted(glob.glob(os.path.join(folder, "edges-*.tsv"))):
                with open(path, encoding="utf-8") as f:
                    edges.writelines(line for line in f if line.endswith("\n"))
    graph = LinkGraph.load(out_dir)
    edge_count = graph.write_tsv(os.path.join(out_dir, "edges.tsv"))
    write_tree(graph.tree([key_of(seed) for seed in seeds], recorded), os.path.join(out_dir, "tree.txt"))

    skipped_by_origin: collections.Counter[str] = collections.Counter()
    listed: set[str] = set()
    with open(os.path.join(out_dir, "skipped.tsv"), "w", encoding="utf-8", newline="\n") as f:
        f.write("url\tdepth\tparent\treason\n")
        for folder in folders:
            for url, line in _skip_rows(folder):
                if url in recorded or url in listed:
                    continue
                listed.add(url)
                f.write(line)
                skipped_by_origin[origin_of(url)] += 1
    robots = _robots_statuses(folders)
    site_count = write_sites(
        out_dir, skipped_by_origin, robots, not robots or any(v != "ignored" for v in robots.values())
    )

    visited, failed, skipped = counts[UrlState.VISITED], counts[UrlState.FAILED], len(listed)
    cluster_counts = _final_cluster_counts(summaries)
    summary = {
        "seeds": seeds,
        "folders": folders,
        "crawl_name": next(iter(names), None),
        "claimed": visited + failed + skipped,
        "visited": visited,
        "failed": failed,
        "skipped": skipped,
        "reconciled": None
        if cluster_counts is None
        else (cluster_counts["visited"], cluster_counts["failed"], cluster_counts["skipped"])
        == (visited, failed, skipped),
        "cluster_counts": cluster_counts,
        "pages": counts["page"],
        "non_html": counts["non_html"],
        "redirects": counts["redirect"],
        "duplicates": counts["duplicates"],
        "records_repeated": counts["repeated"],
        "records": manifest["records"],
        "edges": edge_count,
        "sites": site_count,
    }
    with open(os.path.join(out_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    figures = ("pages", "non_html", "redirects", "failed", "skipped", "records")
    write_card(out_dir, seeds, {key: summary[key] for key in figures})
    return summary


def _check(folders: list[str], out_dir: str) -> None:
    if not folders:
        raise OutputError("merge needs at least one folder")
    twice = sorted({f for f in folders if folders.count(f) > 1})
    if twice:
        raise OutputError(f"{twice[0]} is given twice")
    for folder in folders:
        if not os.path.isdir(folder):
            raise OutputError(f"{folder}: no such folder")
        if not list_shards(folder) and not any(
            os.path.exists(os.path.join(folder, name)) for name in ("summary.json", SKIP_LOG)
        ):
            raise OutputError(f"{folder}: no page shards, summary.json or {SKIP_LOG}: not a crawl's output folder")
    if out_dir in folders:
        raise OutputError(f"--out {out_dir} is one of the folders merged: give a new folder")
    if os.path.isdir(out_dir) and folderlock.entries(out_dir):
        raise OutputError(f"--out {out_dir} is not empty: give a new folder")


def _crawl_name(folder: str) -> str:
    """The crawl ``folder`` belongs to, from its ``cluster.json`` (written first by every
    machine, so a killed machine's folder has one too).

    Raises:
        OutputError: the folder has none: not a machine's folder of a ``--redis`` crawl.
    """
    try:
        with open(os.path.join(folder, CLUSTER_JSON), encoding="utf-8") as f:
            return str(json.load(f)["crawl_name"])
    except FileNotFoundError:
        raise OutputError(f"{folder} has no {CLUSTER_JSON}: not a machine's folder of a --redis crawl") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise OutputError(f"{folder}/{CLUSTER_JSON} cannot be read: {exc}") from None


def _summary(folder: str) -> dict | None:
    try:
        with open(os.path.join(folder, "summary.json"), encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:  # a killed machine wrote none
        return None
    except (OSError, ValueError) as exc:
        raise OutputError(f"{folder}/summary.json cannot be read: {exc}") from None


def _choose(folders: list[str]) -> dict[str, tuple[int, int]]:
    """URL -> (folder index, record ordinal) of the record kept: the first one that is not
    failed, else the first one."""
    chosen: dict[str, tuple[int, int]] = {}
    failed: set[str] = set()
    for index, folder in enumerate(folders):
        for ordinal, record in enumerate(iter_records(folder)):
            url = record["url"]
            is_failed = bool(record.get("error"))
            if url not in chosen or (url in failed and not is_failed):
                chosen[url] = (index, ordinal)
                if is_failed:
                    failed.add(url)
                else:
                    failed.discard(url)
    return chosen


def _skip_rows(folder: str) -> Iterator[tuple[str, str]]:
    """``(url, line)`` of each complete line of ``folder``'s skip log."""
    path = os.path.join(folder, SKIP_LOG)
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.endswith("\n") and line.count("\t") == 3:
                yield line.split("\t", 1)[0], line


def _robots_statuses(folders: list[str]) -> dict[str, str]:
    """Origin -> robots.txt status, the first known one in the folders' ``sites.tsv``."""
    statuses: dict[str, str] = {}
    for folder in folders:
        path = os.path.join(folder, "sites.tsv")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            header = f.readline().rstrip("\n").split("\t")
            column = header.index("robots")
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if len(fields) > column and fields[column] != "unknown":
                    statuses.setdefault(fields[0], fields[column])
    return statuses


def _final_cluster_counts(summaries: list[dict | None]) -> dict[str, int] | None:
    """The crawl's counts in Redis as a machine that saw it end wrote them (open 0)."""
    for summary in summaries:
        counts = (summary or {}).get("cluster", {}).get("counts")
        if counts and counts.get("open") == 0:
            return counts
    return None
