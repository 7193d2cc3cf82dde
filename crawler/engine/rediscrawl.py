r"""The state a crawl shares across machines, in Redis: visited table, frontier, counts.

Without ``--redis`` a crawl keeps this state in its manager process and ``state.sqlite``.
With it, every machine's dispatcher and fetchers use one :class:`RedisCrawl`::

      machine A: dispatcher + fetchers        machine B: dispatcher + fetchers
            |  read owned shards (XREADGROUP)      |  settle + claim links (one script)
            v                                      v
      +------------------------------------------------------------------+
      | Redis  crawler:NAME:                                              |
      |   meta                   settings (seeds, scope), shard counts    |
      |   v:{vS}:B   hashes      fingerprint (8 bytes) -> state byte      |
      |   f:{sK}     streams     one per frontier shard, group "g"        |
      |   l:{sK}, e:{sK}         lease (machine:epoch) and epoch per shard |
      |   counts                 claimed, open, visited, failed, skipped  |
      +------------------------------------------------------------------+

**Visited table.** A URL's 64-bit fingerprint (:func:`crawler.web.urlnorm.fingerprint`)
picks a visited shard (``fp & (visited_shards - 1)``) and a bucket in it
(``(fp >> 16) & (buckets - 1)``); the bucket is a small hash, stored by Redis as a
listpack, keyed by the fingerprint's 8 bytes with one state byte. A claim is ``HSETNX``:
only one caller ever wins a fingerprint.

**Frontier.** Tasks wait in one Redis Stream per frontier shard; an origin's tasks all go
to shard ``xxh3(origin) & (frontier_shards - 1)``, so leasing a shard to one machine
(:mod:`crawler.engine.leases`) gives that machine the whole politeness of its origins. A
machine reads its shards through the consumer group ``g``: an entry read stays *pending*
(owned by that machine) until its URL is settled, and a new lease holder takes the
pending entries of a dead one over with ``XAUTOCLAIM``.

**The invariant.** Every claimed URL is in exactly one of: the stream, not yet read (the
frontier); pending under a machine (in flight); or acknowledged and deleted, with its
final state in the visited table (done). Claiming links and adding them to their streams
is one server-side script, and so is settling a page (final state, ``XACK``, ``XDEL``)
with its links: no crash can leave a URL claimed but queued nowhere.

**Counts.** ``counts`` holds ``open``, the URLs claimed and not yet final, changed by the
same scripts: the crawl is over exactly when ``open`` is 0 (no idle timeout).

**Fencing.** A settle carries the lease token (``machine:epoch``) its task was read
under; the script refuses it (:data:`FENCED`) when the shard's lease holds another token,
so a machine that stalled past its lease cannot settle, or acknowledge, what a new owner
now holds.

Scripts use the Redis 7.0 command set and run on a standalone server (Debian's
redis-server, Valkey, Redis 8). Every key carries a hash tag; a settle touches the
shards of its links too, so Redis Cluster would need the settle split per slot.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Iterable, Sequence
from typing import Any

import xxhash

from crawler.engine.messages import KIND_PAGE, FetchTask
from crawler.errors import ConfigError, CrawlerError
from crawler.web.urlnorm import fingerprint, origin_of

#: Frontier shards (a power of two): the unit of leasing and of politeness across machines.
FRONTIER_SHARDS = 64
#: Visited-table shards (a power of two), each with BUCKETS hashes.
VISITED_SHARDS = 64
#: Hashes per visited shard (a power of two). 64 x 2,048 = 131,072 buckets keep each under
#: Redis's listpack limit (128 fields) up to about 10**7 URLs.
BUCKETS = 2048
#: The consumer group every machine reads the frontier streams through.
GROUP = "g"
#: What :meth:`RedisCrawl.settle` returns when the lease token no longer holds.
FENCED = "fenced"
#: Final states as stored (one byte each); "1" is in flight (claimed, not final).
_STATE_BYTES = {"visited": "2", "failed": "3", "skipped": "4"}
_STATE_NAMES = {"1": "in_flight", "2": "visited", "3": "failed", "4": "skipped"}

# Claims the links of KEYS[first..] (a bucket key and a stream key each) with ARGV[first..]
# (fingerprint, payload, origin each): HSETNX, XADD of the won, counts, the origins' count
# (a HyperLogLog). Returns a '0'/'1' string.
_CLAIM_LINKS = """
local function claim_links(first_key, first_arg)
    local won = {}
    local count = 0
    local a = first_arg
    for k = first_key, #KEYS, 2 do
        if redis.call('HSETNX', KEYS[k], ARGV[a], '1') == 1 then
            redis.call('XADD', KEYS[k + 1], '*', 't', ARGV[a + 1])
            redis.call('PFADD', KEYS[1] .. ':sites', ARGV[a + 2])
            won[#won + 1] = '1'
            count = count + 1
        else
            won[#won + 1] = '0'
        end
        a = a + 3
    end
    if count > 0 then
        redis.call('HINCRBY', KEYS[1], 'claimed', count)
        redis.call('HINCRBY', KEYS[1], 'open', count)
    end
    return table.concat(won)
end
"""

# KEYS: counts, then (bucket, stream) per task. ARGV: (fingerprint, payload, origin) per task.
_CLAIM = _CLAIM_LINKS + "return claim_links(2, 1)\n"

# KEYS: counts, page bucket, page stream, page lease, then (bucket, stream) per link.
# ARGV: page fingerprint, state byte, state name, token ('' = unleased), entry id ('' =
# none), then (fingerprint, payload, origin) per link.
# Returns -1 (fenced), -2 (the page is not in flight: settled already), or the claims.
_SETTLE = (
    _CLAIM_LINKS
    + """
if ARGV[4] ~= '' and redis.call('GET', KEYS[4]) ~= ARGV[4] then return -1 end
if redis.call('HGET', KEYS[2], ARGV[1]) ~= '1' then return -2 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[1], 'open', -1)
redis.call('HINCRBY', KEYS[1], ARGV[3], 1)
if ARGV[5] ~= '' then
    redis.call('XACK', KEYS[3], 'g', ARGV[5])
    redis.call('XDEL', KEYS[3], ARGV[5])
end
return claim_links(5, 6)
"""
)


class ClusterMismatch(CrawlerError, ValueError):
    """A machine joined a crawl name whose stored seeds, scope or layout differ."""


def encode_task(task: FetchTask) -> str:
    """A task as the JSON array kept in a stream entry (page tasks only); a redirect
    target's cookies (:attr:`FetchTask.cookies`) follow the six fields when it has any."""
    fields = [task.url, task.depth, task.parent, list(task.redirect_chain), task.request_url, task.attempt]
    if task.cookies:
        fields.append(task.cookies)
    return json.dumps(fields, separators=(",", ":"))


def decode_task(payload: str | bytes, ticket: str | None) -> FetchTask:
    """The :class:`FetchTask` of a stream entry, carrying ``ticket``."""
    url, depth, parent, chain, request_url, attempt, *cookies = json.loads(payload)
    kept = tuple(tuple(cookie) for cookie in cookies[0]) if cookies else ()
    return FetchTask(url, depth, parent, tuple(chain), request_url, attempt, ticket=ticket, cookies=kept)


def make_ticket(token: str, entry_id: str) -> str:
    """The ticket of a task read under lease ``token`` (``machine:epoch``) as ``entry_id``."""
    return f"{token}|{entry_id}"


def split_ticket(ticket: str | None) -> tuple[str, str]:
    """``(token, entry id)`` of a ticket; ``("", "")`` for none (an unleased settle)."""
    if not ticket:
        return "", ""
    token, _, entry_id = ticket.rpartition("|")
    return token, entry_id


class RedisCrawl:
    """One crawl's shared state in the Redis at ``url`` under ``name``.

    Picklable (only the URL and names cross a process boundary): each process opens its
    own connection on first use.

    Args:
        url: a redis-py URL, e.g. ``redis://127.0.0.1:6379/0``.
        name: the crawl name; keys are ``crawler:NAME:...``.
        frontier_shards, visited_shards, buckets: powers of two; a crawl's layout is
            fixed when it is created (:meth:`create_or_join` checks it).

    Raises:
        ConfigError: a shard or bucket count is not a power of two, or the name is empty.
    """

    def __init__(
        self,
        url: str,
        name: str,
        frontier_shards: int = FRONTIER_SHARDS,
        visited_shards: int = VISITED_SHARDS,
        buckets: int = BUCKETS,
    ) -> None:
        for label, value in (
            ("frontier shards", frontier_shards),
            ("visited shards", visited_shards),
            ("buckets", buckets),
        ):
            if value < 1 or value & (value - 1):
                raise ConfigError(f"{label} must be a power of two, got {value}")
        if not name or any(c.isspace() or c in "{}:" for c in name):
            raise ConfigError(f"crawl name must be non-empty, without spaces, ':' or braces: {name!r}")
        self.url = url
        self.name = name
        self.frontier_shards = frontier_shards
        self.visited_shards = visited_shards
        self.buckets = buckets
        self.prefix = f"crawler:{name}:"
        self.counts_key = self.prefix + "counts"
        self.meta_key = self.prefix + "meta"
        self._client: Any = None
        self._claim: Any = None
        self._settle: Any = None

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.update(_client=None, _claim=None, _settle=None)
        return state

    # -- connection --------------------------------------------------------------------
    @property
    def client(self) -> Any:
        """This process's redis-py client (decoded replies), made on first use. It retries
        a command after a lost connection with exponential backoff for about a minute."""
        if self._client is None:
            self._client = connect(self.url)
            self._claim = self._client.register_script(_CLAIM)
            self._settle = self._client.register_script(_SETTLE)
        return self._client

    # -- keys ----------------------------------------------------------------------------
    def frontier_shard(self, url: str) -> int:
        """The frontier shard of ``url``: its origin's, so one lease holds all of an origin."""
        return self.origin_shard(origin_of(url))

    def origin_shard(self, origin: str) -> int:
        """The frontier shard of ``origin`` (``scheme://host[:port]``)."""
        return xxhash.xxh3_64_intdigest(origin.encode()) & (self.frontier_shards - 1)

    def stream_key(self, shard: int) -> str:
        return f"{self.prefix}f:{{s{shard}}}"

    def lease_key(self, shard: int) -> str:
        return f"{self.prefix}l:{{s{shard}}}"

    def epoch_key(self, shard: int) -> str:
        return f"{self.prefix}e:{{s{shard}}}"

    def _slot(self, url: str) -> tuple[str, bytes]:
        """(bucket key, 8-byte field) of ``url`` in the visited table."""
        fp = fingerprint(url)
        bucket = (fp >> 16) & (self.buckets - 1)
        return f"{self.prefix}v:{{v{fp & (self.visited_shards - 1)}}}:{bucket}", struct.pack(">Q", fp)

    def _link_args(self, tasks: Iterable[FetchTask], keys: list[str], args: list[Any]) -> None:
        for task in tasks:
            bucket, field = self._slot(task.url)
            keys += (bucket, self.stream_key(self.frontier_shard(task.url)))
            args += (field, encode_task(task), origin_of(task.url))

    # -- a crawl's creation ---------------------------------------------------------------
    def create_or_join(self, settings: dict) -> bool:
        """Store ``settings`` (JSON-able: seeds, scope) and create the streams if this
        crawl name is new; else check them against the stored ones.

        Returns:
            True if this call created the crawl.

        Raises:
            ClusterMismatch: the name holds another crawl (other settings or layout).
        """
        layout = {
            "frontier_shards": self.frontier_shards,
            "visited_shards": self.visited_shards,
            "buckets": self.buckets,
        }
        wanted = json.dumps({"settings": settings, "layout": layout}, sort_keys=True)
        client = self.client
        # The streams' groups and the counts exist before the crawl is stored: a machine
        # that joins the moment it is stored must find them. Every step is idempotent
        # (two machines may both run it), and never resets a count.
        pipe = client.pipeline(transaction=False)
        for shard in range(self.frontier_shards):
            pipe.xgroup_create(self.stream_key(shard), GROUP, id="0", mkstream=True)
        for field in ("claimed", "open", *_STATE_BYTES):
            pipe.hsetnx(self.counts_key, field, 0)
        for result in pipe.execute(raise_on_error=False):
            if isinstance(result, Exception) and "BUSYGROUP" not in str(result):
                raise result
        if client.hsetnx(self.meta_key, "crawl", wanted):
            return True
        stored = json.loads(client.hget(self.meta_key, "crawl"))
        if stored != json.loads(wanted):
            differ = sorted(
                key
                for key in set(stored["settings"]) | set(settings) | {"layout"}
                if (stored["layout"] != layout if key == "layout" else stored["settings"].get(key) != settings.get(key))
            )
            raise ClusterMismatch(
                f"crawl {self.name!r} in Redis has other {', '.join(differ)}: use the same seeds and scope, "
                "or another --crawl-name"
            )
        return False

    def stored_layout(self) -> dict[str, int]:
        """The stored crawl's ``frontier_shards``, ``visited_shards`` and ``buckets``
        (keyword arguments for :class:`RedisCrawl`); ``{}`` if none is stored."""
        stored = self.client.hget(self.meta_key, "crawl")
        return {} if stored is None else dict(json.loads(stored)["layout"])

    def sites(self) -> int:
        """About how many origins have a claimed URL (a HyperLogLog: within about 1%)."""
        return int(self.client.pfcount(self.counts_key + ":sites"))

    def exists(self) -> bool:
        """True if a crawl of this name is stored."""
        return bool(self.client.hexists(self.meta_key, "crawl"))

    # -- claims and settles ----------------------------------------------------------------
    def claim_tasks(self, tasks: Sequence[FetchTask]) -> list[bool]:
        """Claim each task's URL and queue the ones won on their frontier shards, in one
        atomic script (seeds, a sitemap's URLs). A URL repeated in ``tasks`` is won at
        most once. Returns one bool per task: True where this call won it."""
        if not tasks:
            return []
        keys: list[str] = [self.counts_key]
        args: list[Any] = []
        self._link_args(tasks, keys, args)
        self.client  # noqa: B018  # registers the scripts
        return [c == "1" for c in self._claim(keys=keys, args=args)]

    def settle(self, task: FetchTask, state: str, links: Sequence[FetchTask] = ()) -> list[bool] | str:
        """Give ``task``'s URL its final ``state`` ("visited", "failed", "skipped"),
        acknowledge and delete its stream entry (its ``ticket``), and claim and queue
        ``links``, in one atomic script.

        Returns:
            one bool per link (True: won by this call); :data:`FENCED` when the task's
            lease token no longer holds its shard (nothing changed); ``[]`` with no link
            claimed when the URL was not in flight (settled before: a retried script
            whose reply was lost, or a takeover's duplicate).

        Raises:
            ValueError: ``state`` is not a final state.
        """
        if state not in _STATE_BYTES:
            raise ValueError(f"unknown final state {state!r}")
        token, entry_id = split_ticket(task.ticket)
        shard = self.frontier_shard(task.url)
        bucket, field = self._slot(task.url)
        keys: list[str] = [self.counts_key, bucket, self.stream_key(shard), self.lease_key(shard)]
        args: list[Any] = [field, _STATE_BYTES[state], state, token, entry_id]
        self._link_args(links, keys, args)
        self.client  # noqa: B018
        answer = self._settle(keys=keys, args=args)
        if answer == -1:
            return FENCED
        if answer == -2:
            return []
        return [c == "1" for c in answer]

    def state(self, url: str) -> str | None:
        """``url``'s state name ("in_flight", "visited", ...), or None if unseen."""
        bucket, field = self._slot(url)
        value = self.client.hget(bucket, field)
        return None if value is None else _STATE_NAMES[value]

    def mark_skipped(self, tasks: Sequence[FetchTask]) -> None:
        """Settle each of ``tasks`` as skipped (robots.txt, a trap guard), one round trip."""
        if not tasks:
            return
        self.client  # noqa: B018
        pipe = self.client.pipeline(transaction=False)
        for task in tasks:
            token, entry_id = split_ticket(task.ticket)
            shard = self.frontier_shard(task.url)
            bucket, field = self._slot(task.url)
            keys = [self.counts_key, bucket, self.stream_key(shard), self.lease_key(shard)]
            self._settle(keys=keys, args=[field, _STATE_BYTES["skipped"], "skipped", token, entry_id], client=pipe)
        pipe.execute()

    def fail_if_in_flight(self, task: FetchTask) -> None:
        """Settle ``task`` failed unless it is final already (after an internal error)."""
        self.settle(task, "failed")

    def may_fetch(self, task: FetchTask) -> bool:
        """True unless ``task`` carries a lease token that no longer holds its shard: then
        another machine owns the origin now, and this one must not send the request."""
        token, _entry_id = split_ticket(task.ticket)
        return not token or self.client.get(self.lease_key(self.frontier_shard(task.url))) == token

    def register_content(
        self, content_fingerprint: int, simhash: int, url: str
    ) -> tuple[str | None, str | None, int | None]:
        """Register ``url`` as the first page whose Markdown has ``content_fingerprint``
        across every machine. Returns ``(duplicate_of, None, None)``: the URL registered
        first, or None if it is ``url``. Near duplicates (``simhash``) are not looked up
        across machines: the index is per process memory
        (:class:`crawler.content.neardup.NearDuplicateIndex`)."""
        key = f"{self.prefix}c:{{c{content_fingerprint & (self.visited_shards - 1)}}}"
        field = struct.pack(">Q", content_fingerprint)
        if self.client.hsetnx(key, field, url):
            return None, None, None
        first = self.client.hget(key, field)
        return (None if first == url else first), None, None

    # -- robots.txt -----------------------------------------------------------------------
    def store_robots(self, origin: str, status: int | None, body: bytes | None, error: str | None) -> None:
        """Keep ``origin``'s robots.txt answer (the first one stored wins), so a machine
        that takes the origin over applies the same rules without fetching it again."""
        answer = {"status": status, "error": error, "body": None if body is None else base64.b64encode(body).decode()}
        self.client.hsetnx(self.prefix + "robots", origin, json.dumps(answer))

    def robots_of(self, origin: str) -> tuple[int | None, bytes | None, str | None] | None:
        """``(status, body, error)`` of ``origin``'s stored robots.txt answer, or None."""
        stored = self.client.hget(self.prefix + "robots", origin)
        if stored is None:
            return None
        answer = json.loads(stored)
        body = None if answer["body"] is None else base64.b64decode(answer["body"])
        return answer["status"], body, answer["error"]

    # -- the frontier ----------------------------------------------------------------------
    def read(self, shard: int, consumer: str, token: str, count: int) -> list[FetchTask]:
        """Up to ``count`` tasks of ``shard`` no machine has read, now pending under
        ``consumer``; each carries its ticket (``token`` and entry id)."""
        return self.read_shards({shard: token}, consumer, count).get(shard, [])

    def read_shards(
        self, tokens: dict[int, str], consumer: str, count: int, pending: bool = False
    ) -> dict[int, list[FetchTask]]:
        """Up to ``count`` tasks of each shard of ``tokens`` (shard -> lease token) in one
        XREADGROUP: new ones, now pending under ``consumer``, or with ``pending`` the
        ones already pending under it (from the start of its pending list). Each task
        carries its ticket. Shards with none are missing from the answer."""
        start = "0" if pending else ">"
        keys = {self.stream_key(shard): shard for shard in tokens}
        reply = self.client.xreadgroup(GROUP, consumer, dict.fromkeys(keys, start), count=count)
        read: dict[int, list[FetchTask]] = {}
        for key, entries in reply or ():
            shard = keys[key]
            tasks = [decode_task(f["t"], make_ticket(tokens[shard], i)) for i, f in entries if f]
            if tasks:
                read[shard] = tasks
        return read

    def take_over(self, shard: int, consumer: str, token: str, count: int = 1000) -> list[FetchTask]:
        """Every entry pending in ``shard`` (read by its last lease holder, any machine),
        now pending under ``consumer``: call it right after winning the shard's lease."""
        tasks: list[FetchTask] = []
        cursor = "0-0"
        while True:
            cursor, entries, *_deleted = self.client.xautoclaim(
                self.stream_key(shard), GROUP, consumer, 0, start_id=cursor, count=count
            )
            tasks += (decode_task(f["t"], make_ticket(token, i)) for i, f in entries if f)
            if cursor == "0-0":
                return tasks

    def pending(self, shard: int) -> dict[str, int]:
        """Entries of ``shard`` read and not settled, by consumer (machine)."""
        summary = self.client.xpending(self.stream_key(shard), GROUP)
        return {c["name"]: int(c["pending"]) for c in summary.get("consumers") or ()}

    def waiting(self, shard: int) -> int:
        """Entries of ``shard`` no machine has read yet."""
        length = self.client.xlen(self.stream_key(shard))
        return max(0, int(length) - int(self.client.xpending(self.stream_key(shard), GROUP)["pending"]))

    # -- counts -------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """``claimed``, ``open`` (claimed, not final), ``visited``, ``failed``, ``skipped``."""
        return {k: int(v) for k, v in self.client.hgetall(self.counts_key).items()}

    def open_count(self) -> int:
        """URLs claimed and not yet final, on every machine: 0 means the crawl is over."""
        return int(self.client.hget(self.counts_key, "open") or 0)


def connect(url: str) -> Any:
    """A redis-py client for ``url`` (decoded replies) that retries a command after a lost
    connection or a timeout, with exponential backoff (0.1 s doubling to 5 s, 15 tries:
    about a minute), so a Redis restart is waited out.

    Raises:
        ConfigError: ``url`` is not a redis://, rediss:// or unix:// URL.
    """
    import redis
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"--redis must be a redis://HOST:PORT/DB URL, got {url!r}")
    return redis.Redis.from_url(
        url,
        decode_responses=True,
        retry=Retry(ExponentialBackoff(cap=5.0, base=0.1), 15),
        retry_on_error=[redis.ConnectionError, redis.TimeoutError],
        health_check_interval=30,
        socket_connect_timeout=5,
    )


def page_task(url: str, depth: int = 0, request_url: str | None = None) -> FetchTask:
    """A page task (a seed) for :meth:`RedisCrawl.claim_tasks`."""
    return FetchTask(url, depth, None, (), request_url, 0, KIND_PAGE)
