"""Tests for crawler.engine.dispatcher.Dispatcher's handling of results, without fetchers:
a dispatcher is built (no process is started) and its messages are handed to it."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from crawler.config import CrawlConfig
from crawler.engine.dispatcher import Dispatcher
from crawler.engine.messages import KIND_PAGE, Exchanged, FetchTask
from crawler.engine.visited import VisitedTable

ORIGIN = "http://127.0.0.1:9"
URL = ORIGIN + "/a"


def dispatcher_holding(url: str, tmp_path) -> Dispatcher:
    """A dispatcher whose fetcher 0 holds the page task ``url``."""
    config = CrawlConfig(seeds=(url,), out_dir=str(tmp_path / "out"))
    d = Dispatcher(config, multiprocessing.get_context("fork"), VisitedTable(8))
    d.pool.owner[(KIND_PAGE, url)] = (0, FetchTask(url, 0), time.monotonic())
    return d


@pytest.mark.parametrize(
    ("ended_ago_s", "counted_from_ago_s"),
    [
        (5.0, 5.0),  # the body was read 5 s before the message was handled: the delay runs from then
        (None, 0.0),  # no time given: from when the message was handled
        (-5.0, 0.0),  # a time after the handling (never from one clock): no later than the handling
    ],
)
def test_the_adaptive_delay_runs_from_the_end_of_the_exchange(tmp_path, ended_ago_s, counted_from_ago_s):
    d = dispatcher_holding(URL, tmp_path)
    before = time.monotonic()
    ended = None if ended_ago_s is None else before - ended_ago_s
    d._handle(Exchanged(0, URL, 0.25, 200, ended))
    after = time.monotonic()
    host = d.politeness.host(ORIGIN)
    assert host.delay_s == 0.25  # the first exchange's latency (TARGET_CONCURRENCY 1)
    counted_from = host.next_request_at - host.delay_s
    assert before - counted_from_ago_s <= counted_from <= after - counted_from_ago_s
    assert host.in_flight == 0 and (KIND_PAGE, URL) in d._released
