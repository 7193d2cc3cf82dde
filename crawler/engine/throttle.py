"""Adaptive crawl delay: the default politeness of an origin, from its response times.

One request is in flight per origin, and the next one starts ``delay`` seconds after the
previous exchange ended (request sent to body read, measured by the fetcher). The delay
follows the origin's latency, as Scrapy's AutoThrottle does with its target concurrency
of 1 (``scrapy/extensions/throttle.py::_adjust_delay``): a server that answers in 200 ms
gets a request every ~400 ms, one that answers in 1 ms about every 2 ms. So an origin is
busy serving us at most about half the time, a slow or struggling server is asked less
often, and a batch gets its speed from many origins at once.

The latency fed to the rule is the median of the origin's last :data:`LATENCY_WINDOW`
exchanges. A fetcher measures wall time, and a thread waiting for the GIL while another
thread of its process converts a page adds its wait to the measure, so one busy
fetcher's exchanges spread over two orders of magnitude (docs/performance.md). The
median ignores such one-off spikes, and a server that really slows down moves it within
a few exchanges.

:func:`next_delay` is the whole rule; :class:`crawler.engine.politeness.Politeness` applies it
per origin after every exchange.
"""

from __future__ import annotations

#: Exchanges whose median latency the delay follows.
LATENCY_WINDOW = 5
#: Target requests in flight per origin: the delay aims at ``latency / TARGET_CONCURRENCY``.
TARGET_CONCURRENCY = 1.0
#: Delay after a 429 or 503 at least this many seconds, then doubled each time.
BACKOFF_MIN_S = 1.0
#: The adaptive delay never exceeds this (seconds); ``Retry-After`` pauses are separate.
MAX_DELAY_S = 60.0
#: Statuses that mean "slow down" (RFC 6585 section 4, RFC 9110 section 15.6.4).
SLOW_DOWN_STATUSES = frozenset({429, 503})


def next_delay(
    previous_s: float, latency_s: float, status: int | None, floor_s: float = 0.0, cap_s: float = MAX_DELAY_S
) -> float:
    """The origin's delay after one more exchange, in seconds.

    Args:
        previous_s: the origin's current delay (0 before its first exchange).
        latency_s: seconds from request sent to body read of this exchange (>= 0).
        status: its HTTP status, ``None`` when no response arrived (timeout, reset).
        floor_s: the delay never goes below this: ``--delay`` or the origin's
            robots.txt ``Crawl-delay``, whichever is larger.
        cap_s: nor above this (a larger ``floor_s`` still wins).

    Returns:
        ``max(floor_s, min(cap_s, d))`` where, with ``target = latency_s /
        TARGET_CONCURRENCY``:

        1. a 429 or 503: ``d = max(2 * previous_s, BACKOFF_MIN_S, target)`` (back off);
        2. any other status >= 400 or no response: ``d = max(previous_s, target)``
           (an error answer is often fast; it must not speed the crawl up);
        3. else ``d = max(target, (previous_s + target) / 2)``: a slower answer raises the
           delay at once, a faster one lowers it by half the difference per exchange.
    """
    target = max(0.0, latency_s) / TARGET_CONCURRENCY
    if status in SLOW_DOWN_STATUSES:
        delay = max(2.0 * previous_s, BACKOFF_MIN_S, target)
    elif status is None or status >= 400:
        delay = max(previous_s, target)
    else:
        delay = max(target, (previous_s + target) / 2.0)
    return max(floor_s, min(cap_s, delay))
