r"""The dispatcher: the parent loop that owns the frontier and feeds the fetchers.

Process topology::

                     +----------------------------+
    seeds ---------->|  dispatcher (this process) |
                     |  frontier (by depth)       |
                     |  scope, depth, page limit  |
                     |  in-flight count           |
                     +----------------------------+
                        |  task queue        ^  result pipes
                        |  (bounded: the     |  (one per fetcher):
                        |  backpressure)     |  TaskDone (+ the links
                        |                    |  each task won)
                        v                    |
               +------------+  +------------+  +------------+
               | fetcher 0  |  | fetcher 1  |  | fetcher N-1|   threads overlap I/O;
               | T threads  |  | T threads  |  | T threads  |   write pages-NN.jsonl,
               +------------+  +------------+  +------------+   edges-NN.tsv themselves
                       \            |            /
                        claim_many / settle (one round trip per page)
                                    |
                     +----------------------------+
                     |  manager: sharded visited  |
                     |  table (fingerprint->state)|
                     +----------------------------+

The dispatcher reads each fetcher's result pipe, blocking on all of them with a timeout.
Each pipe has one writer, so a fetcher's death shows as an EOF, never as half a message
waited on forever. At most once a second it also checks that every child is alive; a dead
fetcher or manager stops the crawl at once, since a killed fetcher may hold the task
queue's lock or take tasks with it. It writes the task queue, never more than the queue
bound plus one task per fetcher thread in flight. The crawl ends when the frontier is
empty and nothing is in flight (or the page limit is reached and nothing is in flight).
Then one STOP per fetcher thread, a join with a deadline, then SIGKILL.

Fetchers read tasks, fetch and convert, write their own output, and claim the links they
discover in the visited table, so de-duplication runs in the fetchers, in parallel. They
send back only the links they won, which the dispatcher pushes on the frontier.
"""

from __future__ import annotations

import logging
import multiprocessing.connection
import queue
import time

from crawler.errors import CrawlerError, FetcherDied, ManagerDied
from crawler.frontier import MemoryFrontier
from crawler.messages import REDIRECT, STOP, FetchTask, TaskDone
from crawler.stats import CrawlCounters, ProcessTreeMonitor
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


class Dispatcher:
    """Schedules one crawl over ``config.workers`` fetcher processes.

    Args:
        config: the validated :class:`crawler.config.CrawlConfig`.
        ctx: the multiprocessing context (start method) to create queues and processes.
        table: proxy of the manager-hosted visited table.
        manager: the manager hosting ``table`` (watched for liveness), or None.
        frontier: a frontier backend (default: :class:`crawler.frontier.MemoryFrontier`).
    """

    def __init__(self, config, ctx, table, manager=None, frontier=None) -> None:
        self.config = config
        self.ctx = ctx
        self.table = table
        self.manager = manager
        self.frontier = frontier if frontier is not None else MemoryFrontier()
        self.tasks = ctx.Queue(config.task_queue_size)
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
        self.seed_outcome: TaskDone | None = None
        self._cold = False
        self._unqueued = False
        self._next_liveness_check = 0.0
        self._next_worker_id = 0
        self._started_at = time.monotonic()
        self._next_progress = self._started_at + config.progress_interval_s

    # -- lifecycle -----------------------------------------------------------------
    def run(self) -> None:
        """Crawl until the frontier is empty and nothing is in flight, or a stop.

        Raises:
            FetcherDied, ManagerDied: a child process died; the crawl was stopped at
                once, and every URL not fetched is listed in :attr:`skipped`.
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
        process = self.ctx.Process(
            target=fetcher_main, name=f"crawler-fetcher-{worker_id}",
            args=(worker_id, self.config, self.tasks, writer, self.table),
            daemon=True)  # if this process dies, multiprocessing's exit hook ends them
        process.start()
        self.monitor.set_role(process.pid, "fetcher")
        writer.close()  # the fetcher holds the only write end: its death is an EOF here
        self.fetchers[worker_id] = process
        self.result_pipes[worker_id] = reader

    def _receive(self, timeout: float, strict: bool = True) -> list[TaskDone]:
        """The results ready within ``timeout`` seconds, from every fetcher's pipe.

        A pipe at EOF means its fetcher died (even mid-message: a partial message ends
        in EOF, never in a read that waits forever). ``strict`` raises FetcherDied then;
        otherwise the pipe is dropped.
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
                    process = self.fetchers[worker_id]
                    process.join(JOIN_TIMEOUT_S / 10)
                    raise FetcherDied(f"fetcher {worker_id} died (exit code {process.exitcode})")
        return messages

    def _shutdown(self) -> None:
        """Warm: one STOP per live fetcher thread, then join with a deadline. Cold, or
        past the deadline: SIGKILL (fetchers ignore SIGTERM, so that a SIGTERM sent to
        the whole process group reaches only the dispatcher's warm stop)."""
        live = [p for p in self.fetchers.values() if p.is_alive()]
        if not self._cold:
            for _ in range(len(live) * self.config.threads):
                try:
                    self.tasks.put(STOP, timeout=JOIN_TIMEOUT_S)
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
        self.tasks.close()
        self.tasks.cancel_join_thread()  # every reader is gone; never wait on the feeder
        for reader in self.result_pipes.values():
            reader.close()
        self.result_pipes.clear()

    # -- the loop ------------------------------------------------------------------
    def _may_dispatch(self) -> bool:
        if self.stop_reason is not None or not self.frontier:
            return False
        limit = self.config.max_pages
        return limit is None or self.dispatched < limit

    def _fill(self) -> None:
        capacity = self.config.task_queue_size + self.config.workers * self.config.threads
        while len(self.in_flight) < capacity and self._may_dispatch():
            task = self.frontier.pop()
            self.tasks.put(task)  # never blocks for long: in flight <= bound + threads
            self.in_flight[task.url] = task
            self.dispatched += 1

    def _loop(self) -> None:
        while True:
            self._fill()
            if not self.in_flight:
                return
            messages = self._receive(LIVENESS_CHECK_S)
            for message in messages:
                self._handle(message)
            now = time.monotonic()
            if not messages or now >= self._next_liveness_check:
                self._next_liveness_check = now + LIVENESS_CHECK_S
                self._check_children()
            if self.stop_reason is not None and not self._unqueued:
                self._unqueue()
            self._progress()

    def _handle(self, message: TaskDone, check: bool = True) -> None:
        """Count a finished task and push the links it won; ``check`` the children if
        the visited table failed under it."""
        self.in_flight.pop(message.url, None)
        self.fetched.add(message.url)
        if message.outcome == REDIRECT:
            self.redirected.add(message.url)
        self.counters.add(message)
        if message.url in self.seed_keys and self.seed_outcome is None:
            self.seed_outcome = message
        for task in message.discovered:
            self.frontier.push(task)
        if message.table_failed and check:
            self._check_children()

    def _check_children(self) -> None:
        """Raise if the manager or a fetcher died (a killed fetcher may hold the task
        queue's lock or have taken tasks with it, so the crawl cannot go on safely)."""
        if self.manager is not None and not self.manager._process.is_alive():
            raise ManagerDied("the visited-table manager process died")
        for worker_id, process in self.fetchers.items():
            if process.exitcode is not None:
                raise FetcherDied(f"fetcher {worker_id} died (exit code {process.exitcode})")

    def _unqueue(self) -> None:
        """Warm stop: take back the tasks still waiting in the queue (no fetcher started
        them), so only fetches already under way are finished."""
        self._unqueued = True
        while True:
            try:
                task = self.tasks.get(timeout=UNQUEUE_WAIT_S)
            except queue.Empty:
                return
            self.in_flight.pop(task.url, None)
            self.dispatched -= 1
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
        tasks = list(self.frontier.drain())
        self.skipped.extend((task, reason) for task in tasks)
        for start in range(0, len(tasks), 1000):
            self.table.mark_many([t.url for t in tasks[start:start + 1000]], "skipped")

    def _progress(self) -> None:
        now = time.monotonic()
        if now < self._next_progress:
            return
        self._next_progress = now + self.config.progress_interval_s
        rss = self.monitor.sample()
        elapsed = max(now - self._started_at, 1e-9)
        c = self.counters
        log.info("done %d (pages %d, failed %d) | frontier %d | in flight %d | "
                 "%.1f URLs/s | memory %.0f MiB", c.done, c.outcomes["page"], c.failed,
                 len(self.frontier), len(self.in_flight), c.done / elapsed, rss / 2**20)
