"""VisitedTable in-process, through the manager under every start method, and the
cross-process claim race: every URL is won exactly once."""

import multiprocessing
import queue as queue_module
import random
from multiprocessing.managers import RemoteError

import pytest

from crawler.engine.visited import STATE_NAMES, OfferedKeys, VisitedTable, start_manager
from crawler.web.urlnorm import fingerprint

START_METHODS = ["fork", "spawn", "forkserver"]
WAIT_S = 60  # ceiling on every blocking wait in this file; normal runs take well under 5 s


def url(n: int) -> str:
    return f"http://example.org/page/{n}"


# --- in-process -----------------------------------------------------------------------


def test_claim_wins_once():
    table = VisitedTable()
    assert table.claim(url(1)) is True
    assert table.claim(url(1)) is False
    assert table.claim(url(2)) is True
    assert table.state(url(1)) == "in_flight"
    assert len(table) == 2


def test_claim_many_returns_one_bool_per_url_in_order():
    table = VisitedTable(4)
    table.claim(url(2))
    assert table.claim_many([url(1), url(2), url(3)]) == [True, False, True]
    assert table.claim_many([]) == []
    assert len(table) == 3


def test_claim_many_duplicate_within_one_batch_is_won_once():
    table = VisitedTable(8)
    assert table.claim_many([url(5), url(6), url(5), url(5), url(7)]) == [True, True, False, False, True]
    assert len(table) == 3
    assert table.counts() == {"in_flight": 3, "visited": 0, "failed": 0, "skipped": 0}


def test_claim_many_accepts_a_tuple():
    table = VisitedTable()
    assert table.claim_many((url(1), url(1))) == [True, False]


def test_state_names_through_every_transition():
    assert STATE_NAMES == {1: "in_flight", 2: "visited", 3: "failed", 4: "skipped"}
    table = VisitedTable()
    assert table.state(url(0)) is None
    for n in range(1, 6):
        table.claim(url(n))
    table.mark(url(1), "visited")
    table.mark(url(2), "failed")
    table.mark(url(3), "skipped")
    table.mark_visited(url(4))
    table.mark_failed(url(5))
    assert [table.state(url(n)) for n in range(6)] == [None, "visited", "failed", "skipped", "visited", "failed"]
    assert table.counts() == {"in_flight": 0, "visited": 2, "failed": 2, "skipped": 1}
    assert len(table) == 5


def test_a_final_url_cannot_be_claimed_again():
    table = VisitedTable()
    table.claim(url(1))
    table.mark_visited(url(1))
    assert table.claim(url(1)) is False
    assert table.claim_many([url(1)]) == [False]
    assert table.state(url(1)) == "visited"


def test_marking_an_unseen_url_raises():
    table = VisitedTable()
    with pytest.raises(ValueError, match="it is unseen, not in flight"):
        table.mark(url(1), "visited")
    with pytest.raises(ValueError, match="unseen"):
        table.mark_visited(url(1))
    with pytest.raises(ValueError, match="unseen"):
        table.mark_failed(url(1))
    assert table.state(url(1)) is None
    assert len(table) == 0


@pytest.mark.parametrize("first", ["visited", "failed", "skipped"])
@pytest.mark.parametrize("second", ["visited", "failed", "skipped"])
def test_marking_an_already_final_url_raises_and_keeps_the_state(first, second):
    table = VisitedTable()
    table.claim(url(1))
    table.mark(url(1), first)
    with pytest.raises(ValueError, match=f"it is {first}, not in flight"):
        table.mark(url(1), second)
    assert table.state(url(1)) == first


def test_unknown_state_raises_and_changes_nothing():
    table = VisitedTable()
    table.claim(url(1))
    for bad in ("in_flight", "done", "VISITED", ""):
        with pytest.raises(ValueError, match="unknown final state"):
            table.mark(url(1), bad)
    assert table.state(url(1)) == "in_flight"


def test_mark_many():
    table = VisitedTable()
    table.claim_many([url(1), url(2), url(3)])
    table.mark_many([url(1), url(3)], "skipped")
    assert table.counts() == {"in_flight": 1, "visited": 0, "failed": 0, "skipped": 2}


def test_settle_marks_and_claims_in_one_call():
    table = VisitedTable()
    table.claim_many([url(0), url(2)])
    assert table.settle(url(0), "visited", [url(1), url(2), url(3), url(1)]) == [True, False, True, False]
    assert table.state(url(0)) == "visited"
    assert table.counts() == {"in_flight": 3, "visited": 1, "failed": 0, "skipped": 0}


def test_settle_of_a_url_not_in_flight_raises_before_claiming():
    table = VisitedTable()
    with pytest.raises(ValueError):
        table.settle(url(0), "visited", [url(1)])
    assert table.state(url(1)) is None
    assert len(table) == 0


@pytest.mark.parametrize("shards", [3, 0, 48, -4, 6, 100])
def test_non_power_of_two_shard_count_raises(shards):
    with pytest.raises(ValueError, match=f"power of two, got {shards}"):
        VisitedTable(shards)


@pytest.mark.parametrize("shards", [1, 2, 64])
def test_power_of_two_shard_counts_work(shards):
    table = VisitedTable(shards)
    assert table.shard_count == shards
    urls = [url(n) for n in range(200)]
    assert table.claim_many(urls) == [True] * 200
    assert table.claim_many(urls) == [False] * 200
    assert len(table) == 200


def test_default_shard_count_is_64():
    assert VisitedTable().shard_count == 64


@pytest.mark.parametrize("shards", [1, 2, 8, 64])
def test_urls_live_in_shard_fingerprint_and_mask(shards):
    table = VisitedTable(shards)
    urls = [url(n) for n in range(1000)]
    table.claim_many(urls)
    expected = [set() for _ in range(shards)]
    for u in urls:
        expected[fingerprint(u) & (shards - 1)].add(fingerprint(u))
    assert [set(shard) for shard in table._shards] == expected
    assert sum(len(s) for s in table._shards) == 1000
    if shards > 1:  # 1000 URLs over <= 64 shards: none may be empty if spread
        assert all(table._shards)


# --- through the manager --------------------------------------------------------------


@pytest.fixture(params=START_METHODS)
def manager_ctx(request):
    ctx = multiprocessing.get_context(request.param)
    manager = start_manager(ctx)
    request.addfinalizer(manager.shutdown)
    return manager, ctx


def _child_work(table, urls, out) -> None:
    """In a child: claim, mark some, report what was won and the table's view."""
    won = table.claim_many(urls)
    mine = [u for u, w in zip(urls, won) if w]
    for u in mine[:2]:
        table.mark_visited(u)
    out.put((won, table.state(urls[0]), len(table)))


def test_manager_proxy_methods(manager_ctx):
    manager, _ctx = manager_ctx
    table = manager.VisitedTable(64)
    assert table.claim(url(1)) is True
    assert table.claim(url(1)) is False
    assert table.claim_many((url(2), url(3), url(2))) == [True, True, False]
    table.mark(url(1), "visited")
    table.mark_failed(url(2))
    assert table.settle(url(3), "skipped", (url(4), url(1))) == [True, False]
    table.mark_many([url(4)], "visited")
    assert [table.state(url(n)) for n in range(6)] == [None, "visited", "failed", "skipped", "visited", None]
    assert len(table) == 4
    assert table.counts() == {"in_flight": 0, "visited": 2, "failed": 1, "skipped": 1}


def test_manager_proxy_reraises_value_error(manager_ctx):
    manager, _ctx = manager_ctx
    table = manager.VisitedTable(64)
    with pytest.raises(ValueError, match="unseen"):
        table.mark_visited(url(9))
    table.claim(url(9))
    with pytest.raises(ValueError, match="unknown final state"):
        table.mark(url(9), "bogus")
    assert table.state(url(9)) == "in_flight"


def test_manager_rejects_a_bad_shard_count(manager_ctx):
    # an exception in a manager-side constructor arrives as RemoteError carrying the
    # server's traceback text (multiprocessing.managers behaviour)
    manager, _ctx = manager_ctx
    with pytest.raises(RemoteError, match="shards must be a power of two, got 48"):
        manager.VisitedTable(48)


def test_proxy_is_passed_to_a_child_process(manager_ctx):
    manager, ctx = manager_ctx
    table = manager.VisitedTable(64)
    table.claim(url(0))
    out = ctx.Queue()
    child = ctx.Process(target=_child_work, args=(table, [url(0), url(1), url(2), url(1)], out))
    child.start()
    try:
        won, first_state, size = out.get(timeout=WAIT_S)
    finally:
        child.join(WAIT_S)
    assert child.exitcode == 0
    assert won == [False, True, True, False]
    assert first_state == "in_flight"
    assert size == 3
    # the child's marks are visible to the parent: the table is shared, not copied
    assert table.counts() == {"in_flight": 1, "visited": 2, "failed": 0, "skipped": 0}


# --- the race -------------------------------------------------------------------------

RACE_PROCESSES = 6
RACE_URLS = 2000
RACE_BATCH = 50


def _race_worker(table, seed: int, go, out) -> None:
    urls = [url(n) for n in range(RACE_URLS)]
    random.Random(seed).shuffle(urls)
    won = []
    go.wait(WAIT_S)
    for start in range(0, len(urls), RACE_BATCH):
        batch = urls[start : start + RACE_BATCH]
        won.extend(u for u, w in zip(batch, table.claim_many(batch)) if w)
    out.put((seed, won))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_race_every_url_is_won_exactly_once(method):
    ctx = multiprocessing.get_context(method)
    manager = start_manager(ctx)
    children = []
    try:
        table = manager.VisitedTable(64)
        go = ctx.Event()
        out = ctx.Queue()
        children = [ctx.Process(target=_race_worker, args=(table, seed, go, out)) for seed in range(RACE_PROCESSES)]
        for child in children:
            child.start()
        go.set()
        results = {}
        for _ in children:
            try:
                seed, won = out.get(timeout=WAIT_S)
            except queue_module.Empty:
                pytest.fail(f"a race worker did not report within {WAIT_S} s")
            results[seed] = won
        for child in children:
            child.join(WAIT_S)
        assert [c.exitcode for c in children] == [0] * RACE_PROCESSES
        assert sorted(results) == list(range(RACE_PROCESSES))
        everything = {url(n) for n in range(RACE_URLS)}
        wins = [u for won in results.values() for u in won]
        assert len(wins) == RACE_URLS
        assert set(wins) == everything
        assert len(table) == RACE_URLS
        assert table.counts() == {"in_flight": RACE_URLS, "visited": 0, "failed": 0, "skipped": 0}
    finally:
        for child in children:
            if child.is_alive():
                child.kill()
                child.join(WAIT_S)
        manager.shutdown()


def test_offered_keys_first_offer_then_forget_at_the_limit():
    offered = OfferedKeys(limit=2)
    assert [offered.first_offer(k) for k in ("http://h/a", "http://h/a", "http://h/b")] == [True, False, True]
    assert len(offered) == 2
    assert offered.first_offer("http://h/c") is True  # the limit empties the set first
    assert len(offered) == 1
    assert offered.first_offer("http://h/a") is True  # forgotten: offered again
    assert OfferedKeys(limit=0).limit == 1


def test_first_content_registers_the_first_url_and_names_it_to_the_others():
    table = VisitedTable(4)
    assert table.first_content(0xABCDEF, "http://h/a") is None
    assert table.first_content(0xABCDEF, "http://h/a") is None  # the same URL again
    assert table.first_content(0xABCDEF, "http://h/b") == "http://h/a"
    assert table.first_content(2**64 - 1, "http://h/c") is None


def test_first_content_through_the_manager():
    import multiprocessing

    manager = start_manager(multiprocessing.get_context("spawn"))
    try:
        table = manager.VisitedTable(8)
        assert table.first_content(7, "http://h/a") is None
        assert table.first_content(7, "http://h/b") == "http://h/a"
    finally:
        manager.shutdown()
