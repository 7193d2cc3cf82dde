"""``crawl(config) -> summary``: owns the manager and the processes of one crawl, and
writes the outputs derived at the end (merged edges, tree, skipped URLs, summary).

Output folder after a crawl:
    pages-NN-SSSSS.jsonl[.zst|.gz]  one record per fetched URL (fetcher NN, shard SSSSS)
    manifest.json    the shards with their record counts, sizes and SHA-256
    edges-NN.tsv     the edges fetcher NN saw
    edges.tsv        all edges, de-duplicated and sorted, with a header line
    tree.txt         the site tree, breadth-first from the seed, two spaces per level
    skipped.tsv      URLs claimed but not fetched (page limit or stop), with the reason
    sites.tsv        per origin: pages, failures, skips, robots.txt status, bytes, fetch times
    summary.json     counts that reconcile: claimed = visited + failed + skipped
    warc-NN-*.warc.gz  with ``warc``: fetcher NN's raw HTTP exchanges (:mod:`crawler.output.warc`)

``map_site(config) -> map``: the same walk in map mode, its working files in
``DIR/map/``, then ``DIR/map.json`` and ``DIR/tree.txt`` (:mod:`crawler.output.map_report`).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import multiprocessing
import os
import shutil
import time
from collections.abc import Callable

from crawler.config import CrawlConfig
from crawler.engine import recrawl, resume
from crawler.engine.diskfrontier import DiskFrontier
from crawler.engine.dispatcher import Dispatcher
from crawler.engine.messages import FAILED, NON_HTML, PAGE, REDIRECT
from crawler.engine.outcome import CrawlOutcome
from crawler.engine.scheduler import SITE_LIMIT
from crawler.engine.signals import StopOnSignal, signals_deferred
from crawler.engine.statestore import StateStore
from crawler.engine.visited import VisitedProxy, start_manager
from crawler.errors import Aborted, ConfigError, CrawlerError, FetcherDied, ManagerDied, OutputError, SeedFailed
from crawler.output import card, folderlock, generations, map_report, mirror, sites, warc
from crawler.output.graph import LinkGraph, write_tree
from crawler.output.shards import finish_shards, write_manifest
from crawler.web.urlnorm import origin_of

log = logging.getLogger("crawler")


def prepare_output(out_dir: str) -> None:
    """Create ``out_dir`` if needed and check that files can be written in it.

    Raises:
        OutputError: ``out_dir`` is a file, or the folder cannot be created or written.
    """
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise OutputError(f"cannot write to output folder {out_dir!r}: it is a file, not a folder")
    try:
        os.makedirs(out_dir, exist_ok=True)
        probe = os.path.join(out_dir, f".write-test-{os.getpid()}")  # two runs racing each probe their own
        with open(probe, "w") as f:
            f.write("ok")
        os.remove(probe)
    except OSError as exc:
        raise OutputError(f"cannot write to output folder {out_dir!r}: {exc.strerror or exc}") from None


def crawl(config: CrawlConfig, signals: StopOnSignal | None = None) -> dict:
    """Run one crawl to the end and write every output file.

    Args:
        config: settings; ``config.seeds`` must already be in request form
            (:func:`crawler.web.urlnorm.request_url`).
        signals: the program's installed :class:`crawler.engine.signals.StopOnSignal` (the
            command line installs one before anything else); by default the crawl
            installs its own for its duration.

    Returns:
        the summary dict (also written to ``summary.json``).

    Raises:
        ConfigError: an invalid setting.
        OutputError: the output folder is not writable, or another crawl runs in it
            (:mod:`crawler.output.folderlock`).
        KeyboardInterrupt: a second Ctrl-C/SIGTERM aborted the crawl (outputs written).
        SeedFailed: nothing was visited because the seed failed (outputs are still
            written, so the failure's record is there to read).
        FetcherDied, ManagerDied: a child process died; the crawl stopped at once (outputs
            are still written, with every URL not fetched in ``skipped.tsv``).
    """
    config = config.validated()
    if config.recrawl and not os.path.isdir(config.out_dir):  # before prepare_output creates it
        raise ConfigError(f"--recrawl needs a folder that holds a crawl; {config.out_dir} does not exist")
    prepare_output(config.out_dir)
    owned = signals is None
    signals = signals or StopOnSignal()
    signals.install()
    try:
        with folderlock.hold(config.out_dir):
            return _crawl(config, signals)
    finally:
        if owned:
            signals.restore()


def _crawl(config: CrawlConfig, signals: StopOnSignal) -> dict:
    """:func:`crawl` with the signal handlers in place."""
    ctx = multiprocessing.get_context(config.start_method)
    started = time.monotonic()
    manager = None
    if config.restart:
        resume.remove_outputs(config.out_dir)
    config = dataclasses.replace(config, generation=recrawl.begin(config))
    if config.mirror and config.generation > 1:
        raise ConfigError("--mirror is not supported on a recrawled folder yet (export-current writes its corpus)")
    store = StateStore.open(config.out_dir)
    try:
        with signals_deferred(ctx.get_start_method()):  # a Ctrl-C waits for the children to boot
            manager = start_manager(ctx)
            table = manager.VisitedTable(config.shards)  # type: ignore[attr-defined]  # VisitedManager.register()
            cookie_store = manager.CookieStore() if config.cookies else None  # type: ignore[attr-defined]  # same
            report = resume.prepare(config, store, table)
            if report.resumed:
                log.info("%s", report.describe(config.out_dir))
            queued = recrawl.seed(config, store, table)
            if queued:
                log.info(
                    "recrawl: generation %d asks %d URLs of the earlier generations again", config.generation, queued
                )
            expected = map_report.expected_urls(config) if config.mode == "crawl" else None
            frontier = DiskFrontier(store)
            dispatcher = Dispatcher(
                config,
                ctx,
                table,
                manager,
                frontier,
                store,
                expected_urls=expected,
                earlier=report.earlier,
                cookie_store=cookie_store,
            )
            signals.attach(dispatcher.request_stop)
            dispatcher.start()
        aborted: CrawlerError | None = None
        try:
            dispatcher.run()
        except (FetcherDied, ManagerDied) as exc:
            aborted = exc  # outputs are still written: every URL not fetched is listed
        except KeyboardInterrupt:
            aborted = Aborted("aborted by a second signal")
        signals.finishing = True
        try:
            states = table.counts()
        except (OSError, EOFError):  # the manager died: its counts are lost
            states = None
        outcome = dispatcher.outcome()
        summary = finish_outputs(config, outcome, table, states, time.monotonic() - started, aborted)
    finally:
        if manager is not None:
            manager.shutdown()
        store.close()
    if isinstance(aborted, Aborted):
        raise KeyboardInterrupt(f"{aborted}; outputs in {config.out_dir}")
    if aborted is not None:
        raise type(aborted)(f"{aborted}; the crawl stopped, outputs in {config.out_dir}")
    seed = outcome.seed_outcome
    if seed is not None and seed.outcome == FAILED and summary["visited"] == 0:
        raise SeedFailed(f"seed {seed.url} could not be crawled ({seed.error}); outputs in {config.out_dir}")
    seed_skips = outcome.seed_skips
    if summary["visited"] == 0 and seed_skips and seed is None:
        raise SeedFailed(
            f"seed {config.seed_keys[0]} could not be crawled ({seed_skips[0]}); outputs in {config.out_dir}"
        )
    return summary


def map_site(config: CrawlConfig, signals: StopOnSignal | None = None) -> dict:
    """Map the site: walk it as :func:`crawl` does, with ``mode="map"`` (nothing
    converted, non-HTML links sized with HEAD), then derive the map.

    The walk's files go to ``config.out_dir/map/`` (a stopped map resumes from there;
    ``config.restart`` starts it over); at its end ``map.json`` and ``tree.txt`` are
    written in ``config.out_dir``.

    Returns:
        the ``map.json`` dict (:func:`crawler.output.map_report.build_map`).

    Raises:
        the errors of :func:`crawl` (ConfigError, OutputError, SeedFailed, ...,
        KeyboardInterrupt after a second signal); then no ``map.json`` is written.
    """
    config = config.validated()
    prepare_output(config.out_dir)
    with folderlock.hold(config.out_dir):
        return _map_site(config, signals)


def _map_site(config: CrawlConfig, signals: StopOnSignal | None) -> dict:
    """:func:`map_site` with ``config.out_dir`` held."""
    walk = dataclasses.replace(
        config,
        mode="map",
        warc=False,
        compress=None,
        mirror=False,  # no corpus
        out_dir=os.path.join(config.out_dir, map_report.MAP_DIR),
    )
    summary = crawl(walk, signals)
    report = map_report.build_map(walk, walk.out_dir, summary)
    map_report.write_map(report, config.out_dir)
    shutil.copyfile(os.path.join(walk.out_dir, "tree.txt"), os.path.join(config.out_dir, "tree.txt"))
    return report


#: Skip reason of in-scope links of recorded pages that an abort left unclaimed.
NEVER_CLAIMED = "aborted: linked from a recorded page, never claimed"
#: Skip reason of links won by a page whose fetcher died before it reported them.
LOST_WITH_FETCHER = "claimed by a fetcher that died before reporting it"


def never_claimed(
    config: CrawlConfig,
    graph: LinkGraph,
    tree: list[tuple[int, str]],
    is_listed: Callable[[str], bool],
    reason: str = NEVER_CLAIMED,
) -> list:
    """After an abort: in-scope link targets of recorded pages that are neither recorded
    nor listed as skipped (the visited table failed before their claim, or the fetcher
    died before it reported them), within ``max_depth`` by tree depth.

    Returns ``[(url, depth, parent, reason)]`` sorted by URL.
    """
    depth_of = {url: depth for depth, url in tree}  # the tree holds every processed URL
    listed = is_listed
    found: dict[str, tuple[int, str]] = {}
    for source, target, _kind, in_scope in graph.edges_in_order():  # first parent read wins
        if not in_scope or source not in depth_of or target in found or listed(target):
            continue
        depth = depth_of[source] + 1
        if config.max_depth is None or depth <= config.max_depth:
            found.setdefault(target, (depth, source))
    return [(url, depth, parent, reason) for url, (depth, parent) in sorted(found.items())]


def finish_page_shards(config: CrawlConfig) -> dict:
    """Compress the page-record shards left plain (``config.compress``), after a crash's
    leftovers are settled, then write ``manifest.json`` (:mod:`crawler.output.shards`). Every
    fetcher must have stopped. Returns the manifest."""
    started = time.monotonic()
    compressed = finish_shards(config.out_dir, config.compress)
    recrawled = config.generation > 1
    manifest = write_manifest(
        config.out_dir,
        config.shard_bytes,
        generations.shard_generation(config.out_dir) if recrawled else None,
        config.generation,
    )
    log.debug(
        "%d records in %d shards (%d compressed now), manifest written in %.2f s",
        manifest["records"],
        len(manifest["shards"]),
        len(compressed),
        time.monotonic() - started,
    )
    return manifest


def finish_outputs(
    config: CrawlConfig,
    outcome: CrawlOutcome,
    table: VisitedProxy | None,
    states: dict | None,
    wall_s: float,
    aborted: CrawlerError | None = None,
) -> dict:
    """Merge edges, derive the tree, list skipped URLs, compress the page shards, write
    ``manifest.json``, ``sites.tsv`` and ``summary.json``.

    Args:
        outcome: what the dispatcher's run ended with (:meth:`Dispatcher.outcome`).
        table: the visited table (links lost with a dead fetcher are marked skipped);
            ``None`` with ``--redis``, where the links a page won are in the shared
            frontier as soon as they are claimed.
        states: the visited table's per-state counts, or None if the table was lost.
        aborted: the error that stopped the crawl early, if any.

    Returns the summary dict.
    """
    out = config.out_dir
    warc.seal_open_files(out)  # the WARC files of fetchers that died in this run
    graph = LinkGraph.load(out)
    edge_count = graph.write_tsv(os.path.join(out, "edges.tsv"))
    # A URL in flight at an abort whose edges are on disk was processed: its result
    # was lost, not its record (a record's edges are written just before it).
    in_flight = [task for task, _reason in outcome.abandoned]
    listing = outcome.listing
    fetched = listing.fetched_urls()  # every run's, not kept in memory while crawling
    processed = fetched | {task.url for task in in_flight if graph.has_source(task.url)}
    tree = graph.tree(config.seed_keys, processed)
    write_tree(tree, os.path.join(out, "tree.txt"))
    unclaimed = []  # in scope, linked from a recorded page, never claimed
    if aborted is not None:
        unclaimed = never_claimed(config, graph, tree, listing.is_listed)
    elif outcome.fetcher_deaths and table is not None:  # a fetcher that died after settling a page took its won links
        unclaimed = never_claimed(config, graph, tree, listing.is_listed, LOST_WITH_FETCHER)
        try:
            for url, *_ in unclaimed:
                if table.state(url) == "in_flight":
                    table.mark(url, "skipped")
            states = table.counts() if unclaimed and states is not None else states
        except Exception:  # the table is gone: the rows are listed all the same
            log.warning("could not mark URLs lost with a fetcher as skipped")

    # One pass over every run's skips, then what this run left, streamed (never a list):
    # skipped.tsv, the counts by reason and by origin, and the origins not done (with URLs
    # this run left, unless only their --max-pages-per-site was reached).
    by_reason: collections.Counter[str] = collections.Counter()
    by_origin: collections.Counter[str] = collections.Counter()
    busy: set[str] = set()
    with open(os.path.join(out, "skipped.tsv"), "w", encoding="utf-8") as f:
        f.write("url\tdepth\tparent\treason\n")
        for rows, left in ((listing.skipped_rows(), False), (listing.unfinished_rows(), True), (unclaimed, False)):
            for url, depth, parent, reason in rows:
                f.write(f"{url}\t{depth}\t{parent or ''}\t{reason}\n")
                by_reason[reason] += 1
                origin = origin_of(url)
                by_origin[origin] += 1
                if left and reason != SITE_LIMIT:
                    busy.add(origin)
    c = outcome.counters
    duplicates, near_duplicates = listing.duplicate_counts()
    if states is None:  # the table is lost: what the dispatcher itself saw
        claimed, reconciled = None, False
        states = {
            "visited": c.visited,
            "failed": c.failed,
            "skipped": sum(by_reason.values()) - len(in_flight),
            "in_flight": len(in_flight),
        }
    else:
        claimed = sum(states.values())
        reconciled = (
            claimed == states["visited"] + states["failed"] + states["skipped"]
            and states["visited"] == c.visited
            and states["failed"] == c.failed
        )
    manifest = finish_page_shards(config)
    site_count = sites.write_sites(
        out, by_origin, listing.robots_statuses(), config.obey_robots, generations.current_records(out)
    )
    stored = listing.site_count()  # every run's claims
    site_count = site_count if stored is None else stored
    summary = {
        "seeds": list(config.seeds),
        "claimed": claimed,
        "visited": states["visited"],
        "failed": states["failed"],
        "skipped": states["skipped"],
        "in_flight": states["in_flight"],
        "reconciled": reconciled,
        "sites": site_count,
        "sites_done": site_count - len(busy),
        "pages": c.outcomes[PAGE],
        "non_html": c.outcomes[NON_HTML],
        "redirects": c.outcomes[REDIRECT],
        "duplicates": duplicates,
        "near_duplicates": near_duplicates,
        "fallbacks": c.fallbacks,
        "failed_by_reason": dict(sorted(c.failed_by_reason.items())),
        "skipped_by_reason": dict(sorted(by_reason.items())),
        "redirect_cycles": graph.redirect_cycles(listing.redirected_urls()),
        "robots_fetches": outcome.robots_fetches,
        "sitemaps_read": outcome.sitemaps_read,
        "retries": outcome.retries,
        "fetcher_deaths": outcome.fetcher_deaths,
        "stalls": outcome.stalls,
        "stopped": str(aborted) if aborted is not None else outcome.stop_reason,
        "edges": edge_count,
        "body_bytes": c.body_bytes,
        "wall_s": round(wall_s, 3),
        # rates of this run (its URLs over its wall time), also after a resume
        "urls_per_s": round((c.done - sum(c.earlier.values())) / wall_s, 2) if wall_s > 0 else None,
        "pages_per_s": round((c.outcomes[PAGE] - c.earlier[PAGE]) / wall_s, 2) if wall_s > 0 else None,
        "cpu_s": round(outcome.cpu_s, 2),
        "peak_rss_bytes": outcome.peak_rss_bytes,
        "processes": outcome.processes,
        "workers": config.workers,
        "threads": config.threads,
        "start_method": outcome.start_method,
        "generation": config.generation,
    }
    if config.generation > 1:
        changes = recrawl.write_changes(out, config.generation)
        summary["changes"], summary["changes_by_site"] = changes["changes"], changes["by_site"]
    if config.mirror:  # after a resume too: the records of every run
        try:
            summary["mirror_files"] = mirror.write_mirror(out)
        except OSError as exc:  # the other outputs stand; say why the mirror is missing
            log.error("mirror not written: %s", exc)
            summary["mirror_files"] = None
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    if config.mode == "crawl":
        _write_card(config, summary, manifest)
    return summary


def _write_card(config: CrawlConfig, summary: dict, manifest: dict) -> None:
    """The folder's dataset card (:mod:`crawler.output.card`); a failure is logged, the
    other outputs stand."""
    counts = {key: summary[key] for key in ("pages", "non_html", "redirects", "failed", "skipped", "generation")}
    counts["records"] = manifest["records"]
    if not manifest["shards"]:  # nothing to load: a card naming no file fails to load
        return
    by_generation: dict[int, list[str]] = {}
    if "generations" in manifest:
        for shard in manifest["shards"]:
            by_generation.setdefault(shard["generation"], []).append(shard["file"])
    try:
        card.write_card(config.out_dir, list(config.seeds), counts, by_generation or None)
    except OSError as exc:
        log.error("dataset card not written: %s", exc)
