"""The fetcher pool's capacity gate: a put never blocks, whatever the kind of task."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from crawler.config import CrawlConfig
from crawler.engine.channel import TaskChannel
from crawler.engine.messages import KIND_PAGE, KIND_ROBOTS, KIND_SITEMAP, FetchTask
from crawler.engine.pool import FetcherPool


@pytest.fixture
def pool(tmp_path):
    """A pool of two fetchers that never read their channels (no process behind them)."""
    config = CrawlConfig(seeds=("http://127.0.0.1:1/",), out_dir=str(tmp_path), workers=2, threads=3, queue_size=4)
    pool = FetcherPool(multiprocessing.get_context("spawn"), config, table=None)
    for worker_id in (0, 1):
        pool.task_queues[worker_id] = TaskChannel(pool.ctx)
        pool.load[worker_id] = 0
    yield pool
    for tasks in pool.task_queues.values():
        tasks.close()


def test_capacity_is_the_queue_share_plus_threads_and_every_kind_counts(pool):
    assert (pool.queue_bound, pool.capacity) == (2, 5)
    kinds = [KIND_PAGE, KIND_ROBOTS, KIND_SITEMAP]
    tasks = [FetchTask(f"http://127.0.0.1:{9000 + i}/x", 0, kind=kinds[i % 3]) for i in range(10)]
    for task in tasks:
        assert pool.put(task, 0.0)
    assert pool.load == {0: 5, 1: 5} and pool.outstanding() == 10 and not pool.has_room()
    started = time.monotonic()
    assert not pool.put(FetchTask("http://127.0.0.1:1/more", 0, kind=KIND_ROBOTS), 0.0)
    assert time.monotonic() - started < 0.5  # refused at once: never a blocking put
    taken = pool.task_queues[0].get(timeout=5)  # a fetcher thread takes a task and reports it
    assert pool.release(taken.kind, taken.url) == taken
    assert pool.has_room() and pool.put(FetchTask("http://127.0.0.1:1/more", 0), 1.0)


def test_least_loaded_fetcher_gets_the_task_and_holdings_list_them(pool):
    pool.put(FetchTask("http://a.test/1", 0), 0.0)
    pool.put(FetchTask("http://a.test/2", 0), 0.0)
    pool.release(KIND_PAGE, "http://a.test/1")
    pool.put(FetchTask("http://a.test/3", 0), 1.0)
    held = pool.holdings(3.0)
    assert held == {0: [("page", "http://a.test/3", 2.0)], 1: [("page", "http://a.test/2", 3.0)]}
    assert [t.url for t in pool.held_by(1)] == ["http://a.test/2"] and pool.outstanding() == 1


def test_take_back_returns_what_no_fetcher_started(pool):
    urls = [f"http://a.test/{i}" for i in range(6)]
    for url in urls:
        pool.put(FetchTask(url, 0), 0.0)
    assert sorted(t.url for t in pool.take_back()) == urls
    assert pool.outstanding() == 0 and pool.load == {0: 0, 1: 0}


def test_a_task_the_pipe_cannot_take_waits_and_receive_writes_it_when_there_is_room(pool):
    big = [FetchTask(f"http://a.test/{i}?" + "q" * 30_000, 0) for i in range(8)]  # ~240 KB: past a 64 KiB pipe
    started = time.monotonic()
    for task in big:
        pool._send(0, task)
    assert time.monotonic() - started < 0.5 and pool.task_queues[0].pending()
    channel = pool.task_queues[0]
    got = []
    while len(got) < len(big):  # a reader empties the pipe; each receive() writes more
        got.append(channel.get(timeout=5))
        pool.receive(0.05)
    assert got == big and not channel.pending() and not pool._out_by_fd
