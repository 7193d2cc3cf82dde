"""Retry policy: which failures are transient, how long to wait before the next attempt.

Pure functions; the fetcher decides *whether* to retry (it knows the response), the
dispatcher decides *when* (it holds the task until then, so no fetcher thread sleeps).
"""

from __future__ import annotations

import email.utils
import heapq
import itertools
import random

#: HTTP statuses worth another attempt: 408 Request Timeout, 429 Too Many Requests,
#: 500, 502 Bad Gateway, 503 Service Unavailable, 504 Gateway Timeout (RFC 9110
#: section 15.6 and RFC 6585 section 4). Other 5xx (501 Not Implemented, 505...) are
#: answers, not accidents.
TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
#: :class:`crawler.web.fetch.FetchError` reasons worth another attempt.
TRANSIENT_REASONS = frozenset({"timeout", "connection", "incomplete body"})


def is_transient(status: int | None, reason: str | None = None) -> bool:
    """True if a response with ``status`` (or, with no response, a fetch error with
    ``reason``) may succeed when tried again later."""
    if status is not None:
        return status in TRANSIENT_STATUSES
    return reason in TRANSIENT_REASONS


def parse_retry_after(value: str | None, date: str | None = None, now_epoch: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (RFC 9110 section 10.2.3).

    Args:
        value: the header value: delay-seconds (``"7"``) or an HTTP-date
            (``"Wed, 21 Oct 2026 07:28:00 GMT"``).
        date: the response's ``Date`` header; an HTTP-date Retry-After is taken
            relative to it (the server's clock), else relative to ``now_epoch``.
        now_epoch: the local time (Unix seconds), used when ``date`` is missing or
            unparsable; required then.

    Returns:
        seconds, at least 0; ``None`` if ``value`` is missing or unparsable.
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(int(value))
    try:
        at = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    reference = None
    if date:
        try:
            reference = email.utils.parsedate_to_datetime(date).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            reference = None
    if reference is None:
        if now_epoch is None:
            return None
        reference = now_epoch
    return max(0.0, at - reference)


def backoff_s(attempt: int, base_s: float, cap_s: float, rng: random.Random | None = None) -> float:
    """Exponential backoff with jitter before attempt ``attempt + 1``.

    ``base_s * 2**attempt`` capped at ``cap_s``, times a uniform factor in [0.5, 1.5)
    so that many URLs failing together do not come back together ("equal jitter").
    ``attempt`` counts from 0 (the first retry waits about ``base_s``).
    """
    return min(cap_s, base_s * (2 ** min(attempt, 30))) * (0.5 + (rng or random).random())


class RetryQueue:
    """Tasks waiting for their next attempt, by the monotonic time it is due.

    The dispatcher holds them here, not in a sleeping fetcher thread, and puts each back
    on the frontier once due, where it passes the same capacity gate and politeness as
    any task. O(log n) push and pop.
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, object]] = []  # (due, seq, task)
        self._seq = itertools.count()

    def push(self, task: object, due: float) -> None:
        """Hold ``task`` until ``due`` (monotonic seconds)."""
        heapq.heappush(self._heap, (due, next(self._seq), task))

    def pop_due(self, now: float) -> list:
        """Remove and return the tasks due at ``now``, earliest first."""
        due = []
        while self._heap and self._heap[0][0] <= now:
            due.append(heapq.heappop(self._heap)[2])
        return due

    def next_due(self) -> float | None:
        """When the earliest task is due, or ``None`` if none waits."""
        return self._heap[0][0] if self._heap else None

    def tasks(self) -> list:
        """The tasks waiting, in no particular order (a report)."""
        return [entry[2] for entry in self._heap]

    def drain(self) -> list:
        """Remove and return every task (a stop: they go back to the frontier)."""
        tasks = [entry[2] for entry in sorted(self._heap)]
        self._heap.clear()
        return tasks

    def __len__(self) -> int:
        return len(self._heap)
