r"""The dispatcher: the parent loop that owns the frontier and feeds the fetchers.

Process topology::

                     +----------------------------+
    seeds ---------->|  dispatcher (this process) |
                     |  frontier (per host, depth)|
                     |  robots.txt, politeness,   |
                     |  retries, limits, state    |
                     +----------------------------+
                        |  task queues       ^  result pipes
                        |  (one per fetcher, |  (one per fetcher):
                        |  backpressure)     |  TaskDone (+ the links
                        |                    |  each task won)
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
                     +----------------------------+

The dispatcher reads each fetcher's result pipe, blocking on all of them with a timeout
(the sooner of a liveness check and the next time a host or a retry is due). Each pipe
has one writer, so a fetcher's death shows as an EOF, never as half a message waited on
forever. Each fetcher has its own bounded task queue: a fetcher killed while waiting in
``get()`` keeps that queue's lock for ever, which with one shared queue would hang every
other fetcher; a private queue dies with its fetcher, and the dispatcher knows which
tasks it held. A dead fetcher is replaced and its tasks go back to the frontier; a dead
manager stops the crawl (the state on disk lets the next run resume). A fetcher is given
at most its queue bound plus its threads. The crawl ends when the frontier is empty,
nothing is in flight and no retry waits (or the page limit is reached and nothing is in
flight). Then one STOP per fetcher thread, a join with a deadline, then SIGKILL.

Fetchers read tasks, fetch and convert, write their own output, and claim the links they
discover in the visited table, so de-duplication runs in the fetchers, in parallel. They
send back only the links they won, which the dispatcher pushes on the frontier.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import logging
import multiprocessing.connection
import queue
import random
import time

from crawler.errors import CrawlerError, FetcherDied, ManagerDied
from crawler.fetch import DEFAULT_USER_AGENT
from crawler.frontier import MemoryFrontier
from crawler.config import MAX_SITEMAP_LEVELS, MAX_SITEMAPS
from crawler.messages import (
    DEFERRED, FAILED, KIND_FAIL, KIND_PAGE, KIND_ROBOTS, KIND_SITEMAP, MAX_CRASHES, PAGE, REDIRECT,
    RETRY, ROBOTS, SITEMAP, STOP, FetchTask, TaskDone)
from crawler.politeness import Politeness
from crawler.progress import Progress, ProgressStats
from crawler.retry import backoff_s
from crawler.robots import RobotsRules, origin_of
from crawler.sitemaps import sitemap_candidates
from crawler.state import FAILED as FAILED_STATE, IN_FLIGHT as IN_FLIGHT_STATE
from crawler.state import SKIPPED as SKIPPED_STATE, VISITED as VISITED_STATE
from crawler.state import content_kind
from crawler.stats import CrawlCounters, ProcessTreeMonitor
from crawler.traps import trap_reason
from crawler.worker import fetcher_main

log = logging.getLogger("crawler")

#: Seconds a blocking queue get waits before checking that the children are alive.
LIVENESS_CHECK_S = 1.0
#: Seconds the warm stop waits on the task queue while taking tasks back.
UNQUEUE_WAIT_S = 0.2
#: Suffix of the skip reason of URLs that were in flight when the crawl aborted.
IN_FLIGHT = " (in flight)"
#: Seconds given to the fetchers to exit after STOP before they are killed.
JOIN_TIMEOUT_S = 10.0
#: More fetcher deaths than this in one crawl stop it (something kills every fetcher).
MAX_DEATHS = 20
#: Seconds between commits of the state store (a crash loses at most this much
#: bookkeeping; the records on disk fill the gap when the crawl is resumed).
COMMIT_INTERVAL_S = 0.25


class Dispatcher:
    """Schedules one crawl over ``config.workers`` fetcher processes.

    Args:
        config: the validated :class:`crawler.config.CrawlConfig`.
        ctx: the multiprocessing context (start method) to create queues and processes.
        table: proxy of the manager-hosted visited table.
        manager: the manager hosting ``table`` (watched for liveness), or None.
        frontier: a frontier backend (default: :class:`crawler.frontier.MemoryFrontier`).
        store: the crawl's :class:`crawler.state.StateStore`, or None (nothing kept on
            disk: no resume). With a store, every URL's state goes to disk, committed
            every :data:`COMMIT_INTERVAL_S`, and the frontier should be a
            :class:`crawler.state.DiskFrontier` on it.
        expected_urls: URLs the crawl is expected to finish (from a map:
            :func:`crawler.map_report.expected_urls`), the progress display's total;
            None: ``config.max_pages`` (or no total).
    """

    def __init__(self, config, ctx, table, manager=None, frontier=None, store=None,
                 expected_urls: int | None = None) -> None:
        self.config = config
        self.ctx = ctx
        self.table = table
        self.store = store
        self._next_commit = 0.0
        self.manager = manager
        self.frontier = frontier if frontier is not None else MemoryFrontier()
        # One bounded task queue per fetcher (together the backpressure valve): a fetcher
        # killed while waiting in get() holds its queue's lock for ever, so a shared
        # queue would hang every other fetcher; a private one dies with its fetcher.
        self.task_queues: dict[int, object] = {}
        self._queue_bound = max(1, -(-config.task_queue_size // config.workers))
        self.owner: dict[tuple[str, str], tuple[int, FetchTask]] = {}  # (kind, url) -> holder
        self.load: dict[int, int] = {}  # fetcher id -> tasks given and not reported
        self.crashes: dict[str, int] = {}  # url -> deaths, for URLs the store has no row for
        self.deaths = 0
        self.seed_keys = config.seed_keys
        self.result_pipes: dict[int, object] = {}  # fetcher id -> read end of its pipe
        self.counters = CrawlCounters()
        self.monitor = ProcessTreeMonitor()
        if manager is not None:
            self.monitor.set_role(manager._process.pid, "manager")
        self.fetchers: dict[int, object] = {}
        self.in_flight: dict[str, FetchTask] = {}   # url -> task, put on the queue, not done
        self.fetched: set[str] = set()             # every URL with a record
        self.redirected: set[str] = set()          # URLs recorded as redirects
        self.dispatched = 0
        self.stop_reason: str | None = None
        self.skipped: list[tuple[FetchTask, str]] = []
        self.unfinished: list[tuple[FetchTask, str]] = []  # left at a stop: resumable
        self.seed_outcome: TaskDone | None = None
        self._cold = False
        self._unqueued = False
        self._next_liveness_check = 0.0
        self._next_worker_id = 0
        self._started_at = time.monotonic()
        self.display = Progress(config.progress,
                                config.max_pages if expected_urls is None else expected_urls,
                                config.progress_interval_s)
        self._next_progress = self._started_at + self.display.interval_s
        self.politeness = Politeness(config.per_host, config.delay_s, config.max_crawl_delay_s,
                                     config.user_agent or DEFAULT_USER_AGENT, config.obey_robots)
        self.robots_in_flight: dict[str, FetchTask] = {}  # origin -> its robots.txt task
        self.robots_fetches = 0
        self.sitemaps_in_flight: dict[str, FetchTask] = {}  # sitemap URL -> its task
        self.sitemaps_seen: set[str] = set()
        self.sitemaps_read = 0
        self._seed_origins = {origin_of(key) for key in config.seed_keys}
        self.retries_scheduled = 0
        self._retry_heap: list[tuple[float, int, FetchTask]] = []  # (due, seq, task)
        self._seq = itertools.count()
        self._query_variants: dict[str, int] = {}  # URL without query -> URLs with one
        self._to_mark: list[str] = []  # skipped URLs not yet marked in the table
        self._wake_at: float | None = None
        self._rr = 0  # round-robin position over the frontier's origins
        self._rng = random.Random()
        self._next_memory_check = 0.0
        self._memory_slowed = False

    # -- lifecycle -----------------------------------------------------------------
    def run(self) -> None:
        """Crawl until the frontier is empty and nothing is in flight, or a stop.

        Raises:
            ManagerDied: the manager died; FetcherDied: more than :data:`MAX_DEATHS`
                fetchers died. The crawl was stopped at once, and every URL not fetched
                is listed in :attr:`skipped`.
            KeyboardInterrupt: a second Ctrl-C (cold stop).
        """
        if not self.fetchers:
            self.start()
        try:
            keys = self.seed_keys
            for seed, key, won in zip(self.config.seeds, keys, self.table.claim_many(keys)):
                if won:
                    self.frontier.push(FetchTask(key, 0, request_url=None if seed == key else seed))
            self._loop()
            self._check_children()  # a manager that died near the end must not pass unseen
            self.monitor.sample()  # CPU and memory of every child before they exit
            self._skip_frontier(self.stop_reason or "max-pages")
        except BaseException as exc:
            self._cold = True  # an error or a second Ctrl-C: do not wait for fetches
            self._abandon(f"aborted: {exc}" if isinstance(exc, CrawlerError) else "aborted")
            raise
        finally:
            self._commit(time.monotonic(), force=True)
            if self.display.mode == "bar":
                self._next_progress = 0.0  # the bar's last state: the final counts
                self._progress()
            self.display.close()
            self._shutdown()

    def start(self) -> None:
        """Start the fetcher processes (:meth:`run` does it if not done yet)."""
        for _ in range(self.config.workers):
            self._start_fetcher()

    def request_stop(self, reason: str = "interrupted") -> None:
        """Warm stop: dispatch nothing more; the loop ends when in-flight work is done."""
        if self.stop_reason is None:
            self.stop_reason = reason

    def _start_fetcher(self) -> None:
        worker_id = self._next_worker_id
        self._next_worker_id += 1
        reader, writer = self.ctx.Pipe(duplex=False)
        tasks = self.ctx.Queue(self._queue_bound)
        process = self.ctx.Process(
            target=fetcher_main, name=f"crawler-fetcher-{worker_id}",
            args=(worker_id, self.config, tasks, writer, self.table),
            daemon=True)  # if this process dies, multiprocessing's exit hook ends them
        process.start()
        self.monitor.set_role(process.pid, "fetcher")
        writer.close()  # the fetcher holds the only write end: its death is an EOF here
        self.fetchers[worker_id] = process
        self.result_pipes[worker_id] = reader
        self.task_queues[worker_id] = tasks
        self.load[worker_id] = 0

    def _receive(self, timeout: float, strict: bool = True) -> list[TaskDone]:
        """The results ready within ``timeout`` seconds, from every fetcher's pipe.

        A pipe at EOF means its fetcher died (even mid-message: a partial message ends
        in EOF, never in a read that waits forever). ``strict``: the fetcher is replaced
        (:meth:`_fetcher_died`); otherwise the pipe is only dropped.
        """
        by_reader = {reader: worker_id for worker_id, reader in self.result_pipes.items()}
        messages = []
        for reader in multiprocessing.connection.wait(list(by_reader), timeout):
            try:
                messages.append(reader.recv())
            except (EOFError, OSError):
                worker_id = by_reader[reader]
                del self.result_pipes[worker_id]
                reader.close()
                if strict:
                    for message in messages:  # what it sent before dying counts first
                        self._handle(message)
                    messages = []
                    self._fetcher_died(worker_id)
        return messages

    def _shutdown(self) -> None:
        """Warm: one STOP per live fetcher thread, then join with a deadline. Cold, or
        past the deadline: SIGKILL (fetchers ignore SIGTERM, so that a SIGTERM sent to
        the whole process group reaches only the dispatcher's warm stop)."""
        live = [p for p in self.fetchers.values() if p.is_alive()]
        if not self._cold:
            for worker_id, process in self.fetchers.items():
                if not process.is_alive():
                    continue
                for _ in range(self.config.threads):
                    try:
                        self.task_queues[worker_id].put(STOP, timeout=JOIN_TIMEOUT_S)
                    except queue.Full:
                        break
            deadline = time.monotonic() + JOIN_TIMEOUT_S
            for process in live:
                process.join(max(0.0, deadline - time.monotonic()))
        for process in live:
            if process.is_alive():
                if not self._cold:
                    log.warning("fetcher %s did not stop; killing it", process.name)
                process.kill()
                process.join()
        for tasks in self.task_queues.values():
            tasks.close()
            tasks.cancel_join_thread()  # every reader is gone; never wait on the feeder
        for reader in self.result_pipes.values():
            reader.close()
        self.result_pipes.clear()

    # -- the loop ------------------------------------------------------------------
    def _may_dispatch(self) -> bool:
        if self.stop_reason is not None or not self.frontier:
            return False
        limit = self.config.max_pages
        return limit is None or self.dispatched < limit

    def _busy(self) -> int:
        """Tasks handed to the fetchers and not reported yet."""
        return len(self.in_flight) + len(self.robots_in_flight) + len(self.sitemaps_in_flight)

    def _waiting(self) -> bool:
        """Work that time alone will make dispatchable (a retry, a host's delay)."""
        if self.stop_reason is not None:
            return False
        return bool(self._retry_heap) or self._may_dispatch()

    def _wake(self, at: float) -> None:
        self._wake_at = at if self._wake_at is None else min(self._wake_at, at)

    def _fill(self) -> None:
        now = time.monotonic()
        self._wake_at = None
        while self._retry_heap and self._retry_heap[0][0] <= now:
            self.frontier.push(heapq.heappop(self._retry_heap)[2])
        if self._retry_heap:
            self._wake(self._retry_heap[0][0])
        capacity = self.config.task_queue_size + self.config.workers * self.config.threads
        if self._over_memory(now):
            capacity = min(capacity, 1)  # one task at a time until memory comes down
        while self._busy() < capacity and self._may_dispatch():
            if self._least_loaded() is None:
                break
            task = self._next_task(now)
            if task is None:
                break
            self._put(task)
            self.politeness.dispatched(origin_of(task.url), now)
            if task.kind == KIND_SITEMAP:
                self.sitemaps_in_flight[task.url] = task
                continue
            self.in_flight[task.url] = task
            self.dispatched += 1
        self._flush_skips()

    def _next_task(self, now: float) -> FetchTask | None:
        """The next task of an origin that may take a request now (round robin over
        origins), fetching robots.txt first where it is unknown; ``None`` if none."""
        origins = self.frontier.origins()
        for i in range(len(origins)):
            origin = origins[(self._rr + i) % len(origins)]
            host = self.politeness.host(origin)
            if self.politeness.needs_robots(origin):
                if host.next_request_at > now:  # robots.txt unreachable: retry later
                    self._wake(host.next_request_at)
                elif origin not in self.robots_in_flight:
                    self._dispatch_robots(origin, now)
                continue
            while True:
                at = self.politeness.ready_at(origin)
                if at is None:
                    break
                if at > now:
                    self._wake(at)
                    break
                try:
                    task = self.frontier.pop(origin)
                except IndexError:
                    break
                if self.politeness.allowed(origin, task.url):
                    self._rr = (self._rr + i + 1) % max(1, len(origins))
                    return task
                if task.kind in (KIND_PAGE, KIND_FAIL):
                    self._skip(task, host.robots.describe() if host.robots else "robots.txt")
                else:
                    log.info("sitemap %s: disallowed by robots.txt", task.url)
        return None

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
                log.warning("memory of all processes is over --max-memory (%d MiB): slowing down",
                            limit // 2**20)
            self._memory_slowed = over
        return self._memory_slowed

    def _least_loaded(self) -> int | None:
        """The live fetcher with the fewest tasks given and not reported, if it can take
        one more (its queue bound plus its threads), else ``None``."""
        cap = self._queue_bound + self.config.threads
        best = min(self.task_queues, key=self.load.__getitem__, default=None)
        return best if best is not None and self.load[best] < cap else None

    def _put(self, task: FetchTask) -> None:
        """Give ``task`` to the least loaded fetcher (never blocks for long: a fetcher
        holds at most its queue bound plus its threads)."""
        worker_id = self._least_loaded()
        if worker_id is None:  # every fetcher full: the least loaded one, blocking briefly
            worker_id = min(self.task_queues, key=self.load.__getitem__)
        self.task_queues[worker_id].put(task)
        self.owner[(task.kind, task.url)] = (worker_id, task)
        self.load[worker_id] += 1

    def _release(self, kind: str, url: str) -> None:
        holder = self.owner.pop((kind, url), None)
        if holder is not None and holder[0] in self.load:
            self.load[holder[0]] -= 1

    def _fetcher_died(self, worker_id: int) -> None:
        """A fetcher died (killed, out of memory): the tasks it held go back to the
        frontier (a URL whose fetch already ended in the table is not fetched again), a
        URL held by :data:`MAX_CRASHES` dying fetchers is failed with the reason, and a
        new fetcher takes its place.

        Raises:
            FetcherDied: more than :data:`MAX_DEATHS` fetchers died in this crawl.
        """
        process = self.fetchers.pop(worker_id)
        process.join(JOIN_TIMEOUT_S / 10)
        reader = self.result_pipes.pop(worker_id, None)
        if reader is not None:  # complete messages sent before it died come first
            try:
                while reader.poll(0):
                    self._handle(reader.recv())
            except (EOFError, OSError):
                pass
            reader.close()
        tasks = self.task_queues.pop(worker_id)
        tasks.cancel_join_thread()
        tasks.close()
        self.load.pop(worker_id, None)
        self.deaths += 1
        if self.deaths > MAX_DEATHS:
            raise FetcherDied(f"fetcher {worker_id} died (exit code {process.exitcode}); "
                              f"{self.deaths} fetchers died in this crawl")
        now = time.monotonic()
        held = [task for wid, task in self.owner.values() if wid == worker_id]
        for task in held:
            self._undispatch(task, now)
            if task.kind == KIND_ROBOTS:
                continue
            if task.kind != KIND_SITEMAP:
                state = self.table.state(task.url)
                if state in ("visited", "failed"):  # recorded; only its result was lost
                    self._lost_result(worker_id, task.url, state)
                    continue
                if self._bump_crashes(task.url) >= MAX_CRASHES:
                    task = dataclasses.replace(task, kind=KIND_FAIL)
            self.frontier.push(task)
        log.warning("fetcher %d died (exit code %s); %d task(s) it held go back to the frontier; "
                    "a new fetcher takes its place", worker_id, process.exitcode, len(held))
        self._start_fetcher()

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
        self._release(task.kind, task.url)
        if task.kind == KIND_ROBOTS:
            self.robots_in_flight.pop(task.url, None)
            self.politeness.finished(task.url, now)
            self.politeness.robots_retry(task.url, now)
            return
        self.politeness.finished(origin_of(task.url), now)
        if task.kind == KIND_SITEMAP:
            self.sitemaps_in_flight.pop(task.url, None)
        else:
            self.in_flight.pop(task.url, None)
            self.dispatched -= 1

    def _lost_result(self, worker_id: int, url: str, state: str) -> None:
        """Count a URL a dead fetcher had recorded (``state`` in the table) without
        reporting it."""
        visited = state == "visited"
        self.fetched.add(url)
        if self.store is not None:
            self.store.set_state([url], VISITED_STATE if visited else FAILED_STATE,
                                 "page" if visited else "result lost")
        self.counters.add(TaskDone(worker_id, url, PAGE if visited else FAILED,
                                   error=None if visited else "result lost"))

    def _dispatch_robots(self, origin: str, now: float) -> None:
        task = FetchTask(origin, 0, kind=KIND_ROBOTS)
        self._put(task)
        self.robots_in_flight[origin] = task
        self.politeness.robots_fetching(origin)
        self.politeness.dispatched(origin, now)

    def _skip(self, task: FetchTask, reason: str, pushed: bool = True) -> None:
        """A claimed URL that will not be fetched (robots.txt, a trap guard): listed
        now, marked in the table in batches (:meth:`_flush_skips`), and in the store
        (``pushed``: it has a row already)."""
        self.skipped.append((task, reason))
        self._to_mark.append(task.url)
        if self.store is not None:
            if pushed:
                self.store.set_state([task.url], SKIPPED_STATE, reason)
            else:
                self.store.add([task], SKIPPED_STATE, reason)

    def _flush_skips(self) -> None:
        while self._to_mark:
            batch, self._to_mark = self._to_mark[:1000], self._to_mark[1000:]
            self.table.mark_many(batch, "skipped")

    def _admit(self, task: FetchTask) -> str | None:
        """Why a discovered URL is skipped (a trap guard), or ``None`` to queue it."""
        if len(task.url) > self.config.max_url_length:
            return "url too long"
        trap = trap_reason(task.url, self.config.max_path_repeats, self.config.max_path_segments)
        if trap is not None:
            return trap
        cap = self.config.max_query_variants
        if cap is not None and "?" in task.url:
            path = task.url.partition("?")[0]
            count = self._query_variants.get(path, 0)
            if count >= cap:
                return "query variants"
            self._query_variants[path] = count + 1
        return None

    def _loop(self) -> None:
        while True:
            self._fill()
            if not self._busy() and not self._waiting():
                return
            timeout = LIVENESS_CHECK_S
            if self._wake_at is not None:
                timeout = max(0.0, min(timeout, self._wake_at - time.monotonic()))
            messages = self._receive(timeout)
            for message in messages:
                self._handle(message)
            now = time.monotonic()
            if now >= self._next_liveness_check:
                self._next_liveness_check = now + LIVENESS_CHECK_S
                self._check_children()
            if self.stop_reason is not None and not self._unqueued:
                self._unqueue()
            self._commit(now)
            self._progress()

    def _handle(self, message: TaskDone, check: bool = True) -> None:
        """Count a finished task and push the links it won; ``check`` the children if
        the visited table failed under it. A robots.txt result sets its origin's rules;
        a retry goes back to wait its turn."""
        now = time.monotonic()
        if message.outcome == ROBOTS:
            self._release(KIND_ROBOTS, message.url)
            self._handle_robots(message, now)
            return
        if message.outcome == SITEMAP:
            self._release(KIND_SITEMAP, message.url)
            self._handle_sitemap(message, now)
            return
        for kind in (KIND_PAGE, KIND_FAIL):  # a page task, or its "record it failed" form
            self._release(kind, message.url)
        task = self.in_flight.pop(message.url, None)
        if message.outcome == RETRY:
            self._schedule_retry(task, message, now)
            return
        self.politeness.finished(origin_of(message.url), now)
        if self.store is None:  # with a store, these are read back from it at the end
            self.fetched.add(message.url)
            if message.outcome == REDIRECT:
                self.redirected.add(message.url)
        else:
            failed = message.outcome == FAILED
            self.store.set_state([message.url], FAILED_STATE if failed else VISITED_STATE,
                                 message.error if failed else message.outcome)
            if message.content is not None:  # a resume registers it again
                self.store.add_content(message.url, *message.content,
                                       content_kind(message.duplicate, message.near_duplicate))
        self.counters.add(message)
        if message.url in self.seed_keys and self.seed_outcome is None:
            self.seed_outcome = message
        self._queue_discovered(message.discovered)
        if message.table_failed and check:
            self._check_children()

    def _commit(self, now: float, force: bool = False) -> None:
        """Commit the store's pending writes, at most every :data:`COMMIT_INTERVAL_S`."""
        if self.store is not None and (force or now >= self._next_commit):
            self.store.commit()
            self._next_commit = now + COMMIT_INTERVAL_S

    def _handle_robots(self, message: TaskDone, now: float) -> None:
        origin = message.url
        self.robots_in_flight.pop(origin, None)
        self.robots_fetches += 1
        rules = RobotsRules.from_response(message.status, message.robots_body, message.error)
        host = self.politeness.host(origin)
        if rules.unreachable and host.robots_attempts <= self.config.retries:
            wait = backoff_s(host.robots_attempts - 1, self.config.retry_base_s,
                             self.config.retry_cap_s, self._rng)
            log.info("%s: %s; trying again in %.1f s", origin, rules.describe(), wait)
            self.politeness.finished(origin, now)
            self.politeness.robots_retry(origin, now + wait)
            return
        if rules.unreachable:
            log.warning("%s: %s; its URLs are skipped", origin, rules.describe())
        self.politeness.set_robots(origin, rules)  # first: a Crawl-delay spaces the next request
        self.politeness.finished(origin, now)
        if self.config.sitemaps and origin in self._seed_origins and not rules.unreachable:
            for url in sitemap_candidates(origin, rules.sitemaps):
                self._push_sitemap(url, 0)

    def _push_sitemap(self, url: str, level: int) -> None:
        """Queue the sitemap ``url`` (``level``: sitemap-index depth), once, within the
        level and count limits."""
        if url in self.sitemaps_seen or level > MAX_SITEMAP_LEVELS or len(self.sitemaps_seen) >= MAX_SITEMAPS:
            return
        self.sitemaps_seen.add(url)
        self.frontier.push(FetchTask(url, level, kind=KIND_SITEMAP))

    def _handle_sitemap(self, message: TaskDone, now: float) -> None:
        task = self.sitemaps_in_flight.pop(message.url, None)
        self.politeness.finished(origin_of(message.url), now)
        if message.status is not None and message.status < 300:
            self.sitemaps_read += 1
        for child in message.sitemaps:
            self._push_sitemap(child, (task.depth if task else 0) + 1)
        self._queue_discovered(message.discovered)

    def _queue_discovered(self, tasks) -> None:
        """Push the URLs a task won on the frontier, or skip them (a trap guard)."""
        for task in tasks:
            reason = self._admit(task)
            if reason is None:
                self.frontier.push(task)
            else:
                self._skip(task, reason, pushed=False)

    def _schedule_retry(self, task: FetchTask | None, message: TaskDone, now: float) -> None:
        """Hold ``task`` until its next attempt: after the server's Retry-After (which
        also pauses the origin on a 429 or 503) or an exponential backoff."""
        if task is None:
            return
        pause = message.retry_after_s if message.status in (429, 503) else None
        self.politeness.finished(origin_of(task.url), now, pause)
        wait = message.retry_after_s
        if wait is None:
            wait = backoff_s(task.attempt, self.config.retry_base_s, self.config.retry_cap_s, self._rng)
        deferred = message.error == DEFERRED  # sent back unrequested: not an attempt
        retry = task if deferred else dataclasses.replace(task, attempt=task.attempt + 1)
        heapq.heappush(self._retry_heap, (now + wait, next(self._seq), retry))
        if self.store is not None and retry.kind == KIND_PAGE:
            self.store.update_task(retry, IN_FLIGHT_STATE)  # its attempt survives a crash
        self.dispatched -= 1  # the same URL again: not another one for --max-pages
        self.retries_scheduled += 0 if deferred else 1
        log.info("%s: %s; attempt %d in %.1f s", task.url, message.error, retry.attempt + 1, wait)

    def _check_children(self) -> None:
        """Raise ManagerDied if the manager died; replace a fetcher that died
        (:meth:`_fetcher_died`)."""
        if self.manager is not None and not self.manager._process.is_alive():
            raise ManagerDied("the visited-table manager process died")
        for worker_id, process in list(self.fetchers.items()):
            if process.exitcode is not None:
                self._fetcher_died(worker_id)

    def _unqueue(self) -> None:
        """Warm stop: take back the tasks still waiting in the queues (no fetcher started
        them), so only fetches already under way are finished."""
        self._unqueued = True
        for tasks in list(self.task_queues.values()):
            self._unqueue_from(tasks)

    def _unqueue_from(self, tasks) -> None:
        while True:
            try:
                task = tasks.get(timeout=UNQUEUE_WAIT_S)
            except queue.Empty:
                return
            self._undispatch(task, time.monotonic())
            if task.kind != KIND_ROBOTS:
                self.frontier.push(task)

    def _abandon(self, reason: str) -> None:
        """After an abort: take in the results already sent, then list the frontier and
        the URLs still in flight as skipped (the in-flight ones stay in flight in the
        table: their fetch may have happened)."""
        while self.in_flight and self.result_pipes:
            messages = self._receive(UNQUEUE_WAIT_S, strict=False)
            if not messages:
                break
            for message in messages:
                self._handle(message, check=False)
        self.skipped.extend((task, reason + IN_FLIGHT) for task in self.in_flight.values())
        self.unfinished.extend((task, reason + IN_FLIGHT) for task in self.in_flight.values())
        self.in_flight.clear()
        try:
            self._skip_frontier(reason)
        except Exception:  # the manager may be what died; the URLs are listed anyway
            log.warning("could not mark the frontier skipped in the visited table")

    def _skip_frontier(self, reason: str) -> None:
        """List what is left in the frontier as skipped (a limit, a stop or an abort ended
        the crawl), then mark it skipped in the visited table, 1,000 URLs a call.

        Raises what the visited table raises; the URLs are in :attr:`skipped` by then.
        """
        while self._retry_heap:
            self.frontier.push(heapq.heappop(self._retry_heap)[2])
        tasks = [task for task in self.frontier.drain() if task.kind in (KIND_PAGE, KIND_FAIL)]  # claimed
        self.skipped.extend((task, reason) for task in tasks)
        self.unfinished.extend((task, reason) for task in tasks)  # a resume takes them up
        self._flush_skips()
        for start in range(0, len(tasks), 1000):
            self.table.mark_many([t.url for t in tasks[start:start + 1000]], "skipped")

    def _progress(self) -> None:
        now = time.monotonic()
        if now < self._next_progress:
            return
        self._next_progress = now + self.display.interval_s
        rss = self.monitor.sample()
        c = self.counters
        self.display.update(ProgressStats(c.done, c.outcomes["page"], c.failed, len(self.frontier),
                                          len(self.in_flight), rss, now - self._started_at))
