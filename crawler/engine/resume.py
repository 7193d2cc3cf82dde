"""The start of every run of a crawl, and resuming it from its output folder after a
stop, a crash or a reboot. This module owns the resume: :func:`remove_outputs` for
``--restart``, :func:`prepare` for every run, new or resumed, and the
:class:`ResumeReport` the dispatcher starts from. It talks to the state store through
the store's resume API (:meth:`~crawler.engine.statestore.StateStore.open_run`,
``reset_for_resume``, ``settle_recorded``, ``earlier_outcomes``, ``urls_in``,
``contents``).

The state store (:mod:`crawler.engine.statestore`) is committed by the dispatcher several times a
second; the page records are written by the fetchers before they report. So after a
crash the store may lag the records by the few tasks in flight. :func:`prepare` closes
that gap before the crawl goes on:

1. the settings that make a resume unsafe (seeds, scope) must match, else a one-line
   :class:`crawler.errors.ConfigError` (``--restart`` starts over instead);
2. a record or edge line half-written by a crash (no final newline) is cut off (in
   plain shards: compressed ones are complete), unfinished compressed copies and plain
   shards whose compressed twin exists are deleted (:func:`crawler.output.shards.settle`);
   the cut record's URL is fetched again. Records are then read from every shard,
   plain or compressed; each fetcher of the new run writes to new shard numbers. A
   WARC file left ``.open`` by a process that died loses its partial last record the
   same way (:func:`crawler.output.warc.seal_open_files`);
3. URLs in flight when the crawl stopped go back to the frontier, except those whose
   record is on disk (also those dispatched after the store's last commit, which it
   does not know at all): they are marked visited (or failed) from the record, and the
   in-scope links their page found that the store does not know are put in the
   frontier (their claims died with the old processes);
4. the visited table is rebuilt from the store: every URL claimed, the finished ones
   marked, so no visited page is fetched again; and its content registry gets the
   earlier runs' pages back, so a page of this run that repeats one of theirs is
   flagged (``duplicate_of``, ``near_duplicate_of``) as within one run;
5. what the earlier runs finished is counted for the dispatcher (:class:`EarlierRuns`):
   the summary's counts and ``--max-pages-per-site`` hold over the whole crawl.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
from collections.abc import Iterable, Iterator
from typing import TypeVar

from crawler.config import CrawlConfig
from crawler.content.neardup import simhash
from crawler.engine.messages import FetchTask
from crawler.engine.statestore import (
    BATCH_ROWS,
    FAILED,
    FRONTIER,
    IN_FLIGHT,
    SKIPPED,
    STATE_FILE,
    VISITED,
    StateStore,
    content_kind,
)
from crawler.engine.visited import VisitedProxy
from crawler.errors import ConfigError
from crawler.output import card, generations
from crawler.output.mirror import SITE_DIR, remove_mirror
from crawler.output.shards import (
    MANIFEST_FILE,
    TEMP_SUFFIX,
    cut_partial_line,
    outcome_of,
    settle,
)
from crawler.output.warc import OPEN_SUFFIX, WARC_GLOB, seal_open_files
from crawler.web.traps import guard_reason
from crawler.web.urlnorm import origin_of

_T = TypeVar("_T")

#: Settings a resumed crawl must share with the stored one.
UNSAFE_TO_CHANGE = ("seeds", "allow_domains", "include", "exclude", "converter")
_FLAGS = {
    "seeds": "seeds",
    "allow_domains": "--allow-domain",
    "include": "--include",
    "exclude": "--exclude",
    "converter": "--converter",
}
#: What a state file written before a setting was stored had: its crawl used this.
_STORED_BEFORE = {"converter": "html2text"}
#: Output files a ``--restart`` removes (and nothing else in the folder).
OUTPUT_PATTERNS = (
    "pages-*.jsonl",
    "edges-*.tsv",
    "edges.tsv",
    "tree.txt",
    "skipped.tsv",
    "sites.tsv",
    "summary.json",
    STATE_FILE,
    STATE_FILE + "-wal",
    STATE_FILE + "-shm",
    WARC_GLOB,
    WARC_GLOB + OPEN_SUFFIX,
    "pages-*.jsonl.zst",
    "pages-*.jsonl.gz",
    "pages-*.jsonl.*" + TEMP_SUFFIX,
    MANIFEST_FILE,
    MANIFEST_FILE + TEMP_SUFFIX,
    generations.GENERATIONS_FILE,
    generations.GENERATIONS_FILE + ".tmp",
    "previous.sqlite",
    "previous.sqlite.tmp",
    "changes-[0-9]*.tsv",
    generations.ARCHIVE_DIR + "/",
    card.CARD_FILE,
    card.CARD_FILE + ".tmp",
    SITE_DIR + "/",
)  # the mirror: only the files its index lists
_URL_PREFIX = '{"url": "'


@dataclasses.dataclass(frozen=True)
class EarlierRuns:
    """What the earlier runs of a resumed crawl finished.

    Attributes:
        visited_by_outcome: visited URLs by outcome (``None``: a page).
        failed_by_reason: failed URLs by reason.
        pages_per_origin: visited and failed URLs per origin, counted only with
            ``--max-pages-per-site`` (else empty: it streams every URL).
    """

    visited_by_outcome: dict[str | None, int]
    failed_by_reason: dict[str | None, int]
    pages_per_origin: dict[str, int]


@dataclasses.dataclass(frozen=True)
class ResumeReport:
    """What :func:`prepare` found and did.

    Attributes:
        resumed: the folder held a crawl (else a new one was started).
        in_flight: URLs in flight at the stop, back in the frontier or settled.
        recorded_unreported: of those, the ones whose record was on disk (settled).
        links_recovered: links of those records put in the frontier.
        bytes_cut: bytes of partial lines and records cut from the outputs.
        earlier: what the earlier runs finished; None for a new crawl.
    """

    resumed: bool
    in_flight: int = 0
    recorded_unreported: int = 0
    links_recovered: int = 0
    bytes_cut: int = 0
    earlier: EarlierRuns | None = None

    def describe(self, out_dir: str) -> str:
        """The one log line of a resume."""
        return (
            f"resuming the crawl in {out_dir}: {self.in_flight} URLs were waiting or in flight "
            f"({self.recorded_unreported} of them recorded, {self.links_recovered} links recovered), "
            f"{self.bytes_cut} bytes of partial lines cut"
        )


def check_settings(stored: dict, config: CrawlConfig) -> None:
    """Raise ConfigError (one line) if ``config`` differs from the stored crawl in a
    setting of :data:`UNSAFE_TO_CHANGE`."""
    current = config.resume_settings()
    stored = {**_STORED_BEFORE, **stored}
    changed = [key for key in UNSAFE_TO_CHANGE if stored.get(key) != current[key]]
    if changed:
        key = changed[0]
        raise ConfigError(
            f"{config.out_dir} holds a crawl with {_FLAGS[key]} {_short(stored.get(key))}, "
            f"not {_short(current[key])}; use --restart to start over, or another --out"
        )


def _short(value: object, limit: int = 200) -> str:
    """``value`` as text, cut to about ``limit`` characters (a seed list of 10,000 URLs
    must not make a one-line error of megabytes)."""
    text = str(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def remove_outputs(out_dir: str) -> None:
    """``--restart``: delete this crawler's output files in ``out_dir`` (only those)."""
    for pattern in OUTPUT_PATTERNS:
        if pattern == SITE_DIR + "/":
            remove_mirror(out_dir)
            continue
        if pattern == card.CARD_FILE:
            if card.is_ours(os.path.join(out_dir, pattern)):
                os.remove(os.path.join(out_dir, pattern))
            continue
        if pattern == generations.ARCHIVE_DIR + "/":
            generations.remove_archive(out_dir)
            continue
        for path in glob.glob(os.path.join(out_dir, pattern)):
            os.remove(path)


def prepare(config: CrawlConfig, store: StateStore, table: VisitedProxy) -> ResumeReport:
    """Start a run: a new crawl stores its settings; a resumed one brings the output
    folder and ``table`` in line with ``store`` (see the module docstring). Call before
    the frontier is opened on ``store``.

    Raises:
        ConfigError: the folder holds a crawl with other seeds or scope.
        StateError: the store cannot be read or written.
    """
    out = config.out_dir
    stored = store.open_run(config.resume_settings())
    if stored is None:
        return ResumeReport(resumed=False)
    check_settings(stored, config)
    bytes_cut = settle(out)
    for path in sorted(glob.glob(os.path.join(out, "edges-*.tsv"))):
        bytes_cut += cut_partial_line(path)
    bytes_cut += seal_open_files(out)[1]  # WARC files of processes that died
    in_flight = store.reset_for_resume()
    _backfill_contents(store, out)  # before the recovered records add theirs
    recovered = _records_not_in_store(store, out)
    links = _recover_links(config, store, recovered)
    store.commit()
    _rebuild_table(store, table)
    _rebuild_contents(store, table)
    return ResumeReport(True, in_flight, len(recovered), links, bytes_cut, _earlier_runs(config, store))


def _earlier_runs(config: CrawlConfig, store: StateStore) -> EarlierRuns:
    visited, failed = store.earlier_outcomes()
    per_origin: dict[str, int] = {}
    if config.max_pages_per_site is not None:
        for url in store.urls_in(VISITED, FAILED):
            origin = origin_of(url)
            per_origin[origin] = per_origin.get(origin, 0) + 1
    return EarlierRuns(visited, failed, per_origin)


def _records_not_in_store(store: StateStore, out: str) -> dict[str, dict]:
    """Records on disk whose URL the store still has waiting (or never had): mark them
    finished and return them by URL."""
    found: dict[str, dict] = {}
    for line in generations.current_lines(out):  # parsed only when needed: most are in the store
        if not line.startswith(_URL_PREFIX):
            continue
        url = line[len(_URL_PREFIX) : line.index('"', len(_URL_PREFIX))]
        if store.state_of(url) not in (VISITED, FAILED):
            found[url] = json.loads(line)
    for url, record in found.items():
        task = FetchTask(url, record["depth"], record.get("parent"), tuple(record.get("redirect_chain") or ()))
        store.settle_recorded(task, *outcome_of(record))
        _add_content(store, record)
    return found


def _add_content(store: StateStore, record: dict) -> bool:
    """Put ``record``'s page in the store's content registry if it was registered in the
    visited table's (a page with Markdown, or an exact duplicate). A record written
    before records had ``simhash`` gets it computed from its Markdown. Returns whether
    it was put there."""
    if not (record.get("markdown") or record.get("duplicate_of")) or not record.get("fingerprint"):
        return False
    kind = content_kind(bool(record.get("duplicate_of")), bool(record.get("near_duplicate_of")))
    near = record.get("simhash")
    if near is None:  # an exact duplicate never enters the near-duplicate index
        near = f"{simhash(record['markdown']):016x}" if record.get("markdown") else "0"
    store.add_content(record["url"], int(record["fingerprint"], 16), int(near, 16), kind)
    return True


def _backfill_contents(store: StateStore, out: str) -> int:
    """A folder written before the content registry was kept in the store: register
    every page record's content from the records (once; later resumes find it filled).
    Returns the records added."""
    if any(store.content_counts().values()) or not store.reason_counts(VISITED).get("page"):
        return 0
    return sum(_add_content(store, record) for record in generations.current_records(out))


def _recover_links(config: CrawlConfig, store: StateStore, records: dict[str, dict]) -> int:
    """Put in the frontier the in-scope link (and redirect) targets of ``records``
    that the store does not know: the claims their fetch made died with the crash. A
    link the dispatcher's guards would skip (too long, a trap) is stored skipped with
    their reason instead. Returns the number put in the frontier."""
    if not records:
        return 0
    added = 0
    for path in sorted(glob.glob(os.path.join(config.out_dir, "edges-*.tsv"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                source = line.partition("\t")[0]
                record = records.get(source)
                if record is None:
                    continue
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 4 or parts[3] != "1" or store.state_of(parts[1]) is not None:
                    continue
                if parts[2] == "redirect":
                    task = FetchTask(
                        parts[1], record["depth"], source, tuple(record.get("redirect_chain") or ()) + (source,)
                    )
                else:
                    depth = record["depth"] + 1
                    if config.max_depth is not None and depth > config.max_depth:
                        continue
                    task = FetchTask(parts[1], depth, source)
                guard = guard_reason(task.url, config.max_url_length, config.max_path_repeats, config.max_path_segments)
                store.add([task], FRONTIER if guard is None else SKIPPED, guard)  # as the dispatcher would
                added += guard is None
    return added


def _rebuild_contents(store: StateStore, table: VisitedProxy) -> None:
    """Register the earlier runs' pages in the visited table's content registry, in their
    order, so that this run's pages are flagged as duplicates of theirs too."""
    for batch in _batches(store.contents(), BATCH_ROWS):
        table.register_contents(batch)


def _rebuild_table(store: StateStore, table: VisitedProxy) -> None:
    """Claim every stored URL in ``table`` and mark the finished ones, 1,000 a call."""
    for states, final in (
        ((FRONTIER, IN_FLIGHT), None),
        ((VISITED,), "visited"),
        ((FAILED,), "failed"),
        ((SKIPPED,), "skipped"),
    ):
        for batch in _batches(store.urls_in(*states), BATCH_ROWS):
            _claim(table, batch, final)


def _batches(items: Iterable[_T], size: int) -> Iterator[list[_T]]:
    """Yield lists of ``size`` consecutive items of ``items`` (the last one shorter): one
    round trip to the visited table per list (``itertools.batched`` is Python 3.12)."""
    batch: list[_T] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _claim(table: VisitedProxy, urls: list[str], final: str | None) -> None:
    table.claim_many(urls)
    if final is not None:
        table.mark_many(urls, final)
