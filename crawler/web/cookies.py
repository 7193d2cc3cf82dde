"""HTTP cookies (RFC 6265) as the crawler keeps them: never in a session, only in a jar
that the caller hands to :meth:`crawler.web.fetch.HttpClient.get`.

Which cookie is stored from a ``Set-Cookie`` and which is sent back (domain, path,
``Secure``, expiry) is decided by the standard library's
:class:`http.cookiejar.DefaultCookiePolicy`; nothing here parses a cookie. What this
module adds:

* :class:`NoCookies`, the policy of every ``requests.Session`` of the crawler: it stores
  nothing and sends nothing, so a cookie never outlives the jar it was given to;
* :class:`BoundedJar`, a jar that keeps at most :data:`MAX_COOKIES` cookies of at most
  :data:`MAX_COOKIE_BYTES` each (RFC 6265 section 6.1's minimums), so the cookies a
  redirect hop passes on stay a small message;
* :data:`CookieTuple`, a cookie as a tuple of plain values, the form that crosses a
  process boundary (:attr:`crawler.engine.messages.FetchTask.cookies`) and goes to disk.
"""

from __future__ import annotations

import http.cookiejar
import time
from collections.abc import Iterable

#: Most cookies one jar keeps (RFC 6265 section 6.1: at least 50 per domain); further
#: new cookies are ignored, a cookie already kept is still replaced or deleted.
MAX_COOKIES = 50
#: Most bytes of one cookie's name and value together (RFC 6265 section 6.1: at least
#: 4,096 bytes of name, value and attributes); a larger cookie is ignored, as browsers do.
MAX_COOKIE_BYTES = 4096

#: One cookie as plain values: ``(name, value, domain, domain_specified, path,
#: path_specified, secure, expires)``. ``value`` is None for a ``Set-Cookie`` without
#: ``=``; ``domain`` is the host of a host-only cookie, or the ``Domain`` attribute with
#: a leading dot; ``expires`` is a Unix time in seconds, or None for a session cookie.
CookieTuple = tuple[str, str | None, str, bool, str, bool, bool, int | None]
#: What identifies a cookie in a jar (a second ``Set-Cookie`` with it replaces the first).
CookieKey = tuple[str, str, str]  # (domain, path, name)


class NoCookies(http.cookiejar.DefaultCookiePolicy):
    """A cookie policy that accepts no cookie and returns none: set on
    ``requests.Session.cookies``, the session never keeps a cookie between requests."""

    def set_ok(self, cookie: http.cookiejar.Cookie, request: object) -> bool:
        return False

    def return_ok(self, cookie: http.cookiejar.Cookie, request: object) -> bool:
        return False


def rfc6265_policy() -> http.cookiejar.DefaultCookiePolicy:
    """The standard library's cookie policy, with a host-only cookie (one set without a
    ``Domain`` attribute) sent to its own host only (RFC 6265 section 5.4: the default
    policy also sends it to the host's subdomains, as Netscape's rules did)."""
    return http.cookiejar.DefaultCookiePolicy(strict_ns_domain=http.cookiejar.DefaultCookiePolicy.DomainStrictNonDomain)


class BoundedJar(http.cookiejar.CookieJar):
    """A :class:`http.cookiejar.CookieJar` (with :func:`rfc6265_policy`) that keeps at
    most :data:`MAX_COOKIES` cookies of at most :data:`MAX_COOKIE_BYTES` each.

    Args:
        cookies: cookies to start with (:data:`CookieTuple`); an expired one is left out.
    """

    def __init__(self, cookies: Iterable[CookieTuple] = ()) -> None:
        super().__init__(rfc6265_policy())
        now = int(time.time())
        for fields in cookies:
            cookie = cookie_of(fields)
            if not cookie.is_expired(now):
                self.set_cookie(cookie)

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        """Keep ``cookie`` unless it is too large; a new one in a full jar takes the place
        of the cookie kept longest (RFC 6265 section 5.3: the user agent evicts old
        cookies, so a page that sets many cannot lock the later ones out)."""
        if len(cookie.name) + len(cookie.value or "") > MAX_COOKIE_BYTES:
            return
        with self._cookies_lock:  # type: ignore[attr-defined]  # CookieJar's own RLock
            kept = self._cookies.get(cookie.domain, {}).get(cookie.path, {})  # type: ignore[attr-defined]
            if cookie.name not in kept and len(self) >= MAX_COOKIES:
                oldest = next(iter(self))  # the first of the first domain and path set: the oldest there
                self.clear(oldest.domain, oldest.path, oldest.name)
            super().set_cookie(cookie)


def cookie_of(fields: CookieTuple) -> http.cookiejar.Cookie:
    """The :class:`http.cookiejar.Cookie` of a :data:`CookieTuple` (a Netscape cookie,
    version 0, as RFC 6265 cookies are)."""
    name, value, domain, domain_specified, path, path_specified, secure, expires = fields
    return http.cookiejar.Cookie(
        0,
        name,
        value,
        None,
        False,
        domain,
        domain_specified,
        domain.startswith("."),
        path,
        path_specified,
        secure,
        expires,
        expires is None,
        None,
        None,
        {},
    )


def cookie_tuples(jar: http.cookiejar.CookieJar) -> tuple[CookieTuple, ...]:
    """The cookies of ``jar`` that have not expired, as :data:`CookieTuple`, sorted."""
    now = int(time.time())
    return tuple(
        sorted(
            (
                (c.name, c.value, c.domain, c.domain_specified, c.path, c.path_specified, c.secure, c.expires)
                for c in jar
                if not c.is_expired(now)
            ),
            key=_order,  # a value or an expiry may be None: no tuple order between them
        )
    )


def _order(fields: CookieTuple) -> tuple:
    """A sort key of a cookie tuple that orders None before any value."""
    return tuple((value is not None, value) for value in fields)


def cookie_key(fields: CookieTuple) -> CookieKey:
    """What identifies the cookie ``fields`` in a jar: ``(domain, path, name)``."""
    return fields[2], fields[4], fields[0]


def changes(
    before: tuple[CookieTuple, ...], after: tuple[CookieTuple, ...]
) -> tuple[list[CookieTuple], list[CookieKey]]:
    """What a response did to a jar, from :func:`cookie_tuples` taken before and after:
    the cookies it set or changed, and the keys of those it removed (or that expired)."""
    old = {cookie_key(c): c for c in before}
    new = {cookie_key(c): c for c in after}
    changed = [c for key, c in new.items() if old.get(key) != c]
    removed = [key for key in old if key not in new]
    return changed, removed


def sets_new_value(before: tuple[CookieTuple, ...], after: tuple[CookieTuple, ...]) -> bool:
    """Whether ``after`` has a cookie (name and value at its domain and path) that
    ``before`` did not: a response that only renewed a cookie's expiry, or cleared one,
    gives the server nothing new to read on the next request."""
    return bool({c[:3] + c[4:5] for c in after} - {c[:3] + c[4:5] for c in before})


def host_keys(host: str) -> list[str]:
    """The domains whose cookies may be sent to ``host`` (lower case, no port): the host
    itself and each parent domain, ``www.example.org`` -> ``www.example.org``,
    ``example.org``, ``org``. The cookie policy then decides which are sent."""
    host = host.lower().strip(".")
    if not host or ":" in host or host.replace(".", "").isdigit():  # an IP address: itself only
        return [host] if host else []
    if "." not in host:  # http.cookiejar keeps a dotless host's cookies as HOST.local
        return [host, host + ".local"]
    parts = host.split(".")
    return [".".join(parts[i:]) for i in range(len(parts))]


def domain_key(domain: str) -> str:
    """The store key of a cookie's ``domain``: lower case, without the leading dot."""
    return domain.lower().lstrip(".")
