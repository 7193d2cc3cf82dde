"""The scheduler's politeness heap: order, fairness, robots.txt first, blocking, limits."""

from __future__ import annotations

import pytest

from crawler.engine.frontier import MemoryFrontier
from crawler.engine.messages import KIND_PAGE, KIND_ROBOTS, FetchTask
from crawler.engine.politeness import Politeness
from crawler.engine.scheduler import SITE_LIMIT, Scheduler
from crawler.web.robots import RobotsRules, origin_of


def make(per_host=1, delay_s=0.0, obey_robots=False, limit=None):
    politeness = Politeness(per_host=per_host, delay_s=delay_s, obey_robots=obey_robots)
    return Scheduler(MemoryFrontier(), politeness, limit), politeness


def origin(i: int) -> str:
    return f"http://127.0.0.1:{8000 + i}"


def round_robin(tasks_by_origin: dict[str, list[str]]) -> list[str]:
    """The dispatcher's order before the heap, on the same input: a scan of the list of
    origins with waiting tasks from a rotating position, when every origin is ready (so
    the first origin scanned gives a task). An origin that empties leaves the list, which
    shifts the positions after it."""
    queues = {o: list(urls) for o, urls in tasks_by_origin.items() if urls}
    order, rr = [], 0
    while queues:
        origins = list(queues)
        o = origins[rr % len(origins)]
        order.append(queues[o].pop(0))
        rr = (rr + 1) % len(origins)
        if not queues[o]:
            del queues[o]
    return order


def max_lag(order: list[str], tasks_by_origin: dict[str, list[str]]) -> int:
    """The largest difference, over every prefix of ``order``, between the tasks served
    to two origins that both still had tasks waiting: 1 is the fairest possible."""
    served = dict.fromkeys(tasks_by_origin, 0)
    worst = 0
    for url in order:
        served[origin_of(url)] += 1
        waiting = [served[o] for o, urls in tasks_by_origin.items() if served[o] < len(urls)]
        if waiting:
            worst = max(worst, max(served.values()) - min(waiting))
    return worst


def drive(scheduler, politeness, now=0.0, finish=True):
    """Dispatch until nothing is due at ``now``; each request ends at once."""
    order = []
    while (task := scheduler.next(now)) is not None:
        scheduler.dispatched(task, now)
        order.append(task.url)
        if finish:
            politeness.finished(origin_of(task.url), now)
            scheduler.refresh(origin_of(task.url))
    return order


def test_against_the_round_robin_on_the_same_input_each_origin_gets_its_turn():
    tasks = {origin(i): [f"{origin(i)}/p{j}" for j in range(n)] for i, n in enumerate((3, 1, 4, 2))}
    scheduler, politeness = make()
    for urls in tasks.values():
        for url in urls:
            scheduler.push(FetchTask(url, 1))
    heap = drive(scheduler, politeness)
    assert heap == [  # turn by turn, origins in the order they first had work
        origin(0) + "/p0",
        origin(1) + "/p0",
        origin(2) + "/p0",
        origin(3) + "/p0",
        origin(0) + "/p1",
        origin(2) + "/p1",
        origin(3) + "/p1",
        origin(0) + "/p2",
        origin(2) + "/p2",
        origin(2) + "/p3",
    ]
    rr = round_robin(tasks)
    assert sorted(rr) == sorted(heap)
    # the round robin skipped origin 2 in the first turn when origin 1 emptied
    assert rr[:4] == [origin(0) + "/p0", origin(1) + "/p0", origin(3) + "/p0", origin(0) + "/p1"]
    assert max_lag(heap, tasks) == 1 and max_lag(rr, tasks) == 2


def test_fair_over_many_origins_no_origin_gets_a_second_turn_before_all_had_one():
    scheduler, politeness = make()
    for i in range(500):
        for j in range(3):
            scheduler.push(FetchTask(f"{origin(i)}/p{j}", 1))
    order = drive(scheduler, politeness)
    tasks = {origin(i): [f"{origin(i)}/p{j}" for j in range(3)] for i in range(500)}
    assert max_lag(order, tasks) == 1
    assert len(order) == 1500
    for turn in range(3):  # turn k: every origin's k-th page, origins in push order
        assert order[turn * 500 : (turn + 1) * 500] == [f"{origin(i)}/p{turn}" for i in range(500)]


def test_an_origin_with_a_delay_waits_while_the_others_go_on():
    scheduler, politeness = make(per_host=1, delay_s=0.0)
    politeness.host(origin(1)).delay_s = 10.0  # its Crawl-delay, say
    for i in (0, 1):
        for j in range(3):
            scheduler.push(FetchTask(f"{origin(i)}/p{j}", 1))
    assert drive(scheduler, politeness, now=0.0) == [
        origin(0) + "/p0",
        origin(1) + "/p0",
        origin(0) + "/p1",
        origin(0) + "/p2",
    ]
    assert scheduler.wake_at() == 10.0 and scheduler.next(9.99) is None
    assert drive(scheduler, politeness, now=10.0) == [origin(1) + "/p1"]
    assert scheduler.wake_at() == 20.0


def test_an_origin_at_its_in_flight_cap_is_out_until_a_request_finishes():
    scheduler, politeness = make(per_host=2)
    for j in range(4):
        scheduler.push(FetchTask(f"{origin(0)}/p{j}", 1))
    assert drive(scheduler, politeness, finish=False) == [origin(0) + "/p0", origin(0) + "/p1"]
    assert not scheduler.schedulable() and scheduler.next(100.0) is None
    politeness.finished(origin(0), 5.0)
    scheduler.refresh(origin(0))
    assert scheduler.wake_at() == 5.0
    assert drive(scheduler, politeness, now=5.0, finish=False) == [origin(0) + "/p2"]


def test_robots_txt_first_then_pages_and_disallowed_ones_are_skipped():
    scheduler, politeness = make(obey_robots=True)
    for path in ("/a", "/private/b", "/c"):
        scheduler.push(FetchTask(origin(0) + path, 1))
    task = scheduler.next(0.0)
    assert (task.kind, task.url) == (KIND_ROBOTS, origin(0))
    scheduler.dispatched(task, 0.0)
    assert scheduler.next(0.0) is None and not scheduler.schedulable()  # robots.txt in flight
    assert scheduler.blocked_origins()["robots.txt in flight"] == 1
    politeness.set_robots(origin(0), RobotsRules.from_response(200, b"User-agent: *\nDisallow: /private\n", None))
    politeness.finished(origin(0), 1.0)
    scheduler.refresh(origin(0))
    assert drive(scheduler, politeness, now=1.0) == [origin(0) + "/a", origin(0) + "/c"]
    assert [(t.url, reason.startswith("robots.txt")) for t, reason in scheduler.skipped] == [
        (origin(0) + "/private/b", True)
    ]


def test_site_limit_blocks_the_origin_and_a_retry_frees_its_slot():
    scheduler, politeness = make(per_host=8, limit=2)
    tasks = [FetchTask(f"{origin(0)}/p{j}", 1) for j in range(4)]
    for task in tasks:
        scheduler.push(task)
    scheduler.push(FetchTask(origin(1) + "/x", 1))
    assert drive(scheduler, politeness) == [origin(0) + "/p0", origin(1) + "/x", origin(0) + "/p1"]
    assert scheduler.site_full(origin(0)) and not scheduler.schedulable()
    assert scheduler.blocked_origins()[SITE_LIMIT] == 1
    scheduler.undone(tasks[1])  # p1 waits for a retry: not a fetch of its own
    assert drive(scheduler, politeness) == [origin(0) + "/p2"]


def test_stale_heap_entries_are_skipped_and_the_wake_time_is_a_live_origins():
    scheduler, politeness = make(per_host=1, delay_s=5.0)
    scheduler.push(FetchTask(origin(0) + "/a", 1))
    scheduler.push(FetchTask(origin(0) + "/b", 1))
    task = scheduler.next(0.0)
    scheduler.dispatched(task, 0.0)
    assert scheduler.wake_at() is None  # in flight: its old entry is stale, not a wake-up
    politeness.finished(origin(0), 1.0)
    scheduler.refresh(origin(0))
    assert scheduler.wake_at() == 6.0 and len(scheduler) == 1


@pytest.mark.parametrize("kind", [KIND_PAGE])
def test_a_resumed_frontier_is_scheduled_at_once(kind):
    frontier = MemoryFrontier()
    for i in range(3):
        frontier.push(FetchTask(f"{origin(i)}/p", 1, kind=kind))
    politeness = Politeness(obey_robots=False)
    scheduler = Scheduler(frontier, politeness)
    assert drive(scheduler, politeness) == [f"{origin(i)}/p" for i in range(3)]
