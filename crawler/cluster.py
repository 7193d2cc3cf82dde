"""One crawl run by several machines through Redis (``--redis``): a machine's run and ``status``.

Every machine runs the same command with its own ``--out``; each is today's topology
(one dispatcher, ``--workers`` fetcher processes) with the visited table, the frontier
and the shard leases in Redis (:mod:`crawler.engine.rediscrawl`,
:mod:`crawler.engine.clusterfeed`). There is no manager process and no ``state.sqlite``:
what a machine read and did not finish stays pending in Redis, and goes to another
machine (or to the next one started) when this one stops or dies, so a stopped machine
is started again with a new ``--out``, never resumed in place.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import re
import socket
import time
import urllib.parse
from typing import Any

from crawler.api import finish_outputs, prepare_output
from crawler.config import CrawlConfig, check_redis_url
from crawler.engine.clusterfeed import ClusterFeed
from crawler.engine.dispatcher import Dispatcher
from crawler.engine.frontier import MemoryFrontier
from crawler.engine.rediscrawl import RedisCrawl
from crawler.engine.signals import StopOnSignal, signals_deferred
from crawler.errors import Aborted, CrawlerError, FetcherDied, OutputError
from crawler.output import folderlock
from crawler.output.merge import CLUSTER_JSON

log = logging.getLogger("crawler")

#: Written first in every machine's --out: which crawl the folder belongs to (``merge``
#: checks it, also in the folder of a machine that was killed).
CLUSTER_FILE = CLUSTER_JSON

#: Tasks a machine reads ahead per frontier shard, per fetcher thread (at least 16).
READ_AHEAD_PER_THREAD = 2


class RedisUnavailable(CrawlerError):
    """Redis could not be reached, or failed, for longer than the client's retries."""


def default_machine() -> str:
    """``HOST-PID``, with characters outside letters, digits, ``.``, ``_``, ``-`` dropped."""
    host = re.sub(r"[^A-Za-z0-9._-]", "", socket.gethostname())[:40] or "machine"
    return f"{host}-{os.getpid()}"


def crawl_cluster(config: CrawlConfig, signals: StopOnSignal | None = None) -> dict:
    """Run this machine's part of the crawl ``config.redis`` holds (creating it if new)
    until no URL is open on any machine, or a stop; write this machine's outputs.

    Returns:
        the summary (``summary.json``), with ``cluster``: the crawl name, this machine,
        the whole crawl's counts in Redis, and this machine's leases lost and entries
        taken over.

    Raises:
        ConfigError: a bad setting; ``--out`` holds an earlier run.
        ClusterMismatch: the crawl name holds other seeds or scope.
        RedisUnavailable: Redis could not be reached (or failed) past the retries.
        KeyboardInterrupt: a second Ctrl-C (what this machine held goes to the others).
        OutputError: another run holds ``--out`` (:mod:`crawler.output.folderlock`).
    """
    config = config.validated()
    assert config.redis is not None  # validated() checked it
    _check_fresh(config.out_dir)
    reach(config.redis)
    prepare_output(config.out_dir)
    with folderlock.hold(config.out_dir):
        return _hold_and_run(config, signals)


def _hold_and_run(config: CrawlConfig, signals: StopOnSignal | None) -> dict:
    """:func:`crawl_cluster` with ``config.out_dir`` held (:mod:`crawler.output.folderlock`)."""
    import redis

    assert config.redis is not None
    _check_fresh(config.out_dir)  # again, held: a machine started at the same moment is refused
    with open(os.path.join(config.out_dir, CLUSTER_FILE), "w", encoding="utf-8") as f:
        json.dump({"crawl_name": config.cluster_name(), "redis": redacted(config.redis)}, f)
        f.write("\n")
    owned = signals is None
    signals = signals or StopOnSignal()
    signals.install()
    try:
        return _run(config, signals)
    except redis.RedisError as exc:
        raise RedisUnavailable(f"Redis at {redacted(config.redis)} failed: {_one_line(exc)}") from None
    finally:
        if owned:
            signals.restore()


def redacted(url: str) -> str:
    """``url`` without its password (``redis://user:***@host``), for messages."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def reach(url: str) -> None:
    """Check at once that Redis at ``url`` answers (one PING, 5 s at most, no retries: the
    crawl's client waits a restart out, a first contact need not).

    Raises:
        RedisUnavailable: it does not answer, or refuses the credentials.
    """
    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5, retry_on_timeout=False)
        client.ping()
        client.close()
    except redis.RedisError as exc:
        raise RedisUnavailable(f"cannot reach Redis at {redacted(url)}: {_one_line(exc)}") from None


def _check_fresh(out_dir: str) -> None:
    """``--out`` must be new or empty: each run of a machine writes its own folder."""
    if os.path.isdir(out_dir) and folderlock.entries(out_dir):
        raise OutputError(
            f"{out_dir} holds an earlier run: with --redis, give every run its own --out "
            "(what a stopped run left is in Redis; `python -m crawler merge` gathers the folders)"
        )


def _run(config: CrawlConfig, signals: StopOnSignal) -> dict:
    import redis

    assert config.redis is not None  # crawl_cluster is for --redis
    started = time.monotonic()
    crawl = RedisCrawl(config.redis, config.cluster_name())
    created = crawl.create_or_join(config.resume_settings())
    if not created:
        counts = crawl.counts()
        if counts["open"] == 0 and counts["claimed"]:
            log.warning(
                "crawl %s in Redis is over already (%d URLs claimed, none open): nothing to do; "
                "a new --crawl-name crawls the seeds again",
                crawl.name,
                counts["claimed"],
            )
    machine = config.machine or default_machine()
    per_shard = max(16, READ_AHEAD_PER_THREAD * config.workers * config.threads)
    feed = ClusterFeed(crawl, machine, config.lease_s, per_shard)
    ctx = multiprocessing.get_context(config.start_method)
    with signals_deferred(ctx.get_start_method()):
        dispatcher = Dispatcher(config, ctx, crawl, None, MemoryFrontier(), None, cluster=feed)
        signals.attach(dispatcher.request_stop)
        dispatcher.start()
    aborted: CrawlerError | None = None
    try:
        dispatcher.run()
    except FetcherDied as exc:
        aborted = exc
    except KeyboardInterrupt:
        aborted = Aborted("aborted by a second signal")
    except redis.RedisError as exc:  # past the client's retries: the outputs are still written
        aborted = RedisUnavailable(f"Redis at {redacted(config.redis)} failed: {_one_line(exc)}")
    signals.finishing = True
    summary = finish_outputs(config, dispatcher.outcome(), None, None, time.monotonic() - started, aborted)
    try:
        counts = {} if isinstance(aborted, RedisUnavailable) else crawl.counts()
    except redis.RedisError:
        counts = {}
    if isinstance(aborted, RedisUnavailable) or not counts:
        _rewrite_summary(config.out_dir, summary)
        reason = aborted or f"Redis at {redacted(config.redis)} failed at the end of the run"
        raise RedisUnavailable(f"{reason}; this machine stopped, outputs in {config.out_dir}")
    # the crawl's own reconciliation: this machine's counts are a part of it
    summary["reconciled"] = counts["open"] == 0 and counts["claimed"] == sum(
        counts[state] for state in ("visited", "failed", "skipped")
    )
    summary["cluster"] = {
        "crawl_name": crawl.name,
        "created": created,
        "machine": machine,
        "counts": counts,
        "leases_lost": feed.lost,
        "taken_over": feed.taken_over,
        "dropped": dispatcher.dropped,
    }
    _rewrite_summary(config.out_dir, summary)
    if isinstance(aborted, Aborted):
        raise KeyboardInterrupt(f"{aborted}; outputs in {config.out_dir}")
    if aborted is not None:
        raise type(aborted)(f"{aborted}; this machine stopped, outputs in {config.out_dir}")
    return summary


def _rewrite_summary(out_dir: str, summary: dict) -> None:
    with open(os.path.join(out_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")


def status(url: str, name: str) -> dict[str, Any]:
    """The live state of crawl ``name`` in the Redis at ``url``: the counts, the frontier
    waiting, the machines alive with the entries each holds, and the shards held.

    Raises:
        ConfigError: no crawl of that name is stored.
        RedisUnavailable: Redis could not be reached.
    """
    import redis

    from crawler.engine.leases import ShardLeases
    from crawler.errors import ConfigError

    check_redis_url(url)
    reach(url)
    crawl = RedisCrawl(url, name)
    try:
        if not crawl.exists():
            raise ConfigError(f"no crawl named {name!r} in Redis at {redacted(url)}")
        stored = crawl.stored_layout()
        crawl = RedisCrawl(url, name, **stored)
        holding: dict[str, int] = {}
        in_flight: dict[str, int] = {}
        waiting = 0
        for shard in range(crawl.frontier_shards):
            holder = crawl.client.get(crawl.lease_key(shard))
            if holder is not None:
                machine = holder.rpartition(":")[0]
                holding[machine] = holding.get(machine, 0) + 1
            for machine, count in crawl.pending(shard).items():
                in_flight[machine] = in_flight.get(machine, 0) + count
            waiting += crawl.waiting(shard)
        seconds, micros = crawl.client.time()
        now_ms = seconds * 1000 + micros // 1000  # the heartbeats' clock: Redis's own
        machines = crawl.client.zrangebyscore(ShardLeases.machines_key_of(crawl), now_ms, "+inf")
        return {
            "crawl_name": name,
            "counts": crawl.counts(),
            "frontier": waiting,
            "held_by_machine": dict(sorted(in_flight.items())),
            "shards_by_machine": dict(sorted(holding.items())),
            "machines": list(machines),
            "sites": crawl.sites(),
        }
    except redis.RedisError as exc:
        raise RedisUnavailable(f"Redis at {redacted(url)} failed: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
