"""Recrawl: a new generation of a finished crawl in the same folder (``--recrawl``).

Every URL the earlier generations recorded is asked again, with the validators of its
stored record (RFC 9110 §13.1: ``If-None-Match`` with the ``ETag``, ``If-Modified-Since``
with the ``Last-Modified``, each exactly as the server sent it, on the first request of
the task only). Each record of the new generation says its ``change``:

- ``unchanged``: a 304 (the record is carried forward without a download: its
  Markdown stays in the record of generation ``content_generation``; its stored links
  are followed), or a 200 whose Markdown fingerprint (non-HTML: payload digest;
  redirect: target) equals the stored one;
- ``changed``: a 200 with other content;
- ``gone``: a 404 or 410 where the stored record was not one (still a 404 or 410:
  ``unchanged``);
- ``failed``: another failure (timeout, 5xx...): the earlier record still stands;
- ``new``: a URL no earlier generation recorded (every URL of generation 1).

A URL of the earlier generations with no record in this one (robots.txt now disallows
it, ``--skip-unchanged-for``, a stop) is ``skipped`` in ``changes-G.tsv``.

The current corpus is, for each URL, its latest record that is not ``failed``, unless
that record is ``gone``; an ``unchanged`` record with no Markdown takes it from the
record of its ``content_generation`` (``python -m crawler export-current``).
"""

from __future__ import annotations

import collections
import json
import logging
import os
import threading

from crawler.config import CrawlConfig
from crawler.engine.prior import ETAG_IGNORED_AFTER, GONE_STATUSES, PRIOR_FILE, PriorPage, PriorReader, build
from crawler.engine.statestore import FRONTIER, SKIPPED, STATE_FILE, StateStore
from crawler.errors import ConfigError
from crawler.output import generations
from crawler.web.urlnorm import origin_of

log = logging.getLogger("crawler")

#: The changes a record can have (``change``), and ``skipped`` in ``changes-G.tsv``.
NEW, CHANGED, UNCHANGED, GONE, FAILED_AGAIN, NOT_FETCHED = "new", "changed", "unchanged", "gone", "failed", "skipped"
CHANGES = (NEW, CHANGED, UNCHANGED, GONE, FAILED_AGAIN, NOT_FETCHED)
#: The skip reason of a page left out by ``--skip-unchanged-for N``.
UNCHANGED_SKIP = "unchanged in the last {n} generations (--skip-unchanged-for)"
#: The skip reason of a URL of the earlier generations deeper than this run's --max-depth.
DEEPER = "deeper than --max-depth"
#: Settings key marking that the store's frontier holds the earlier generations' URLs.
_SEEDED = "seeded_generation"


def begin(config: CrawlConfig) -> int:
    """The generation this run works on: the folder's current one, or with
    ``config.recrawl`` on a finished crawl, a new one (``previous.sqlite`` built, the
    finished generation's derived files archived: :mod:`crawler.output.generations`).
    A recrawl of a generation that did not finish resumes it.

    Raises:
        ConfigError: ``--recrawl`` on a folder without a crawl, or with other seeds or
            scope than the stored crawl.
    """
    out = config.out_dir
    generations.finish_archive(out)  # a start cut short by a crash
    current = generations.current(out)
    if not config.recrawl:
        return current
    if current > 1 and not StateStore.exists(out):  # started, then stopped before its store was made
        log.info("generation %d in %s did not finish: resuming it", current, out)
        return current
    if not StateStore.exists(out):
        raise ConfigError(f"--recrawl needs a folder that holds a crawl; {out} has none (run the crawl first)")
    summary = _summary(out)
    if summary is None or summary.get("stopped") is not None or summary.get("in_flight"):
        log.info("generation %d in %s did not finish: resuming it", current, out)
        return current
    from crawler.engine.resume import check_settings  # the resume owns the settings check

    with StateStore.open(out) as store:
        stored = store.load_settings()
    if stored is not None:
        try:
            check_settings(stored, config)
        except ConfigError as exc:  # its hint (--restart) would delete the crawl to refresh
            raise ConfigError(
                f"{str(exc).split('; use --restart')[0]}; a recrawl keeps the crawl's seeds, scope and converter"
            ) from None
    build(out, current + 1)
    started = generations.begin_next(out)
    log.info("recrawl: generation %d of %s starts (%d before it)", started, out, current)
    return started


def _summary(out: str) -> dict | None:
    try:
        with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def seed(config: CrawlConfig, store: StateStore, table: object) -> int:
    """Put every URL of the earlier generations in the frontier of a new generation's
    store (with the depth and parent of its latest record) and claim it in ``table``
    (the visited table's proxy), once: a resumed generation has them already. With
    ``--skip-unchanged-for N`` a URL unchanged in each of the last N generations is
    stored skipped instead, and so is one deeper than ``--max-depth`` (:data:`DEEPER`).
    Returns the URLs put in the frontier.
    """
    if config.generation < 2:
        return 0
    stored = store.load_settings() or {}
    if stored.get(_SEEDED) == config.generation:
        return 0
    reader = PriorReader(os.path.join(config.out_dir, PRIOR_FILE))
    unchanged = UNCHANGED_SKIP.format(n=config.skip_unchanged_for)
    queued, batch = 0, []
    skipped: dict[str, list] = {unchanged: [], DEEPER: []}
    for task, streak in reader.tasks(chained=False):
        if config.max_depth is not None and task.depth > config.max_depth:
            skipped[DEEPER].append(task)
        elif config.skip_unchanged_for is not None and streak >= config.skip_unchanged_for:
            skipped[unchanged].append(task)
        else:
            batch.append(task)
        if len(batch) + sum(map(len, skipped.values())) >= 1000:
            queued += _seed_batch(store, table, batch, skipped)
            batch, skipped = [], {unchanged: [], DEEPER: []}
    queued += _seed_batch(store, table, batch, skipped)
    reader.close()
    store.save_settings({**stored, _SEEDED: config.generation})
    store.commit()
    return queued


def _seed_batch(store: StateStore, table: object, batch: list, skipped: dict[str, list]) -> int:
    store.add(batch, FRONTIER)
    for reason, tasks in skipped.items():
        store.add(tasks, SKIPPED, reason)
    left = [t.url for tasks in skipped.values() for t in tasks]
    table.claim_many([t.url for t in batch] + left)  # type: ignore[attr-defined]  # the visited table's proxy
    if left:
        table.mark_many(left, "skipped")  # type: ignore[attr-defined]
    return len(batch)


class Validators:
    """The validators a fetcher process sends, per origin (RFC 9110 §13.1, §13.2.2).

    Servers evaluate ``If-None-Match`` before ``If-Modified-Since`` and ignore the
    latter when the former is present, so an origin whose ETag is new on every response
    never answers 304 to both. An origin that answered If-None-Match with 200 and
    unchanged content :data:`ETAG_IGNORED_AFTER` times and never with 304 (in this
    process, or in the last generation: ``ignored``) is sent ``If-Modified-Since`` alone.
    """

    def __init__(self, ignored: set[str] | None = None) -> None:
        self.ignored = set(ignored or ())
        self._tally: dict[str, list[int]] = {}
        self._lock = threading.Lock()

    def headers(self, record: dict | None, origin: str) -> dict[str, str]:
        """The conditional header fields for a URL whose stored record is ``record``."""
        if record is None or record.get("error"):
            return {}
        fields = {}
        if record.get("etag") and origin not in self.ignored:
            fields["If-None-Match"] = record["etag"]
        if record.get("last_modified"):
            fields["If-Modified-Since"] = record["last_modified"]
        return fields

    def observe(self, origin: str, sent: dict[str, str], status: int | None, change: str) -> None:
        """Count one answer to a request that sent ``sent``."""
        if "If-None-Match" not in sent:
            return
        with self._lock:
            tally = self._tally.setdefault(origin, [0, 0])
            if status == 304:
                tally[1] += 1
            elif status == 200 and change == UNCHANGED:
                tally[0] += 1
            if tally[0] >= ETAG_IGNORED_AFTER and tally[1] == 0 and origin not in self.ignored:
                self.ignored.add(origin)
                log.info("%s: new ETag on every response; sending If-Modified-Since alone", origin)


def change_of(prior: PriorPage | None, record: dict) -> str:
    """The ``change`` of a record of this generation against the URL's ``prior``."""
    if prior is None:
        return NEW
    before = prior.record
    if record.get("error"):
        if record.get("status") not in GONE_STATUSES:
            return FAILED_AGAIN
        return UNCHANGED if before is not None and before.get("status") in GONE_STATUSES else GONE
    if before is None or before.get("error"):
        return CHANGED
    if record["final_url"] != record["url"] or before.get("final_url") != before.get("url"):
        return UNCHANGED if record["final_url"] == before.get("final_url") else CHANGED
    if record.get("fingerprint") is not None or before.get("fingerprint") is not None:
        return UNCHANGED if record.get("fingerprint") == before.get("fingerprint") else CHANGED
    same = record.get("payload_digest") is not None and record.get("payload_digest") == before.get("payload_digest")
    return UNCHANGED if same else CHANGED


def write_changes(out_dir: str, generation: int) -> dict:
    """Write ``changes-G.tsv`` (``url  change  previous_fingerprint  fingerprint``,
    sorted by URL, after a header line) for generation ``generation`` from its records
    (a URL recorded twice, by a resumed run, keeps its last record) and the earlier
    generations' URLs not recorded in it (``skipped``). Returns ``{"changes": {change:
    count}, "by_site": {origin: {change: count, ..., "changed_share": float}}}``: the
    share is changed / (changed + unchanged), or None without either.
    """
    now: dict[str, tuple[str, str | None]] = {}
    for record in generations.current_records(out_dir):
        now[record["url"]] = (record.get("change") or NEW, record.get("fingerprint"))
    reader = PriorReader(os.path.join(out_dir, PRIOR_FILE))
    rows: list[tuple[str, str, str, str]] = []
    seen_before = set()
    for url, before in reader.fingerprints():
        seen_before.add(url)
        change, after = now.get(url, (NOT_FETCHED, None))
        rows.append((url, change, before or "", after or ""))
    reader.close()
    for url, (change, after) in now.items():
        if url not in seen_before:
            rows.append((url, change, "", after or ""))
    rows.sort()
    counts: collections.Counter[str] = collections.Counter()
    by_site: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    with open(os.path.join(out_dir, generations.changes_file(generation)), "w", encoding="utf-8") as f:
        f.write("url\tchange\tprevious_fingerprint\tfingerprint\n")
        for row in rows:
            f.write("\t".join(row) + "\n")
            counts[row[1]] += 1
            by_site[origin_of(row[0])][row[1]] += 1
    sites = {}
    for origin in sorted(by_site):
        tally = by_site[origin]
        compared = tally[CHANGED] + tally[UNCHANGED]
        sites[origin] = {
            **{c: tally[c] for c in CHANGES},
            "changed_share": round(tally[CHANGED] / compared, 4) if compared else None,
        }
    return {"changes": {c: counts[c] for c in CHANGES}, "by_site": sites}


__all__ = ["CHANGES", "STATE_FILE", "Validators", "begin", "change_of", "seed", "write_changes"]
