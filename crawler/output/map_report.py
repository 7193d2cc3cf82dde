"""The site map: what a ``map`` run found, derived from its records and edges. No
processes, no network.

A map (``python -m crawler map URL``, :func:`crawler.api.map_site`) walks the site as a
crawl does but converts nothing. Its working files (records without Markdown, edges,
``state.sqlite``, ``skipped.tsv``, ``summary.json``, ``tree.txt``) are in ``DIR/map/``
(:data:`MAP_DIR`), and at its end :func:`build_map` reads them to make ``DIR/map.json``
(:data:`MAP_FILE`); the tree is copied to ``DIR/tree.txt``.

``map.json`` (sizes in bytes; every count of URLs is of distinct normalized URLs):

* ``pages``: HTML pages, the page records a full crawl of the same seeds and scope
  writes (duplicates included, as a crawl's ``pages``);
* ``urls``: every URL the map finished (pages, non-HTML, redirects, failures): what a
  crawl's progress counts as done; ``outcomes``: the same by outcome; ``skipped``;
* ``by_host``: pages by site (host, or ``host:port``);
* ``by_section``: pages by top-level path section: ``/library/`` for
  ``/library/os.html`` and anything deeper, ``/`` for pages directly at the root
  (``/``, ``/index.html``); sections of all hosts are added together;
* ``depth``: pages by their shortest link distance from a seed (:func:`link_distances`:
  ``"0"`` is the seed; a link is a step and a redirect none, as ``--max-depth`` counts).
  The depth a fetcher recorded can be larger: with parallel fetchers a page may be
  claimed first from a deeper page that finished sooner;
* ``out_of_scope``: links to other hosts (not the seeds' sites, not ``--allow-domain``):
  ``hosts`` (distinct), ``links`` (edges, each page-to-URL pair once) and ``top``
  (``[[host, links], ...]``, the :data:`TOP_HOSTS` most linked, ties by name);
* ``bytes_by_type``: bytes by media type of the pages and non-HTML files: an HTML page
  counts its body as read; a non-HTML file its ``Content-Length`` (from HEAD or from the
  GET's headers: the size as sent, compressed if the server compresses it);
  ``unknown_size_by_type``: non-HTML files whose size was not given, by media type;
  a missing type is ``(none)``;
* ``seeds``, ``settings`` (:func:`map_settings`: what a crawl must share to reuse the
  map), ``complete`` (false if the map was stopped or cut by ``--max-pages``),
  ``stopped``, ``wall_s``.

A later crawl with the same ``--out`` reuses the map (:func:`expected_urls`): its
progress total is the map's ``urls``.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import urllib.parse
from collections.abc import Iterable, Iterator, Set
from typing import Any, Protocol

from crawler.output.shards import iter_records, outcome_of
from crawler.vocabulary import UrlState
from crawler.web.scope import Scope, host_of, site_of

log = logging.getLogger("crawler")

#: Sub-folder of ``--out`` that holds a map's working files.
MAP_DIR = "map"
#: The map's result, in ``--out``.
MAP_FILE = "map.json"
#: Out-of-scope hosts listed by name in ``out_of_scope.top``.
TOP_HOSTS = 10
#: Key of a missing Content-Type in ``bytes_by_type``.
NO_TYPE = "(none)"


class _MapSettings(Protocol):
    """What this module reads of a :class:`crawler.config.CrawlConfig` (not imported: the
    config is a higher layer, see tests/test_layers.py)."""

    @property
    def seeds(self) -> tuple[str, ...]: ...
    @property
    def seed_keys(self) -> tuple[str, ...]: ...
    @property
    def out_dir(self) -> str: ...
    @property
    def allow_domains(self) -> tuple[str, ...]: ...
    @property
    def include(self) -> tuple[str, ...]: ...
    @property
    def exclude(self) -> tuple[str, ...]: ...
    @property
    def max_depth(self) -> int | None: ...
    @property
    def max_pages(self) -> int | None: ...
    @property
    def obey_robots(self) -> bool: ...
    @property
    def sitemaps(self) -> bool: ...
    @property
    def max_url_length(self) -> int: ...
    @property
    def max_query_variants(self) -> int | None: ...
    @property
    def max_path_repeats(self) -> int | None: ...
    @property
    def max_path_segments(self) -> int | None: ...
    @property
    def max_pages_per_site(self) -> int | None: ...
    def resume_settings(self) -> dict: ...


def map_settings(config: _MapSettings) -> dict:
    """The settings that decide which URLs a walk reaches (JSON-able): seeds and scope
    (:meth:`crawler.config.CrawlConfig.resume_settings`), depth limit, robots.txt, sitemaps, the
    trap guards and the per-site limit. A crawl reuses a map only when all of them are
    equal."""
    return {
        **config.resume_settings(),
        "max_depth": config.max_depth,
        "obey_robots": config.obey_robots,
        "sitemaps": config.sitemaps,
        "max_url_length": config.max_url_length,
        "max_query_variants": config.max_query_variants,
        "max_path_repeats": config.max_path_repeats,
        "max_path_segments": config.max_path_segments,
        "max_pages_per_site": config.max_pages_per_site,
    }


def section_of(url: str) -> str:
    """The top-level path section of a URL: ``/first/`` when the path has a folder,
    ``/`` for a page directly at the root."""
    path = urllib.parse.urlsplit(url).path
    first, slash, _rest = path.lstrip("/").partition("/")
    return f"/{first}/" if slash else "/"


def media_type(content_type: str | None) -> str:
    """The media type of a Content-Type, lowercase without parameters, or :data:`NO_TYPE`."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    return kind or NO_TYPE


def read_map_records(walk_dir: str) -> dict[str, dict]:
    """The records of the walk's page shards (:func:`crawler.output.shards.iter_records`) by
    URL: a URL recorded twice gives its last record."""
    return {record["url"]: record for record in iter_records(walk_dir)}


def _count(counter: collections.Counter[str]) -> dict:
    """A Counter as a plain dict, by key."""
    return dict(sorted(counter.items()))


def _edges(walk_dir: str) -> Iterator[tuple[str, ...]]:
    """Yield ``(source, target, kind, in_scope)`` of the merged ``walk_dir/edges.tsv``
    (:meth:`crawler.output.graph.LinkGraph.write_tsv`; nothing when it is missing)."""
    path = os.path.join(walk_dir, "edges.tsv")
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        next(f, None)  # the header line
        for line in f:
            yield tuple(line.rstrip("\n").split("\t"))


def out_of_scope_links(walk_dir: str, scope: Scope) -> dict:
    """``out_of_scope`` of ``map.json`` from the merged ``walk_dir/edges.tsv``."""
    by_host: collections.Counter[str] = collections.Counter()
    for _source, target, kind, in_scope in _edges(walk_dir):
        if in_scope == "1" or kind != "link":
            continue
        site = site_of(target)
        if site in scope.sites or scope.host_allowed(host_of(target)):
            continue  # the seeds' own site, left out by --include/--exclude
        by_host[site] += 1
    top = sorted(by_host.items(), key=lambda item: (-item[1], item[0]))[:TOP_HOSTS]
    return {"hosts": len(by_host), "links": sum(by_host.values()), "top": [[host, links] for host, links in top]}


def link_distances(walk_dir: str, seeds: Iterable[str], recorded: Set[str]) -> dict[str, int]:
    """Shortest link distance from ``seeds`` to every URL of ``recorded`` (a set, or dict keys) over
    the edges of ``walk_dir/edges.tsv``, counted as ``--max-depth`` counts: a link is one
    step, a redirect none (a 0-1 breadth-first search). URLs no seed reaches are left
    out."""
    graph: dict[str, list[tuple[str, int]]] = collections.defaultdict(list)
    for source, target, kind, _ in _edges(walk_dir):
        if source in recorded and target in recorded:
            graph[source].append((target, 0 if kind == "redirect" else 1))
    distance = {seed: 0 for seed in seeds if seed in recorded}
    queue = collections.deque(distance)
    while queue:
        url = queue.popleft()
        for target, step in graph.get(url, ()):
            if distance[url] + step < distance.get(target, 1 << 30):
                distance[target] = distance[url] + step
                (queue.appendleft if step == 0 else queue.append)(target)
    return distance


def build_map(config: _MapSettings, walk_dir: str, summary: dict) -> dict:
    """The ``map.json`` dict (see the module docstring) of the map run ``config``.

    Args:
        config: the map's :class:`crawler.config.CrawlConfig` (seeds and scope).
        walk_dir: the folder of its records and merged edges (``DIR/map``).
        summary: its ``summary.json`` dict (:func:`crawler.api.finish_outputs`).
    """
    outcomes: collections.Counter[str] = collections.Counter()
    by_host: collections.Counter[str] = collections.Counter()
    by_section: collections.Counter[str] = collections.Counter()
    depth: collections.Counter[int] = collections.Counter()
    sizes: collections.Counter[str] = collections.Counter()
    unknown: collections.Counter[str] = collections.Counter()
    records = read_map_records(walk_dir)
    distance = link_distances(walk_dir, config.seed_keys, records.keys())
    for record in records.values():
        state, reason = outcome_of(record)
        outcome = "failed" if state == UrlState.FAILED else reason
        outcomes[outcome] += 1
        kind = media_type(record.get("content_type"))
        if outcome == "page":
            url = record["url"]
            by_host[site_of(url)] += 1
            by_section[section_of(url)] += 1
            depth[distance.get(url, record["depth"])] += 1
            sizes[kind] += record["bytes"]
        elif outcome == "non_html":
            size = record.get("content_length")
            if size is None and record.get("method") == "GET" and not record.get("truncated") and record["bytes"]:
                size = record["bytes"]  # a body read in full (a sniffed type)
            if size is None:
                unknown[kind] += 1
            else:
                sizes[kind] += size
    skipped = summary["skipped_by_reason"]
    return {
        "pages": outcomes["page"],
        "urls": sum(outcomes.values()),
        "outcomes": {name: outcomes[name] for name in ("page", "non_html", "redirect", "failed")},
        "skipped": summary["skipped"],
        "by_host": _count(by_host),
        "by_section": _count(by_section),
        "depth": {str(d): n for d, n in sorted(depth.items())},
        "out_of_scope": out_of_scope_links(walk_dir, Scope.from_config(config)),
        "bytes_by_type": _count(sizes),
        "unknown_size_by_type": _count(unknown),
        "seeds": list(config.seeds),
        "settings": map_settings(config),
        "complete": summary["stopped"] is None and not skipped.get("max-pages"),
        "stopped": summary["stopped"],
        "wall_s": summary["wall_s"],
    }


def write_map(report: dict, out_dir: str) -> str:
    """Write ``report`` to ``out_dir/map.json``; returns the path."""
    path = os.path.join(out_dir, MAP_FILE)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    return path


def format_map(report: dict) -> str:
    """``report`` as readable text: the page count first, then each section."""

    def table(title: str, rows: Iterable[tuple[str, Any]]) -> list[str]:  # Any: a value of the report
        rows = [(str(name), value) for name, value in rows]
        if not rows:
            return [f"{title}: none"]
        width = max(len(name) for name, _ in rows)
        return [f"{title}:"] + [f"  {name:<{width}}  {value}" for name, value in rows]

    o, oos = report["outcomes"], report["out_of_scope"]
    lines = [
        f"pages: {report['pages']}",
        f"urls: {report['urls']} (pages {o['page']}, non-HTML {o['non_html']}, "
        f"redirects {o['redirect']}, failed {o['failed']}; skipped {report['skipped']})",
    ]
    if not report["complete"]:
        lines.append(f"incomplete: {report['stopped'] or 'cut by --max-pages'}")
    lines += table("by host", report["by_host"].items())
    lines += table("by section", sorted(report["by_section"].items(), key=lambda r: (-r[1], r[0])))
    lines += table("depth", report["depth"].items())
    lines.append(f"out-of-scope hosts: {oos['hosts']} ({oos['links']} links)")
    lines += [f"  {host}  {links}" for host, links in oos["top"]]
    sizes = [(kind, f"{size} bytes") for kind, size in report["bytes_by_type"].items()]
    sizes += [(kind, f"{n} of unknown size") for kind, n in report["unknown_size_by_type"].items()]
    lines += table("bytes by type", sizes)
    return "\n".join(lines)


#: Lines of the tree the ``map`` command prints (all of it is in ``tree.txt``).
TREE_LINES = 40


def tree_excerpt(path: str, limit: int = TREE_LINES) -> str:
    """The first ``limit`` lines of the tree file ``path`` under a heading that says how
    many lines it has in all; '' when the file is missing."""
    try:
        with open(path, encoding="utf-8") as f:
            head, total = [], 0
            for total, line in enumerate(f, 1):
                if total <= limit:
                    head.append("  " + line.rstrip("\n"))
    except OSError:
        return ""
    shown = f"first {len(head)} of {total} lines" if total > len(head) else f"{total} lines"
    return "\n".join([f"tree ({shown}; all in {os.path.basename(path)}):"] + head)


def load_map(out_dir: str) -> dict | None:
    """The ``map.json`` in ``out_dir``, or None if there is none (or it is unreadable)."""
    try:
        with open(os.path.join(out_dir, MAP_FILE), encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError):
        return None
    return report if isinstance(report, dict) else None


def expected_urls(config: _MapSettings) -> int | None:
    """The number of URLs a crawl of ``config`` will finish, from the map in its
    ``out_dir``: the map's ``urls``, capped by ``max_pages``. None, with a log line
    saying why, when there is a map it cannot use (another seed, scope or limit, or an
    incomplete map); None without a line when there is no map."""
    report = load_map(config.out_dir)
    if report is None:
        return None
    stored, current = report.get("settings") or {}, map_settings(config)
    changed = [key for key in current if stored.get(key) != current[key]]
    if changed:
        key = changed[0]
        log.info(
            "%s not used for the progress total: it maps %s %s, this crawl has %s",
            os.path.join(config.out_dir, MAP_FILE),
            key,
            stored.get(key),
            current[key],
        )
        return None
    if not report.get("complete") or not isinstance(report.get("urls"), int):
        log.info(
            "%s not used for the progress total: the map is incomplete (%s)",
            os.path.join(config.out_dir, MAP_FILE),
            report.get("stopped") or "cut by --max-pages",
        )
        return None
    total = report["urls"]
    if config.max_pages is not None:
        total = min(total, config.max_pages)
    log.info(
        "progress total from %s: %d URLs (%d pages)",
        os.path.join(config.out_dir, MAP_FILE),
        total,
        report.get("pages", 0),
    )
    return total
