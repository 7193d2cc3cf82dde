"""The crawl's cookie store (``--cookies``), hosted by the visited table's manager process.

Without ``--cookies`` no cookie outlives its redirect chain: each page task starts with
an empty jar, and only the hops of one chain pass their cookies on
(:attr:`crawler.engine.messages.FetchTask.cookies`). With it, every fetcher process reads
the store before a page task's first request and writes to it after each response that
changed the task's jar, so a cookie set on a page fetched by one process is sent by
every process on its next request to that site.

The store keeps cookies by the domain they belong to (:func:`crawler.web.cookies.domain_key`);
a read for a host returns those of the host and of its parent domains
(:func:`crawler.web.cookies.host_keys`), and the fetcher's jar (the standard library's
cookie policy) decides which of them each request sends. Each call is one round trip
through a :class:`CookieStoreProxy`; a write touches only the cookies the response set
or removed, so two fetchers writing different cookies of one site lose neither.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from multiprocessing.managers import BaseProxy
from typing import Any

from crawler.web.cookies import MAX_COOKIES, CookieKey, CookieTuple, cookie_key, domain_key, host_keys


class CookieStore:
    """Cookies by domain, for the whole crawl: at most :data:`crawler.web.cookies.MAX_COOKIES`
    per domain (a further new one takes the place of the one stored longest, RFC 6265
    section 5.3); an expired cookie is dropped when read."""

    def __init__(self) -> None:
        self._domains: dict[str, dict[CookieKey, CookieTuple]] = {}
        self._lock = threading.Lock()

    def cookies_for(self, host: str) -> list[CookieTuple]:
        """The unexpired cookies kept for ``host`` (a host name or IP address, no port)
        and its parent domains; which of them a request sends is its jar's decision."""
        now = time.time()
        found: list[CookieTuple] = []
        with self._lock:
            for key in host_keys(host):
                kept = self._domains.get(key)
                if not kept:
                    continue
                for name, cookie in list(kept.items()):
                    expires = cookie[7]
                    if expires is not None and expires <= now:
                        del kept[name]
                    else:
                        found.append(cookie)
        return found

    def update(self, changed: Iterable[CookieTuple], removed: Iterable[CookieKey] = ()) -> None:
        """Remove the cookies ``removed`` (``(domain, path, name)``), then keep each cookie
        of ``changed`` (replacing the one with its domain, path and name)."""
        with self._lock:
            for key in removed:
                self._domains.get(domain_key(key[0]), {}).pop(key, None)
            for cookie in changed:
                kept = self._domains.setdefault(domain_key(cookie[2]), {})
                if cookie_key(cookie) not in kept and len(kept) >= MAX_COOKIES:
                    del kept[next(iter(kept))]  # dicts keep insertion order: the oldest
                kept[cookie_key(cookie)] = cookie

    def __len__(self) -> int:
        """Number of cookies kept (expired ones included until read)."""
        with self._lock:
            return sum(len(kept) for kept in self._domains.values())


class CookieStoreProxy(BaseProxy):
    """Client side of a manager-hosted :class:`CookieStore`; each call is one round trip."""

    _exposed_ = ("cookies_for", "update", "__len__")

    # Any: typeshed has BaseProxy._callmethod return None (it returns the store's answer)
    def cookies_for(self, host: str) -> Any:
        return self._callmethod("cookies_for", (host,))

    def update(self, changed: Iterable[CookieTuple], removed: Iterable[CookieKey] = ()) -> None:
        return self._callmethod("update", (list(changed), list(removed)))

    def __len__(self) -> Any:
        return self._callmethod("__len__")
