"""The adaptive delay (crawler.engine.throttle.next_delay) and its use by Politeness."""

from __future__ import annotations

import pytest

from crawler.engine.politeness import Politeness
from crawler.engine.throttle import BACKOFF_MIN_S, MAX_DELAY_S, next_delay
from crawler.web.robots import RobotsRules

O = "http://127.0.0.1:8000"  # noqa: E741 (the origin of every case: short on purpose)


@pytest.mark.parametrize(
    "previous, latency, status, floor, expected",
    [
        (0.0, 0.2, 200, 0.0, 0.2),  # first exchange: the latency itself
        (0.2, 0.6, 200, 0.0, 0.6),  # slower: up at once
        (0.6, 0.2, 200, 0.0, 0.4),  # faster: down by half the difference
        (0.4, 0.001, 404, 0.0, 0.4),  # an error answer never speeds the crawl up
        (0.4, 0.9, 500, 0.0, 0.9),  # ... but a slow one still slows it down
        (0.4, 0.001, None, 0.0, 0.4),  # no response (timeout, reset): as an error
        (0.0, 0.01, 429, 0.0, BACKOFF_MIN_S),  # slow down: at least the backoff minimum
        (3.0, 0.01, 503, 0.0, 6.0),  # ... then doubled each time
        (40.0, 0.01, 503, 0.0, MAX_DELAY_S),  # capped
        (0.0, 0.001, 200, 2.0, 2.0),  # never below --delay / Crawl-delay
        (0.0, 500.0, 200, 0.0, MAX_DELAY_S),
        (0.0, 1.0, 200, 90.0, 90.0),  # a floor above the cap wins
        (0.0, -1.0, 200, 0.0, 0.0),  # a clock step backwards counts as 0
    ],
)
def test_next_delay(previous, latency, status, floor, expected):
    assert next_delay(previous, latency, status, floor) == pytest.approx(expected)


def test_adaptive_politeness_is_one_at_a_time_with_the_measured_delay():
    p = Politeness(per_host=None, obey_robots=False)
    p.dispatched(O, 10.0)
    assert p.ready_at(O) is None  # one in flight
    p.finished(O, 10.5, latency_s=0.5, status=200)
    assert p.ready_at(O) == pytest.approx(11.0)
    p.dispatched(O, 11.0)
    p.finished(O, 11.1, latency_s=0.1, status=200)  # median 0.3; (0.5 + 0.3) / 2
    assert p.ready_at(O) == pytest.approx(11.5)
    p.dispatched(O, 11.5)
    p.finished(O, 11.6)  # taken back, nothing measured: the delay stays
    assert p.ready_at(O) == pytest.approx(12.0)


def test_the_median_of_the_last_exchanges_ignores_a_spike_not_a_slowdown():
    p = Politeness(per_host=None, obey_robots=False)
    now = 0.0
    for latency in (0.01, 0.01, 0.01, 0.01, 0.4):  # a fetcher thread waited for the GIL once
        p.dispatched(O, now)
        now += latency
        p.finished(O, now, latency_s=latency, status=200)
        now = p.ready_at(O)
    assert p.host(O).delay_s == pytest.approx(0.01)
    for latency in (0.4, 0.4):  # the server itself slowed down: the median moves
        p.dispatched(O, now)
        now += latency
        p.finished(O, now, latency_s=latency, status=200)
        now = p.ready_at(O)
    assert list(p.host(O).latencies) == [0.01, 0.01, 0.4, 0.4, 0.4]
    assert p.host(O).delay_s == pytest.approx(0.4)


def test_adaptive_delay_respects_delay_and_crawl_delay_floors():
    p = Politeness(per_host=None, delay_s=1.0, user_agent="crawler/1")
    p.set_robots(O, RobotsRules.from_response(200, b"User-agent: *\nCrawl-delay: 3\n", None))
    p.dispatched(O, 0.0)
    p.finished(O, 0.01, latency_s=0.01, status=200)
    assert p.ready_at(O) == pytest.approx(3.01)
    other = "http://127.0.0.1:9000"
    p.set_robots(other, RobotsRules.from_response(404, None, None))
    p.dispatched(other, 0.0)
    p.finished(other, 0.01, latency_s=0.01, status=200)
    assert p.ready_at(other) == pytest.approx(1.01)


def test_fixed_per_host_keeps_its_cap_and_ignores_latency():
    p = Politeness(per_host=3, obey_robots=False)
    for _ in range(3):
        p.dispatched(O, 0.0)
    assert p.ready_at(O) is None
    p.finished(O, 1.0, latency_s=5.0, status=200)
    assert p.ready_at(O) == 1.0
