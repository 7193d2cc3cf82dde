"""The only things that cross a process boundary: small, frozen, picklable messages.

Dispatcher -> fetchers (task queue): :class:`FetchTask`, or :data:`STOP`.
Fetchers -> dispatcher (result pipes): one :class:`TaskDone` per task, preceded by an
:class:`Exchanged` for a page whose parsing and conversion follow its download (its
origin may take the next request meanwhile). Page bodies and
Markdown never cross a queue: fetchers write them to disk. The one body that does is a
robots.txt (at most :data:`crawler.web.robots.ROBOTS_MAX_BYTES`, once per origin): the
dispatcher enforces politeness, so it parses it.
"""

from __future__ import annotations

import dataclasses

from crawler.vocabulary import Outcome, TaskKind
from crawler.web.cookies import CookieTuple


def _reduce(message: FetchTask | TaskDone | Exchanged) -> tuple[type, tuple[object, ...]]:
    """Pickle a frozen slots dataclass as its class and field values: ``cls(*values)``
    on load. The default for such classes goes through ``dataclasses.fields()`` and a
    ``__setstate__`` per object, a third more per message (the dispatcher unpickles two
    messages per page)."""
    return type(message), tuple([getattr(message, name) for name in message.__slots__])


#: Sentinel on the task queue: the fetcher thread that reads it exits.
STOP = None

#: Outcomes of a task, as reported in :attr:`TaskDone.outcome`.
PAGE, NON_HTML, REDIRECT, FAILED = (
    Outcome.PAGE.value,
    Outcome.NON_HTML.value,
    Outcome.REDIRECT.value,
    Outcome.FAILED.value,
)
OUTCOMES = (PAGE, NON_HTML, REDIRECT, FAILED)
#: Not an end state: a transient failure; nothing written, the URL stays in flight and
#: the dispatcher schedules the next attempt (see TaskDone.retry_after_s).
RETRY = Outcome.RETRY.value
#: TaskDone.error of a RETRY sent without a request: the fetcher saw a Retry-After for
#: that origin moments ago (the task was queued before the dispatcher knew). Does not
#: use up an attempt.
DEFERRED = "deferred: origin paused by Retry-After"
#: TaskDone.error of a task sent back unrequested because this machine lost its frontier
#: shard's lease (``--redis``): the new holder fetches it. Does not use up an attempt.
LEASE_LOST = "deferred: shard lease lost"
#: The result of a robots.txt task (not a claimed URL: no record, no visited state).
ROBOTS = Outcome.ROBOTS.value

#: The result of a sitemap task (not a claimed URL either): its in-scope URLs claimed
#: are in TaskDone.discovered, the child sitemaps of an index in TaskDone.sitemaps.
SITEMAP = Outcome.SITEMAP.value

#: FetchTask kinds. KIND_FAIL: a claimed URL to record as failed without requesting it,
#: with the task's ``error``: held by MAX_CRASHES fetchers that died (CRASHED), or
#: its page work ran past ``--page-timeout`` (PAGE_TIMEOUT).
#: KIND_ROBOTS_REDIRECT: the target ``url`` of a robots.txt redirect to another origin,
#: fetched under that origin's politeness for the origins waiting on it (the dispatcher
#: keeps them); ``depth`` counts the redirects so far.
KIND_PAGE, KIND_ROBOTS, KIND_SITEMAP, KIND_FAIL = (
    TaskKind.PAGE.value,
    TaskKind.ROBOTS.value,
    TaskKind.SITEMAP.value,
    TaskKind.FAIL.value,
)
KIND_ROBOTS_REDIRECT = TaskKind.ROBOTS_REDIRECT.value
MAX_CRASHES = 3
CRASHED = f"fetcher process died while fetching it ({MAX_CRASHES} times)"
#: The error of a URL whose page work ran past ``--page-timeout`` (its fetcher was replaced).
PAGE_TIMEOUT = "page work timeout"


@dataclasses.dataclass(frozen=True, slots=True)
class FetchTask:
    """One URL to fetch, already claimed (in flight) in the visited table.

    Attributes:
        url: normalized absolute URL.
        depth: link distance from the seed (seed = 0); a redirect target keeps the
            depth of the URL that redirected to it.
        parent: the URL whose page (or redirect) led here; ``None`` for a seed.
        redirect_chain: the URLs that redirected, in order, to reach ``url``
            (empty unless ``url`` is a redirect target).
        request_url: the URL to send when it differs from ``url`` (the query in the
            order the link was written: ``url`` is the visited-table key, with the
            query sorted); ``None`` means send ``url``.
        attempt: 0 for the first attempt, n for the n-th retry.
        kind: :data:`KIND_PAGE`; :data:`KIND_ROBOTS` for the robots.txt of the
            origin ``url`` (``scheme://host[:port]``); :data:`KIND_SITEMAP` for the
            sitemap at ``url`` (``depth`` counts sitemap-index levels). Robots and
            sitemap tasks are not claimed URLs: no record, no visited state.
        error: for :data:`KIND_FAIL`, the reason recorded (``None``: :data:`CRASHED`).
        ticket: with ``--redis`` only, the lease token (``machine:epoch``) and stream
            entry id the task was read under (:mod:`crawler.engine.rediscrawl`): its
            settle is refused once the lease is lost. ``None`` otherwise.
        cookies: the cookies of the redirect chain that led here, sent by this hop's
            requests as the jar's policy allows (RFC 6265; :mod:`crawler.web.cookies`):
            at most 50 plain tuples, empty unless ``url`` is a redirect target whose
            chain set cookies (with ``--cookies`` the crawl's store has them instead).
    """

    url: str
    depth: int
    parent: str | None = None
    redirect_chain: tuple[str, ...] = ()
    request_url: str | None = None
    attempt: int = 0
    kind: str = KIND_PAGE
    error: str | None = None
    ticket: str | None = None
    cookies: tuple[CookieTuple, ...] = ()

    @property
    def fetch_url(self) -> str:
        """The URL to request."""
        return self.request_url or self.url


@dataclasses.dataclass(frozen=True, slots=True)
class TaskDone:
    """The outcome of one :class:`FetchTask`; its record is already on disk.

    Attributes:
        worker_id: the fetcher process that ran it.
        url: the task's URL.
        outcome: one of :data:`OUTCOMES`, or :data:`RETRY` (try again later; nothing
            written) or :data:`ROBOTS` (a robots.txt task).
        status: HTTP status, or ``None`` when no response arrived.
        error: short failure reason (``"http 404"``, ``"timeout"``, ``"redirect loop"``...)
            when ``outcome`` is :data:`FAILED`, else ``None``.
        body_bytes: bytes of body read (after content decoding).
        discovered: new URLs this task won in the visited table, as tasks to schedule.
        table_failed: the visited table raised after the record was written (the links
            could not be claimed; the manager may have died).
        retry_after_s: with :data:`RETRY`, the server's ``Retry-After`` in seconds, or
            ``None`` (the dispatcher then backs off exponentially).
        robots_body: with :data:`ROBOTS`, the robots.txt bytes (``status`` 2xx), else
            ``None``.
        duplicate: a :data:`PAGE` whose Markdown is exactly an earlier page's (its
            record has ``duplicate_of`` and no Markdown).
        sitemaps: with :data:`SITEMAP`, the child sitemaps of a sitemap index.
        near_duplicate: a :data:`PAGE` whose Markdown's SimHash is within 3 bits of an
            earlier page's (its record has ``near_duplicate_of`` and keeps its Markdown).
        content: ``(fingerprint, simhash)`` (two unsigned 64-bit ints) of a :data:`PAGE`
            whose Markdown was registered in the visited table's content registry, kept
            in the state store so that a resumed crawl registers it again; else ``None``.
        latency_s: seconds from the first request sent to the last body read, over the
            task's HTTP exchanges (the adaptive throttle's input); ``None`` when no
            request was sent.
        redirect_to: with :data:`ROBOTS`, the URL a robots.txt redirected to on another
            origin, not fetched here: the dispatcher fetches it under that origin's
            politeness (RFC 9309 section 2.3.1.2 follows redirects across hosts).
        fallback: a :data:`PAGE` whose page work fell back from a step that raised (main
            content to whole page, converter to the other one or to plain text; its
            record's ``fallback_error`` says why).
    """

    worker_id: int
    url: str
    outcome: str
    status: int | None = None
    error: str | None = None
    body_bytes: int = 0
    discovered: tuple[FetchTask, ...] = ()
    table_failed: bool = False
    retry_after_s: float | None = None
    robots_body: bytes | None = None
    duplicate: bool = False
    sitemaps: tuple[str, ...] = ()
    near_duplicate: bool = False
    content: tuple[int, int] | None = None
    latency_s: float | None = None
    redirect_to: str | None = None
    fallback: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Exchanged:
    """The HTTP exchange of a page task is over (body read); its parsing and conversion
    follow, and its :class:`TaskDone` comes after them. Politeness counts the exchange
    only, so the dispatcher lets the origin take its next request from here.

    Attributes:
        worker_id: the fetcher process.
        url: the task's URL (a :data:`KIND_PAGE` task).
        latency_s: as :attr:`TaskDone.latency_s`.
        status: the final response's HTTP status.
        ended_at: when the body was read, in ``time.monotonic()`` seconds of the
            fetcher, which runs on the dispatcher's machine (the clock is the same
            system-wide one); ``None``: the dispatcher takes the time it read this.
    """

    worker_id: int
    url: str
    latency_s: float
    status: int
    ended_at: float | None = None


for _cls in (FetchTask, TaskDone, Exchanged):
    # assignment: mypy takes the method replaced to be a function of (self, self)
    _cls.__reduce__ = _reduce  # type: ignore[method-assign, assignment]  # deliberate: compact pickles
