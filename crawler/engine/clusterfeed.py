"""One machine's share of a crawl run through Redis: its shard leases and the tasks it reads.

The dispatcher of a machine started with ``--redis`` calls :meth:`ClusterFeed.tick` once a
loop turn. Every :data:`REBALANCE_S` (or ``lease_s / 3`` if shorter) the feed announces the
machine (a heartbeat), renews its leases, reads every shard's length and lease holder,
and moves toward two shares: of the *busy* shards (with entries not settled, ``XLEN`` >
0), ``ceil(busy / machines alive)``, and of all shards, ``ceil(shards / machines alive)``.
The busy shards come first, so a machine does not sit idle holding only empty shards
while another holds every origin with work:

- below a share, it takes free shards (busy ones first; a new machine, or one whose
  holder died or gave it up) and with each the entries its last holder had read and not
  settled (``XAUTOCLAIM``): they are fetched again here;
- holding the most busy shards (:meth:`ClusterFeed._give_busy`), it gives up half its
  lead over the least busy machine once that lead has lasted
  :data:`HANDOVER_ROUNDS` heartbeats, and only shards busy on as many heartbeats in a
  row; above the whole share, idle ones. It
  stops dispatching a given-up shard's tasks and releases the lease once none of its
  tasks is in flight here and each of its origins may take a request (its delay,
  Crawl-delay or Retry-After is over, so the next holder, which starts with no
  politeness state for them, may send at once); the next holder
  takes over what this machine had read.

Between heartbeats it reads new tasks of each shard it holds whenever fewer than half of
``per_shard`` of that shard's tasks wait in the local frontier (a shard found empty is
asked again after :data:`READ_INTERVAL_S`): the local frontier holds at most ``per_shard``
tasks per shard, whatever the size of the shared one, and every origin held has work.
A task read carries its ticket (lease token and entry id); :meth:`owns` tells whether its
token still holds, so the dispatcher drops the tasks of a shard it lost or gives up (the
new holder has them) instead of dispatching them.

The crawl is over when :meth:`finished`: no URL claimed and not final on any machine.
"""

from __future__ import annotations

import collections
import logging
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping

from crawler.engine.leases import ShardLeases
from crawler.engine.messages import FetchTask
from crawler.engine.rediscrawl import RedisCrawl, make_ticket, split_ticket

log = logging.getLogger("crawler")

#: Most seconds between two heartbeats (each renews the leases and moves toward this
#: machine's share of the shards): a machine that joins gets work within about this long.
REBALANCE_S = 1.0
#: Heartbeats in a row on which this machine holds more busy shards than another (by 2
#: or more) before it gives some up, and on which a shard must have been busy to be
#: given: work that moves between origins faster is left where it is.
HANDOVER_ROUNDS = 2
#: Seconds before a shard found empty is read again.
READ_INTERVAL_S = 0.1
#: Seconds between checks of the shared counts while this machine has nothing to do.
IDLE_POLL_S = 0.2


class ClusterFeed:
    """The leases and task reads of one machine.

    Args:
        crawl: the shared state.
        machine: this machine's name (its Redis consumer name).
        lease_s: lease time in seconds.
        per_shard: most tasks of one shard read ahead into the local frontier (a shard
            is read again once fewer than half of that wait here).
    """

    def __init__(self, crawl: RedisCrawl, machine: str, lease_s: float, per_shard: int) -> None:
        self.crawl = crawl
        self.machine = machine
        self.leases = ShardLeases(crawl, machine, lease_s)
        self.lease_s = lease_s
        self.per_shard = max(2, per_shard)
        self._idle_until: dict[int, float] = {}  # shard -> monotonic time to read it again
        self.tokens: dict[int, str] = {}  # shard -> the token this machine holds it with
        self.releasing: set[int] = set()  # shards given up once their tasks here are done
        self.lost = 0  # leases lost (expired while this machine stalled)
        self.taken_over = 0  # entries taken over from earlier holders
        self.machines: list[str] = []
        self._next_beat = 0.0
        self._rng = random.Random()
        self._uneven = 0  # heartbeats in a row with busy shards to give up
        self._busy_for: dict[int, int] = {}  # shard -> heartbeats in a row it was busy

    def tick(
        self,
        now: float,
        waiting: Mapping[str, int],
        in_flight: Iterable[str],
        unready: Callable[[], set[int]] = set,
        idle: bool = False,
        stopping: bool = False,
    ) -> list[FetchTask]:
        """The tasks to push on the local frontier now.

        Args:
            now: ``time.monotonic()``.
            waiting: tasks waiting in the local frontier, per origin.
            in_flight: URLs of the tasks dispatched here and not reported yet.
            unready: the shards with an origin that may not take a request yet (its
                delay, Crawl-delay or Retry-After runs): such a shard is not handed
                over before it may, so the next holder may send at once.
            idle: nothing waits or is in flight here: an entry still pending under this
                machine in a shard it holds is an orphan (its read's reply was lost with a
                connection, and the client read again), so it is read again from the
                pending list (at most every :data:`REBALANCE_S`).
            stopping: a warm stop: only the heartbeat and the renewals, so the fetches
                under way keep their leases until they end; nothing new is read or taken.
        """
        tasks: list[FetchTask] = []
        if stopping:
            if now >= self._next_beat:
                self._next_beat = now + min(self.lease_s / 3, REBALANCE_S)
                self.machines = self.leases.heartbeat()
                self._drop_lost()
            return tasks
        if now >= self._next_beat:
            self._next_beat = now + min(self.lease_s / 3, REBALANCE_S)
            tasks += self._rebalance(in_flight, unready)
            self._idle_until.clear()
            if idle and not tasks:
                tasks += self._orphans()
        local: collections.Counter[int] = collections.Counter()
        for origin, count in waiting.items():
            local[self.crawl.origin_shard(origin)] += count
        low = [
            s
            for s in self.tokens
            if s not in self.releasing and local[s] < self.per_shard // 2 and self._idle_until.get(s, 0.0) <= now
        ]
        if low:
            read = self._read(low)
            for shard in low:
                if not read.get(shard):  # drained for now: not asked again for a while
                    self._idle_until[shard] = now + READ_INTERVAL_S
            tasks += (task for got in read.values() for task in got)
        return tasks

    def _drop_lost(self) -> None:
        """Renew every lease; forget the ones that no longer hold."""
        for shard in self.leases.renew(self.tokens):
            log.warning("lost the lease of frontier shard %d (this machine stalled past --lease)", shard)
            del self.tokens[shard]
            self.releasing.discard(shard)
            self.lost += 1

    def _orphans(self) -> list[FetchTask]:
        """The entries pending under this machine in the shards it holds (read from the
        start of its pending list), as tasks with their tickets."""
        held = {s: token for s, token in self.tokens.items() if s not in self.releasing}
        if not held:
            return []
        read = self.crawl.read_shards(held, self.machine, self.per_shard, pending=True)
        tasks = [task for got in read.values() for task in got]
        if tasks:
            log.warning("%d entries pending under this machine were read again (a read's reply was lost)", len(tasks))
        return tasks

    def _rebalance(self, in_flight: Iterable[str], unready: Callable[[], set[int]]) -> list[FetchTask]:
        self.machines = self.leases.heartbeat()
        self._drop_lost()
        machines = len(self.machines)
        share = self.leases.share(machines)
        lengths, holders = self._survey()
        busy = {s for s, length in lengths.items() if length}
        self._busy_for = {s: self._busy_for.get(s, 0) + 1 for s in busy}
        busy_share = math.ceil(len(busy) / max(1, machines))
        kept_busy = self._busiest([s for s in self.tokens if s in busy and s not in self.releasing], lengths)
        self._give_busy(kept_busy, busy, holders)
        kept_busy = [s for s in kept_busy if s not in self.releasing]
        tasks: list[FetchTask] = []
        order = list(range(self.crawl.frontier_shards))
        start = self._rng.randrange(len(order))
        order = order[start:] + order[:start]
        for shard in [s for s in order if s in busy and holders[s] is None]:
            if len(kept_busy) >= busy_share:
                break
            if self._take(shard, tasks):
                kept_busy.append(shard)
        kept = [s for s in self.tokens if s not in self.releasing]
        if len(kept) > share:
            self.releasing.update([s for s in kept if s not in busy][: len(kept) - share])
        for shard in [s for s in order if s not in busy and s not in self.tokens]:
            if len(self.tokens) - len(self.releasing) >= share:
                break
            self._take(shard, tasks)
        if self.releasing:
            waits = set(map(self.crawl.frontier_shard, in_flight)) | unready()
            for shard in [s for s in self.releasing if s not in waits]:
                self.leases.release(shard, self.tokens.pop(shard))
                self.releasing.discard(shard)
        return tasks

    def _give_busy(self, kept_busy: list[int], busy: set[int], holders: Mapping[int, str | None]) -> None:
        """Give up half the difference between this machine's busy shards and the least
        busy machine's, if no machine holds more (of those that hold as many, the first
        by name gives) and it has held for :data:`HANDOVER_ROUNDS` heartbeats in a row,
        and only shards busy on as many heartbeats in a row: a shard whose work will be
        done before the taker's next heartbeat is not worth a handover (it would wait
        for a holder meanwhile). Every second one of ``kept_busy`` (busiest first), so
        both keep work."""
        counts = dict.fromkeys(self.machines, 0)
        for shard in busy:
            holder = holders[shard]
            if holder is not None:
                machine = holder.rsplit(":", 1)[0]
                if machine in counts:
                    counts[machine] += 1
        counts[self.machine] = mine = len(kept_busy)
        top = max(counts.values())
        others = [count for machine, count in counts.items() if machine != self.machine]
        first = min(machine for machine, count in counts.items() if count == top)  # one gives at a time
        surplus = (mine - min(others)) // 2 if others and first == self.machine else 0
        self._uneven = self._uneven + 1 if surplus > 0 else 0
        if self._uneven < HANDOVER_ROUNDS:
            return
        worth = [s for s in kept_busy if self._busy_for.get(s, 0) >= HANDOVER_ROUNDS]
        given = (worth[1::2] + worth[0::2])[:surplus]
        if given:
            self.releasing.update(given)
            self._uneven = 0

    def _survey(self) -> tuple[dict[int, int], dict[int, str | None]]:
        """Per frontier shard, its entries not settled (read or not) and its lease
        token (None: free), in one round trip."""
        pipe = self.crawl.client.pipeline(transaction=False)
        for shard in range(self.crawl.frontier_shards):
            pipe.xlen(self.crawl.stream_key(shard))
            pipe.get(self.crawl.lease_key(shard))
        replies = pipe.execute()
        shards = range(self.crawl.frontier_shards)
        return {s: int(replies[2 * s]) for s in shards}, {s: replies[2 * s + 1] for s in shards}

    @staticmethod
    def _busiest(shards: list[int], lengths: Mapping[int, int]) -> list[int]:
        return sorted(shards, key=lambda s: (-lengths[s], s))

    def _take(self, shard: int, tasks: list[FetchTask]) -> bool:
        """Take ``shard``'s lease if it is free, and the entries its last holder had read
        and not settled (added to ``tasks``); False if another machine holds it."""
        token = self.leases.acquire(shard)
        if token is None:
            return False
        self.tokens[shard] = token
        taken = self.crawl.take_over(shard, self.machine, token)
        self.taken_over += len(taken)
        tasks += taken
        return True

    def _read(self, shards: list[int]) -> dict[int, list[FetchTask]]:
        """Up to ``per_shard`` new tasks of each of ``shards``, in one XREADGROUP."""
        return self.crawl.read_shards({s: self.tokens[s] for s in shards}, self.machine, self.per_shard)

    def owns(self, task: FetchTask) -> bool:
        """True if this machine may dispatch ``task``: its shard is held (with the task's
        own token, for a task read from Redis) and not being given up."""
        shard = self.crawl.frontier_shard(task.url)
        held = self.tokens.get(shard)
        if held is None or shard in self.releasing:
            return False
        token, _entry = split_ticket(task.ticket)
        return not token or token == held

    def holds(self, origin: str) -> bool:
        """True if this machine holds ``origin``'s shard and is not giving it up."""
        shard = self.crawl.origin_shard(origin)
        return shard in self.tokens and shard not in self.releasing

    def ticket_of(self, url: str) -> str | None:
        """A ticket (the lease token, no entry) for a task made here (robots.txt, a
        sitemap), so a fetcher checks the lease before its request too."""
        token = self.tokens.get(self.crawl.frontier_shard(url))
        return None if token is None else make_ticket(token, "")

    def finished(self) -> bool:
        """True when no URL is claimed and not final on any machine."""
        return self.crawl.open_count() == 0

    def leave(self, unready: Callable[[], set[int]] = set, sleep: Callable[[float], object] = time.sleep) -> None:
        """Release every lease and say this machine is gone: what it read and did not
        settle is taken over by the next holders. A shard with an origin that may not
        take a request yet (``unready``) is kept, and renewed, until it may, so the
        delay holds across this handover too."""
        while True:
            waiting = unready() & set(self.tokens)
            for shard in [s for s in self.tokens if s not in waiting]:
                self.leases.release(shard, self.tokens.pop(shard))
            if not waiting:
                break
            sleep(min(self.lease_s / 3, REBALANCE_S))
            self._drop_lost()
        self.releasing.clear()
        self.leases.leave()
