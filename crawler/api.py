"""``crawl(config) -> summary``: owns the manager and the processes of one crawl, and
writes the outputs derived at the end (merged edges, tree, skipped URLs, summary).

Output folder after a crawl:
    pages-NN.jsonl   one record per fetched URL (written by fetcher NN)
    edges-NN.tsv     the edges fetcher NN saw
    edges.tsv        all edges, de-duplicated and sorted, with a header line
    tree.txt         the site tree, breadth-first from the seed, two spaces per level
    skipped.tsv      URLs claimed but not fetched (page limit or stop), with the reason
    summary.json     counts that reconcile: claimed = visited + failed + skipped
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import signal
import threading
import time

from crawler.config import CrawlConfig
from crawler.dispatcher import Dispatcher
from crawler.errors import CrawlerError, FetcherDied, ManagerDied, OutputError, SeedFailed
from crawler.graph import LinkGraph, write_tree
from crawler.messages import FAILED, NON_HTML, PAGE, REDIRECT
from crawler.visited import start_manager

log = logging.getLogger("crawler")


def prepare_output(out_dir: str) -> None:
    """Create ``out_dir`` if needed and check that files can be written in it.

    Raises:
        OutputError: the folder cannot be created or written.
    """
    try:
        os.makedirs(out_dir, exist_ok=True)
        probe = os.path.join(out_dir, ".write-test")
        with open(probe, "w") as f:
            f.write("ok")
        os.remove(probe)
    except OSError as exc:
        raise OutputError(f"cannot write to output folder {out_dir!r}: {exc.strerror or exc}") from None


class Aborted(CrawlerError):
    """A cold stop (second Ctrl-C or SIGTERM): raised to the caller as KeyboardInterrupt."""


class _SignalStop:
    """First SIGINT/SIGTERM: warm stop (finish in-flight fetches); second: KeyboardInterrupt."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.previous = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.dispatcher.stop_reason is not None:
            raise KeyboardInterrupt
        log.warning("stopping: finishing fetches in flight (signal again to abort)")
        self.dispatcher.request_stop("interrupted")

    def __exit__(self, *exc) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def crawl(config: CrawlConfig) -> dict:
    """Run one crawl to the end and write every output file.

    Args:
        config: settings; ``config.seeds`` must already be normalized URLs.

    Returns:
        the summary dict (also written to ``summary.json``).

    Raises:
        ConfigError: an invalid setting.
        OutputError: the output folder is not writable.
        KeyboardInterrupt: a second Ctrl-C/SIGTERM aborted the crawl (outputs written).
        SeedFailed: nothing was visited because the seed failed (outputs are still
            written, so the failure's record is there to read).
        FetcherDied, ManagerDied: a child process died; the crawl stopped at once (outputs
            are still written, with every URL not fetched in ``skipped.tsv``).
    """
    config = config.validated()
    prepare_output(config.out_dir)
    ctx = multiprocessing.get_context(config.start_method)
    started = time.monotonic()
    manager = start_manager(ctx)
    aborted: CrawlerError | None = None
    try:
        table = manager.VisitedTable(config.shards)
        dispatcher = Dispatcher(config, ctx, table, manager)
        try:
            if threading.current_thread() is threading.main_thread():
                with _SignalStop(dispatcher):
                    dispatcher.run()
            else:
                dispatcher.run()
        except (FetcherDied, ManagerDied) as exc:
            aborted = exc  # outputs are still written: every URL not fetched is listed
        except KeyboardInterrupt:
            aborted = Aborted("aborted by a second signal")
        try:
            states = table.counts()
        except (OSError, EOFError):  # the manager died: its counts are lost
            states = None
    finally:
        manager.shutdown()
    wall_s = time.monotonic() - started
    summary = finish_outputs(config, dispatcher, states, wall_s, aborted)
    if isinstance(aborted, Aborted):
        raise KeyboardInterrupt(f"{aborted}; outputs in {config.out_dir}")
    if aborted is not None:
        raise type(aborted)(f"{aborted}; the crawl stopped, outputs in {config.out_dir}")
    seed = dispatcher.seed_outcome
    if seed is not None and seed.outcome == FAILED and summary["visited"] == 0:
        raise SeedFailed(f"seed {seed.url} could not be crawled ({seed.error}); "
                         f"outputs in {config.out_dir}")
    return summary


def finish_outputs(config: CrawlConfig, dispatcher: Dispatcher, states: dict | None,
                   wall_s: float, aborted: CrawlerError | None = None) -> dict:
    """Merge edges, derive the tree, list skipped URLs and write ``summary.json``.

    Args:
        states: the visited table's per-state counts, or None if the table was lost.
        aborted: the error that stopped the crawl early, if any.

    Returns the summary dict.
    """
    out = config.out_dir
    graph = LinkGraph.load(out)
    edge_count = graph.write_tsv(os.path.join(out, "edges.tsv"))
    write_tree(graph.tree(config.seeds, dispatcher.fetched), os.path.join(out, "tree.txt"))
    with open(os.path.join(out, "skipped.tsv"), "w", encoding="utf-8") as f:
        f.write("url\tdepth\tparent\treason\n")
        for task, reason in dispatcher.skipped:
            f.write(f"{task.url}\t{task.depth}\t{task.parent or ''}\t{reason}\n")
    c = dispatcher.counters
    if states is None:
        claimed, reconciled = None, False
        states = dict.fromkeys(("visited", "failed", "skipped", "in_flight"))
    else:
        claimed = sum(states.values())
        reconciled = (claimed == states["visited"] + states["failed"] + states["skipped"]
                      and states["visited"] == c.visited and states["failed"] == c.failed)
    summary = {
        "seeds": list(config.seeds),
        "claimed": claimed,
        "visited": states["visited"],
        "failed": states["failed"],
        "skipped": states["skipped"],
        "in_flight": states["in_flight"],
        "reconciled": reconciled,
        "pages": c.outcomes[PAGE],
        "non_html": c.outcomes[NON_HTML],
        "redirects": c.outcomes[REDIRECT],
        "failed_by_reason": dict(sorted(c.failed_by_reason.items())),
        "skipped_by_reason": dict(sorted((k, v) for k, v in c.skipped_by_reason.items() if v)),
        "redirect_cycles": graph.redirect_cycles(dispatcher.fetched),
        "stopped": str(aborted) if aborted is not None else dispatcher.stop_reason,
        "edges": edge_count,
        "body_bytes": c.body_bytes,
        "wall_s": round(wall_s, 3),
        "urls_per_s": round(c.done / wall_s, 2) if wall_s > 0 else None,
        "pages_per_s": round(c.outcomes[PAGE] / wall_s, 2) if wall_s > 0 else None,
        "cpu_s": round(dispatcher.monitor.cpu_s, 2),
        "peak_rss_bytes": dispatcher.monitor.peak_rss_bytes,
        "workers": config.workers,
        "threads": config.threads,
        "start_method": dispatcher.ctx.get_start_method(),
    }
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    return summary
