"""Dispatcher ceiling: CPU per task of the real dispatcher, fed by fetchers that answer at once.

Usage:
    PYTHONPATH=. .venv/bin/python bench/dispatcher_ceiling.py [--rounds 2] [--origins 10 1000 100000]
        [--pages 100000] [--pages-many 300000] [--links 2] [--workers 2] [--threads 8]
        [--adaptive] [--no-exchanged]
    ... bench/dispatcher_ceiling.py --profile ORIGINS [--pages N]   cProfile of one run
    ... bench/dispatcher_ceiling.py --memory [--tracemalloc]        1,000,000 URLs waiting
    ... bench/dispatcher_ceiling.py --parts [--rounds 2]             the per-task primitives alone

What runs is the product's dispatcher, built as ``crawler/api.py::_crawl`` builds it: a
:class:`crawler.engine.statestore.StateStore` and a :class:`crawler.engine.statestore.DiskFrontier` in a temporary
folder, a manager from :func:`crawler.engine.visited.start_manager`, ``resume.prepare``, then
:class:`crawler.engine.dispatcher.Dispatcher` (start method ``fork``). Only the fetcher is not the
product's: ``crawler.engine.pool.fetcher_main``, the entry point the pool starts, is replaced by
:class:`StubFetcher` (here, never in the package). A stub reads tasks until STOP; for a
robots.txt task it answers ``TaskDone(origin, "robots", 404)`` (allow all); for a page it
sends an ``Exchanged`` (as a real fetcher does for every HTML page, ``--no-exchanged``
drops it), settles the page in the visited table and claims ``--links`` new URLs in the
same round trip (``table.settle(url, "visited", links)``: the call a real fetcher makes
per page, a mark plus ``claim_many``), and answers ``TaskDone(..., "page", 200,
body_bytes=1000, latency_s=0.0, discovered=<the URLs it won>)``. New URLs are spread
round robin over ``--origins`` origins, ``http://127.0.X.1:PORT`` strings (nothing is
fetched, no socket is opened; 127.0.0.0/8 is loopback anyway), until each stub has made
its share of the page target. The seed is the first origin's ``/``.

Each (origins, politeness) case runs in a fresh subprocess (so ``ru_maxrss`` is that
case's peak), the cases alternated round by round. Per run:

* dispatcher CPU: ``time.process_time()`` of the dispatcher process around
  ``Dispatcher.run()`` (every thread: the loop, SQLite, the queues' feeder threads, the
  watchdog), user and system from ``os.times()``, and per thread from psutil at the end
  of the loop (the main thread against the rest);
* the manager and the stubs: psutil ``cpu_times()`` of each, from just before the run to
  the dispatcher's last sample at the end of its loop;
* tasks: pages reported plus robots.txt fetches; tasks/s over the wall time of the run
  (on 2 shared cores the stubs and the manager compete with the dispatcher, so this is
  not the ceiling); the ceiling is ``1 / dispatcher CPU per task``, which is what
  transfers to a machine where the dispatcher has a core of its own;
* loop turns and messages per turn (``pool.receive`` is wrapped on the instance);
* peak RSS of the dispatcher (``ru_maxrss``) and its RSS before the run;
* ``os.getloadavg()`` before and after: the machine is shared.

Politeness: ``per_host=8`` with no delay (the fixed mode: up to 8 in flight per origin),
and with ``--adaptive`` also the default (``per_host=None``: one in flight per origin,
the adaptive delay, which is 0 here as the latency is 0).

``--memory``: 10,000 origins, stubs that win 101 links per page, ``--max-pages 10000``:
the dispatcher stops dispatching after 10,000 pages with about 1,000,000 URLs waiting in
the DiskFrontier (``--memory-origins``, ``--memory-links``, ``--memory-pages`` and
``--memory-max-pages`` change that). After the loop the product's own end runs:
``Dispatcher._skip_frontier`` (every left-over URL marked skipped in the visited table)
and ``crawler.api.finish_outputs`` (``skipped.tsv``, ``sites.tsv``, ``summary.json``
in the temporary folder; its rows are counted). RSS of the dispatcher is sampled every
0.25 s by a thread until then; at the end of the loop, after ``_skip_frontier`` and after
``finish_outputs``, the RSS and, with ``--tracemalloc`` (started after the fetchers are
forked), the top allocation sites, also once half the pages are done.

Everything is saved to ``bench/results/dispatcher_ceiling.json`` (``--profile``:
``dispatcher_profile.json``; ``--memory``: ``dispatcher_memory.json``).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import logging
import multiprocessing
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import rounds  # noqa: E402  # bench/rounds.py, beside this script

import crawler.engine.pool  # noqa: E402
from crawler.api import finish_outputs  # noqa: E402
from crawler.config import CrawlConfig  # noqa: E402
from crawler.engine import resume  # noqa: E402
from crawler.engine.diskfrontier import DiskFrontier  # noqa: E402
from crawler.engine.dispatcher import Dispatcher  # noqa: E402
from crawler.engine.lifeline import watch_parent  # noqa: E402
from crawler.engine.messages import KIND_ROBOTS, PAGE, ROBOTS, STOP, Exchanged, FetchTask, TaskDone  # noqa: E402
from crawler.engine.signals import child_signals  # noqa: E402
from crawler.engine.statestore import StateStore  # noqa: E402
from crawler.engine.visited import start_manager  # noqa: E402

MIB = 2**20
RESULTS = os.path.join(HERE, "results")
#: Origins 0..PORTS-1 are 127.0.0.1 on ports FIRST_PORT..; the next PORTS on 127.0.1.1...
FIRST_PORT, PORTS = 1024, 60_000


def origin(index: int) -> str:
    """The ``index``-th origin, a normalized ``http://127.0.X.1:PORT``."""
    return f"http://127.0.{index // PORTS}.1:{FIRST_PORT + index % PORTS}"


class StubFetcher:
    """A fetcher process that answers every task at once (the bench's, not the product's).

    Called by the pool as ``fetcher_main(worker_id, config, tasks, results, table,
    dispatcher_pid, cookie_store)``. Picklable (plain attributes), so it would run under spawn too.

    Args:
        origins: origins the new URLs are spread over, round robin.
        links: new URLs won per page (fewer once the stub's share is made).
        share: new URLs this stub makes in all.
        workers: stubs in the pool (URL number ``n * workers + worker_id`` is this stub's
            n-th, so no two stubs make the same URL).
        exchanged: send an ``Exchanged`` before each page's ``TaskDone``, as a real
            fetcher does for an HTML page.
    """

    def __init__(self, origins: int, links: int, share: int, workers: int, exchanged: bool = True) -> None:
        self.origins, self.links, self.share = origins, links, share
        self.workers, self.exchanged = workers, exchanged

    def __call__(self, worker_id, config, tasks, results, table, dispatcher_pid, cookie_store=None) -> None:
        child_signals()
        watch_parent(dispatcher_pid)
        made = 0
        while True:
            task = tasks.get()
            if task is STOP:
                return
            if task.kind == KIND_ROBOTS:
                results.send(TaskDone(worker_id, task.url, ROBOTS, 404))
                continue
            count = min(self.links, self.share - made)
            urls = []
            for n in range(made, made + count):
                number = n * self.workers + worker_id + 1  # the seed is number 0
                urls.append(f"{origin(number % self.origins)}/docs/section-{number % 97}/page-{number}.html")
            made += count
            if self.exchanged:
                results.send(Exchanged(worker_id, task.url, 0.0, 200))
            won = table.settle(task.url, "visited", urls)
            depth = task.depth + 1
            discovered = tuple(FetchTask(url, depth, task.url) for url, w in zip(urls, won) if w)
            results.send(
                TaskDone(worker_id, task.url, PAGE, 200, body_bytes=1000, latency_s=0.0, discovered=discovered)
            )


def _cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_case(
    origins: int,
    pages: int,
    links: int,
    per_host: int | None,
    workers: int,
    threads: int,
    exchanged: bool = True,
    max_pages: int | None = None,
    profile: bool = False,
    memory: bool = False,
    trace: bool = False,
) -> dict:
    """One crawl of stub fetchers; returns its figures (see the module docstring)."""
    load_before = load()
    ctx = multiprocessing.get_context("fork")
    tmp = tempfile.mkdtemp(prefix="dispatcher-ceiling-")
    seed = origin(0) + "/"
    config = CrawlConfig(
        seeds=(seed,),
        out_dir=tmp,
        workers=workers,
        threads=threads,
        per_host=per_host,
        max_pages=max_pages,
        start_method="fork",
        progress="log",
    ).validated()
    share = -(-(pages - 1) // workers)  # new URLs per stub
    crawler.engine.pool.fetcher_main = StubFetcher(origins, links, share, workers, exchanged)
    store = StateStore.open(tmp)
    manager = start_manager(ctx)
    try:
        table = manager.VisitedTable(config.shards)
        resume.prepare(config, store, table)
        dispatcher = Dispatcher(config, ctx, table, manager, DiskFrontier(store), store)
        dispatcher.start()
        stub_pids = [p.pid for p in dispatcher.pool.processes.values()]
        turns = {"turns": 0, "messages": 0}
        receive = dispatcher.pool.receive

        def counted(timeout):
            messages, dead = receive(timeout)
            turns["turns"] += 1
            turns["messages"] += len(messages)
            return messages, dead

        dispatcher.pool.receive = counted
        me = psutil.Process()
        marks: dict = {}
        skip_frontier = dispatcher._skip_frontier

        def at_loop_end(reason):
            """End of the loop, before what is left is listed: per thread CPU, RSS, memory."""
            marks["threads"] = {"main": 0.0, "other": 0.0}
            for t in me.threads():
                key = "main" if t.id == me.pid else "other"
                spent = t.user_time + t.system_time - thread_cpu0.get(t.id, 0.0)
                marks["threads"][key] = round(marks["threads"][key] + spent, 3)
            marks["waiting_at_loop_end"] = len(dispatcher.frontier)
            marks["samples_in_loop"] = len(samples)
            marks["rss_at_loop_end"] = me.memory_info().rss
            marks["cpu_at_loop_end"] = time.process_time()
            if trace:
                marks["tracemalloc_at_loop_end"] = _top(tracemalloc.take_snapshot())
            skip_frontier(reason)
            marks["rss_after_skip_frontier"] = me.memory_info().rss
            marks["skip_frontier_cpu_s"] = round(time.process_time() - marks["cpu_at_loop_end"], 3)
            if trace:
                marks["tracemalloc_after_skip_frontier"] = _top(tracemalloc.take_snapshot())

        dispatcher._skip_frontier = at_loop_end
        samples: list = []
        stop = threading.Event()
        if memory:

            def sample():
                started = time.monotonic()
                while not stop.wait(0.25):
                    samples.append(
                        (round(time.monotonic() - started, 2), me.memory_info().rss, len(dispatcher.frontier))
                    )
                    if trace and "tracemalloc_mid" not in marks and dispatcher.counters.done >= pages // 2:
                        marks["tracemalloc_mid"] = _top(tracemalloc.take_snapshot())  # half the pages done
                        marks["rss_mid"] = me.memory_info().rss
                        marks["waiting_mid"] = len(dispatcher.frontier)

            threading.Thread(target=sample, daemon=True).start()
        if trace:
            tracemalloc.start()
        before = {"manager": _cpu(manager._process.pid), "fetcher": sum(_cpu(pid) for pid in stub_pids)}
        rss_before = me.memory_info().rss
        thread_cpu0 = {t.id: t.user_time + t.system_time for t in me.threads()}
        profiler = cProfile.Profile(time.thread_time) if profile else None  # CPU of the main thread
        times0, cpu0, wall0 = os.times(), time.process_time(), time.perf_counter()
        if profiler:
            profiler.enable()
        dispatcher.run()
        if profiler:
            profiler.disable()
        wall, cpu, times1 = time.perf_counter() - wall0, time.process_time() - cpu0, os.times()
        roles = dispatcher.monitor.by_role()
        counts = table.counts()
        if memory:  # the product's last step: skipped.tsv, sites.tsv, summary.json
            marks["samples_before_finish"] = len(samples)
            finish0 = time.process_time()
            summary = finish_outputs(config, dispatcher.outcome(), table, counts, wall)
            marks["finish_outputs_cpu_s"] = round(time.process_time() - finish0, 3)
            marks["rss_after_finish_outputs"] = me.memory_info().rss
            marks["summary_skipped"] = summary["skipped"]
            marks["skipped_tsv_rows"] = sum(1 for _ in open(os.path.join(tmp, "skipped.tsv"))) - 1
            if trace:
                marks["tracemalloc_after_finish_outputs"] = _top(tracemalloc.take_snapshot())
        stop.set()
        if trace:
            tracemalloc.stop()
    finally:
        manager.shutdown()
        store.close()
        subprocess.run(["rm", "-rf", tmp], check=False)
    c = dispatcher.counters
    robots = dispatcher.robots_fetches
    tasks = c.done + robots
    result = {
        "origins": origins,
        "per_host": per_host,
        "links": links,
        "pages_target": pages,
        "max_pages": max_pages,
        "workers": workers,
        "threads": threads,
        "exchanged": exchanged,
        "pages": c.outcomes[PAGE],
        "robots": robots,
        "tasks": tasks,
        "wall_s": round(wall, 2),
        "tasks_per_s": round(tasks / wall, 1),
        "dispatcher_cpu_s": round(cpu, 3),
        "dispatcher_user_s": round(times1.user - times0.user, 3),
        "dispatcher_sys_s": round(times1.system - times0.system, 3),
        "dispatcher_threads_cpu_s": marks.get("threads"),
        "dispatcher_cpu_ms_per_task": round(1000 * cpu / tasks, 4),
        "dispatcher_ceiling_tasks_per_s": round(tasks / cpu),
        "dispatcher_cpu_ms_per_page": round(1000 * cpu / max(1, c.outcomes[PAGE]), 4),
        "dispatcher_ceiling_pages_per_s": round(c.outcomes[PAGE] / cpu),
        "manager_cpu_ms_per_task": round(1000 * (roles["manager"]["cpu_s"] - before["manager"]) / tasks, 4),
        "stubs_cpu_ms_per_task": round(1000 * (roles["fetcher"]["cpu_s"] - before["fetcher"]) / tasks, 4),
        "loop_turns": turns["turns"],
        "messages": turns["messages"],
        "messages_per_turn": round(turns["messages"] / max(1, turns["turns"]), 2),
        "rss_before_mib": round(rss_before / MIB, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "table": counts,
        "reconciled": counts["visited"] == c.visited and (counts["in_flight"] == 0 or max_pages is not None),
        "load_before": load_before,
        "load_after": load(),
    }
    for key in (
        "waiting_at_loop_end",
        "skip_frontier_cpu_s",
        "finish_outputs_cpu_s",
        "summary_skipped",
        "skipped_tsv_rows",
        "tracemalloc_at_loop_end",
        "tracemalloc_after_skip_frontier",
        "tracemalloc_after_finish_outputs",
        "tracemalloc_mid",
        "waiting_mid",
    ):
        if key in marks:
            result[key] = marks[key]
    for key in ("rss_at_loop_end", "rss_after_skip_frontier", "rss_after_finish_outputs", "rss_mid"):
        if key in marks:
            result[key + "_mib"] = round(marks[key] / MIB, 1)
    if memory:
        result["samples"] = samples
        result["peak_sampled_rss_mib"] = round(max(s[1] for s in samples) / MIB, 1) if samples else None
        in_loop = samples[: marks.get("samples_in_loop", len(samples))]
        result["peak_rss_in_loop_mib"] = round(max(s[1] for s in in_loop) / MIB, 1) if in_loop else None
        ends = marks.get("samples_before_finish", len(samples))
        at_end = samples[marks.get("samples_in_loop", ends) :]
        result["peak_rss_after_loop_mib"] = round(max(s[1] for s in at_end) / MIB, 1) if at_end else None
    if profiler:
        result["profile"] = _profile_top(profiler)
    return result


def _drain(queue, count: int) -> None:
    for _ in range(count):
        queue.get()


def parts(count: int = 20_000) -> dict:
    """CPU (``time.process_time``) of the dispatcher's per-task primitives, one at a time
    and outside any profiler: what the messages cost to unpickle and pickle (the dataclass
    messages against the same fields as a plain tuple), ``origin_of``, a task queue put
    (the feeder thread included), and the state store's per-task writes at 1,000 origins."""
    import pickle

    from crawler.web.urlnorm import origin_of

    urls = [f"{origin(i % 1000)}/docs/section-{i % 97}/page-{i}.html" for i in range(4 * count)]
    task = FetchTask(urls[0], 3, urls[1])
    done = TaskDone(
        0,
        urls[0],
        PAGE,
        200,
        body_bytes=1000,
        latency_s=0.0,
        discovered=(FetchTask(urls[2], 4, urls[0]), FetchTask(urls[3], 4, urls[0])),
    )
    exchanged = Exchanged(0, urls[0], 0.0, 200)
    as_tuple = (
        0,
        urls[0],
        PAGE,
        200,
        None,
        1000,
        ((urls[2], 4, urls[0]), (urls[3], 4, urls[0])),
        False,
        None,
        None,
        False,
        (),
        False,
        None,
        0.0,
    )
    out: dict[str, float] = {}

    def timed(name, fn, n=count):
        started = time.process_time()
        fn(n)
        out[name] = round(1e6 * (time.process_time() - started) / n, 2)

    for name, message in (
        ("TaskDone(2 links)", done),
        ("Exchanged", exchanged),
        ("FetchTask", task),
        ("same TaskDone as a tuple", as_tuple),
    ):
        data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
        timed(f"pickle.loads {name} ({len(data)} B)", lambda n, d=data: [pickle.loads(d) for _ in range(n)])
        timed(f"pickle.dumps {name}", lambda n, m=message: [pickle.dumps(m, pickle.HIGHEST_PROTOCOL) for _ in range(n)])
    timed("origin_of(url)", lambda n: [origin_of(u) for u in urls[:n]])
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    reader = ctx.Process(target=_drain, args=(queue, count))
    reader.start()
    started = time.process_time()
    for _ in range(count):
        queue.put_nowait(task)
    reader.join()
    out["Queue.put_nowait FetchTask (feeder thread included)"] = round(1e6 * (time.process_time() - started) / count, 2)
    tmp = tempfile.mkdtemp(prefix="dispatcher-parts-")
    try:
        store = StateStore.open(tmp)
        frontier = DiskFrontier(store)
        tasks = [FetchTask(u, 1, urls[0]) for u in urls[:count]]

        def push(n):
            for i, t in enumerate(tasks[:n]):
                frontier.push(t)
                if i % 500 == 499:
                    store.commit()
            store.commit()

        def pop(n):
            for i in range(n):
                frontier.pop(origin_of(tasks[i].url))
                if i % 500 == 499:
                    store.commit()
            store.commit()

        def set_state(n):
            for i, t in enumerate(tasks[:n]):
                store.set_state([t.url], "visited", "page")
                if i % 500 == 499:
                    store.commit()
            store.commit()

        timed("DiskFrontier.push (1,000 origins, commit every 500)", push)
        timed("DiskFrontier.pop (its origin)", pop)
        timed("StateStore.set_state([url]) one URL a call", set_state)
        store.close()
        from crawler.engine.frontier import MemoryFrontier

        for origins in (10, 1000, 10_000):  # pop() of any origin: what drain() does at the end
            store = StateStore(os.path.join(tmp, f"drain-{origins}.sqlite"))
            for frontier in (DiskFrontier(store), MemoryFrontier()):
                for i in range(3 * origins):
                    frontier.push(FetchTask(f"{origin(i % origins)}/docs/page-{i}.html", 1))
                n = min(1000, origins)
                timed(
                    f"{type(frontier).__name__}.pop() any origin, {origins:,} origins waiting",
                    lambda n, f=frontier: [f.pop() for _ in range(n)],
                    n,
                )
            store.close()
    finally:
        subprocess.run(["rm", "-rf", tmp], check=False)
    return out


def _top(snapshot, limit: int = 12) -> list[dict]:
    """The ``limit`` largest allocation sites (file:line) of a tracemalloc snapshot."""
    stats = snapshot.statistics("lineno")
    total = sum(s.size for s in stats)
    rows = [
        {
            "site": f"{os.path.relpath(s.traceback[0].filename, os.path.dirname(HERE))}:{s.traceback[0].lineno}",
            "mib": round(s.size / MIB, 2),
            "blocks": s.count,
        }
        for s in stats[:limit]
    ]
    return [{"site": "total traced", "mib": round(total / MIB, 2), "blocks": sum(s.count for s in stats)}] + rows


def _profile_top(profiler: cProfile.Profile, limit: int = 30) -> dict:
    stats = pstats.Stats(profiler)
    total = stats.total_tt
    rows = []
    for (filename, line, name), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():
        where = os.path.relpath(filename, os.path.dirname(HERE)) if filename.startswith('/') else filename
        rows.append(
            {
                "function": f"{where}:{line}({name})",
                "calls": calls,
                "tottime_s": round(tottime, 3),
                "cumtime_s": round(cumtime, 3),
            }
        )
    by_tottime = sorted(rows, key=lambda r: -r["tottime_s"])[:limit]
    by_cumtime = sorted(rows, key=lambda r: -r["cumtime_s"])[:limit]
    return {"total_s": round(total, 3), "by_tottime": by_tottime, "by_cumtime": by_cumtime}


def _print_profile(result: dict) -> None:
    prof = result["profile"]
    tasks = result["tasks"]
    print(
        f"cProfile (timer time.thread_time: CPU) of the dispatcher's main thread: {prof['total_s']} s "
        f"for {tasks} tasks "
        f"({1000 * prof['total_s'] / tasks:.3f} ms per task under the profiler)"
    )
    for title, key, field in (
        ("by own time", "by_tottime", "tottime_s"),
        ("by cumulative time", "by_cumtime", "cumtime_s"),
    ):
        print(f"\n{title}:")
        print(f"{'us/task':>9} {'share':>6} {'calls/task':>10}  function")
        for row in result["profile"][key][:25]:
            print(
                f"{1e6 * row[field] / tasks:>9.1f} {100 * row[field] / prof['total_s']:>5.1f}% "
                f"{row['calls'] / tasks:>10.2f}  {row['function']}"
            )


def spawn_case(case: dict) -> dict:
    """``run_case(**case)`` in a fresh interpreter (its own ``ru_maxrss``)."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--one", json.dumps(case)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


FIELDS = (
    "tasks",
    "dispatcher_cpu_ms_per_task",
    "dispatcher_ceiling_tasks_per_s",
    "tasks_per_s",
    "dispatcher_cpu_ms_per_page",
    "dispatcher_ceiling_pages_per_s",
    "manager_cpu_ms_per_task",
    "stubs_cpu_ms_per_task",
    "messages_per_turn",
    "peak_rss_mib",
)


def summarize(runs: list[dict]) -> list[dict]:
    return rounds.summarize(runs, ["origins", "per_host", "exchanged", "workers"], FIELDS)


def print_table(rows: list[dict]) -> None:
    head = [
        "origins",
        "per_host",
        "Exch.",
        "stubs",
        "tasks",
        "disp. ms/task",
        "ceiling tasks/s",
        "tasks/s (2 cores)",
        "disp. ms/page",
        "ceiling pages/s",
        "manager ms/task",
        "stubs ms/task",
        "msgs/turn",
        "peak RSS MiB",
        "load",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [
            f"{r['origins']:,}",
            str(r["per_host"]),
            "y" if r["exchanged"] else "n",
            str(r["workers"]),
            f"{r['tasks']['max']:,}",
        ]
        for field in (*FIELDS[1:], "load_1min"):  # tasks: its max, above
            cells.append(rounds.span([r[field]["min"], r[field]["max"]]))
        print("| " + " | ".join(cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--origins", type=int, nargs="+", default=[10, 1000, 100_000])
    parser.add_argument("--pages", type=int, default=100_000, help="pages per run (fewer than 100,000 origins)")
    parser.add_argument("--pages-many", type=int, default=300_000, help="pages per run with 100,000+ origins")
    parser.add_argument("--links", type=int, default=2)
    parser.add_argument("--workers", type=int, nargs="+", default=[2], help="stub fetchers (each a case)")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--per-host", type=int, default=8)
    parser.add_argument("--adaptive", action="store_true", help="also the default politeness (per_host=None)")
    parser.add_argument("--no-exchanged", action="store_true", help="also runs without Exchanged messages")
    parser.add_argument("--profile", type=int, metavar="ORIGINS", help="cProfile one run with ORIGINS origins")
    parser.add_argument("--parts", action="store_true", help="CPU of the per-task primitives alone")
    parser.add_argument("--memory", action="store_true", help="1,000,000 URLs waiting over 10,000 origins")
    parser.add_argument("--tracemalloc", action="store_true", help="with --memory: allocation sites")
    parser.add_argument("--memory-origins", type=int, default=10_000)
    parser.add_argument("--memory-links", type=int, default=101, help="new URLs won per page")
    parser.add_argument("--memory-pages", type=int, default=1_010_001, help="URLs the stubs make in all")
    parser.add_argument("--memory-max-pages", type=int, default=10_000, help="--max-pages (0: none)")
    parser.add_argument("--out", default="dispatcher_ceiling.json", help="file name in bench/results/")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    os.makedirs(RESULTS, exist_ok=True)
    if args.one:
        print(json.dumps(run_case(**json.loads(args.one))))
        return 0
    pages_for = lambda n: args.pages_many if n >= 100_000 else args.pages  # noqa: E731
    if args.parts:
        runs = []
        for _ in range(args.rounds):
            runs.append({"load_before": load(), **parts(), "load_after": load()})
        for key in runs[0]:
            print(f"{key:<62} " + "  ".join(str(r[key]) for r in runs) + ("" if key.startswith("load") else " us"))
        with open(os.path.join(RESULTS, "dispatcher_parts.json"), "w") as f:
            json.dump(runs, f, indent=1)
        return 0
    if args.profile is not None:
        result = run_case(
            args.profile,
            pages_for(args.profile),
            args.links,
            None if args.adaptive else args.per_host,
            args.workers[0],
            args.threads,
            profile=True,
        )
        _print_profile(result)
        path = os.path.join(RESULTS, "dispatcher_profile.json")
        profiles = json.load(open(path)) if os.path.exists(path) else {}
        profiles[str(args.profile)] = result
        with open(path, "w") as f:
            json.dump(profiles, f, indent=1)
        return 0
    if args.memory:
        result = run_case(
            args.memory_origins,
            args.memory_pages,
            args.memory_links,
            args.per_host,
            args.workers[0],
            args.threads,
            max_pages=args.memory_max_pages or None,
            memory=True,
            trace=args.tracemalloc,
        )
        keys = (
            "origins",
            "links",
            "max_pages",
            "pages",
            "robots",
            "waiting_mid",
            "rss_mid_mib",
            "waiting_at_loop_end",
            "rss_before_mib",
            "peak_rss_in_loop_mib",
            "peak_sampled_rss_mib",
            "rss_at_loop_end_mib",
            "rss_after_skip_frontier_mib",
            "rss_after_finish_outputs_mib",
            "peak_rss_after_loop_mib",
            "peak_rss_mib",
            "skip_frontier_cpu_s",
            "finish_outputs_cpu_s",
            "summary_skipped",
            "skipped_tsv_rows",
            "wall_s",
            "load_before",
            "load_after",
        )
        for key in keys:
            print(f"{key:<30} {result.get(key)}")
        for key in (
            "tracemalloc_mid",
            "tracemalloc_at_loop_end",
            "tracemalloc_after_skip_frontier",
            "tracemalloc_after_finish_outputs",
        ):
            if key in result:
                print(f"\n{key}:")
                for row in result[key]:
                    print(f"{row['mib']:>9.2f} MiB {row['blocks']:>9} blocks  {row['site']}")
        path = os.path.join(RESULTS, "dispatcher_memory.json")
        runs = json.load(open(path)) if os.path.exists(path) else []
        runs.append(result)
        with open(path, "w") as f:
            json.dump(runs, f, indent=1)
        return 0
    cases = []
    for workers in args.workers:
        for n in args.origins:
            politeness = [args.per_host] + ([None] if args.adaptive else [])
            for per_host in politeness:
                cases.append(
                    dict(
                        origins=n,
                        pages=pages_for(n),
                        links=args.links,
                        per_host=per_host,
                        workers=workers,
                        threads=args.threads,
                    )
                )
                if args.no_exchanged and per_host == args.per_host:
                    cases.append(dict(cases[-1], exchanged=False))
    runs = []
    for round_no in range(args.rounds):
        for case in cases:
            result = spawn_case(case)
            result["round"] = round_no
            runs.append(result)
            print(
                f"round {round_no} stubs {result['workers']:>3} origins {result['origins']:>7} "
                f"per_host {str(result['per_host']):>4} "
                f"exchanged {result['exchanged']!s:>5}: {result['tasks']} tasks in {result['wall_s']} s, "
                f"dispatcher {result['dispatcher_cpu_ms_per_task']:.3f} ms/task "
                f"(ceiling {result['dispatcher_ceiling_tasks_per_s']}/s), manager "
                f"{result['manager_cpu_ms_per_task']:.3f}, stubs {result['stubs_cpu_ms_per_task']:.3f} ms/task, "
                f"{result['messages_per_turn']} msgs/turn, peak {result['peak_rss_mib']} MiB, "
                f"load {result['load_before'][0]}-{result['load_after'][0]}",
                flush=True,
            )
    rows = summarize(runs)
    print_table(rows)
    with open(os.path.join(RESULTS, args.out), "w") as f:
        json.dump({"settings": vars(args), "summary": rows, "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
