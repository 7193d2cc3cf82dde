"""robots.txt policy of one origin (RFC 9309, https://www.rfc-editor.org/rfc/rfc9309).

Pure: the caller fetches ``robots_url(origin)`` (following at most
:data:`ROBOTS_MAX_REDIRECTS` redirects, to any host) and hands the outcome to
:meth:`RobotsRules.from_response`; the rules then apply to the *original* origin, even
when the file came from another host (§2.3.1.2). What the outcome means (§2.3.1):

=====================  ===============  ==========================================
response               state            pages of the origin
=====================  ===============  ==========================================
2xx                    ``parsed``       as the file says (body parsed by protego)
3xx (redirect limit)   ``unavailable``  all allowed (§2.3.1.2 "MAY assume unavailable")
4xx except 429         ``unavailable``  all allowed (§2.3.1.3)
429                    ``unreachable``  none, retry later (our choice, see below)
5xx, network error     ``unreachable``  none, retry later (§2.3.1.4)
any other status       ``unreachable``  none, retry later (fail closed)
``--ignore-robots``    ``ignored``      all allowed (:meth:`RobotsRules.allow_all`)
=====================  ===============  ==========================================

429 Too Many Requests is a 4xx, so RFC 9309 §2.3.1.3 would allow everything. We treat
it as a 5xx instead, as Google does (its robots.txt documentation reads 5xx *and* 429
as "fully disallowed" for now:
https://developers.google.com/search/docs/crawling-indexing/robots/robots_txt): a
server that asks us to slow down must not get an unrestricted crawl.
An ``unreachable`` result must not be cached as the origin's policy: the caller
fetches robots.txt again later (§2.3.1.4 allows a cached copy or, after 30 days of
errors, "unavailable"; that long-term policy is the caller's).

Matching is protego's (Scrapy's RFC 9309 parser; we do not match paths ourselves):
the group whose ``User-agent`` is our :func:`product_token` (case-insensitive), else
``*`` (§2.2.1; groups naming the same agent are merged); within it the longest
matching ``Allow``/``Disallow`` pattern wins and ``Allow`` wins a tie (§2.2.2), with
``*`` and ``$`` as in §2.2.3; ``/robots.txt`` itself is always allowed.

Protego behaviours worth knowing (protego 0.7, pinned by tests/test_robots.py):

* It finds a group token *anywhere* in the name it is given, at a word start: with the
  full header ``crawler/0.1 (corpus crawler; python-requests)`` a
  ``User-agent: python-requests`` group applies (and beats ``crawler``: longest token
  wins), and with ``crawler/0.1 (+https://example.org/bot)`` so do ``example`` and
  ``bot``. Hence we pass only the product token.
* Even then a group whose token is a *prefix* of ours matches: ``User-agent: crawl``
  applies to ``crawler`` when there is no ``crawler`` group, and a one-letter group
  (``User-agent: c``) ties with ``*`` and wins if it comes first in the file.
  ``User-agent: crawler/1.0`` or ``User-agent: crawler bot`` do not match
  ``crawler`` (RFC 9309 would read the product token ``crawler`` in both).
* A UTF-8 BOM is not stripped: ``\\ufeffUser-agent: *`` is an unknown line and the
  first group is lost (conformance case C29). :meth:`RobotsRules.from_response`
  strips it.
* ``Allow: /docs/index.html`` also allows ``/docs/`` exactly (Google's reading); a
  rule before any ``User-agent`` line is ignored; misspellings such as ``Dissallow``
  are accepted.

Cost: :meth:`RobotsRules.allowed` tries every rule of the group on a path no rule
matches, so it grows with the rules (figures in docs/performance.md). Protego picks the
group once per agent name (memoized).
"""

from __future__ import annotations

import dataclasses
import functools
import re

from protego import Protego

from crawler.web.urlnorm import origin_of, request_url

__all__ = ["ROBOTS_MAX_BYTES", "ROBOTS_MAX_REDIRECTS", "RobotsRules", "origin_of", "product_token", "robots_url"]

#: Bytes of a robots.txt that are parsed; the rest is ignored. RFC 9309 §2.5: the
#: parsing limit "MUST be at least 500 kibibytes (KiB)".
ROBOTS_MAX_BYTES = 500 * 1024
#: Redirects the caller follows when fetching robots.txt before giving up (RFC 9309
#: §2.3.1.2: "SHOULD follow at least five consecutive redirects").
ROBOTS_MAX_REDIRECTS = 5

#: States of :class:`RobotsRules` (see the module docstring's table).
PARSED, UNAVAILABLE, UNREACHABLE, IGNORED = "parsed", "unavailable", "unreachable", "ignored"

_UTF8_BOM = b"\xef\xbb\xbf"
_PRODUCT = re.compile(r"\s*([^\s/;()]*)")


def robots_url(origin: str) -> str:
    """The robots.txt URL of an origin: ``origin + '/robots.txt'`` (RFC 9309 §2.3)."""
    return origin + "/robots.txt"


@functools.lru_cache(maxsize=32)
def product_token(user_agent: str) -> str:
    """The name a crawler matches robots.txt groups with (RFC 9309 §2.2.1).

    The product name of a User-Agent header (RFC 9110 §10.1.5, ``product = token
    ["/" product-version]``): its first word, cut at ``/``, ``;``, ``(`` or
    whitespace. ``'crawler/0.1 (corpus crawler; python-requests)'`` -> ``'crawler'``;
    ``'mybot'`` -> ``'mybot'``; ``''`` or ``'/1.0'`` -> ``''`` (only a ``*`` group
    matches it). Case is kept; protego matches case-insensitively.
    """
    m = _PRODUCT.match(user_agent)
    assert m is not None  # every part is optional: the regex matches any string
    return m.group(1)


def _robots_text(body: bytes) -> str:
    """The text of a robots.txt body: UTF-8 BOM stripped, the first
    :data:`ROBOTS_MAX_BYTES` kept, decoded as UTF-8 (RFC 9309 §2.3: "MUST be UTF-8")
    with U+FFFD for bad bytes. A body that reaches the limit (it may have been cut by
    the fetcher) loses its last line unless that line ended inside the limit: a rule
    cut in the middle (``Allow: /public-a`` read as ``Allow: /pub``) would say
    something the file does not."""
    at_limit = len(body) >= ROBOTS_MAX_BYTES  # counted with the BOM, as the fetcher cut it
    body = body.removeprefix(_UTF8_BOM)[:ROBOTS_MAX_BYTES]
    if at_limit and not body.endswith((b"\n", b"\r")):
        body = body[: max(body.rfind(b"\n"), body.rfind(b"\r")) + 1]
    return body.decode("utf-8", errors="replace")


@dataclasses.dataclass(frozen=True, eq=False)
class RobotsRules:
    """The robots.txt policy of one origin; build it with :meth:`from_response` or
    :meth:`allow_all`.

    Attributes:
        state: ``'parsed'``, ``'unavailable'`` (allow all), ``'unreachable'`` (disallow
            all, retry later) or ``'ignored'`` (allow all); see the module docstring.
        status: HTTP status of the final robots.txt response; ``None`` for a network
            error or :meth:`allow_all`.
        error: why the fetch failed (network errors), else ``None``.
        sitemaps: absolute http(s) URLs of the file's ``Sitemap:`` lines, in request
            form (:func:`crawler.web.urlnorm.request_url`), de-duplicated, file order;
            relative or non-http(s) values are dropped (sitemaps.org: "the complete URL").
        parser: the protego parser of a ``parsed`` file, else ``None``.
    """

    state: str
    status: int | None = None
    error: str | None = None
    sitemaps: tuple[str, ...] = ()
    parser: Protego | None = dataclasses.field(default=None, repr=False)

    @classmethod
    def from_response(cls, status: int | None, body: bytes | None, error: str | None = None) -> RobotsRules:
        """The rules an outcome of fetching robots.txt gives (RFC 9309 §2.3.1).

        Args:
            status: the final HTTP status after following at most
                :data:`ROBOTS_MAX_REDIRECTS` redirects (a 3xx here means the limit was
                reached), or ``None`` when no response came (network error).
            body: the response body for a 2xx (``None`` is read as empty); ignored
                otherwise.
            error: the reason when ``status`` is ``None`` (``'timeout'``...).

        Returns:
            ``parsed`` rules for a 2xx, ``unavailable`` for a 3xx or a 4xx other than
            429, ``unreachable`` for 429, 5xx, ``None`` and any other status. Never raises.
        """
        if status is not None and 200 <= status < 300:
            parser = Protego.parse(_robots_text(body or b""))
            sitemaps = (request_url(u) for u in parser.sitemaps)
            return cls(PARSED, status, error, tuple(dict.fromkeys(u for u in sitemaps if u)), parser)
        if status is not None and (300 <= status < 400 or (400 <= status < 500 and status != 429)):
            return cls(UNAVAILABLE, status, error)
        return cls(UNREACHABLE, status, error)

    @classmethod
    def allow_all(cls) -> RobotsRules:
        """Rules that allow everything and ask no delay (``--ignore-robots``, tests)."""
        return cls(IGNORED)

    @property
    def unreachable(self) -> bool:
        """True if everything is disallowed for now and robots.txt should be fetched
        again later (5xx, 429, network error: RFC 9309 §2.3.1.4)."""
        return self.state == UNREACHABLE

    def allowed(self, url: str, user_agent: str) -> bool:
        """True if ``user_agent`` may fetch ``url``, a URL of this origin.

        Pass the URL to be requested (:func:`crawler.web.urlnorm.request_url`, the query
        as written): patterns match the path and query as sent (RFC 9309 §2.2.2). The
        group is chosen by :func:`product_token` of ``user_agent``.
        """
        if self.parser is None:
            return self.state != UNREACHABLE
        return self.parser.can_fetch(url, product_token(user_agent))

    def crawl_delay(self, user_agent: str) -> float | None:
        """Seconds to wait between two requests to this origin, or ``None``.

        Neither directive is in RFC 9309 (§2.2.4 lets crawlers read other records;
        Bing and Yandex honour ``Crawl-delay``, Google ignores it). The larger of
        ``Crawl-delay: S`` (seconds, as protego parses it: malformed, negative or
        infinite values ignored) and ``Request-rate: N/T`` read as ``T / N`` seconds
        (``1/10s`` -> 10.0, ``3/1m`` -> 20.0; a time-of-day window is ignored: the rate
        applies all day). ``None`` when the group (chosen as in :meth:`allowed`) has
        neither, or the state is not ``parsed``. A cap is the caller's policy.
        """
        if self.parser is None:
            return None
        token = product_token(user_agent)
        delays = [self.parser.crawl_delay(token)]
        rate = self.parser.request_rate(token)
        if rate is not None:
            delays.append(rate.seconds / rate.requests)
        known = [float(d) for d in delays if d is not None]
        return max(known) if known else None

    def status_line(self) -> str:
        """The outcome as a report shows it (``sites.tsv``): the HTTP status of a parsed
        or unavailable file (``'200'``, ``'404'``: all allowed), ``'unreachable (http
        503)'`` or ``'unreachable (timeout)'``, or ``'ignored'``."""
        if self.state == IGNORED:
            return IGNORED
        if self.state == UNREACHABLE:
            return self.describe().removeprefix("robots.txt ")
        return str(self.status)

    def describe(self) -> str:
        """One line for logs and skip reasons, e.g. ``'robots.txt disallows'``,
        ``'robots.txt unreachable (http 503)'``, ``'robots.txt unreachable (timeout)'``,
        ``'robots.txt unavailable (http 404): all allowed'``."""
        if self.state == PARSED:
            return "robots.txt disallows"
        if self.state == IGNORED:
            return "robots.txt ignored: all allowed"
        why = f"http {self.status}" if self.status is not None else (self.error or "network error")
        if self.state == UNAVAILABLE:
            if 300 <= (self.status or 0) < 400:
                why += f", still a redirect after {ROBOTS_MAX_REDIRECTS} redirects"
            return f"robots.txt unavailable ({why}): all allowed"
        return f"robots.txt unreachable ({why})"
