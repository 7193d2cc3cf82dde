"""Live progress of a crawl: a tqdm bar on a terminal, a log line otherwise.

The dispatcher calls :meth:`Progress.update` from its loop; the display decides when to
draw. On a terminal (``mode="bar"``) tqdm draws one line with URLs done, the rate, and,
when ``--max-pages`` bounds the crawl, the total and an ETA; the postfix has pages,
failures, frontier, in flight and memory of all processes. Elsewhere (``mode="log"``:
output to a file or a pipe) one log line every ``interval_s`` seconds, with ``done/total``
and an ETA when the total is known. The total is ``--max-pages``, or the URLs of a map
of the same site (:func:`crawler.output.map_report.expected_urls`). The rate and the ETA count
only this run's URLs (:meth:`Progress.start_at`), so a resumed crawl's are true too. ``mode="off"``
(``--quiet``) shows nothing. tqdm is used rather than a hand-drawn bar: it handles
terminal width, rate smoothing and ETA.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from typing import TextIO

log = logging.getLogger("crawler")

MODES = ("bar", "log", "off")


@dataclasses.dataclass(frozen=True)
class ProgressStats:
    """One snapshot: counts of URLs, and ``rss_bytes`` of the whole process tree."""

    done: int
    pages: int
    failed: int
    frontier: int
    in_flight: int
    rss_bytes: int
    elapsed_s: float
    sites_done: int = 0
    sites: int = 0


class Progress:
    """The progress display of one crawl.

    Args:
        mode: ``"bar"``, ``"log"`` or ``"off"`` (:data:`MODES`).
        total: URLs the crawl will fetch at most (``--max-pages``), or ``None``.
        interval_s: seconds between log lines (``mode="log"``).
        stream: where the bar is drawn (default stderr).

    Raises:
        ValueError: unknown ``mode``.
    """

    def __init__(
        self, mode: str, total: int | None = None, interval_s: float = 5.0, stream: TextIO | None = None
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"progress mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.interval_s = interval_s if mode == "log" else 0.5
        self.total = total
        self.initial = 0
        self._bar = None
        if mode == "bar":
            from tqdm import tqdm

            # no monitor thread: the bar is made while the dispatcher blocks SIGINT and
            # SIGTERM in its main thread (signals_deferred), and a signal sent to the
            # process then could land, ignored, on another thread and be lost
            tqdm.monitor_interval = 0
            self._bar = tqdm(
                total=total,
                unit=" URL",
                dynamic_ncols=True,
                file=stream or sys.stderr,
                mininterval=0.5,
                smoothing=0.1,
                leave=True,
            )

    def start_at(self, done: int) -> None:
        """Count ``done`` URLs finished by earlier runs (a resume): shown in the count,
        left out of the rate and the ETA."""
        self.initial = done
        if self._bar is not None:
            self._bar.initial = self._bar.n = done
            self._bar.last_print_n = done

    def update(self, stats: ProgressStats) -> None:
        """Show ``stats`` (the caller rate-limits to :attr:`interval_s`)."""
        memory = stats.rss_bytes / 2**20
        if self._bar is not None:
            self._bar.n = stats.done
            self._bar.set_postfix_str(
                f"pages {stats.pages} | failed {stats.failed} | frontier {stats.frontier} | "
                f"in flight {stats.in_flight} | {_sites(stats)}{memory:.0f} MiB",
                refresh=False,
            )
            self._bar.refresh()
        elif self.mode == "log" and self.total is not None:
            rate = (stats.done - self.initial) / max(stats.elapsed_s, 1e-9)
            left = max(self.total - stats.done, 0)
            eta = f"ETA {left / rate:.0f} s" if rate > 0 else "ETA unknown"
            log.info(
                "done %d/%d (pages %d, failed %d) | frontier %d | in flight %d | %s%.1f URLs/s | %s | memory %.0f MiB",
                stats.done,
                self.total,
                stats.pages,
                stats.failed,
                stats.frontier,
                stats.in_flight,
                _sites(stats),
                rate,
                eta,
                memory,
            )
        elif self.mode == "log":
            rate = (stats.done - self.initial) / max(stats.elapsed_s, 1e-9)
            log.info(
                "done %d (pages %d, failed %d) | frontier %d | in flight %d | %s%.1f URLs/s | memory %.0f MiB",
                stats.done,
                stats.pages,
                stats.failed,
                stats.frontier,
                stats.in_flight,
                _sites(stats),
                rate,
                memory,
            )

    def close(self) -> None:
        """Finish the bar (leaves its last state on the terminal)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _sites(stats: ProgressStats) -> str:
    """``sites D/K | `` (origins done of those known) when the crawl has several."""
    return f"sites {stats.sites_done}/{stats.sites} | " if stats.sites > 1 else ""


def summary_table(summary: dict) -> str:
    """The main counts of a ``summary.json`` dict as an aligned text table."""
    rows = [
        ("pages", summary["pages"]),
        ("non-HTML", summary["non_html"]),
        ("redirects", summary["redirects"]),
        ("duplicates", summary.get("duplicates", 0)),
        ("near duplicates", summary.get("near_duplicates", 0)),
        ("failed", summary["failed"]),
        ("skipped", summary["skipped"]),
        ("claimed", summary["claimed"]),
        ("reconciled", summary["reconciled"]),
        ("sites", summary.get("sites", "-")),
        ("sites done", summary.get("sites_done", "-")),
        ("wall s", summary["wall_s"]),
        ("pages/s", summary["pages_per_s"]),
        ("peak memory MiB", round(summary["peak_rss_bytes"] / 2**20)),
        ("stopped", summary["stopped"] or "-"),
    ]
    rows += [(f"failed: {reason}", n) for reason, n in summary["failed_by_reason"].items()]
    rows += [(f"skipped: {reason}", n) for reason, n in summary["skipped_by_reason"].items()]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)
