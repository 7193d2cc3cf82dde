"""Frontier shards leased to machines, and the machines alive, in Redis.

A frontier shard (:mod:`crawler.engine.rediscrawl`) is worked by one machine at a time:
the holder of its lease. A lease is a Redis key holding ``machine:epoch`` that expires
after ``ttl_s`` unless renewed; the epoch is a per-shard counter raised by every
acquisition, so each holding has its own token. Expiry is Redis's own clock (``PX``),
never a client's. The token is the fence: a settle carries the token its task was read
under and is refused once another holding began (:data:`crawler.engine.rediscrawl.FENCED`),
and a fetcher asks (:meth:`RedisCrawl.may_fetch`) before each request of a task.

Machines announce themselves with :meth:`ShardLeases.heartbeat` into a sorted set scored
by their expiry in Redis server time (``TIME``); a machine missing for ``ttl_s`` is gone,
and each machine aims at its share of the shards: ``ceil(shards / machines alive)``.
"""

from __future__ import annotations

import math
from typing import Any

from crawler.engine.rediscrawl import RedisCrawl

_ACQUIRE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local epoch = redis.call('INCR', KEYS[2])
local token = ARGV[1] .. ':' .. epoch
redis.call('SET', KEYS[1], token, 'PX', ARGV[2])
return token
"""
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# KEYS: the machines' sorted set. ARGV: machine, ttl in ms ('0': leave). Returns the live.
_HEARTBEAT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[2] == '0' then redis.call('ZREM', KEYS[1], ARGV[1])
else redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZRANGE', KEYS[1], 0, -1)
"""


class ShardLeases:
    """One machine's view of the shard leases of ``crawl``.

    Args:
        crawl: the shared crawl state.
        machine: this machine's name (unique in the crawl; no ``:`` or ``|``).
        ttl_s: seconds a lease and a heartbeat last unless renewed (renew every
            ``ttl_s / 3``).
    """

    def __init__(self, crawl: RedisCrawl, machine: str, ttl_s: float) -> None:
        if not machine or ":" in machine or "|" in machine:
            raise ValueError(f"machine name without ':' or '|' expected, got {machine!r}")
        self.crawl = crawl
        self.machine = machine
        self.ttl_ms = max(1, int(ttl_s * 1000))
        self.machines_key = self.machines_key_of(crawl)
        client = crawl.client
        self._acquire: Any = client.register_script(_ACQUIRE)
        self._renew: Any = client.register_script(_RENEW)
        self._release: Any = client.register_script(_RELEASE)
        self._heartbeat: Any = client.register_script(_HEARTBEAT)

    @staticmethod
    def machines_key_of(crawl: RedisCrawl) -> str:
        """The sorted set of the machines alive in ``crawl`` (scored by expiry, ms)."""
        return crawl.prefix + "machines"

    def acquire(self, shard: int) -> str | None:
        """Take ``shard``'s lease if no one holds it; return the new token or None."""
        keys = [self.crawl.lease_key(shard), self.crawl.epoch_key(shard)]
        return self._acquire(keys=keys, args=[self.machine, self.ttl_ms]) or None

    def renew(self, tokens: dict[int, str]) -> set[int]:
        """Extend the leases ``{shard: token}`` in one round trip; return the shards whose
        lease no longer holds its token (lost: expired, maybe taken)."""
        pipe = self.crawl.client.pipeline(transaction=False)
        shards = list(tokens)
        for shard in shards:
            self._renew(keys=[self.crawl.lease_key(shard)], args=[tokens[shard], self.ttl_ms], client=pipe)
        return {shard for shard, kept in zip(shards, pipe.execute()) if not kept}

    def release(self, shard: int, token: str) -> bool:
        """Give ``shard`` up if ``token`` still holds it (True)."""
        return bool(self._release(keys=[self.crawl.lease_key(shard)], args=[token]))

    def holder(self, shard: int) -> str | None:
        """The token holding ``shard``, or None."""
        return self.crawl.client.get(self.crawl.lease_key(shard))

    def holds(self, token: str, url: str) -> bool:
        """True if ``token`` still holds the lease of ``url``'s frontier shard."""
        return self.holder(self.crawl.frontier_shard(url)) == token

    def heartbeat(self) -> list[str]:
        """Announce this machine for ``ttl_s``; return the machines alive (sorted)."""
        return list(self._heartbeat(keys=[self.machines_key], args=[self.machine, self.ttl_ms]))

    def leave(self) -> None:
        """Announce that this machine is gone (its leases are released separately)."""
        self._heartbeat(keys=[self.machines_key], args=[self.machine, 0])

    def share(self, machines: int) -> int:
        """Shards one of ``machines`` machines aims to hold: ``ceil(shards / machines)``."""
        return math.ceil(self.crawl.frontier_shards / max(1, machines))
