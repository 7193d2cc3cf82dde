"""The sharded visited table and the manager process that hosts it.

Every URL the crawl ever schedules is *claimed* here first, and only the process whose
claim wins fetches it::

    unseen --claim--> in-flight --mark--> visited | failed | skipped

The table holds ``shards`` (a power of two) plain dicts, each with its own lock, keyed by
the 64-bit xxh3 fingerprint of the normalized URL (:func:`crawler.web.urlnorm.fingerprint`);
a URL lives in shard ``fingerprint & (shards - 1)``. A claim is a compare-and-set under
that one shard lock, so two fetchers racing on one URL cannot both win, and claims on
different shards never wait for each other.

The table lives in a :class:`VisitedManager` server process; fetchers talk to it through
a proxy, where each method call is one round trip. So the coarse methods matter:
:meth:`VisitedTable.claim_many` claims a page's whole link list in one call, and
:meth:`VisitedTable.settle` marks the page done *and* claims its links in one call.

States are stored as small ints (cached objects, no per-entry allocation beyond the key).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from multiprocessing.context import BaseContext
from multiprocessing.managers import BaseManager, BaseProxy
from typing import Any, Protocol

from crawler.content.neardup import NearDuplicateIndex
from crawler.engine.cookiestore import CookieStore, CookieStoreProxy
from crawler.engine.lifeline import watch_parent
from crawler.engine.messages import FetchTask
from crawler.engine.signals import child_signals
from crawler.vocabulary import UrlState
from crawler.web.urlnorm import fingerprint

IN_FLIGHT, VISITED, FAILED, SKIPPED = 1, 2, 3, 4
#: State names as reported by :meth:`VisitedTable.state` and :meth:`VisitedTable.counts`.
STATE_NAMES = {
    IN_FLIGHT: UrlState.IN_FLIGHT.value,
    VISITED: UrlState.VISITED.value,
    FAILED: UrlState.FAILED.value,
    SKIPPED: UrlState.SKIPPED.value,
}
_FINAL: dict[str, int] = {
    UrlState.VISITED.value: VISITED,
    UrlState.FAILED.value: FAILED,
    UrlState.SKIPPED.value: SKIPPED,
}


class VisitedTable:
    """A sharded fingerprint -> state table with atomic claims.

    Args:
        shards: number of shards, a power of two (default 64).

    Raises:
        ValueError: ``shards`` is not a positive power of two.
    """

    def __init__(self, shards: int = 64) -> None:
        if shards < 1 or shards & (shards - 1):
            raise ValueError(f"shards must be a power of two, got {shards}")
        self._mask = shards - 1
        self._shards: list[dict[int, int]] = [{} for _ in range(shards)]
        self._locks = [threading.Lock() for _ in range(shards)]
        self._contents: list[dict[int, str]] = [{} for _ in range(shards)]
        self._near = NearDuplicateIndex()  # simhash -> content fingerprint (-> URL)
        self._near_lock = threading.Lock()

    @property
    def shard_count(self) -> int:
        """Number of shards."""
        return self._mask + 1

    def _group(self, urls: Sequence[str]) -> dict[int, list[tuple[int, int]]]:
        """Group ``urls`` by shard: shard index -> [(position in urls, fingerprint)]."""
        groups: dict[int, list[tuple[int, int]]] = {}
        for position, url in enumerate(urls):
            fp = fingerprint(url)
            groups.setdefault(fp & self._mask, []).append((position, fp))
        return groups

    def claim(self, url: str) -> bool:
        """Claim one URL: True (and state in-flight) only if it was unseen."""
        return self.claim_many((url,))[0]

    def claim_many(self, urls: Sequence[str]) -> list[bool]:
        """Claim each URL of ``urls`` (a sequence of normalized URLs) atomically.

        Returns:
            one bool per URL, in order: True where this call moved it from unseen to
            in-flight. A URL repeated within ``urls`` is won at most once.
        """
        won = [False] * len(urls)
        for index, members in self._group(urls).items():
            shard = self._shards[index]
            with self._locks[index]:
                for position, fp in members:
                    if fp not in shard:
                        shard[fp] = IN_FLIGHT
                        won[position] = True
        return won

    def _mark(self, url: str, state: int) -> None:
        fp = fingerprint(url)
        index = fp & self._mask
        with self._locks[index]:
            current = self._shards[index].get(fp)
            if current != IN_FLIGHT:
                name = STATE_NAMES.get(current, "unseen")  # type: ignore[arg-type]  # None: a miss
                raise ValueError(f"cannot mark {url!r}: it is {name}, not in flight")
            self._shards[index][fp] = state

    def mark(self, url: str, state: str) -> None:
        """Move an in-flight URL to ``state`` ("visited", "failed" or "skipped").

        Raises:
            ValueError: the URL is not in flight, or ``state`` is unknown.
        """
        if state not in _FINAL:
            raise ValueError(f"unknown final state {state!r}")
        self._mark(url, _FINAL[state])

    def mark_visited(self, url: str) -> None:
        """Shorthand for ``mark(url, "visited")``."""
        self._mark(url, VISITED)

    def mark_failed(self, url: str) -> None:
        """Shorthand for ``mark(url, "failed")``."""
        self._mark(url, FAILED)

    def mark_many(self, urls: Iterable[str], state: str) -> None:
        """``mark`` each URL of ``urls`` in one call (e.g. the frontier left at a page limit)."""
        for url in urls:
            self.mark(url, state)

    def settle(self, url: str, state: str, links: Sequence[str]) -> list[bool]:
        """Mark ``url`` final and claim ``links``, in one round trip through a proxy.

        Returns the :meth:`claim_many` result for ``links``.
        """
        self.mark(url, state)
        return self.claim_many(links)

    def first_content(self, content_fingerprint: int, url: str) -> str | None:
        """Register ``url`` as the first page whose Markdown has ``content_fingerprint``
        (a 64-bit int, xxh3 of the Markdown), atomically under that shard's lock.

        Returns:
            ``None`` if ``url`` is the first (it is now registered), else the URL that
            was registered first: ``url``'s page is an exact duplicate of it. Costs
            about one URL string per distinct page in the manager.
        """
        index = content_fingerprint & self._mask
        with self._locks[index]:
            first = self._contents[index].setdefault(content_fingerprint, url)
        return None if first == url else first

    def register_content(
        self, content_fingerprint: int, simhash: int, url: str
    ) -> tuple[str | None, str | None, int | None]:
        """:meth:`first_content`, and for a page that is not an exact duplicate, also
        register its ``simhash`` (64-bit SimHash of the Markdown,
        :func:`crawler.content.neardup.simhash`) and look for an earlier page within 3 bits
        (:class:`crawler.content.neardup.NearDuplicateIndex`): one round trip per page.

        Returns:
            ``(duplicate_of, near_duplicate_of, distance)``: the first URL with exactly
            this Markdown (then the other two are ``None``), else ``None`` and the URL of
            the closest earlier page within 3 bits with its Hamming distance in bits (or
            ``None, None``). Costs about 32 bytes per distinct page besides the URL that
            :meth:`first_content` keeps (the index refers to it by the fingerprint).
        """
        first = self.first_content(content_fingerprint, url)
        if first is not None:
            return first, None, None
        with self._near_lock:
            found = self._near.add_or_find(simhash, content_fingerprint)
        if found is None:
            return None, None, None
        reference, distance = found
        index = reference & self._mask
        with self._locks[index]:
            near = self._contents[index][reference]
        return None, near, distance

    def register_contents(self, items: Iterable[tuple[int, int, str]]) -> int:
        """Register ``[(content_fingerprint, simhash, url), ...]`` in order, as
        :meth:`register_content` would have, without answering: a resumed crawl reloads
        the earlier runs' pages (from the state store) so that its pages are compared
        with theirs too. Returns how many were registered (not exact duplicates of an
        earlier URL)."""
        return sum(
            self.register_content(content_fingerprint, simhash, url)[0] is None
            for content_fingerprint, simhash, url in items
        )

    def state(self, url: str) -> str | None:
        """The state name of ``url`` ("in_flight", "visited", ...), or None if unseen."""
        fp = fingerprint(url)
        index = fp & self._mask
        with self._locks[index]:
            value = self._shards[index].get(fp)
        return STATE_NAMES.get(value) if value is not None else None

    def __len__(self) -> int:
        """Number of URLs ever claimed."""
        return sum(len(s) for s in self._shards)

    def counts(self) -> dict[str, int]:
        """Per-state counts: {"in_flight": n, "visited": n, "failed": n, "skipped": n}."""
        totals: dict[str, int] = dict.fromkeys(STATE_NAMES.values(), 0)
        for index, shard in enumerate(self._shards):
            with self._locks[index]:
                values = list(shard.values())
            for value in values:
                totals[STATE_NAMES[value]] += 1
        return totals


class OfferedKeys:
    """The keys one fetcher process has already offered to the visited table.

    A key never goes back to unseen, so a second claim of a key that was claimed once
    (won or lost, by anyone) can only lose. A fetcher drops such keys before the round
    trip: on python3.11-doc a page links to about 43 distinct URLs and the whole site
    has 4,690, so most claims would be sent again and again for nothing.

    The table stays the authority: this is only a filter in front of it. Two threads
    racing on one key may both offer it (the table lets one win). Memory is bounded:
    after ``limit`` keys (default 2**17, about 8 MiB of fingerprints) the set is
    emptied and fills again, so a claim may be sent twice, and lose, once per cycle.

    Args:
        limit: keys remembered before the set is emptied; at least 1.
    """

    def __init__(self, limit: int = 1 << 17) -> None:
        self.limit = max(1, limit)
        self._seen: set[int] = set()

    def first_offer(self, key: str) -> bool:
        """True the first time ``key`` (a normalized URL) is seen here, and remember it."""
        fp = fingerprint(key)
        if fp in self._seen:
            return False
        if len(self._seen) >= self.limit:
            self._seen.clear()
        self._seen.add(fp)
        return True

    def forget(self, keys: Iterable[str]) -> None:
        """Offer ``keys`` again next time: their claim was not made (the settle that carried
        them failed or was fenced), so a later page linking to them must send them."""
        for key in keys:
            self._seen.discard(fingerprint(key))

    def __len__(self) -> int:
        return len(self._seen)


class Claims(Protocol):
    """What fetchers and the dispatcher ask of a visited table, in tasks: implemented by
    :class:`LocalClaims` (the embedded table) and :class:`crawler.engine.rediscrawl.RedisCrawl`."""

    def claim_tasks(self, tasks: Sequence[FetchTask]) -> list[bool]: ...

    def settle(self, task: FetchTask, state: str, links: Sequence[FetchTask] = ()) -> list[bool] | str: ...

    def mark_skipped(self, tasks: Sequence[FetchTask]) -> None: ...

    def fail_if_in_flight(self, task: FetchTask) -> None: ...

    def may_fetch(self, task: FetchTask) -> bool: ...

    def register_content(
        self, content_fingerprint: int, simhash: int, url: str
    ) -> tuple[str | None, str | None, int | None]: ...

    def state(self, url: str) -> str | None: ...


class LocalClaims:
    """The claims of one process (a fetcher or the dispatcher) on the embedded visited
    table, in tasks: the same methods as :class:`crawler.engine.rediscrawl.RedisCrawl`,
    so the engine is written once for both backends. Only URLs cross to the manager.

    Args:
        table: the manager's :class:`VisitedProxy` (or a :class:`VisitedTable` in tests).
    """

    def __init__(self, table: VisitedProxy | VisitedTable) -> None:
        self.table = table

    def claim_tasks(self, tasks: Sequence[FetchTask]) -> list[bool]:
        """:meth:`VisitedTable.claim_many` of the tasks' URLs."""
        return self.table.claim_many([t.url for t in tasks]) if tasks else []

    def settle(self, task: FetchTask, state: str, links: Sequence[FetchTask] = ()) -> list[bool]:
        """:meth:`VisitedTable.settle` of ``task``'s URL and the links' URLs."""
        return self.table.settle(task.url, state, [t.url for t in links])

    def mark_skipped(self, tasks: Sequence[FetchTask]) -> None:
        """Mark the tasks' URLs skipped (:meth:`VisitedTable.mark_many`)."""
        if tasks:
            self.table.mark_many([t.url for t in tasks], "skipped")

    def fail_if_in_flight(self, task: FetchTask) -> None:
        """Mark ``task``'s URL failed unless it is final already."""
        if self.table.state(task.url) == "in_flight":
            self.table.mark(task.url, "failed")

    def may_fetch(self, task: FetchTask) -> bool:
        """Always True: one machine owns every origin."""
        return True

    def register_content(
        self, content_fingerprint: int, simhash: int, url: str
    ) -> tuple[str | None, str | None, int | None]:
        """:meth:`VisitedTable.register_content`."""
        return self.table.register_content(content_fingerprint, simhash, url)

    def state(self, url: str) -> str | None:
        """:meth:`VisitedTable.state`."""
        return self.table.state(url)


class VisitedProxy(BaseProxy):
    """Client side of a manager-hosted :class:`VisitedTable`; each call is one round trip."""

    _exposed_ = (
        "claim",
        "claim_many",
        "mark",
        "mark_visited",
        "mark_failed",
        "mark_many",
        "settle",
        "first_content",
        "register_content",
        "register_contents",
        "state",
        "__len__",
        "counts",
    )

    # The methods that answer return Any: typeshed has BaseProxy._callmethod return None
    # (it returns the table method's result, typed in VisitedTable).
    def claim(self, url: str) -> Any:
        return self._callmethod("claim", (url,))

    def claim_many(self, urls: Iterable[str]) -> Any:
        return self._callmethod("claim_many", (list(urls),))

    def mark(self, url: str, state: str) -> None:
        return self._callmethod("mark", (url, state))

    def mark_visited(self, url: str) -> None:
        return self._callmethod("mark_visited", (url,))

    def mark_failed(self, url: str) -> None:
        return self._callmethod("mark_failed", (url,))

    def mark_many(self, urls: Iterable[str], state: str) -> None:
        return self._callmethod("mark_many", (list(urls), state))

    def settle(self, url: str, state: str, links: Iterable[str]) -> Any:
        return self._callmethod("settle", (url, state, list(links)))

    def first_content(self, content_fingerprint: int, url: str) -> Any:
        return self._callmethod("first_content", (content_fingerprint, url))

    def register_content(self, content_fingerprint: int, simhash: int, url: str) -> Any:
        return self._callmethod("register_content", (content_fingerprint, simhash, url))

    def register_contents(self, items: Iterable[tuple[int, int, str]]) -> Any:
        return self._callmethod("register_contents", (items,))

    def state(self, url: str) -> Any:
        return self._callmethod("state", (url,))

    def __len__(self) -> Any:
        return self._callmethod("__len__")

    def counts(self) -> Any:
        return self._callmethod("counts")


class VisitedManager(BaseManager):
    """Manager process hosting visited tables: ``manager.VisitedTable(shards)`` returns a
    :class:`VisitedProxy`, and ``manager.CookieStore()`` (``--cookies``) a
    :class:`crawler.engine.cookiestore.CookieStoreProxy`. Start it with
    :func:`start_manager` so it ignores Ctrl-C and exits when the process that started
    it is gone."""


VisitedManager.register("VisitedTable", VisitedTable, proxytype=VisitedProxy)
VisitedManager.register("CookieStore", CookieStore, proxytype=CookieStoreProxy)


def start_manager(ctx: BaseContext) -> VisitedManager:
    """Start a :class:`VisitedManager` with the multiprocessing context ``ctx``; its
    process exits at once when this one is gone (a SIGKILLed dispatcher)."""
    manager = VisitedManager(ctx=ctx)
    # BaseManager runs the initializer in the server process, before it serves, under
    # every start method (checked: fork, spawn and forkserver)
    manager.start(initializer=_manager_process_init, initargs=(os.getpid(),))
    return manager


def _manager_process_init(owner_pid: int) -> None:
    """First thing in the manager process: the signals are the owner's, and its death
    is this process's end."""
    child_signals()
    watch_parent(owner_pid)
