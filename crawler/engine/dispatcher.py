r"""The dispatcher: the parent loop that owns the frontier and feeds the fetchers.

Process topology::

                     +-------------------------------------------+
    seeds ---------->|  dispatcher (this process)                |
                     |  scheduler: frontier + politeness heap    |
                     |  discovery: robots.txt, sitemaps          |
                     |  retry queue, limits, state store         |
                     |  watchdog thread                          |
                     +-------------------------------------------+
                        |  task queues       ^  result pipes
                        |  (one per fetcher, |  (one per fetcher): Exchanged,
                        |  capacity gate)    |  TaskDone (+ the links each task won)
                        v                    |
               +------------+  +------------+  +------------+
               | fetcher 0  |  | fetcher 1  |  | fetcher N-1|   threads overlap I/O;
               | T threads  |  | T threads  |  | T threads  |   write pages-NN-*.jsonl,
               +------------+  +------------+  +------------+   edges-NN.tsv themselves
                       \            |            /
                        claim_many / settle (one round trip per page)
                                    |
                     +----------------------------+
                     |  manager: sharded visited  |
                     |  table (fingerprint->state)|
                     |  cookie store (--cookies)  |
                     +----------------------------+

Roles. The **scheduler** (:mod:`crawler.engine.scheduler`) picks the next task: the earliest
due origin from a heap keyed by each origin's next allowed time, robots.txt first where
it is unknown. The **pool** (:mod:`crawler.engine.pool`) owns the fetcher processes, their
queues and pipes, and the capacity gate every task passes (a put never blocks).
**Discovery** (:mod:`crawler.engine.discovery`) turns robots.txt results into rules and queues
sitemaps. The **retry queue** (:class:`crawler.web.retry.RetryQueue`) holds tasks until
their next attempt. This module wires them: it reads results, settles each URL's state,
pushes the links won, and decides when the crawl ends.

The loop never blocks on a fetcher: it waits on every result pipe at once with a timeout
(the sooner of a one-second liveness check and the next time an origin or a retry is
due, or only the liveness check while every fetcher is full), reads every message
already waiting (a busy turn handles tens, and writes their states in one statement),
and it puts tasks only where the gate has room. Each pipe has one writer, so a fetcher's death shows as an
EOF. A dead fetcher is replaced and its tasks go back to the frontier; a dead manager
stops the crawl (the state on disk lets the next run resume). The crawl ends when
nothing is in flight, no retry waits and no origin has work that may be dispatched (the
frontier is empty, or what is left is over a limit: the page limit, a site's limit).
Then one STOP per fetcher thread, a join with a deadline, then SIGKILL. What a stop
leaves in the frontier is marked skipped in the visited table as it is drained, and stays
in the state store, which lists it at the end and hands it to a resume.

Fetchers read tasks, fetch and convert, write their own output, and claim the links they
discover in the visited table, so de-duplication runs in the fetchers, in parallel. They
send back only the links they won, which the dispatcher pushes on the frontier.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import logging
import os
import random
import time
from collections.abc import Iterable, Iterator
from multiprocessing.context import BaseContext
from typing import TYPE_CHECKING, Any

from crawler.config import CrawlConfig
from crawler.engine.clusterfeed import IDLE_POLL_S, ClusterFeed
from crawler.engine.cookiestore import CookieStoreProxy
from crawler.engine.discovery import Discovery
from crawler.engine.frontier import Frontier, MemoryFrontier
from crawler.engine.messages import (
    DEFERRED,
    FAILED,
    KIND_FAIL,
    KIND_PAGE,
    KIND_ROBOTS,
    KIND_ROBOTS_REDIRECT,
    KIND_SITEMAP,
    LEASE_LOST,
    MAX_CRASHES,
    PAGE,
    PAGE_TIMEOUT,
    REDIRECT,
    RETRY,
    ROBOTS,
    SITEMAP,
    Exchanged,
    FetchTask,
    TaskDone,
)
from crawler.engine.outcome import CrawlOutcome
from crawler.engine.politeness import Politeness
from crawler.engine.pool import FetcherPool
from crawler.engine.progress import Progress, ProgressStats
from crawler.engine.rediscrawl import RedisCrawl
from crawler.engine.scheduler import SITE_LIMIT, Scheduler
from crawler.engine.statestore import CONTENT_DUPLICATE, CONTENT_NEAR, StateStore, content_kind
from crawler.engine.statestore import FAILED as FAILED_STATE
from crawler.engine.statestore import FRONTIER as FRONTIER_STATE
from crawler.engine.statestore import IN_FLIGHT as IN_FLIGHT_STATE
from crawler.engine.statestore import SKIPPED as SKIPPED_STATE
from crawler.engine.statestore import VISITED as VISITED_STATE
from crawler.engine.stats import CrawlCounters, ProcessTreeMonitor
from crawler.engine.visited import Claims, LocalClaims, VisitedProxy
from crawler.engine.watchdog import Watchdog
from crawler.errors import CrawlerError, FetcherDied, ManagerDied
from crawler.output.writers import SKIP_LOG, LineWriter
from crawler.web.fetch import DEFAULT_USER_AGENT
from crawler.web.retry import RetryQueue, backoff_s
from crawler.web.robots import ROBOTS_MAX_REDIRECTS, RobotsRules
from crawler.web.traps import guard_reason
from crawler.web.urlnorm import origin_of

if TYPE_CHECKING:
    from crawler.engine.resume import EarlierRuns

log = logging.getLogger("crawler")

#: Seconds a blocking wait on the result pipes lasts at most before checking that the
#: children are alive.
LIVENESS_CHECK_S = 1.0
#: Suffix of the skip reason of URLs that were in flight when the crawl aborted.
IN_FLIGHT_SUFFIX = " (in flight)"
#: More fetcher deaths than this in one crawl stop it (something kills every fetcher).
MAX_DEATHS = 20
#: Seconds between commits of the state store (a crash loses at most this much
#: bookkeeping; the records on disk fill the gap when the crawl is resumed).
COMMIT_INTERVAL_S = 0.25
#: With --redis: most seconds between two turns of the cluster feed while the local
#: frontier has work (each counts the local frontier per origin).
FEED_INTERVAL_S = 0.02
#: Seconds an abort waits for results already sent.
ABANDON_WAIT_S = 0.2


class Dispatcher:
    """Schedules one crawl over ``config.workers`` fetcher processes.

    Args:
        config: the validated :class:`crawler.config.CrawlConfig`.
        ctx: the multiprocessing context (start method) to create queues and processes.
        table: proxy of the manager-hosted visited table.
        manager: the manager hosting ``table`` (watched for liveness), or None.
        frontier: a frontier backend (default: :class:`crawler.engine.frontier.MemoryFrontier`).
        store: the crawl's :class:`crawler.engine.statestore.StateStore`, or None (nothing kept on
            disk: no resume). With a store, every URL's state goes to disk, committed
            every :data:`COMMIT_INTERVAL_S`, and the frontier should be a
            :class:`crawler.engine.diskfrontier.DiskFrontier` on it.
        expected_urls: URLs the crawl is expected to finish (from a map:
            :func:`crawler.output.map_report.expected_urls`), the progress display's total;
            None: ``config.max_pages`` (or no total).
        earlier: what the earlier runs of a resumed crawl finished
            (:attr:`crawler.engine.resume.ResumeReport.earlier`): the counters, the
            progress display and ``--max-pages-per-site`` start from it.
        cluster: with ``--redis``, this machine's :class:`crawler.engine.clusterfeed.ClusterFeed`
            (``table`` is then the :class:`crawler.engine.rediscrawl.RedisCrawl`): the seeds
            and the links won go to the shared frontier, the local frontier is fed from
            the shards this machine leases, a stop leaves what it read to the others, and
            the crawl ends when no URL is open on any machine.
        cookie_store: with ``--cookies``, the proxy of the manager-hosted
            :class:`crawler.engine.cookiestore.CookieStore` the fetchers share; else None.
    """

    def __init__(
        self,
        config: CrawlConfig,
        ctx: BaseContext,
        table: VisitedProxy | RedisCrawl,
        manager: Any = None,  # a VisitedManager: its _process is not in typeshed
        frontier: Frontier | None = None,
        store: StateStore | None = None,
        expected_urls: int | None = None,
        earlier: EarlierRuns | None = None,
        cluster: ClusterFeed | None = None,
        cookie_store: CookieStoreProxy | None = None,
    ) -> None:
        self.config = config
        self.ctx = ctx
        self.table = table
        self.claims: Claims = table if isinstance(table, RedisCrawl) else LocalClaims(table)
        self.cluster = cluster
        self.dropped = 0  # with --redis: tasks of shards no longer held here, left to their holder
        #: with --redis: every skip as it happens (a killed machine's are not lost to `merge`)
        self._skip_log = LineWriter(os.path.join(config.out_dir, SKIP_LOG)) if cluster is not None else None
        self._robots_status: dict[str, str] = {}  # without a store: origin -> its robots.txt outcome
        self._redis_failed = False
        self.store = store
        self.manager = manager
        self.frontier = frontier if frontier is not None else MemoryFrontier()
        self.counters = CrawlCounters()
        self.monitor = ProcessTreeMonitor()
        if manager is not None:
            self.monitor.set_role(manager._process.pid, "manager")
        self.pool = FetcherPool(ctx, config, table, self.monitor, cookie_store)
        self.politeness = Politeness(
            config.per_host,
            config.delay_s,
            config.max_crawl_delay_s,
            config.user_agent or DEFAULT_USER_AGENT,
            config.obey_robots,
        )
        self.scheduler = Scheduler(self.frontier, self.politeness, config.max_pages_per_site)
        self._rng = random.Random()
        self.discovery = Discovery(config, self.politeness, self.scheduler.push, self._rng)
        self.retries = RetryQueue()
        self.in_flight: dict[str, FetchTask] = {}  # page tasks given to a fetcher, not reported
        self._released: set[tuple[str, str]] = set()  # (kind, url): its exchange ended, origin freed
        self.crashes: dict[str, int] = {}  # url -> deaths, for URLs the store has no row for
        self.deaths = 0
        self.replaced = 0  # of the deaths: fetchers killed for --page-timeout
        self.seed_keys = frozenset(config.seed_keys)  # a test per result: O(1) for any number of seeds
        self.fetched: set[str] = set()  # every URL with a record
        self.redirected: set[str] = set()  # URLs recorded as redirects
        self.dispatched = 0  # page tasks dispatched and not undone: --max-pages counts these
        self.stop_reason: str | None = None
        #: Without a store only: the URLs skipped for good, and those left at a stop
        #: (resumable). With one, both are read back from it at the end
        #: (:meth:`skipped_rows`, :meth:`unfinished_rows`): never a list of them here.
        self.skipped: list[tuple[FetchTask, str]] = []
        self.unfinished: list[tuple[FetchTask, str]] = []
        self.abandoned: dict[str, tuple[FetchTask, str]] = {}  # url -> in flight at an abort, reason
        self.seed_skips: list[str] = []  # robots.txt reasons of the seeds it disallowed
        self.left_reason: str | None = None  # why the frontier was left (max-pages, a stop)
        self._listed: set[str] | None = None  # without a store: is_listed's set, built once
        self.seed_outcome: TaskDone | None = None
        self.retries_scheduled = 0
        #: robots.txt redirect target on another origin -> the origins whose rules it gives
        self._robots_waiting: dict[str, list[str]] = {}
        self._query_variants: dict[str, int] = {}  # URL without query -> URLs with one
        self._to_mark: list[FetchTask] = []  # skipped tasks not yet marked in the table
        self._cold = False
        self._unqueued = False
        self._next_commit = 0.0
        #: (url, state, reason) of the results handled this loop turn, written by _commit
        self._settled: list[tuple[str, str, str | None]] = []
        self._received: collections.deque = collections.deque()  # read, not yet handled
        self._next_liveness_check = 0.0
        self._next_feed = 0.0
        self._next_memory_check = 0.0
        self._memory_slowed = False
        self._gate_closed = False  # the last fill stopped at the gate or a limit
        self._started_at = time.monotonic()
        #: monotonic times the watchdog reads: the last result or dispatch, the last loop turn
        self.last_progress_at = self.loop_turned_at = self._started_at
        self.watchdog = Watchdog(self, config.stall_s)
        self.display = Progress(
            config.progress, config.max_pages if expected_urls is None else expected_urls, config.progress_interval_s
        )
        self._next_progress = self._started_at + self.display.interval_s
        if earlier is not None:
            self.counters.restore(earlier.visited_by_outcome, earlier.failed_by_reason)
            self.display.start_at(self.counters.done)
            self.scheduler.per_site.update(earlier.pages_per_origin)
            # --max-pages counts what the earlier runs fetched, as --max-pages-per-site does
            self.dispatched = self.counters.done

    @property
    def robots_fetches(self) -> int:
        return self.discovery.robots_fetches

    @property
    def sitemaps_read(self) -> int:
        return self.discovery.sitemaps_read

    # -- lifecycle -----------------------------------------------------------------
    def run(self) -> None:
        """Crawl until nothing is in flight and no origin has work that may be
        dispatched, or a stop.

        Raises:
            ManagerDied: the manager died; FetcherDied: more than :data:`MAX_DEATHS`
                fetchers died. The crawl was stopped at once, and every URL not fetched
                is listed in :attr:`skipped`.
            KeyboardInterrupt: a second Ctrl-C (cold stop).
        """
        if not self.pool.processes:
            self.start()
        self.watchdog.start()
        try:
            keys = self.config.seed_keys
            seeds = [
                FetchTask(key, 0, request_url=None if seed == key else seed)
                for seed, key in zip(self.config.seeds, keys)
            ]
            for task, won in zip(seeds, self.claims.claim_tasks(seeds)):
                if won and self.cluster is None:  # with --redis, the shared frontier has it
                    self.scheduler.push(task)
            self._loop()
            self._check_children()  # a manager that died near the end must not pass unseen
            self.monitor.sample()  # CPU and memory of every child before they exit
            self._skip_frontier(self.stop_reason or "max-pages")
        except BaseException as exc:
            self._cold = True  # an error or a second Ctrl-C: do not wait for fetches
            # Redis itself failed (past its client's retries): leaving would wait them out again
            self._redis_failed = type(exc).__module__.split(".")[0] == "redis"
            self._abandon(f"aborted: {exc}" if isinstance(exc, CrawlerError) else "aborted")
            raise
        finally:
            self.watchdog.stop()
            self._leave_cluster()
            self._commit(time.monotonic(), force=True)
            if self.display.mode == "bar":
                self._next_progress = 0.0  # the bar's last state: the final counts
                self._progress()
            self.display.close()
            self.pool.shutdown(self._cold)
            if self._skip_log is not None:
                self._skip_log.close()

    def _leave_cluster(self) -> None:
        """With ``--redis``: give up every lease, so what this machine read and did not
        settle goes to the other machines (or to the next one started) at once."""
        if self.cluster is None or self._redis_failed:
            return
        try:
            if self._cold or self.stop_reason is None:  # aborted, or the crawl is over
                self.cluster.leave()
            else:  # a warm stop with work left: an origin's delay holds across the handover
                self.cluster.leave(lambda: self._unready_shards(time.monotonic()))
        except Exception as exc:  # noqa: BLE001  # Redis gone: the leases expire on their own
            log.warning("could not release the shard leases (%s); they expire in %g s", exc, self.config.lease_s)

    def start(self) -> None:
        """Start the fetcher processes (:meth:`run` does it if not done yet)."""
        self.pool.start(self.config.workers)

    def request_stop(self, reason: str = "interrupted") -> None:
        """Warm stop: dispatch nothing more; the loop ends when in-flight work is done."""
        if self.stop_reason is None:
            self.stop_reason = reason

    # -- the loop ------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            now = time.monotonic()
            if self.cluster is not None:
                self._feed(now)
            self._fill(now)
            if not self.pool.outstanding() and not self._waiting() and self._cluster_done():
                return
            messages, dead = self.pool.receive(self._timeout(now))
            self._received.extend(messages)
            while self._received:  # what an error here leaves, _abandon still takes in
                self._handle(self._received[0])
                self._received.popleft()
            for worker_id in dead:
                if worker_id in self.pool.processes:  # not already replaced by _check_children
                    self._fetcher_died(worker_id)
            now = time.monotonic()
            if messages:
                self.last_progress_at = now
            if now >= self._next_liveness_check:
                self._next_liveness_check = now + LIVENESS_CHECK_S
                self.pool.kill_hung(now)
                self._check_children()
            if self.stop_reason is not None and not self._unqueued:
                self._unqueue()
            self._commit(now)
            self._progress()
            self.loop_turned_at = now

    def _feed(self, now: float) -> None:
        """With ``--redis``: the cluster feed's turn (leases, reads) onto the local frontier,
        at most every :data:`FEED_INTERVAL_S` while the local frontier has work."""
        assert self.cluster is not None  # called with --redis only
        assert isinstance(self.frontier, MemoryFrontier)  # what crawler.cluster gives with --redis
        if now < self._next_feed and len(self.frontier):
            return
        self._next_feed = now + FEED_INTERVAL_S
        waiting = self.frontier.waiting_by_origin()
        in_flight = [url for _kind, url in self.pool.owner]  # robots.txt and sitemaps too
        idle = not in_flight and not waiting and not self.retries
        stopping = self.stop_reason is not None
        tasks = self.cluster.tick(now, waiting, in_flight, lambda: self._unready_shards(now), idle, stopping)
        self._queue_discovered(tasks)

    def _unready_shards(self, now: float) -> set[int]:
        """With ``--redis``: the frontier shards of the origins that may not take a request
        at ``now`` (a delay, Crawl-delay or Retry-After running), which this machine must
        not hand over yet. One pass over the origins known here."""
        assert self.cluster is not None  # called with --redis only
        shard_of = self.cluster.crawl.origin_shard
        return {shard_of(origin) for origin, host in self.politeness.hosts.items() if host.next_request_at > now}

    def _drop(self, task: FetchTask) -> None:
        """With ``--redis``: leave ``task``, which this machine no longer owns, to the
        holder of its shard (its entry is pending in Redis, where the holder takes it
        over). If the shard itself is gone, so is every task of its origin waiting here
        (one robots.txt task would otherwise come back for ever)."""
        assert self.cluster is not None  # called with --redis only
        origin = origin_of(task.url)
        dropped = [task]
        if not self.cluster.holds(origin):
            redirects: list[FetchTask] = []  # robots.txt redirect targets fetched here for origins held here
            while self.frontier.has_waiting(origin):
                waiting = self.frontier.pop(origin)
                (redirects if waiting.kind == KIND_ROBOTS_REDIRECT else dropped).append(waiting)
            for waiting in redirects:
                self.frontier.push(waiting)
            if redirects and task.kind == KIND_ROBOTS:
                # the origin's own rules do not apply to a robots.txt (RFC 9309 2.2.2), and
                # its pages are another machine's: the target is fetched without them
                self.politeness.set_robots(origin, RobotsRules.allow_all())
        self.dropped += sum(t.kind in (KIND_PAGE, KIND_FAIL) for t in dropped)
        self.scheduler.refresh(origin)  # next() took the origin out of the heap

    def _cluster_done(self) -> bool:
        """Without ``--redis``, True; with it, True once no URL is open on any machine,
        or this machine was told to stop."""
        return self.cluster is None or self.stop_reason is not None or self.cluster.finished()

    def _timeout(self, now: float) -> float:
        """How long to wait for results: until the next retry or origin is due (unless
        the last fill stopped at the capacity gate or a limit: then a result is what
        changes things), at most :data:`LIVENESS_CHECK_S`."""
        wake = self.retries.next_due()
        if self.cluster is not None:  # new work comes from Redis, not from a result
            wake = now + IDLE_POLL_S if wake is None else min(wake, now + IDLE_POLL_S)
        if not self._gate_closed:
            at = self.scheduler.wake_at()
            if at is not None:
                wake = at if wake is None else min(wake, at)
        if wake is None:
            return LIVENESS_CHECK_S
        return max(0.0, min(LIVENESS_CHECK_S, wake - now))

    def _may_dispatch(self) -> bool:
        if self.stop_reason is not None:
            return False
        limit = self.config.max_pages
        return limit is None or self.dispatched < limit

    def _waiting(self) -> bool:
        """Work that time alone will make dispatchable (a retry, an origin's delay)."""
        if self.stop_reason is not None:
            return False
        return bool(self.retries) or (self._may_dispatch() and self.scheduler.schedulable())

    def work_waiting(self) -> bool:
        """Tasks in flight, or due now and not dispatched: the watchdog's test. Waiting for
        a time (a Retry-After, a Crawl-delay) is not a stall. Read from the watchdog's
        thread: it only reads."""
        if self.pool.outstanding():
            return True
        now = time.monotonic()
        return any(at is not None and at <= now for at in (self.retries.next_due(), self.scheduler.peek_wake()))

    def _fill(self, now: float) -> None:
        """Hand out every task that is due, while the capacity gate has room."""
        for task in self.retries.pop_due(now):
            self.scheduler.push(task)
        limit = 1 if self._over_memory(now) else None  # one task at a time until memory comes down
        self._gate_closed = True
        while self._may_dispatch() and self.pool.has_room():
            if limit is not None and self.pool.outstanding() >= limit:
                break
            task = self.scheduler.next(now)
            self._take_disallowed()
            if task is None:
                self._gate_closed = False  # nothing due: the next origin's time matters
                break
            if self.cluster is not None and task.kind != KIND_ROBOTS_REDIRECT:  # one fetch for origins held here
                if not self.cluster.owns(task):  # its shard went to another machine
                    self._drop(task)
                    continue
                if task.kind == KIND_ROBOTS and self._robots_from_cluster(task.url, now):
                    continue
                if task.ticket is None:  # robots.txt, a sitemap: the fetcher checks the lease too
                    task = dataclasses.replace(task, ticket=self.cluster.ticket_of(task.url))
            if not self.pool.put(task, now):
                self._put_back(task, now)
                break
            self.scheduler.dispatched(task, now)
            self.last_progress_at = now
            if task.kind in (KIND_PAGE, KIND_FAIL):
                self.in_flight[task.url] = task
                self.dispatched += 1
        self._take_disallowed()
        self._flush_skips()

    def _put_back(self, task: FetchTask, now: float) -> None:
        """A task the gate refused after the scheduler gave it out: back where it was."""
        if task.kind == KIND_ROBOTS:
            self.scheduler.refresh(task.url)
        else:
            self.scheduler.push(task)

    def _take_disallowed(self) -> None:
        """Skip the tasks the scheduler found disallowed by robots.txt."""
        for task, reason in self.scheduler.skipped:
            if task.kind in (KIND_PAGE, KIND_FAIL):
                self._skip(task, reason)
            else:
                log.info("sitemap %s: disallowed by robots.txt", task.url)
        self.scheduler.skipped.clear()

    def _over_memory(self, now: float) -> bool:
        """True while the whole process tree uses more than ``--max-memory`` (sampled
        at most once a second): the dispatcher then slows down to one task in flight."""
        limit = self.config.max_memory_bytes
        if limit is None:
            return False
        if now >= self._next_memory_check:
            self._next_memory_check = now + 1.0
            over = self.monitor.sample() > limit
            if over and not self._memory_slowed:
                log.warning("memory of all processes is over --max-memory (%d MiB): slowing down", limit // 2**20)
            self._memory_slowed = over
        return self._memory_slowed

    # -- results -------------------------------------------------------------------
    def _handle(self, message: TaskDone | Exchanged, check: bool = True) -> None:
        """Count a finished task and push the links it won; ``check`` the children if
        the visited table failed under it. A robots.txt result sets its origin's rules;
        a retry goes back to wait its turn; an :class:`Exchanged` frees the origin."""
        now = time.monotonic()
        if isinstance(message, Exchanged):
            self._exchanged(message, now)
            return
        if message.outcome == ROBOTS:
            if (KIND_ROBOTS_REDIRECT, message.url) in self.pool.owner:  # a redirect's target
                task = self.pool.release(KIND_ROBOTS_REDIRECT, message.url)
                assert task is not None  # in pool.owner: checked above
                self._finished(KIND_ROBOTS_REDIRECT, message.url, now, message)
                for origin in self._robots_waiting.pop(message.url, []):
                    self._robots_answer(origin, message, task.depth, now)
                return
            self.pool.release(KIND_ROBOTS, message.url)
            self._robots_answer(message.url, message, 0, now)  # first: a Crawl-delay spaces the next request
            self._finished(KIND_ROBOTS, message.url, now, message)
            return
        if message.outcome == SITEMAP:
            task = self.pool.release(KIND_SITEMAP, message.url)
            self._finished(KIND_SITEMAP, message.url, now, message)
            self.discovery.sitemap_done(message, task)
            if self.cluster is None:  # with --redis, the shared frontier has them
                self._queue_discovered(message.discovered)
            return
        kind = KIND_FAIL if (KIND_FAIL, message.url) in self.pool.owner else KIND_PAGE
        self.pool.release(kind, message.url)
        task = self.in_flight.pop(message.url, None)
        if message.outcome == RETRY:
            self._schedule_retry(task, message, now)
            return
        self._finished(kind, message.url, now, message)
        if self.store is None:  # with a store, these are read back from it at the end
            self.fetched.add(message.url)
            if message.outcome == REDIRECT:
                self.redirected.add(message.url)
        else:
            failed = message.outcome == FAILED
            self._settled.append(
                (message.url, FAILED_STATE if failed else VISITED_STATE, message.error if failed else message.outcome)
            )
            if message.content is not None:  # a resume registers it again
                self.store.add_content(
                    message.url, *message.content, content_kind(message.duplicate, message.near_duplicate)
                )
        self.counters.add(message)
        if message.url in self.seed_keys and self.seed_outcome is None:
            self.seed_outcome = message
        if self.cluster is None:  # with --redis, the shared frontier has them
            self._queue_discovered(message.discovered)
        if message.table_failed and check:
            self._check_children()

    def _robots_from_cluster(self, origin: str, now: float) -> bool:
        """With ``--redis``: apply ``origin``'s robots.txt answer another machine (or this
        one, earlier) fetched; False if there is none yet."""
        assert self.cluster is not None  # called with --redis only
        stored = self.cluster.crawl.robots_of(origin)
        if stored is None:
            return False
        status, body, error = stored
        answer = TaskDone(-1, origin, ROBOTS, status, error, robots_body=body)
        self._robots_status[origin] = self.discovery.robots_done(answer, now, fetched=False).status_line()
        self.scheduler.refresh(origin)
        return True

    def _robots_answer(self, origin: str, message: TaskDone, hops: int, now: float) -> None:
        """The robots.txt answer for ``origin`` after ``hops`` redirects to other origins:
        another such redirect is fetched as a task of the target's origin (one task for
        every origin waiting on the same target), at most ROBOTS_MAX_REDIRECTS of them;
        else the origin's rules are set."""
        if message.redirect_to is not None and hops < ROBOTS_MAX_REDIRECTS:
            waiting = self._robots_waiting.setdefault(message.redirect_to, [])
            waiting.append(origin)
            if len(waiting) == 1:
                self.scheduler.push(FetchTask(message.redirect_to, hops + 1, origin, kind=KIND_ROBOTS_REDIRECT))
            return
        answer = dataclasses.replace(message, url=origin, redirect_to=None)  # a 3xx past the limit: unavailable
        rules = self.discovery.robots_done(answer, now)
        if self.store is not None:  # this attempt's outcome, kept for sites.tsv after a resume
            self.store.set_robots_status(origin, rules.status_line())
        else:
            self._robots_status[origin] = rules.status_line()
        if self.cluster is not None and answer.error != LEASE_LOST and self.politeness.host(origin).robots is not None:
            self.cluster.crawl.store_robots(origin, answer.status, answer.robots_body, answer.error)
        self.scheduler.refresh(origin)

    def _exchanged(self, message: Exchanged, now: float) -> None:
        """A page's exchange ended: its origin may take its next request once the delay
        has run from the end of this exchange (when the fetcher read the body, not when
        this message arrived: the gap the server sees is the delay, not the delay plus
        the message's trip and its wait here)."""
        key = (KIND_PAGE, message.url)
        self.pool.exchanged(message.url, now)
        if key in self.pool.owner and key not in self._released:
            self._released.add(key)
            origin = origin_of(message.url)
            ended = now if message.ended_at is None else min(now, message.ended_at)
            self.politeness.finished(origin, ended, None, message.latency_s, message.status)
            self.scheduler.refresh(origin)

    def _finished(
        self, kind: str, url: str, now: float, message: TaskDone | None = None, pause_s: float | None = None
    ) -> None:
        """The request of a task is over: free its origin (unless its Exchanged did),
        with the measured latency and status for the adaptive delay."""
        if (kind, url) in self._released:
            self._released.discard((kind, url))
            return
        origin = origin_of(url)
        if message is None:
            self.politeness.finished(origin, now, pause_s)
        else:
            self.politeness.finished(origin, now, pause_s, message.latency_s, message.status)
        self.scheduler.refresh(origin)

    def _commit(self, now: float, force: bool = False) -> None:
        """Write the turn's settled URLs; commit the store's pending writes, at most every
        :data:`COMMIT_INTERVAL_S`."""
        if self._settled:
            self.store.set_states(self._settled)  # type: ignore[union-attr]  # filled with a store only
            self._settled = []
        if self.store is not None and (force or now >= self._next_commit):
            self.store.commit()
            self._next_commit = now + COMMIT_INTERVAL_S

    def _queue_discovered(self, tasks: Iterable[FetchTask]) -> None:
        """Push the URLs a task won on the frontier, or skip them (a trap guard)."""
        for task in tasks:
            reason = self._admit(task)
            if reason is None:
                self.scheduler.push(task)
            else:
                self._skip(task, reason, pushed=False)

    def _admit(self, task: FetchTask) -> str | None:
        """Why a discovered URL is skipped (a trap guard), or ``None`` to queue it."""
        config = self.config
        guard = guard_reason(task.url, config.max_url_length, config.max_path_repeats, config.max_path_segments)
        if guard is not None:
            return guard
        cap = self.config.max_query_variants
        if cap is not None and "?" in task.url:
            path = task.url.partition("?")[0]
            count = self._query_variants.get(path, 0)
            if count >= cap:
                return "query variants"
            self._query_variants[path] = count + 1
        return None

    def _schedule_retry(self, task: FetchTask | None, message: TaskDone, now: float) -> None:
        """Hold ``task`` until its next attempt: after the server's Retry-After (which
        also pauses the origin on a 429 or 503) or an exponential backoff."""
        if task is None:
            return
        pause = message.retry_after_s if message.status in (429, 503) else None
        self._finished(task.kind, task.url, now, message, pause)
        wait = message.retry_after_s
        if wait is None:
            wait = backoff_s(task.attempt, self.config.retry_base_s, self.config.retry_cap_s, self._rng)
        # sent back unrequested, or a redirect hop unrequested (the lease lost): not an attempt
        deferred = message.error in (DEFERRED, LEASE_LOST)
        retry = task if deferred else dataclasses.replace(task, attempt=task.attempt + 1)
        self.retries.push(retry, now + wait)
        if self.store is not None and retry.kind == KIND_PAGE:
            self.store.update_task(retry, IN_FLIGHT_STATE)  # its attempt survives a crash
        # the same URL again, not another one for the limits: while it waits, its place
        # may go to another URL, and if a limit is reached meanwhile it is skipped
        self.dispatched -= 1
        self.scheduler.undone(task)
        self.retries_scheduled += 0 if deferred else 1
        log.info("%s: %s; attempt %d in %.1f s", task.url, message.error, retry.attempt + 1, wait)

    # -- skips -----------------------------------------------------------------------
    def _skip(self, task: FetchTask, reason: str, pushed: bool = True) -> None:
        """A claimed URL that will not be fetched (robots.txt, a trap guard): listed
        now, marked in the table in batches (:meth:`_flush_skips`), and in the store
        (``pushed``: it has a row already)."""
        self._to_mark.append(task)
        if task.url in self.seed_keys and reason.startswith("robots.txt"):
            self.seed_skips.append(reason)
        if self._skip_log is not None:
            self._skip_log.write_lines((f"{task.url}\t{task.depth}\t{task.parent or ''}\t{reason}",))
        if self.store is None:
            self.skipped.append((task, reason))
        else:
            if pushed:
                self.store.set_state([task.url], SKIPPED_STATE, reason)
            else:
                self.store.add([task], SKIPPED_STATE, reason)

    def _flush_skips(self) -> None:
        if self._redis_failed:  # nothing to mark them in: another holder fetches them
            self._to_mark.clear()
            return
        while self._to_mark:
            batch, self._to_mark = self._to_mark[:1000], self._to_mark[1000:]
            self.claims.mark_skipped(batch)

    # -- children ------------------------------------------------------------------
    def _check_children(self) -> None:
        """Raise ManagerDied if the manager died; replace a fetcher that died
        (:meth:`_fetcher_died`)."""
        if self.manager is not None and not self.manager._process.is_alive():
            raise ManagerDied("the visited-table manager process died")
        for worker_id in self.pool.dead():
            self._fetcher_died(worker_id)

    def _fetcher_died(self, worker_id: int) -> None:
        """A fetcher died (killed, out of memory): the tasks it held go back to the
        frontier (a URL whose fetch already ended in the table is not fetched again), a
        URL held by :data:`MAX_CRASHES` dying fetchers is failed with the reason, a URL
        whose page work it was killed for (``--page-timeout``) is failed with
        :data:`PAGE_TIMEOUT`, and a new fetcher takes its place.

        Raises:
            FetcherDied: more than :data:`MAX_DEATHS` fetchers died in this crawl, not
                counting those killed for ``--page-timeout`` (replaced on purpose).
        """
        process, messages = self.pool.remove(worker_id)
        for message in messages:  # complete messages sent before it died come first
            self._handle(message)
        timed_out = self.pool.timed_out_of(worker_id)
        self.deaths += 1
        self.replaced += bool(timed_out)
        if self.deaths - self.replaced > MAX_DEATHS:
            raise FetcherDied(
                f"fetcher {worker_id} died (exit code {process.exitcode}); {self.deaths} fetchers died in this crawl"
            )
        now = time.monotonic()
        held = self.pool.held_by(worker_id)
        for task in held:
            self._undispatch(task, now)
            if task.kind == KIND_ROBOTS:
                continue
            if task.kind in (KIND_PAGE, KIND_FAIL):
                state = self.claims.state(task.url)
                if state in ("visited", "failed"):  # recorded; only its result was lost
                    self._lost_result(worker_id, task.url, state)
                    self.dispatched += 1  # it was fetched: it counts for the limits
                    self.scheduler.recount(task)
                    continue
                if task.url in timed_out:  # killed for it: failed, not fetched again
                    task = dataclasses.replace(task, kind=KIND_FAIL, error=PAGE_TIMEOUT)
                elif self._bump_crashes(task.url) >= MAX_CRASHES:
                    task = dataclasses.replace(task, kind=KIND_FAIL)
            self.scheduler.push(task)
        failing = sum(task.url in timed_out for task in held)
        log.warning(
            "fetcher %d died (exit code %s); %d task(s) it held go back to the frontier%s;"
            " a new fetcher takes its place",
            worker_id,
            process.exitcode,
            len(held),
            f" ({failing} to be failed: {PAGE_TIMEOUT})" if failing else "",
        )
        self.pool.start_one()

    def _bump_crashes(self, url: str) -> int:
        """Count one more fetcher death while ``url`` was held; returns the count. Kept in
        the state store (it survives a resume, so a URL that kills fetchers is not given
        fresh tries by every run); in memory only for a URL the store has no row for."""
        if self.store is not None:
            try:
                return self.store.bump_crashes(url)
            except KeyError:
                pass
        count = self.crashes[url] = self.crashes.get(url, 0) + 1
        return count

    def _undispatch(self, task: FetchTask, now: float) -> None:
        """Undo the dispatch of a task no fetcher will report (taken back from a queue,
        or held by a fetcher that died): the caller puts it back where it belongs; a
        robots.txt task is fetched again."""
        self.pool.release(task.kind, task.url)
        self._finished(task.kind, task.url, now)  # nothing measured: the delay stays
        origin = origin_of(task.url)
        if task.kind == KIND_ROBOTS:
            self.discovery.robots_lost(origin, now)
        elif task.kind in (KIND_PAGE, KIND_FAIL):
            self.in_flight.pop(task.url, None)
            self.dispatched -= 1
            self.scheduler.undone(task)
        self.scheduler.refresh(origin)

    def _lost_result(self, worker_id: int, url: str, state: str) -> None:
        """Count a URL a dead fetcher had recorded (``state`` in the table) without
        reporting it."""
        visited = state == "visited"
        self.fetched.add(url)
        if self.store is not None:
            self.store.set_state(
                [url], VISITED_STATE if visited else FAILED_STATE, "page" if visited else "result lost"
            )
        self.counters.add(
            TaskDone(worker_id, url, PAGE if visited else FAILED, error=None if visited else "result lost")
        )

    # -- stopping ------------------------------------------------------------------
    def _unqueue(self) -> None:
        """Warm stop: take back the tasks still waiting in the queues (no fetcher started
        them), so only fetches already under way are finished."""
        self._unqueued = True
        for task in self.pool.take_back():
            self._undispatch(task, time.monotonic())
            if task.kind != KIND_ROBOTS:
                self.scheduler.push(task)

    def _abandon(self, reason: str) -> None:
        """After an abort: take in the results already sent, then list the frontier and
        the URLs still in flight as skipped (the in-flight ones stay in flight in the
        table: their fetch may have happened)."""
        if self._received:  # read before the error: the one that raised is not tried again
            self._received.popleft()
        while self._received:
            self._handle(self._received.popleft(), check=False)
        while self.in_flight and self.pool.result_pipes:
            messages, _dead = self.pool.receive(ABANDON_WAIT_S)  # a dead one is not replaced
            if not messages:
                break
            for message in messages:
                self._handle(message, check=False)
        self.abandoned = {url: (task, reason + IN_FLIGHT_SUFFIX) for url, task in self.in_flight.items()}
        if self.store is None:
            self.unfinished.extend(self.abandoned.values())
        self.in_flight.clear()
        try:
            self._skip_frontier(reason)
        except Exception:  # the manager may be what died; the URLs are listed anyway
            log.warning("could not mark the frontier skipped in the visited table")

    def _skip_frontier(self, reason: str) -> None:
        """Mark what is left in the frontier skipped in the visited table, 1,000 URLs a
        call, streaming (a limit, a stop or an abort ended the crawl): :meth:`unfinished_rows`
        lists them, with ``reason`` or :data:`crawler.engine.scheduler.SITE_LIMIT` for an origin at
        its limit. A URL robots.txt disallows is skipped for good instead.

        Raises what the visited table raises, once the frontier is drained (its rows are
        listed all the same).
        """
        self.left_reason = reason
        for task in self.retries.drain():
            self.frontier.push(task)
        batch: list[FetchTask] = []
        error: Exception | None = None
        for task in self.frontier.drain():
            if task.kind not in (KIND_PAGE, KIND_FAIL):  # not claimed
                continue
            if self.cluster is not None and not self.cluster.owns(task):
                continue  # another machine holds it now
            disallowed = self._disallowed_reason(task)
            if disallowed is not None:  # final, as any robots.txt skip: a resume skips it too
                self._skip(task, disallowed)
                continue
            if self.cluster is not None:  # stays pending in Redis: the next holder fetches it
                continue
            if self.store is None:
                self.unfinished.append((task, self.unfinished_reason(task.url)))
            batch.append(task)
            if len(batch) == 1000 and error is None:
                error = self._mark_skipped(batch)
                batch = []
        if error is None:
            self._flush_skips()
            error = self._mark_skipped(batch)
        if error is not None:
            raise error

    def _mark_skipped(self, tasks: list[FetchTask]) -> Exception | None:
        """Mark ``tasks`` skipped in the table; the error raised, if any."""
        try:
            if tasks and not self._redis_failed:
                self.claims.mark_skipped(tasks)
        except Exception as exc:  # noqa: BLE001 (raised by _skip_frontier once drained)
            return exc
        return None

    def unfinished_reason(self, url: str) -> str:
        """Why ``url``, left by this run, is listed: in flight at an abort, its origin at
        --max-pages-per-site, or :attr:`left_reason`."""
        held = self.abandoned.get(url)
        if held is not None:
            return held[1]
        if self.scheduler.site_full(origin_of(url)):
            return SITE_LIMIT
        return self.left_reason or "max-pages"

    def outcome(self) -> CrawlOutcome:
        """What this run ended with (after :meth:`run`, also after it raised): the input of
        :func:`crawler.api.finish_outputs`. The dispatcher is its :class:`Listing`."""
        return CrawlOutcome(
            counters=self.counters,
            listing=self,
            stop_reason=self.stop_reason,
            abandoned=tuple(self.abandoned.values()),
            seed_outcome=self.seed_outcome,
            seed_skips=tuple(self.seed_skips),
            fetcher_deaths=self.deaths,
            robots_fetches=self.robots_fetches,
            sitemaps_read=self.sitemaps_read,
            retries=self.retries_scheduled,
            stalls=self.watchdog.stalls,
            cpu_s=self.monitor.cpu_s,
            peak_rss_bytes=self.monitor.peak_rss_bytes,
            processes=self.monitor.by_role(),
            start_method=self.ctx.get_start_method(),
        )

    def fetched_urls(self) -> set[str]:
        """Every URL with a record (visited or failed): every run's with a store."""
        if self.store is None:
            return set(self.fetched)
        return set(self.store.urls_in(VISITED_STATE, FAILED_STATE))

    def redirected_urls(self) -> set[str]:
        """Every URL recorded as a redirect: every run's with a store."""
        if self.store is None:
            return set(self.redirected)
        return set(self.store.urls_with_reason(VISITED_STATE, "redirect"))

    def duplicate_counts(self) -> tuple[int, int]:
        """``(exact, near)`` duplicate pages: every run's with a store."""
        if self.store is None:
            return self.counters.duplicates, self.counters.near_duplicates
        content = self.store.content_counts()
        return content[CONTENT_DUPLICATE], content[CONTENT_NEAR]

    def robots_statuses(self) -> dict[str, str]:
        """Each origin's last robots.txt outcome (kept in the store, also over resumes;
        without one, this run's)."""
        return self.store.robots_statuses() if self.store is not None else dict(self._robots_status)

    def site_count(self) -> int | None:
        """Origins with a claimed URL over every run (None without a store)."""
        return self.store.origin_count() if self.store is not None else None

    def is_listed(self, url: str) -> bool:
        """True if ``url`` has a record or is listed as skipped or left (after
        :meth:`run`; with a store, one indexed lookup: every claimed URL has a row)."""
        if url in self.fetched:
            return True
        if self.store is not None:
            return self.store.state_of(url) is not None
        if self._listed is None:
            self._listed = {task.url for task, _ in itertools.chain(self.skipped, self.unfinished)}
        return url in self._listed

    def skipped_rows(self) -> Iterator[tuple[str, int, str | None, str]]:
        """``(url, depth, parent, reason)`` of every URL skipped for good: every run's with
        a store, streamed."""
        if self.store is None:
            return ((t.url, t.depth, t.parent, r) for t, r in self.skipped)
        return self.store.skipped_rows()

    def unfinished_rows(self) -> Iterator[tuple[str, int, str | None, str]]:
        """``(url, depth, parent, reason)`` of every URL this run left (resumable: waiting,
        in flight at an abort), lowest depth first; with a store, streamed from it."""
        if self.store is None:
            return ((t.url, t.depth, t.parent, r) for t, r in self.unfinished)
        return (
            (t.url, t.depth, t.parent, self.unfinished_reason(t.url))
            for t in self.store.tasks_in(IN_FLIGHT_STATE, FRONTIER_STATE)
        )

    def _disallowed_reason(self, task: FetchTask) -> str | None:
        """robots.txt's reason if the origin's known robots.txt disallows ``task``."""
        origin = origin_of(task.url)
        host = self.politeness.hosts.get(origin)
        if host is not None and host.robots is not None and not self.politeness.allowed(origin, task.url):
            return host.robots.describe()
        return None

    # -- reporting -----------------------------------------------------------------
    def sites(self) -> tuple[int, int]:
        """``(done, known)``: origins with a claimed URL, and those of them with nothing
        waiting, in flight or due for a retry."""
        waiting = set(self.frontier.origins())
        known = set(self.politeness.hosts) | waiting
        busy = waiting | {origin_of(url) for url in self.in_flight}
        busy |= {origin_of(task.url) for task in self.retries.tasks()}
        return len(known - busy), len(known)

    def describe(self) -> str:
        """What waits and why, what is in flight and what each fetcher holds: the
        watchdog's report of a stall."""
        now = time.monotonic()
        wake = self.scheduler.wake_at()
        held = self.pool.holdings(now)
        lines = [
            f"frontier {len(self.frontier)} tasks in {len(self.frontier.origins())} origins; "
            f"{len(self.scheduler)} origins schedulable, next due in "
            f"{'-' if wake is None else f'{wake - now:.1f} s'}; blocked: {self.scheduler.blocked_origins()}; "
            f"retries waiting {len(self.retries)}; in flight {self.pool.outstanding()} "
            f"(pages {len(self.in_flight)}); dispatched {self.dispatched}; stop {self.stop_reason}"
        ]
        for worker_id, tasks in sorted(held.items()):
            process = self.pool.processes.get(worker_id)
            shown = ", ".join(f"{kind} {url} ({age} s)" for kind, url, age in tasks[:5])
            lines.append(
                f"fetcher {worker_id} (pid {process.pid if process else '-'}): "
                f"load {self.pool.load.get(worker_id, 0)}/{self.pool.capacity}: {shown or 'idle'}"
                + (f" and {len(tasks) - 5} more" if len(tasks) > 5 else "")
            )
        return "\n".join(lines)

    def _progress(self) -> None:
        now = time.monotonic()
        if now < self._next_progress:
            return
        self._next_progress = now + self.display.interval_s
        rss = self.monitor.sample()
        c = self.counters
        done, known = self.sites()
        self.display.update(
            ProgressStats(
                c.done,
                c.outcomes["page"],
                c.failed,
                len(self.frontier),
                len(self.in_flight),
                rss,
                now - self._started_at,
                done,
                known,
            )
        )
