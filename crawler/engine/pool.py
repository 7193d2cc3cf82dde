"""The fetcher pool: the fetcher processes, their task queues and result pipes, and the
one capacity gate every task passes.

Each fetcher has its own task channel (:class:`crawler.engine.channel.TaskChannel`) and
its own result pipe (one writer, so a fetcher's death shows as an EOF, never as half a
message waited on forever; a fetcher killed while waiting in ``get()`` keeps its
channel's lock for ever, so a shared channel would hang every other fetcher, while a
private one dies with its fetcher).

The capacity gate: a fetcher is *given* at most ``queue_bound + threads`` tasks not yet
reported (its :attr:`FetcherPool.load`); a task in its channel is one given and not yet
taken. :meth:`FetcherPool.put` never blocks (a frame the pipe cannot take now waits in
the channel, written when :meth:`FetcherPool.receive` sees room): the dispatcher's loop
cannot wait on a fetcher while the fetcher waits on the dispatcher to read its results
(robots.txt tasks once handed out past capacity hung a batch crawl that way). Page, robots.txt,
sitemap, retried and taken-back tasks all go through :meth:`put`.

``concurrent.futures.process`` is the model: its executor-manager thread waits on the
result pipe and every worker's sentinel at once, and a dead worker's work is failed or
handed back, never waited on.
"""

from __future__ import annotations

import logging
import math
import os
import select
import time
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess

from crawler.config import CrawlConfig
from crawler.engine.channel import TaskChannel
from crawler.engine.cookiestore import CookieStoreProxy
from crawler.engine.messages import KIND_PAGE, STOP, FetchTask
from crawler.engine.rediscrawl import RedisCrawl
from crawler.engine.stats import ProcessTreeMonitor
from crawler.engine.visited import VisitedProxy
from crawler.engine.worker import fetcher_main

log = logging.getLogger("crawler")

#: Seconds the warm stop waits on each task queue while taking tasks back.
UNQUEUE_WAIT_S = 0.2
#: Seconds given to the fetchers to exit after STOP before they are killed.
JOIN_TIMEOUT_S = 10.0
#: A fetcher that holds tasks and has sent nothing for ``--total-timeout`` plus this many
#: seconds is hung (stopped, stuck in a call that never returns): it is killed, and its
#: tasks go back to the frontier as a dead fetcher's do. Every fetch ends within
#: ``--total-timeout``, and the page work after it within seconds.
HUNG_GRACE_S = 30.0
#: At most this many messages are read by one :meth:`FetcherPool.receive`: a loop turn
#: handles every message already waiting (its costs are then shared), up to this bound.
RECEIVE_MAX = 512


class FetcherPool:
    """The fetcher processes of one crawl.

    Args:
        ctx: the multiprocessing context (start method).
        config: the frozen :class:`crawler.config.CrawlConfig` handed to each fetcher.
        table: proxy of the manager-hosted visited table (or, with ``--redis``, the
            :class:`crawler.engine.rediscrawl.RedisCrawl`), handed to each fetcher.
        monitor: a :class:`crawler.engine.stats.ProcessTreeMonitor` told each fetcher's role.
        cookie_store: with ``--cookies``, the proxy of the manager's
            :class:`crawler.engine.cookiestore.CookieStore`, handed to each fetcher; else None.
    """

    def __init__(
        self,
        ctx: BaseContext,
        config: CrawlConfig,
        table: VisitedProxy | RedisCrawl,
        monitor: ProcessTreeMonitor | None = None,
        cookie_store: CookieStoreProxy | None = None,
    ) -> None:
        self.ctx = ctx
        self.cookie_store = cookie_store
        self.config = config
        self.table = table
        self.monitor = monitor
        self.queue_bound = max(1, -(-config.task_queue_size // config.workers))
        #: tasks a fetcher may hold, given and not reported: its queue bound plus threads
        self.capacity = self.queue_bound + config.threads
        self.processes: dict[int, BaseProcess] = {}
        self.task_queues: dict[int, TaskChannel] = {}  # fetcher id -> its task channel
        self.result_pipes: dict[int, Connection] = {}  # fetcher id -> read end of its pipe
        self.load: dict[int, int] = {}  # fetcher id -> tasks given and not reported
        self.heard_at: dict[int, float] = {}  # fetcher id -> monotonic time of its last message
        self._poller = select.poll()  # the result pipes' read ends, registered once
        self._by_fd: dict[int, int] = {}  # file descriptor of a result pipe -> fetcher id
        self._out_by_fd: dict[int, int] = {}  # write end of a channel polled for room -> fetcher id
        #: (kind, url) -> (fetcher id, task, monotonic time given)
        self.owner: dict[tuple[str, str], tuple[int, FetchTask, float]] = {}
        #: page URL -> (fetcher id, monotonic time its Exchanged was read): its page work runs
        self.working: dict[str, tuple[int, float]] = {}
        #: page URL whose page work ran past ``page_timeout_s`` -> the fetcher killed for it
        self.timed_out: dict[str, int] = {}
        self._next_id = 0

    # -- processes ---------------------------------------------------------------
    def start(self, count: int) -> None:
        """Start ``count`` fetcher processes."""
        for _ in range(count):
            self.start_one()

    def start_one(self) -> int:
        """Start one fetcher; returns its id."""
        worker_id = self._next_id
        self._next_id += 1
        reader, writer = self.ctx.Pipe(duplex=False)
        tasks = TaskChannel(self.ctx)
        process = self.ctx.Process(  # type: ignore[attr-defined]  # typeshed: on the concrete contexts only
            target=fetcher_main,
            name=f"crawler-fetcher-{worker_id}",
            args=(worker_id, self.config, tasks, writer, self.table, os.getpid(), self.cookie_store),
            daemon=True,
        )  # if this process exits, multiprocessing's exit hook ends them
        process.start()
        if self.monitor is not None:
            self.monitor.set_role(process.pid, "fetcher")
        writer.close()  # the fetcher holds the only write end: its death is an EOF here
        self.processes[worker_id] = process
        self.result_pipes[worker_id] = reader
        self._by_fd[reader.fileno()] = worker_id
        self._poller.register(reader.fileno(), select.POLLIN)
        self.task_queues[worker_id] = tasks
        self.load[worker_id] = 0
        self.heard_at[worker_id] = time.monotonic()
        return worker_id

    def dead(self) -> list[int]:
        """Fetchers whose process has exited."""
        return [wid for wid, process in self.processes.items() if process.exitcode is not None]

    def kill_hung(self, now: float) -> list[int]:
        """SIGKILL each fetcher that holds tasks and has sent nothing for
        ``total_timeout_s + HUNG_GRACE_S`` seconds, or whose page work on one page has run
        for more than ``page_timeout_s`` since its :class:`Exchanged` (that URL joins
        :attr:`timed_out`, read by :meth:`timed_out_of`). Returns their ids; their death is then seen as any death (an
        EOF on the pipe, an exit code)."""
        limit = self.config.total_timeout_s + HUNG_GRACE_S
        hung = {
            wid: f"holds {load} task(s) and sent nothing for {now - self.heard_at[wid]:.0f} s"
            for wid, load in self.load.items()
            if load and now - self.heard_at.get(wid, now) > limit and wid in self.processes
        }
        for url, (wid, since) in self.working.items():
            if now - since > self.config.page_timeout_s and wid in self.processes:
                self.timed_out[url] = wid
                hung.setdefault(wid, f"has worked on {url} for {now - since:.0f} s (--page-timeout)")
        for worker_id, why in hung.items():
            process = self.processes[worker_id]
            log.warning("fetcher %d (pid %s) %s: killing it", worker_id, process.pid, why)
            process.kill()
        return list(hung)

    def timed_out_of(self, worker_id: int) -> set[str]:
        """The URLs whose page work timed out in the killed fetcher ``worker_id``,
        forgotten here."""
        urls = {url for url, wid in self.timed_out.items() if wid == worker_id}
        for url in urls:
            del self.timed_out[url]
        return urls

    def exchanged(self, url: str, now: float) -> None:
        """The page task ``url`` was downloaded (its
        :class:`crawler.engine.messages.Exchanged` read at ``now``):
        its page work runs from here until its result."""
        holder = self.owner.get((KIND_PAGE, url))
        if holder is not None:
            self.working[url] = (holder[0], now)

    def remove(self, worker_id: int) -> tuple[BaseProcess, list]:
        """Forget a dead fetcher's process, queue and pipe. Returns ``(process,
        messages)``: the complete messages it sent before dying, which count first;
        then :meth:`held_by` lists the tasks it still held."""
        process = self.processes.pop(worker_id)
        process.join(JOIN_TIMEOUT_S / 10)
        messages = []
        reader = self._forget_pipe(worker_id)
        if reader is not None:
            try:
                while reader.poll(0):
                    messages.append(reader.recv())
            except (EOFError, OSError):
                pass
            reader.close()
        self._unwatch_room(worker_id)
        self.task_queues.pop(worker_id).close()
        self.load.pop(worker_id, None)
        self.heard_at.pop(worker_id, None)
        return process, messages

    def held_by(self, worker_id: int) -> list[FetchTask]:
        """The tasks given to ``worker_id`` and not reported, released from it: the
        caller puts them back where they belong."""
        held = [task for wid, task, _ in self.owner.values() if wid == worker_id]
        for task in held:
            self.release(task.kind, task.url)
        return held

    # -- the capacity gate ----------------------------------------------------------
    def least_loaded(self) -> int | None:
        """The live fetcher with the fewest tasks given and not reported, if it can take
        one more, else ``None``."""
        best = min(self.load, key=self.load.__getitem__, default=None)
        return best if best is not None and self.load[best] < self.capacity else None

    def has_room(self) -> bool:
        """True if some fetcher can take a task now."""
        return self.least_loaded() is not None

    def put(self, task: FetchTask, now: float) -> bool:
        """Give ``task`` to the least loaded fetcher; never blocks. Returns False (and
        gives nothing) when every fetcher is at capacity."""
        worker_id = self.least_loaded()
        if worker_id is None:
            return False
        self._send(worker_id, task)
        self.owner[(task.kind, task.url)] = (worker_id, task, now)
        self.load[worker_id] += 1
        return True

    def _send(self, worker_id: int, task: FetchTask | None) -> None:
        """Put ``task`` (or STOP) in the channel of ``worker_id``; while part of it waits
        for room in the pipe, :meth:`receive` polls the pipe for it."""
        self.task_queues[worker_id].put(task)
        self._watch_room(worker_id)

    def _has_room(self, fd: int) -> None:
        """The channel of write end ``fd`` has room: write what waits."""
        worker_id = self._out_by_fd[fd]
        try:
            self.task_queues[worker_id].flush()
        except OSError as exc:  # cannot happen while the channel's read end is open here
            log.error("fetcher %d: task channel broken: %s", worker_id, exc)
            self._unwatch_room(worker_id)
            return
        self._watch_room(worker_id)

    def _watch_room(self, worker_id: int) -> None:
        """Poll the channel of ``worker_id`` for room exactly while part of it waits."""
        channel = self.task_queues[worker_id]
        watched = channel.fileno() in self._out_by_fd
        if channel.pending() and not watched:
            self._out_by_fd[channel.fileno()] = worker_id
            self._poller.register(channel.fileno(), select.POLLOUT)
        elif watched and not channel.pending():
            self._unwatch_room(worker_id)

    def _unwatch_room(self, worker_id: int) -> None:
        channel = self.task_queues.get(worker_id)
        if channel is not None and self._out_by_fd.pop(channel.fileno(), None) is not None:
            self._poller.unregister(channel.fileno())

    def release(self, kind: str, url: str) -> FetchTask | None:
        """A task's result arrived (or it was taken back): it no longer counts against its
        fetcher's load. Returns the task, or ``None`` if no fetcher held it."""
        holder = self.owner.pop((kind, url), None)
        if holder is None:
            return None
        if kind == KIND_PAGE:
            self.working.pop(url, None)
        if holder[0] in self.load:
            self.load[holder[0]] -= 1
        return holder[1]

    def outstanding(self) -> int:
        """Tasks given and not reported, over every fetcher."""
        return len(self.owner)

    # -- results -------------------------------------------------------------------
    def receive(self, timeout: float) -> tuple[list, list[int]]:
        """The messages ready within ``timeout`` seconds from every result pipe (every
        message already waiting, at most :data:`RECEIVE_MAX`), and the fetchers whose
        pipe reached EOF (they died; even mid-message, a partial message ends in EOF,
        never in a read that waits forever). The dead fetchers' pipes are closed; call
        :meth:`remove` for each."""
        messages, dead = [], []
        events = self._poller.poll(max(0, math.ceil(timeout * 1000)))  # never wakes before the time
        while events:
            now = time.monotonic()
            for fd, _event in events:
                if fd in self._out_by_fd:
                    self._has_room(fd)
                    continue
                worker_id = self._by_fd.get(fd)
                if worker_id is None:  # died earlier in this call
                    continue
                try:
                    messages.append(self.result_pipes[worker_id].recv())
                    self.heard_at[worker_id] = now
                except (EOFError, OSError):
                    self._forget_pipe(worker_id).close()  # type: ignore[union-attr]  # its pipe was just read
                    dead.append(worker_id)
            if len(messages) >= RECEIVE_MAX:
                break
            events = self._poller.poll(0)
        return messages, dead

    def _forget_pipe(self, worker_id: int) -> Connection | None:
        """Stop polling ``worker_id``'s result pipe; returns its read end (or ``None``)."""
        reader = self.result_pipes.pop(worker_id, None)
        if reader is not None:
            fd = reader.fileno()
            self._by_fd.pop(fd, None)
            self._poller.unregister(fd)
        return reader

    def take_back(self) -> list[FetchTask]:
        """Warm stop: the tasks still waiting in the queues (no fetcher started them),
        released from their fetchers' load."""
        taken = []
        for worker_id, channel in self.task_queues.items():
            for task in channel.take_back(UNQUEUE_WAIT_S):
                assert task is not None  # STOP is put by shutdown(), after the take-back
                self.release(task.kind, task.url)
                taken.append(task)
            self._watch_room(worker_id)
        return taken

    def holdings(self, now: float) -> dict[int, list[tuple[str, str, float]]]:
        """Per fetcher, the tasks it holds: ``(kind, url, seconds since given)``, oldest
        first (the watchdog's report)."""
        held: dict[int, list[tuple[str, str, float]]] = {wid: [] for wid in self.processes}
        for (kind, url), (wid, _task, since) in self.owner.items():
            held.setdefault(wid, []).append((kind, url, round(now - since, 1)))
        for tasks in held.values():
            tasks.sort(key=lambda item: -item[2])
        return held

    # -- shutdown ------------------------------------------------------------------
    def shutdown(self, cold: bool) -> None:
        """Warm: one STOP per live fetcher thread, then join with a deadline. Cold, or
        past the deadline: SIGKILL (fetchers ignore SIGTERM, so that a SIGTERM sent to
        the whole process group reaches only the dispatcher's warm stop)."""
        live = [p for p in self.processes.values() if p.is_alive()]
        if not cold:
            deadline = time.monotonic() + JOIN_TIMEOUT_S
            for worker_id, process in self.processes.items():
                if process.is_alive():
                    for _ in range(self.config.threads):
                        self.task_queues[worker_id].put(STOP)
            for worker_id, process in self.processes.items():
                if process.is_alive():  # the STOPs written while its threads take them
                    self.task_queues[worker_id].flush_until(deadline)
            for process in live:
                process.join(max(0.0, deadline - time.monotonic()))
        for process in live:
            if process.is_alive():
                if not cold:
                    log.warning("fetcher %s did not stop; killing it", process.name)
                process.kill()
                process.join()
        for worker_id in list(self.task_queues):
            self._unwatch_room(worker_id)
            self.task_queues[worker_id].close()
        for worker_id in list(self.result_pipes):
            self._forget_pipe(worker_id).close()  # type: ignore[union-attr]  # one of result_pipes
