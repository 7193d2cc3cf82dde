"""The task channel: tasks arrive whole and in order, a put never blocks, and a warm
stop takes back exactly what no reader took, under every start method."""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time

import pytest

from crawler.engine.channel import TaskChannel
from crawler.engine.messages import STOP, FetchTask

BIG = 30_000  # characters of query per big task: three of them fill a 64 KiB pipe


def tasks(count: int, size: int = 0) -> list[FetchTask]:
    return [FetchTask(f"http://a.test/{i}?" + "q" * size, i % 3, parent="http://a.test/") for i in range(count)]


@pytest.fixture
def channel():
    channel = TaskChannel(multiprocessing.get_context("spawn"))
    yield channel
    channel.close()


def test_tasks_and_stop_arrive_whole_and_in_order(channel):
    sent = tasks(50)
    for task in sent:
        channel.put(task)
    channel.put(STOP)
    assert not channel.pending()
    assert [channel.get(timeout=5) for _ in sent] == sent
    assert channel.get(timeout=5) is STOP


def test_get_with_a_timeout_raises_empty(channel):
    started = time.monotonic()
    with pytest.raises(queue.Empty):
        channel.get(timeout=0.2)
    assert 0.15 <= time.monotonic() - started < 2


def test_a_full_pipe_never_blocks_a_put_and_a_reader_gets_every_task(channel):
    sent = tasks(20, BIG)  # ~600 KB
    started = time.monotonic()
    for task in sent:
        channel.put(task)
    assert time.monotonic() - started < 0.5 and channel.pending()
    got: list = []
    reader = threading.Thread(target=lambda: got.extend(channel.get(timeout=10) for _ in sent))
    reader.start()
    assert channel.flush_until(time.monotonic() + 10)
    reader.join(10)
    assert got == sent and not channel.pending()


def test_take_back_returns_what_no_reader_took_in_order(channel):
    sent = tasks(3) + tasks(1, BIG)  # all in the pipe
    for task in sent:
        channel.put(task)
    assert not channel.pending()
    channel.get(timeout=5)  # a reader takes the first one
    assert channel.take_back(0.2) == sent[1:]
    assert channel.take_back(0.2) == [] and not channel.pending()


def test_take_back_returns_whole_frames_and_the_frame_begun_when_no_reader_is_in_it(channel):
    sent = tasks(3) + tasks(6, BIG)  # the pipe fills up inside one of the big frames
    for task in sent:
        channel.put(task)
    assert channel._offset > 0  # one frame is half in the pipe, nobody reads
    started = time.monotonic()
    assert channel.take_back(0.3) == sent
    assert time.monotonic() - started < 2 and not channel.pending()
    with pytest.raises(queue.Empty):  # nothing left in the pipe either
        channel.get(timeout=0.2)


def test_a_reader_inside_the_frame_begun_gets_it_and_the_rest_is_taken_back(channel):
    big, after = tasks(1, 3 * BIG), tasks(2)  # ~90 KB: the reader blocks inside it
    channel.put(big[0])
    for task in after:
        channel.put(task)
    got: list = []
    reader = threading.Thread(target=lambda: got.append(channel.get(timeout=10)))
    reader.start()
    time.sleep(0.3)  # it has read what the pipe held and waits for the rest, holding the lock
    assert channel.take_back(0.3) == after
    reader.join(10)
    assert got == big and not channel.pending()


def _echo(channel: TaskChannel, results) -> None:
    while True:
        task = channel.get()
        results.send(task)
        if task is STOP:
            return


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_a_child_of_every_start_method_reads_the_channel(method):
    ctx = multiprocessing.get_context(method)
    channel = TaskChannel(ctx)
    reader, writer = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_echo, args=(channel, writer), daemon=True)
    child.start()
    writer.close()
    sent = tasks(5) + tasks(5, BIG)
    for task in sent + [STOP]:
        channel.put(task)
    assert channel.flush_until(time.monotonic() + 20)
    got = [reader.recv() for _ in range(len(sent) + 1)]
    child.join(20)
    channel.close()
    assert got == sent + [STOP] and child.exitcode == 0
