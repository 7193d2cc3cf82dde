"""The state a crawl shares through Redis (crawler/engine/rediscrawl.py, leases.py),
against a real redis-server on 127.0.0.1."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from crawler.engine.leases import ShardLeases
from crawler.engine.messages import FetchTask
from crawler.engine.rediscrawl import FENCED, ClusterMismatch, RedisCrawl, page_task
from tests.helpers.redisserver import RedisServer


@pytest.fixture
def redis_url(tmp_path):
    with RedisServer(str(tmp_path)) as server:
        yield server.url


def _claim_all(url: str, name: str, urls: list[str], start: multiprocessing.synchronize.Event, out) -> None:
    crawl = RedisCrawl(url, name)
    start.wait(30)
    won = []
    for at in range(0, len(urls), 1000):
        batch = urls[at : at + 1000]
        won += [u for u, w in zip(batch, crawl.claim_tasks([page_task(u) for u in batch])) if w]
    out.put(won)


def test_four_processes_racing_on_100000_urls_win_each_exactly_once(redis_url):
    crawl = RedisCrawl(redis_url, "race")
    crawl.create_or_join({"seeds": ["http://127.0.0.1/"]})
    urls = [f"http://h{n % 7}.test/p/{n}" for n in range(100_000)]
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    # each process claims in its own order, so the races are on every URL
    orders = [urls, urls[::-1], urls[50_000:] + urls[:50_000], urls[1::2] + urls[::2]]
    procs = [ctx.Process(target=_claim_all, args=(redis_url, "race", order, start, out)) for order in orders]
    for proc in procs:
        proc.start()
    start.set()
    won = [out.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(30)
    every = [u for w in won for u in w]
    assert len(every) == 100_000 and set(every) == set(urls)
    assert all(won)  # every process won some: the claims did race
    counts = crawl.counts()
    assert counts["claimed"] == counts["open"] == 100_000
    queued = sum(crawl.client.xlen(crawl.stream_key(s)) for s in range(crawl.frontier_shards))
    assert queued == 100_000


def test_settle_marks_acknowledges_and_queues_the_links_won_in_one_step(redis_url):
    crawl = RedisCrawl(redis_url, "settle", frontier_shards=1)
    crawl.create_or_join({"seeds": ["http://a.test/"]})
    assert crawl.claim_tasks([page_task("http://a.test/"), page_task("http://a.test/")]) == [True, False]
    leases = ShardLeases(crawl, "m1", ttl_s=30)
    token = leases.acquire(0)
    assert token == "m1:1" and leases.acquire(0) is None
    [seed] = crawl.read(0, "m1", token, 10)
    assert seed.url == "http://a.test/" and seed.ticket == f"{token}|" + seed.ticket.split("|")[1]
    assert crawl.pending(0) == {"m1": 1} and crawl.waiting(0) == 0
    links = [FetchTask("http://a.test/x", 1, seed.url), FetchTask("http://a.test/", 1, seed.url)]
    assert crawl.settle(seed, "visited", links) == [True, False]
    assert crawl.state(seed.url) == "visited" and crawl.state("http://a.test/x") == "in_flight"
    assert crawl.counts() == {"claimed": 2, "open": 1, "visited": 1, "failed": 0, "skipped": 0}
    assert crawl.pending(0) == {} and crawl.waiting(0) == 1  # the seed's entry is gone, x waits
    assert crawl.settle(seed, "visited", links) == []  # a repeated settle changes nothing
    assert crawl.counts()["open"] == 1
    [x] = crawl.read(0, "m1", token, 10)
    assert (x.url, x.depth, x.parent) == ("http://a.test/x", 1, "http://a.test/")
    assert crawl.settle(x, "failed") == []
    assert crawl.open_count() == 0 and crawl.counts()["failed"] == 1
    with pytest.raises(ValueError, match="unknown final state"):
        crawl.settle(x, "in_flight")


def test_a_stalled_holder_is_fenced_and_the_new_holder_takes_its_entries_over(redis_url):
    crawl = RedisCrawl(redis_url, "fence", frontier_shards=1)
    crawl.create_or_join({"seeds": []})
    crawl.claim_tasks([page_task(f"http://a.test/{n}") for n in range(3)])
    a, b = ShardLeases(crawl, "a", ttl_s=0.3), ShardLeases(crawl, "b", ttl_s=30)
    token_a = a.acquire(0)
    read_by_a = crawl.read(0, "a", token_a, 2)
    assert len(read_by_a) == 2 and a.holds(token_a, read_by_a[0].url)
    time.sleep(0.5)  # a stalls past its lease
    assert a.renew({0: token_a}) == {0}
    token_b = b.acquire(0)
    assert token_b == "b:2" and not a.holds(token_a, read_by_a[0].url)
    assert crawl.settle(read_by_a[0], "visited", [FetchTask("http://a.test/new", 1)]) == FENCED
    assert crawl.state(read_by_a[0].url) == "in_flight" and crawl.state("http://a.test/new") is None
    taken = crawl.take_over(0, "b", token_b)
    assert sorted(t.url for t in taken) == sorted(t.url for t in read_by_a)
    assert crawl.pending(0) == {"b": 2}
    for task in taken + crawl.read(0, "b", token_b, 10):
        assert crawl.settle(task, "visited") == []
    assert crawl.open_count() == 0 and crawl.counts()["visited"] == 3
    assert b.release(0, token_b) and not a.release(0, token_a) and b.holder(0) is None


def test_joining_with_other_seeds_is_a_one_line_error(redis_url):
    RedisCrawl(redis_url, "join").create_or_join({"seeds": ["http://a.test/"], "scope": "host"})
    assert not RedisCrawl(redis_url, "join").create_or_join({"seeds": ["http://a.test/"], "scope": "host"})
    with pytest.raises(ClusterMismatch, match=r"^crawl 'join' in Redis has other seeds: ") as caught:
        RedisCrawl(redis_url, "join").create_or_join({"seeds": ["http://b.test/"], "scope": "host"})
    assert "\n" not in str(caught.value)
    with pytest.raises(ClusterMismatch, match="has other layout"):
        RedisCrawl(redis_url, "join", frontier_shards=8).create_or_join({"seeds": ["http://a.test/"], "scope": "host"})


def test_machines_alive_come_from_heartbeats_in_server_time(redis_url):
    crawl = RedisCrawl(redis_url, "alive", frontier_shards=8)
    a, b = ShardLeases(crawl, "a", ttl_s=0.3), ShardLeases(crawl, "b", ttl_s=30)
    assert a.heartbeat() == ["a"]
    assert b.heartbeat() == ["a", "b"] and b.share(2) == 4
    time.sleep(0.5)
    assert b.heartbeat() == ["b"] and b.share(1) == 8
    b.leave()
    assert a.heartbeat() == ["a"]


def test_status_lists_only_the_machines_whose_heartbeat_holds(redis_url):
    from crawler.cluster import status

    crawl = RedisCrawl(redis_url, "alive-status", frontier_shards=8)
    crawl.create_or_join({"seeds": []})
    ShardLeases(crawl, "gone", ttl_s=0.3).heartbeat()
    ShardLeases(crawl, "here", ttl_s=30).heartbeat()
    assert status(redis_url, "alive-status")["machines"] == ["gone", "here"]
    time.sleep(0.5)  # "gone" stops beating; no other machine's heartbeat cleans the set up
    assert status(redis_url, "alive-status")["machines"] == ["here"]


def test_merge_refuses_a_folder_twice_and_keeps_a_killed_machines_skips(tmp_path):
    import json

    from crawler.errors import OutputError
    from crawler.output.merge import CLUSTER_JSON, merge_folders
    from crawler.output.writers import SKIP_LOG

    done, killed, other, plain = (tmp_path / name for name in ("done", "killed", "other", "plain"))
    for folder, name in ((done, "c1"), (killed, "c1"), (other, "c2"), (plain, None)):
        folder.mkdir()
        (folder / "summary.json").write_text(json.dumps({"seeds": ["http://a.test/"]}))
        if name is not None:
            (folder / CLUSTER_JSON).write_text(json.dumps({"crawl_name": name}))
    (killed / "summary.json").unlink()  # a killed machine writes none
    (killed / SKIP_LOG).write_text("http://a.test/private\t1\thttp://a.test/\trobots.txt: disallowed\n")
    with pytest.raises(OutputError, match="is given twice$"):
        merge_folders([str(done), str(done)], str(tmp_path / "out"))
    with pytest.raises(OutputError, match="^the folders come from different crawls: c1, c2$"):
        merge_folders([str(done), str(other)], str(tmp_path / "out"))
    with pytest.raises(OutputError, match="plain has no cluster.json: not a machine's folder of a --redis crawl$"):
        merge_folders([str(done), str(plain)], str(tmp_path / "out"))
    summary = merge_folders([str(done), str(killed)], str(tmp_path / "out"))
    assert (summary["claimed"], summary["skipped"], summary["reconciled"]) == (1, 1, None)
    assert (tmp_path / "out" / "skipped.tsv").read_text().splitlines()[1:] == [
        "http://a.test/private\t1\thttp://a.test/\trobots.txt: disallowed"
    ]
    with pytest.raises(OutputError, match="is not empty"):
        merge_folders([str(done)], str(tmp_path / "out"))


def test_an_idle_machine_reads_again_entries_pending_under_it_whose_reply_was_lost(redis_url):
    from crawler.engine.clusterfeed import ClusterFeed

    crawl = RedisCrawl(redis_url, "orphans", frontier_shards=1)
    crawl.create_or_join({"seeds": []})
    crawl.claim_tasks([page_task(f"http://a.test/{n}") for n in range(3)])
    feed = ClusterFeed(crawl, "m", lease_s=30, per_shard=16)
    assert len(feed.tick(0.0, {}, [])) == 3  # read: pending under m, and lost with the reply
    assert feed.tick(1.5, {}, [], idle=False) == []  # not idle: what it read may be here
    again = feed.tick(3.0, {}, [], idle=True)
    assert sorted(t.url for t in again) == [f"http://a.test/{n}" for n in range(3)]
    assert all(t.ticket.startswith("m:1|") for t in again)
    for task in again:
        assert crawl.settle(task, "visited") == []
    assert crawl.open_count() == 0


def test_a_warm_leave_keeps_a_shard_until_its_origins_may_take_a_request(redis_url):
    from crawler.engine.clusterfeed import ClusterFeed

    crawl = RedisCrawl(redis_url, "leave", frontier_shards=2)
    crawl.create_or_join({"seeds": []})
    feed = ClusterFeed(crawl, "m", lease_s=30, per_shard=16)
    feed.tick(0.0, {}, [])
    assert set(feed.tokens) == {0, 1}
    unready = iter([{1}, {1}, set()])
    holders = []
    feed.leave(
        lambda: next(unready),
        sleep=lambda s: holders.append((crawl.client.get(crawl.lease_key(0)), crawl.client.get(crawl.lease_key(1)))),
    )
    assert holders == [(None, "m:1"), (None, "m:1")]  # shard 0 released at once, 1 kept while unready
    assert crawl.client.get(crawl.lease_key(1)) is None and feed.tokens == {}


def _origins_in_shards(crawl: RedisCrawl, count: int) -> list[str]:
    """``count`` origins, each in a frontier shard of its own."""
    by_shard: dict[int, str] = {}
    port = 8000
    while len(by_shard) < count:
        origin = f"http://a.test:{port}"
        by_shard.setdefault(crawl.origin_shard(origin), origin)
        port += 1
    return list(by_shard.values())


def test_a_machine_holding_only_idle_shards_gets_half_of_the_busy_ones(redis_url):
    from crawler.engine.clusterfeed import ClusterFeed

    crawl = RedisCrawl(redis_url, "balance", frontier_shards=8)
    crawl.create_or_join({"seeds": []})
    origins = _origins_in_shards(crawl, 4)
    crawl.claim_tasks([page_task(f"{origin}/{n}") for origin in origins for n in range(3)])  # a few at a time
    busy = {crawl.origin_shard(origin) for origin in origins}
    a = ClusterFeed(crawl, "a", lease_s=30, per_shard=16)
    b = ClusterFeed(crawl, "b", lease_s=30, per_shard=16)
    for feed, shards in ((a, set(range(8)) - busy), (b, busy)):  # equal counts: 4 and 4
        feed.leases.heartbeat()
        feed.tokens = {shard: feed.leases.acquire(shard) for shard in shards}
    for now in (0.0, 1.5, 3.0, 4.5):
        a.tick(now, {}, [])
        b.tick(now, {}, [])
    assert len(set(a.tokens) & busy) == len(set(b.tokens) & busy) == 2
    assert len(a.tokens) == len(b.tokens) == 4 and not set(a.tokens) & set(b.tokens)
    held = {crawl.client.get(crawl.lease_key(shard)) for shard in range(8)}
    assert None not in held and {token.split(":")[0] for token in held} == {"a", "b"}


def _feeds_holding(crawl: RedisCrawl, holdings: dict[str, set[int]]) -> dict:
    """A ClusterFeed per machine, each announced and holding the given shards."""
    from crawler.engine.clusterfeed import ClusterFeed

    feeds = {name: ClusterFeed(crawl, name, lease_s=30, per_shard=16) for name in holdings}
    for name, feed in feeds.items():
        feed.leases.heartbeat()
        feed.tokens = {shard: feed.leases.acquire(shard) for shard in holdings[name]}
    return feeds


def _acquisitions(crawl: RedisCrawl) -> int:
    return sum(int(crawl.client.get(crawl.epoch_key(shard)) or 0) for shard in range(crawl.frontier_shards))


def test_work_that_moves_between_origins_faster_than_the_heartbeat_stays_put(redis_url):
    crawl = RedisCrawl(redis_url, "chain", frontier_shards=8)
    crawl.create_or_join({"seeds": []})
    origins = _origins_in_shards(crawl, 4)
    shards = [crawl.origin_shard(origin) for origin in origins]
    idle = sorted(set(range(8)) - set(shards))
    feeds = _feeds_holding(crawl, {"a": set(idle), "b": set(shards)})  # 4 shards each
    for turn in range(12):  # each heartbeat, b's two busy shards are done and the next origins' get a page
        crawl.claim_tasks([page_task(f"{origins[(turn + k) % 4]}/{turn}") for k in (0, 2)])  # two chains
        now = 1.5 * turn
        for task in feeds["b"].tick(now, {}, []):
            assert crawl.settle(task, "visited") == []
        feeds["a"].tick(now, {}, [])
    assert set(feeds["b"].tokens) == set(shards) and _acquisitions(crawl) == 8  # no handover


def test_three_machines_move_one_busy_shard_to_the_idle_one(redis_url):
    crawl = RedisCrawl(redis_url, "three", frontier_shards=8)
    crawl.create_or_join({"seeds": []})
    origins = _origins_in_shards(crawl, 4)
    crawl.claim_tasks([page_task(f"{origin}/{n}") for origin in origins for n in range(10)])
    busy = sorted(crawl.origin_shard(origin) for origin in origins)
    idle = sorted(set(range(8)) - set(busy))
    feeds = _feeds_holding(crawl, {"a": {*busy[:2], idle[0]}, "b": {*busy[2:], idle[1]}, "c": set(idle[2:])})
    feeds["a"].tick(0.0, {}, [])
    assert not feeds["a"].releasing and set(feeds["a"].tokens) >= set(busy[:2])  # uneven once: nothing given yet
    for now in (1.5, 3.0, 4.5, 6.0, 7.5):
        for name in ("b", "c", "a"):
            feeds[name].tick(now, {}, [])
    held = {name: len(set(feed.tokens) & set(busy)) for name, feed in feeds.items()}
    assert held == {"a": 1, "b": 2, "c": 1}  # a, first of the two holding most, gave one
    assert _acquisitions(crawl) == 8 + 1
