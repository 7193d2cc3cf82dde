"""Tests for crawler.engine.politeness: robots state, per-host cap, delays, Retry-After pauses.
Pure: times are plain numbers."""

from __future__ import annotations

from crawler.engine.politeness import Politeness

O = "http://h:8000"  # noqa: E741 (the origin of every case: short on purpose)


class Rules:
    """A stand-in for RobotsRules: a crawl delay and a disallowed prefix."""

    def __init__(self, delay=None, disallow="/private"):
        self.delay, self.disallow, self.seen_agents = delay, disallow, []

    def crawl_delay(self, user_agent):
        self.seen_agents.append(user_agent)
        return self.delay

    def allowed(self, url, user_agent):
        return not url.startswith(O + self.disallow)


def test_nothing_is_ready_before_robots_txt_is_known():
    p = Politeness(per_host=2, user_agent="crawler/1")
    assert p.needs_robots(O) and p.ready_at(O) is None
    p.robots_fetching(O)
    assert not p.needs_robots(O) and p.ready_at(O) is None and p.host(O).robots_attempts == 1
    p.set_robots(O, Rules())
    assert p.ready_at(O) == 0.0
    assert p.allowed(O, O + "/a") and not p.allowed(O, O + "/private/x")


def test_per_host_cap_counts_requests_in_flight():
    p = Politeness(per_host=2)
    p.set_robots(O, Rules())
    p.dispatched(O, 10.0)
    assert p.ready_at(O) == 10.0
    p.dispatched(O, 10.0)
    assert p.ready_at(O) is None  # two in flight: a finished one must come back first
    p.finished(O, 11.0)
    assert p.ready_at(O) == 11.0
    assert p.ready_at("http://other") is None  # another origin has its own state


def test_delay_means_one_at_a_time_and_a_gap_after_the_end_of_the_last():
    p = Politeness(per_host=8, delay_s=2.0)
    p.set_robots(O, Rules())
    p.dispatched(O, 100.0)
    assert p.ready_at(O) is None
    p.finished(O, 101.5)
    assert p.ready_at(O) == 103.5


def test_crawl_delay_raises_the_delay_up_to_the_cap():
    p = Politeness(delay_s=1.0, max_crawl_delay_s=30.0, user_agent="crawler/1")
    rules = Rules(delay=5.0)
    p.set_robots(O, rules)
    assert p.host(O).delay_s == 5.0 and rules.seen_agents == ["crawler/1"]
    p.set_robots("http://slow", Rules(delay=3600.0))
    assert p.host("http://slow").delay_s == 30.0
    p.set_robots("http://fast", Rules(delay=0.1))
    assert p.host("http://fast").delay_s == 1.0  # the larger of --delay and Crawl-delay


def test_retry_after_pauses_the_origin():
    p = Politeness(per_host=4)
    p.set_robots(O, Rules())
    p.dispatched(O, 0.0)
    p.finished(O, 1.0, pause_s=7.0)
    assert p.ready_at(O) == 8.0


def test_unreachable_robots_txt_is_fetched_again_later():
    p = Politeness()
    p.robots_fetching(O)
    p.dispatched(O, 0.0)
    p.finished(O, 0.5)
    p.robots_retry(O, at=4.0)
    assert p.needs_robots(O) and p.host(O).next_request_at == 4.0
    p.robots_fetching(O)
    assert p.host(O).robots_attempts == 2


def test_ignore_robots_makes_every_origin_known_and_open():
    p = Politeness(obey_robots=False)
    assert not p.needs_robots(O) and p.ready_at(O) == 0.0 and p.allowed(O, O + "/private")
