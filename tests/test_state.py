"""StateStore and DiskFrontier: the schema and its refusals, exact row states and counts,
the FetchTask round trip, DiskFrontier's order against MemoryFrontier over random
interleavings, the bounded window, a resume, and crashes (os._exit, SIGKILL) in a
subprocess that leave exactly the committed rows."""

import multiprocessing
import os
import pickle
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

import crawler.engine.statestore as state_module
from crawler.engine.diskfrontier import DEFAULT_BUDGET, DiskFrontier
from crawler.engine.frontier import MemoryFrontier
from crawler.engine.messages import KIND_ROBOTS, KIND_SITEMAP, FetchTask
from crawler.engine.statestore import (
    BATCH_ROWS,
    CONTENT_DUPLICATE,
    CONTENT_FIRST,
    CONTENT_NEAR,
    FAILED,
    FRONTIER,
    IN_FLIGHT,
    SKIPPED,
    STATE_FILE,
    STATES,
    VISITED,
    StateError,
    StateStore,
)
from crawler.errors import CrawlerError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def page(name: str, depth: int = 0, host: str = "a.example") -> FetchTask:
    return FetchTask(f"http://{host}/{name}", depth)


def names(tasks) -> list[str]:
    return [t.url.rsplit("/", 1)[1] for t in tasks]


def zero(**counts) -> dict[str, int]:
    totals = dict.fromkeys(STATES, 0)
    totals.update(counts)
    return totals


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / STATE_FILE)


@pytest.fixture
def store(path):
    store = StateStore(path)
    yield store
    store.close()


# -- the file ---------------------------------------------------------------------------
def test_a_new_store_is_an_empty_wal_file_with_normal_sync(store, path):
    assert store.counts() == zero()
    assert store.load_settings() is None
    assert store._connection().execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    with sqlite3.connect(path) as other:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert other.execute("PRAGMA application_id").fetchone()[0] == state_module.APPLICATION_ID
        assert other.execute("PRAGMA user_version").fetchone()[0] == state_module.SCHEMA_VERSION


def test_open_uses_the_state_file_of_the_output_folder(tmp_path):
    store = StateStore.open(str(tmp_path))
    assert store.path == str(tmp_path / STATE_FILE)
    store.close()
    assert os.path.isfile(tmp_path / STATE_FILE)


def test_open_of_a_missing_folder_raises_state_error(tmp_path):
    with pytest.raises(StateError, match="cannot open|unable to open"):
        StateStore.open(str(tmp_path / "missing"))


def test_exists_needs_committed_settings(tmp_path):
    out = str(tmp_path)
    assert StateStore.exists(out) is False  # no file
    store = StateStore.open(out)
    assert StateStore.exists(out) is False  # a store, no settings
    store.save_settings({"seeds": ["http://a.example/"]})
    assert StateStore.exists(out) is False  # not committed yet
    store.commit()
    assert StateStore.exists(out) is True
    store.close()
    assert StateStore.exists(out) is True


def test_settings_round_trip_and_replace(path):
    settings = {
        "seeds": ["http://a.example/", "http://b.example/x?y=1"],
        "max_depth": None,
        "include": ["\\.html$"],
        "workers": 4,
        "nested": {"per_host": 8, "delay_s": 0.5},
    }
    with StateStore(path) as store:
        store.save_settings(settings)
    with StateStore(path) as store:
        assert store.load_settings() == settings
        store.save_settings({"seeds": []})
        assert store.load_settings() == {"seeds": []}


def test_open_run_saves_a_new_crawls_settings_and_returns_a_stored_ones(tmp_path):
    out = str(tmp_path)
    with StateStore.open(out) as store:
        assert store.open_run({"seeds": ["http://a.example/"]}) is None
        assert StateStore.exists(out) is True  # committed at once
    with StateStore.open(out) as store:
        assert store.open_run({"seeds": ["http://b.example/"]}) == {"seeds": ["http://a.example/"]}
        assert store.load_settings() == {"seeds": ["http://a.example/"]}  # not replaced


def test_settle_recorded_moves_a_known_row_and_adds_an_unknown_one(store):
    store.add([page("a"), page("b")])
    store.set_state([page("a").url], IN_FLIGHT)
    assert store.settle_recorded(page("a"), VISITED, "page") is False
    assert store.settle_recorded(page("b"), FAILED, "http 404") is False  # waiting: settled too
    assert store.settle_recorded(page("c", depth=2), VISITED, "redirect") is True  # never had a row
    assert [(store.state_of(page(n).url), store.reason_of(page(n).url)) for n in "abc"] == [
        (VISITED, "page"),
        (FAILED, "http 404"),
        (VISITED, "redirect"),
    ]
    assert [t.depth for t in store.tasks_in(VISITED) if t.url == page("c").url] == [2]
    with pytest.raises(ValueError, match="final state"):
        store.settle_recorded(page("d"), IN_FLIGHT, None)
    assert store.earlier_outcomes() == ({"page": 1, "redirect": 1}, {"http 404": 1})


def test_settings_must_be_json(store):
    with pytest.raises(TypeError):
        store.save_settings({"when": object()})


def test_a_file_that_is_not_sqlite_is_refused(path):
    with open(path, "wb") as f:
        f.write(b"this is not a database\n" * 200)
    with pytest.raises(StateError) as info:
        StateStore(path)
    message = str(info.value)
    assert path in message and "\n" not in message
    assert isinstance(info.value, CrawlerError)
    with pytest.raises(StateError):
        StateStore.exists(os.path.dirname(path))


def test_another_sqlite_database_is_refused_and_left_alone(path):
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE notes (text TEXT)")
    with pytest.raises(StateError, match="not a crawl state store"):
        StateStore(path)
    with sqlite3.connect(path) as other:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # not switched to WAL


def test_a_newer_schema_is_refused(path):
    StateStore(path).close()
    with sqlite3.connect(path) as other:
        other.execute(f"PRAGMA user_version = {state_module.SCHEMA_VERSION + 1}")
    with pytest.raises(StateError, match="newer crawler"):
        StateStore(path)


def test_a_corrupt_file_is_refused(path):
    with StateStore(path) as store:
        store.add(page(f"p{i:05d}-" + "x" * 80) for i in range(3000))
    size = os.path.getsize(path)
    assert size > 40 * 4096
    with open(path, "r+b") as f:  # scribble over pages 10..29 (b-tree pages of the table and indexes)
        f.seek(10 * 4096)
        f.write(bytes(range(256)) * (20 * 4096 // 256))
    with pytest.raises(StateError) as info:
        StateStore(path)
    assert "\n" not in str(info.value)


def test_a_closed_store_raises(path):
    store = StateStore(path)
    store.close()
    store.close()  # idempotent
    with pytest.raises(StateError, match="closed"):
        store.counts()


# -- rows ---------------------------------------------------------------------------------
def test_fetch_tasks_round_trip_exactly(path):
    tasks = [
        FetchTask("http://a.example/", 0),
        FetchTask(
            "http://a.example/b?x=1&y=2",
            3,
            "http://a.example/",
            ("http://a.example/r1", "http://a.example/r2"),
            "http://a.example/b?y=2&x=1",
            2,
            cookies=(
                ("sid", "a b\"c", "a.example", False, "/", True, False, None),
                ("tok", None, ".a.example", True, "/b", True, True, 4102444800),
            ),
        ),
        FetchTask("http://xn--bcher-kva.example/caf%C3%A9", 1, "http://a.example/b?x=1&y=2", (), None, 0),
        FetchTask("http://a.example/quote\"tab\t", 2, None, ("http://a.example/ü",), None, 7),
    ]
    with StateStore(path) as store:
        store.add(tasks)
        assert list(store.tasks_in(FRONTIER)) == [tasks[0], tasks[2], tasks[3], tasks[1]]  # by depth
    with StateStore(path) as store:
        assert list(store.tasks_in(FRONTIER)) == [tasks[0], tasks[2], tasks[3], tasks[1]]
        frontier = DiskFrontier(store)
        assert list(frontier.drain()) == [tasks[0], tasks[2], tasks[3], tasks[1]]


def test_only_page_tasks_are_stored(store):
    for kind in (KIND_SITEMAP, KIND_ROBOTS):
        with pytest.raises(ValueError, match="only page tasks"):
            store.add([page("ok"), FetchTask("http://a.example/s.xml", 0, kind=kind)])
        with pytest.raises(ValueError, match="only page tasks"):
            store.update_task(FetchTask("http://a.example/s.xml", 0, kind=kind), FRONTIER)
    assert store.counts() == zero()


def test_add_ignores_a_url_already_present(store):
    store.add([page("a", 1)], VISITED)
    store.add([page("a", 5), page("b", 2)])
    assert store.state_of("http://a.example/a") == VISITED
    assert list(store.tasks_in(VISITED)) == [page("a", 1)]
    assert store.counts() == zero(frontier=1, visited=1)


def test_content_registry_keeps_64_bit_values_order_and_kinds(store):
    store.add_content("http://a.example/a", 2**64 - 1, 2**63, CONTENT_FIRST)
    store.add_content("http://a.example/b", 2**64 - 1, 2**63, CONTENT_DUPLICATE)
    store.add_content("http://a.example/c", 5, 2**63 - 1, CONTENT_NEAR)
    assert list(store.contents()) == [(2**64 - 1, 2**63, "http://a.example/a"), (5, 2**63 - 1, "http://a.example/c")]
    assert store.content_counts() == {CONTENT_FIRST: 1, CONTENT_DUPLICATE: 1, CONTENT_NEAR: 1}


def test_a_state_file_without_the_content_registry_gains_it(path):
    StateStore(path).close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE contents")  # a file written before the registry existed
    db.close()
    store = StateStore(path)
    try:
        store.add_content("http://a.example/a", 1, 2, CONTENT_FIRST)
        assert list(store.contents()) == [(1, 2, "http://a.example/a")]
    finally:
        store.close()


def test_robots_statuses_keep_the_last_per_origin_across_a_reopen(path):
    store = StateStore(path)
    store.set_robots_status("http://a.example", "unreachable (http 503)")
    store.set_robots_status("https://a.example", "404")
    store.set_robots_status("http://a.example", "200")  # a later attempt answered
    assert store.robots_statuses() == {"http://a.example": "200", "https://a.example": "404"}
    store.close()
    with StateStore(path) as again:
        assert again.robots_statuses() == {"http://a.example": "200", "https://a.example": "404"}


def test_a_state_file_without_the_robots_table_gains_it(path):
    StateStore(path).close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE robots")  # a file written before the table existed
    db.close()
    with StateStore(path) as store:
        assert store.robots_statuses() == {}
        store.set_robots_status("http://a.example:8080", "ignored")
        assert store.robots_statuses() == {"http://a.example:8080": "ignored"}


def test_a_state_file_without_the_cookies_column_gains_it(path):
    StateStore(path).close()
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE urls DROP COLUMN cookies")  # a file written before the column existed
    db.execute(
        "INSERT INTO urls (seq, url, origin, state, depth) VALUES (1, 'http://a.example/old', 'x', 'frontier', 0)"
    )
    db.commit()
    db.close()
    cookie = ("sid", "1", "a.example", False, "/", True, False, None)
    with StateStore(path) as store:
        store.add([FetchTask("http://a.example/new", 0, cookies=(cookie,))])
        assert list(store.tasks_in(FRONTIER)) == [page("old"), FetchTask("http://a.example/new", 0, cookies=(cookie,))]


def test_a_redirect_targets_cookies_survive_the_disk_window(store):
    cookie = ("sid", "1", "a.example", False, "/", True, False, None)
    frontier = DiskFrontier(store, window=1)
    frontier.push(page("first"))
    frontier.push(
        FetchTask("http://a.example/target", 0, "http://a.example/r", ("http://a.example/r",), cookies=(cookie,))
    )
    assert loaded_rows_of(store) == 1  # the target waits on disk only
    assert list(frontier.drain())[1].cookies == (cookie,)


def test_origin_count(store):
    assert store.origin_count() == 0
    store.add([page("a"), page("b"), page("c", host="c.example")])
    store.add([page("x", host="d.example")], SKIPPED, "robots.txt disallows")
    store.set_state(["http://a.example/a"], VISITED, "page")
    assert store.origin_count() == 3


def test_states_counts_reasons_and_crashes(store):
    store.add(page(f"u{i}", i % 3) for i in range(10))
    store.add([page("s1"), page("s2")], SKIPPED, reason="url too long")
    store.set_state(["http://a.example/u0", "http://a.example/u1", "http://a.example/u2"], IN_FLIGHT)
    store.set_state(["http://a.example/u1"], VISITED)
    store.set_state(["http://a.example/u2"], FAILED, reason="http 404")
    assert store.counts() == zero(frontier=7, in_flight=1, visited=1, failed=1, skipped=2)
    assert store.state_of("http://a.example/u2") == FAILED
    assert store.reason_of("http://a.example/u2") == "http 404"
    assert store.reason_of("http://a.example/s2") == "url too long"
    assert store.state_of("http://a.example/nope") is None
    assert store.bump_crashes("http://a.example/u0") == 1
    assert store.bump_crashes("http://a.example/u0") == 2
    assert store.crashes_of("http://a.example/u0") == 2
    assert store.crashes_of("http://a.example/u3") == 0
    with pytest.raises(KeyError):
        store.bump_crashes("http://a.example/nope")
    with pytest.raises(ValueError, match="unknown state"):
        store.set_state(["http://a.example/u3"], "done")
    with pytest.raises(ValueError, match="unknown state"):
        store.add([page("z")], "waiting")
    with pytest.raises(KeyError):
        store.set_state(["http://a.example/u3", "http://a.example/nope"], SKIPPED)
    assert store.state_of("http://a.example/u3") == SKIPPED  # the rest of the batch is moved


def test_set_states_moves_each_url_to_its_own_state_and_reason(store):
    store.add(page(f"u{i}") for i in range(5))
    store.set_state([f"http://a.example/u{i}" for i in range(5)], IN_FLIGHT)
    store.set_states(
        [
            ("http://a.example/u0", VISITED, "page"),
            ("http://a.example/u1", FAILED, "http 404"),
            ("http://a.example/u2", VISITED, "redirect"),
            ("http://a.example/u3", SKIPPED, None),
        ]
    )
    assert [
        (store.state_of(f"http://a.example/u{i}"), store.reason_of(f"http://a.example/u{i}")) for i in range(5)
    ] == [(VISITED, "page"), (FAILED, "http 404"), (VISITED, "redirect"), (SKIPPED, None), (IN_FLIGHT, None)]
    with pytest.raises(ValueError, match="to the frontier"):
        store.set_states([("http://a.example/u4", FRONTIER, None)])
    with pytest.raises(ValueError, match="unknown state"):
        store.set_states([("http://a.example/u4", "done", None)])
    with pytest.raises(KeyError):
        store.set_states([("http://a.example/u4", VISITED, "page"), ("http://a.example/nope", VISITED, "page")])
    assert store.state_of("http://a.example/u4") == VISITED  # the rest of the batch is moved


def test_popped_rows_are_in_flight_for_every_later_reader(store, path):
    frontier = DiskFrontier(store)
    for name in "abc":
        frontier.push(page(name))
    store.commit()
    popped = [frontier.pop().url, frontier.pop().url]
    assert store.counts() == zero(frontier=1, in_flight=2)  # this connection
    store.commit()
    with sqlite3.connect(path) as other:  # another reader, after the commit
        assert dict(other.execute("SELECT url, state FROM urls")) == {
            popped[0]: IN_FLIGHT,
            popped[1]: IN_FLIGHT,
            "http://a.example/c": FRONTIER,
        }
    last = frontier.pop().url
    store.close()  # a pop just before close is written too
    with StateStore(path) as again:
        assert again.state_of(last) == IN_FLIGHT


def test_a_failed_write_of_popped_rows_is_tried_again(store, monkeypatch):
    frontier = DiskFrontier(store)
    frontier.push(page("a"))
    frontier.push(page("b"))
    store.commit()
    frontier.pop()
    begin, failures = store._begin, []

    def fails_once(conn):
        if not failures:
            failures.append(1)
            raise sqlite3.OperationalError("disk I/O error")
        return begin(conn)

    monkeypatch.setattr(store, "_begin", fails_once)
    with pytest.raises(StateError, match="disk I/O error"):
        store.counts()
    assert store.counts() == zero(frontier=1, in_flight=1)  # the pop is written by the next access


def test_set_states_refuses_a_url_waiting_in_the_frontier(store):
    frontier = DiskFrontier(store)
    frontier.push(page("a"))
    frontier.push(page("b"))
    assert frontier.pop().url == "http://a.example/a"
    store.set_states([("http://a.example/a", VISITED, "page")])
    with pytest.raises(ValueError, match="pop it first"):
        store.set_states([("http://a.example/b", VISITED, "page")])
    assert store.counts() == zero(frontier=1, visited=1)


def test_update_task_stores_every_field(store):
    store.add([page("a", 2)])
    store.set_state(["http://a.example/a"], IN_FLIGHT)
    retry = FetchTask(
        "http://a.example/a",
        2,
        "http://a.example/",
        ("http://a.example/r",),
        "http://a.example/A",
        1,
        cookies=(("sid", "1", "a.example", False, "/", True, False, None),),
    )
    store.update_task(retry, IN_FLIGHT)
    assert list(store.tasks_in(IN_FLIGHT)) == [retry]
    store.update_task(retry, FRONTIER)
    assert list(store.tasks_in(FRONTIER)) == [retry]
    with pytest.raises(KeyError):
        store.update_task(page("nope"), FRONTIER)


def test_urls_in_by_seq_and_tasks_in_by_depth_then_seq(store, monkeypatch):
    monkeypatch.setattr(state_module, "BATCH_ROWS", 3)  # several pages per stream
    depths = [2, 0, 1, 0, 2, 1, 0, 3, 1, 0, 2]
    store.add(page(f"u{i}", d) for i, d in enumerate(depths))
    store.set_state([f"http://a.example/u{i}" for i in (1, 4, 7, 8)], IN_FLIGHT)
    store.set_state([f"http://a.example/u{i}" for i in (0, 9)], VISITED)
    assert list(store.urls_in(FRONTIER)) == [f"http://a.example/u{i}" for i in (2, 3, 5, 6, 10)]
    assert list(store.urls_in(VISITED, IN_FLIGHT)) == [f"http://a.example/u{i}" for i in (0, 1, 4, 7, 8, 9)]
    assert list(store.urls_in(*STATES)) == [f"http://a.example/u{i}" for i in range(11)]
    assert names(store.tasks_in(*STATES)) == ["u1", "u3", "u6", "u9", "u2", "u5", "u8", "u0", "u4", "u10", "u7"]
    assert names(store.tasks_in(IN_FLIGHT, FRONTIER)) == ["u1", "u3", "u6", "u2", "u5", "u8", "u4", "u10", "u7"]
    assert list(store.urls_in(FAILED)) == []
    with pytest.raises(ValueError):
        list(store.urls_in("nowhere"))


def test_moving_back_to_frontier_queues_behind_the_others(store):
    store.add([page("a"), page("b"), page("c")])
    store.set_state(["http://a.example/a"], IN_FLIGHT)
    store.set_state(["http://a.example/a"], FRONTIER)
    assert names(store.tasks_in(FRONTIER)) == ["b", "c", "a"]


def test_uncommitted_writes_are_visible_here_and_not_elsewhere(store, path):
    store.add([page("a")])
    assert store.counts() == zero(frontier=1)
    with sqlite3.connect(path) as other:
        assert other.execute("SELECT count(*) FROM urls").fetchone()[0] == 0
    store.commit()
    with sqlite3.connect(path) as other:
        assert other.execute("SELECT count(*) FROM urls").fetchone()[0] == 1


def test_close_commits(path):
    store = StateStore(path)
    store.add([page("a")])
    store.close()
    with StateStore(path) as again:
        assert again.counts() == zero(frontier=1)


def test_reset_for_resume_puts_in_flight_back(store):
    store.add(page(f"u{i}") for i in range(6))
    store.set_state(["http://a.example/u1", "http://a.example/u4"], IN_FLIGHT)
    store.set_state(["http://a.example/u5"], VISITED)
    assert store.reset_for_resume() == 2
    assert store.counts() == zero(frontier=5, visited=1)
    assert names(store.tasks_in(FRONTIER)) == ["u0", "u1", "u2", "u3", "u4"]  # seq kept
    assert store.reset_for_resume() == 0


# -- DiskFrontier ---------------------------------------------------------------------------
def test_disk_frontier_is_lowest_depth_first_fifo_within_a_depth(store):
    frontier = DiskFrontier(store, window=2)
    for name, depth in [("d2", 2), ("d0", 0), ("c3", 3), ("d1", 1), ("a3", 3), ("b3", 3)]:
        frontier.push(page(name, depth))
    assert len(frontier) == 6
    assert names(frontier.pop() for _ in range(6)) == ["d0", "d1", "d2", "c3", "a3", "b3"]
    assert len(frontier) == 0
    with pytest.raises(IndexError):
        frontier.pop()
    with pytest.raises(IndexError):
        frontier.pop("http://a.example")


def test_a_lower_depth_push_overtakes_a_full_window(store, path):
    frontier = DiskFrontier(store, window=2)
    for name in ("a2", "b2", "c2", "d2"):
        frontier.push(page(name, 2))
    assert loaded_rows_of(store) == 2  # a2 b2 in memory, c2 d2 on disk
    frontier.push(page("e1", 1))  # must come out before a2: enters, b2 goes back to disk
    frontier.push(page("f0", 0))  # and a2 too
    assert loaded_rows_of(store) == 2
    frontier.push(page("g1", 1))  # after e1, before the disk rows of depth 2: stays on disk
    assert loaded_rows_of(store) == 2
    assert names(frontier.drain()) == ["f0", "e1", "g1", "a2", "b2", "c2", "d2"]
    assert loaded_rows_of(store) == 0
    assert store.counts() == zero(in_flight=7)


def loaded_rows_of(store) -> int:
    return store._connection().execute("SELECT count(*) FROM urls WHERE loaded = 1").fetchone()[0]


def test_the_window_stays_bounded(store):
    frontier = DiskFrontier(store, window=5)
    rng = random.Random(7)
    for i in range(200):
        frontier.push(page(f"u{i}", rng.randrange(4), host=f"h{i % 2}.example"))
        assert loaded_rows_of(store) <= 10
    while frontier:
        frontier.pop()
        assert loaded_rows_of(store) <= 10
    assert store.counts() == zero(in_flight=200)


def test_the_budget_bounds_memory_over_many_origins(store):
    frontier = DiskFrontier(store, window=1000, budget=60)
    origins = 40
    for i in range(2000):
        frontier.push(page(f"u{i}", i % 3, host=f"h{i % origins}.example"))
        assert loaded_rows_of(store) <= 60 + origins
    assert frontier._in_memory == loaded_rows_of(store)
    order = [task.url for task in frontier.drain()]
    assert len(order) == len(set(order)) == 2000
    assert frontier._in_memory == loaded_rows_of(store) == 0


def _random_run(seed: int, window: int, store: StateStore, budget: int = DEFAULT_BUDGET) -> None:
    """Random pushes and pops (of an origin or any), push-backs of popped tasks with a
    new attempt, sitemap tasks and commits, on a DiskFrontier and a MemoryFrontier:
    the same tasks must come out in the same order."""
    rng = random.Random(seed)
    disk, memory = DiskFrontier(store, window=window, budget=budget), MemoryFrontier()
    hosts = ["h0.example", "h1.example", "h2.example", "h3.example:8080"]
    popped: list[FetchTask] = []
    out_disk, out_memory = [], []
    fresh = 0
    for step in range(1500):
        roll = rng.random()
        if roll < 0.45:
            fresh += 1
            kind = KIND_SITEMAP if rng.random() < 0.05 else "page"
            task = FetchTask(
                f"http://{rng.choice(hosts)}/n{fresh}",
                rng.choice([0, 1, 1, 2, 2, 2, 3, 5]),
                f"http://h0.example/p{fresh}",
                kind=kind,
            )
            disk.push(task)
            memory.push(task)
        elif roll < 0.52 and popped:
            back = popped.pop(rng.randrange(len(popped)))
            back = FetchTask(
                back.url, back.depth, back.parent, back.redirect_chain, back.request_url, back.attempt + 1, back.kind
            )
            disk.push(back)
            memory.push(back)
        elif roll < 0.97:
            origin = None if rng.random() < 0.3 else "http://" + rng.choice(hosts + ["nobody.example"])
            try:
                expected = memory.pop(origin)
            except IndexError:
                with pytest.raises(IndexError):
                    disk.pop(origin)
                continue
            got = disk.pop(origin)
            out_memory.append(expected)
            out_disk.append(got)
            assert got == expected, f"seed {seed} step {step}"
            popped.append(got)
        else:
            store.commit()
        assert len(disk) == len(memory)
        assert disk.origins() == memory.origins()
    out_disk.extend(disk.drain())
    out_memory.extend(memory.drain())
    assert out_disk == out_memory
    assert len(disk) == 0 and disk.origins() == []
    pages = {t.url for t in out_memory if t.kind == "page"}
    assert store.counts() == zero(in_flight=len(pages))


@pytest.mark.parametrize("window", [1, 3, 20, 1000])
@pytest.mark.parametrize("seed", range(4))
def test_same_order_as_memory_frontier_for_random_interleavings(store, seed, window):
    _random_run(seed * 100 + window, window, store)


@pytest.mark.parametrize("budget", [1, 5])
def test_same_order_as_memory_frontier_under_a_small_budget(store, budget):
    _random_run(budget, 20, store, budget=budget)


def test_sitemap_tasks_are_ordered_but_not_stored(path):
    with StateStore(path) as store:
        frontier = DiskFrontier(store, window=1)
        frontier.push(page("p1", 1))
        frontier.push(page("p2", 1))
        frontier.push(FetchTask("http://a.example/sitemap.xml", 0, kind=KIND_SITEMAP))
        frontier.push(FetchTask("http://a.example/sub.xml", 1, kind=KIND_SITEMAP))
        assert len(frontier) == 4
        assert store.counts() == zero(frontier=2)
    with StateStore(path) as store:
        frontier = DiskFrontier(store)
        assert len(frontier) == 2
        assert names(frontier.drain()) == ["p1", "p2"]
    with StateStore(path) as store:
        frontier = DiskFrontier(store, window=1)
        frontier.push(page("p3", 1))
        frontier.push(page("p4", 1))
        frontier.push(FetchTask("http://a.example/sitemap.xml", 0, kind=KIND_SITEMAP))
        frontier.push(FetchTask("http://a.example/sub.xml", 1, kind=KIND_SITEMAP))
        assert names(frontier.drain()) == ["sitemap.xml", "p3", "p4", "sub.xml"]


def test_pop_marks_in_flight_and_push_back_updates_the_row(store):
    frontier = DiskFrontier(store, window=2)
    for name in ("a", "b", "c"):
        frontier.push(page(name, 1))
    task = frontier.pop()
    assert store.state_of(task.url) == IN_FLIGHT
    assert store.counts() == zero(frontier=2, in_flight=1)
    retry = FetchTask(task.url, 1, "http://a.example/", (), "http://a.example/A", 1)
    frontier.push(retry)  # a retry: behind b and c, with its new attempt
    assert store.counts() == zero(frontier=3)
    assert list(store.tasks_in(FRONTIER))[-1] == retry
    assert names(frontier.drain()) == ["b", "c", "a"]


def test_push_refuses_a_url_waiting_or_done(store):
    frontier = DiskFrontier(store)
    frontier.push(page("a"))
    with pytest.raises(ValueError, match="it is frontier"):
        frontier.push(page("a"))
    frontier.pop()
    store.set_state(["http://a.example/a"], VISITED)
    with pytest.raises(ValueError, match="it is visited"):
        frontier.push(page("a"))
    assert len(frontier) == 0
    assert frontier.origins() == []
    assert store.counts() == zero(visited=1)


def test_the_frontier_owns_its_rows(store):
    store.add([page("a"), page("b")])
    frontier = DiskFrontier(store)
    with pytest.raises(ValueError, match="push to it"):
        store.add([page("c")])
    with pytest.raises(ValueError, match="push to it"):
        store.set_state(["http://a.example/a"], FRONTIER)
    with pytest.raises(ValueError, match="pop it first"):
        store.set_state(["http://a.example/a"], SKIPPED)
    with pytest.raises(ValueError, match="pop it first"):
        store.update_task(page("b"), VISITED)
    with pytest.raises(ValueError, match="before the DiskFrontier"):
        store.reset_for_resume()
    with pytest.raises(ValueError, match="already has"):
        DiskFrontier(store)
    with pytest.raises(ValueError, match="at least 1"), StateStore(store.path + "2") as other:
        DiskFrontier(other, window=0)
    store.add([page("d")], SKIPPED, reason="query variants")  # other states are fine
    assert store.counts() == zero(frontier=2, skipped=1)
    assert names(frontier.drain()) == ["a", "b"]


def test_resume_brings_in_flight_tasks_back_first(path):
    with StateStore(path) as store:
        frontier = DiskFrontier(store, window=3)
        for i in range(8):
            frontier.push(page(f"a{i}", i % 2))
        frontier.push(page("b0", 0, host="b.example"))
        frontier.push(page("b1", 1, host="b.example"))
        first = [frontier.pop("http://a.example") for _ in range(3)]
        assert names(first) == ["a0", "a2", "a4"]
        store.set_state([first[1].url], VISITED)
        store.set_state([first[2].url], FAILED, reason="http 500")
        store.commit()
        frontier.pop("http://b.example")  # in flight, not committed: lost at the "crash"
        store._conn.close()  # a crash: closed without a commit, the last pop is lost
        store._closed = True
    with StateStore(path) as store:
        assert store.counts() == zero(frontier=7, in_flight=1, visited=1, failed=1)
        assert store.reset_for_resume() == 1
        frontier = DiskFrontier(store, window=2)
        assert len(frontier) == 8
        assert frontier.origins() == ["http://a.example", "http://b.example"]
        # pop(None): the first origin whose lowest depth is lowest: a0 (back from in
        # flight, with its old seq) and a6, then b0, then depth 1 of a, then b1
        assert names(frontier.drain()) == ["a0", "a6", "b0", "a1", "a3", "a5", "a7", "b1"]
        assert store.counts() == zero(in_flight=8, visited=1, failed=1)


def test_a_frontier_over_existing_rows_knows_its_size_without_loading(store):
    store.add(page(f"u{i}", i % 3, host=f"h{i % 4}.example") for i in range(400))
    frontier = DiskFrontier(store, window=10)
    assert len(frontier) == 400
    assert frontier.origins() == [f"http://h{i}.example" for i in range(4)]
    assert loaded_rows_of(store) == 0
    task = frontier.pop("http://h2.example")
    assert task == page("u6", 0, host="h2.example")  # h2: u2 (depth 2), u6 (depth 0), ...
    assert loaded_rows_of(store) == 9
    assert len(frontier) == 399


# -- crashes and processes ------------------------------------------------------------
CRASH_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, sys.argv[3])
    from crawler.engine.messages import FetchTask
    from crawler.engine.diskfrontier import DiskFrontier
    from crawler.engine.statestore import StateStore, VISITED

    path, how = sys.argv[1], sys.argv[2]
    store = StateStore(path)
    frontier = DiskFrontier(store, window=50)
    for i in range(500):
        frontier.push(FetchTask(f"http://a.example/c{i}", i % 3))
    for _ in range(100):
        frontier.pop()
    store.commit()
    store._connection().execute("PRAGMA cache_size = 5")  # spill uncommitted pages to the WAL
    for i in range(3000):
        frontier.push(FetchTask(f"http://a.example/u{i}-" + "x" * 100, 1))
    store.set_state([frontier.pop().url for _ in range(50)], VISITED)
    print("ready", flush=True)
    if how == "exit":
        os._exit(3)
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.parametrize("how, code", [("exit", 3), ("kill", -signal.SIGKILL)])
def test_a_crash_keeps_exactly_the_committed_rows(path, how, code):
    done = subprocess.run(
        [sys.executable, "-c", CRASH_SCRIPT, path, how, ROOT], capture_output=True, text=True, timeout=120
    )
    assert done.stdout == "ready\n", done.stderr
    assert done.returncode == code
    assert os.path.getsize(path + "-wal") > 100 * 4096  # the uncommitted pages were there
    with sqlite3.connect(path) as other:
        assert other.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    with StateStore(path) as store:
        assert store.counts() == zero(frontier=400, in_flight=100)
        # the first 100 popped: depth 0 in push order (c0, c3, ..., c297)
        assert list(store.urls_in(IN_FLIGHT)) == [f"http://a.example/c{i}" for i in range(0, 300, 3)]
        assert store.reset_for_resume() == 100
        frontier = DiskFrontier(store)
        expected = [f"c{i}" for d in range(3) for i in range(500) if i % 3 == d]
        assert names(frontier.drain()) == expected


def _child_add(store: StateStore, first: int) -> None:
    store.add(page(f"child{first + i}") for i in range(5))
    store.set_state([f"http://a.example/child{first}"], VISITED)
    store.close()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_store_made_here_is_used_in_a_child(path, method):
    store = StateStore(path)  # checked, not connected: the child opens its own connection
    ctx = multiprocessing.get_context(method)
    child = ctx.Process(target=_child_add, args=(store, 0))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert store.counts() == zero(frontier=4, visited=1)
    store.close()
    again = pickle.loads(pickle.dumps(StateStore(path)))
    assert list(again.urls_in(VISITED)) == ["http://a.example/child0"]
    again.close()


def test_a_forked_child_never_uses_the_parents_connection(path):
    store = StateStore(path)
    store.add([page("parent")])
    store.commit()  # the parent's connection is open, no transaction
    pid = os.fork()
    if pid == 0:  # the child: a connection of its own
        try:
            _child_add(store, 10)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert store.counts() == zero(frontier=5, visited=1)
    store.add([page("parent2")])
    store.close()
    with StateStore(path) as again:
        assert list(again.urls_in(FRONTIER)) == ["http://a.example/parent"] + [
            f"http://a.example/child{i}" for i in range(11, 15)
        ] + ["http://a.example/parent2"]


# -- a popped row whose take is pending (StateStore.take_row), in a set_states that
# raises part-way: found by a reviewer of the deferred takes


TAKES = "http://a.example/"


@pytest.fixture
def popped_store(tmp_path):
    """A store with ``BATCH_ROWS`` rows already in flight (o0..o999), and a DiskFrontier
    holding /p and /w; /p is popped (its take pending), /w waits."""
    path = str(tmp_path / STATE_FILE)
    store = StateStore(path)
    store.add(FetchTask(f"{TAKES}o{i}", 0) for i in range(BATCH_ROWS))
    store.set_state([f"{TAKES}o{i}" for i in range(BATCH_ROWS)], IN_FLIGHT)
    frontier = DiskFrontier(store)
    frontier.push(FetchTask(TAKES + "p", 0))
    frontier.push(FetchTask(TAKES + "w", 0))
    store.commit()
    assert frontier.pop().url == TAKES + "p"
    yield path, store, frontier
    store.close()


def test_a_refused_batch_leaves_the_popped_row_in_flight(popped_store):
    path, store, frontier = popped_store
    with pytest.raises(ValueError, match="to the frontier"):
        store.set_states([(TAKES + "p", VISITED, "page"), (TAKES + "o0", FRONTIER, None)])
    assert store.state_of(TAKES + "p") == IN_FLIGHT  # the take is kept, and written


def test_after_a_refused_batch_the_popped_task_can_be_put_back(popped_store):
    path, store, frontier = popped_store
    with pytest.raises(ValueError, match="unknown state"):
        store.set_states([(TAKES + "p", VISITED, "page"), (TAKES + "o0", "done", None)])
    frontier.push(FetchTask(TAKES + "p", 0))  # as a dead fetcher's task is put back


def test_after_a_refused_batch_and_a_crash_the_resume_counts_the_row_in_flight(popped_store):
    path, store, frontier = popped_store
    with pytest.raises(ValueError):
        store.set_states([(TAKES + "p", VISITED, "page"), (TAKES + "o0", FRONTIER, None)])
    store.close()
    with StateStore(path) as again:
        assert again.state_of(TAKES + "p") == IN_FLIGHT
        assert again.reset_for_resume() == BATCH_ROWS + 1


def test_key_error_in_a_full_batch_still_moves_the_other_urls_of_the_batch(popped_store):
    path, store, frontier = popped_store
    rows = [(TAKES + "p", VISITED, "page")] + [(f"{TAKES}o{i}", VISITED, "page") for i in range(BATCH_ROWS - 1)]
    with pytest.raises(KeyError):
        store.set_states(rows + [(TAKES + "nope", VISITED, "page")])
    # set_state's docstring: "The other URLs of its batch of 1,000 (and earlier batches) are moved."
    assert store.state_of(TAKES + "o0") == VISITED
    assert store.state_of(TAKES + "p") == VISITED


def test_a_popped_url_named_twice_across_a_full_batch_is_settled_by_its_last_row(popped_store):
    path, store, frontier = popped_store
    rows = [(TAKES + "p", VISITED, "page")] + [(f"{TAKES}o{i}", VISITED, "page") for i in range(BATCH_ROWS - 1)]
    store.set_states(rows + [(TAKES + "p", FAILED, "http 500")])
    assert store.state_of(TAKES + "p") == FAILED
