"""Counters of a crawl and psutil measurements of its whole process tree."""

from __future__ import annotations

import collections
import os

import psutil

from crawler.engine.messages import FAILED, NON_HTML, PAGE, REDIRECT, TaskDone


class ProcessTreeMonitor:
    """Samples resident memory and CPU time of this process and all its descendants
    (the manager and every fetcher).

    ``sample()`` returns the current total RSS in bytes and updates :attr:`peak_rss_bytes`.
    CPU seconds of processes that exited between samples are kept at their last reading.
    Processes named with :meth:`set_role` are also summed per role (:meth:`by_role`);
    the root is ``"dispatcher"``, an unnamed descendant ``"other"``.
    """

    def __init__(self, pid: int | None = None) -> None:
        self.root = psutil.Process(pid or os.getpid())
        self.peak_rss_bytes = 0
        self._cpu_s: dict[int, float] = {}
        self._peak_rss: dict[int, int] = {}
        self._roles: dict[int, str] = {self.root.pid: "dispatcher"}

    def set_role(self, pid: int | None, role: str) -> None:
        """Name the process ``pid`` (e.g. ``"manager"``, ``"fetcher"``) for :meth:`by_role`."""
        if pid is not None:
            self._roles[pid] = role

    def sample(self) -> int:
        """Return total RSS (bytes) of the process tree now; track peak and CPU."""
        total = 0
        for proc in [self.root, *self.root.children(recursive=True)]:
            try:
                with proc.oneshot():
                    rss = proc.memory_info().rss
                    times = proc.cpu_times()
                total += rss
                self._cpu_s[proc.pid] = times.user + times.system
                self._peak_rss[proc.pid] = max(self._peak_rss.get(proc.pid, 0), rss)
            except psutil.Error:  # exited between listing and reading
                continue
        self.peak_rss_bytes = max(self.peak_rss_bytes, total)
        return total

    @property
    def cpu_s(self) -> float:
        """User + system CPU seconds of every process seen, as of the last sample."""
        return sum(self._cpu_s.values())

    def by_role(self) -> dict[str, dict]:
        """Per role: ``processes`` (count), ``pids``, ``cpu_s`` (summed, last sample) and
        ``peak_rss_bytes`` (the largest single process of that role)."""
        roles: dict[str, dict] = {}
        for pid, cpu in sorted(self._cpu_s.items()):
            row = roles.setdefault(
                self._roles.get(pid, "other"), {"processes": 0, "pids": [], "cpu_s": 0.0, "peak_rss_bytes": 0}
            )
            row["processes"] += 1
            row["pids"].append(pid)
            row["cpu_s"] = round(row["cpu_s"] + cpu, 2)
            row["peak_rss_bytes"] = max(row["peak_rss_bytes"], self._peak_rss.get(pid, 0))
        return roles


class CrawlCounters:
    """What the dispatcher counts from :class:`crawler.engine.messages.TaskDone` messages."""

    def __init__(self) -> None:
        self.outcomes: collections.Counter[str] = collections.Counter()
        self.failed_by_reason: collections.Counter[str] = collections.Counter()
        self.body_bytes = 0
        #: the outcomes restored from earlier runs (:meth:`restore`), left out of rates
        self.earlier: collections.Counter[str] = collections.Counter()
        self.duplicates = 0
        self.near_duplicates = 0
        self.fallbacks = 0

    def add(self, done: TaskDone) -> None:
        """Count one finished task."""
        self.outcomes[done.outcome] += 1
        self.duplicates += done.duplicate
        self.near_duplicates += done.near_duplicate
        self.fallbacks += done.fallback
        self.body_bytes += done.body_bytes
        if done.outcome == FAILED:
            self.failed_by_reason[done.error or "unknown"] += 1

    def restore(self, visited_by_outcome: dict[str | None, int], failed_by_reason: dict[str | None, int]) -> None:
        """Start from what the earlier runs of a resumed crawl finished: visited URLs by
        outcome, failed ones by reason (:class:`crawler.engine.resume.EarlierRuns`;
        duplicates and body bytes of the earlier runs are not kept)."""
        for outcome, count in visited_by_outcome.items():
            self.outcomes[outcome or PAGE] += count
        for reason, count in failed_by_reason.items():
            self.outcomes[FAILED] += count
            self.failed_by_reason[reason or "unknown"] += count
        self.earlier = collections.Counter(self.outcomes)

    @property
    def done(self) -> int:
        """Tasks finished, whatever their outcome."""
        return sum(self.outcomes.values())

    @property
    def visited(self) -> int:
        """URLs that ended visited: pages, non-HTML files and redirects."""
        return self.outcomes[PAGE] + self.outcomes[NON_HTML] + self.outcomes[REDIRECT]

    @property
    def failed(self) -> int:
        """URLs that ended failed."""
        return self.outcomes[FAILED]
