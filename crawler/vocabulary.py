"""The crawl's vocabulary: URL states, task kinds, task outcomes and link-graph edge kinds.

Each is a :class:`enum.StrEnum` whose values are the strings written to disk (records,
``skipped.tsv``, ``edges.tsv``, ``state.sqlite``, ``summary.json``), so a member compares,
formats and serializes as its value. The modules that use them export the members'
values, plain ``str``, under their historical constant names (``statestore.VISITED``,
``messages.PAGE``...): those cross processes in every message and key hot dicts, where a
member costs more (its pickle is rebuilt by an enum lookup, about eight times a str's,
and ``Enum.__hash__`` is a Python call). Imports nothing of the package.
"""

from __future__ import annotations

import enum


class UrlState(enum.StrEnum):
    """A claimed URL's state: in the visited table (no ``FRONTIER`` there: a URL waiting
    is in flight for the table) and in the state store."""

    FRONTIER = "frontier"  # waiting in the frontier (state store only)
    IN_FLIGHT = "in_flight"  # claimed, not yet settled
    VISITED = "visited"  # recorded: a page, a non-HTML file or a redirect
    FAILED = "failed"  # recorded with an error
    SKIPPED = "skipped"  # never fetched, with a reason (robots.txt, a limit, a trap)


class TaskKind(enum.StrEnum):
    """What a :class:`crawler.engine.messages.FetchTask` asks a fetcher to do."""

    PAGE = "page"  # fetch a claimed URL and record it
    ROBOTS = "robots"  # fetch an origin's /robots.txt (RFC 9309)
    ROBOTS_REDIRECT = "robots-redirect"  # a robots.txt redirect's target on another origin
    SITEMAP = "sitemap"  # read a sitemap (sitemaps.org protocol)
    FAIL = "fail"  # record a URL that killed fetchers as failed, unfetched


class Outcome(enum.StrEnum):
    """How a task ended, in :attr:`crawler.engine.messages.TaskDone.outcome`."""

    PAGE = "page"  # HTML fetched, converted to Markdown (status < 400)
    NON_HTML = "non_html"  # fetched, recorded without Markdown
    REDIRECT = "redirect"  # 3xx: recorded as a redirect to its target
    FAILED = "failed"  # HTTP >= 400, network error, redirect loop...: see TaskDone.error
    RETRY = "retry"  # transient failure: the URL stays in flight for the next attempt
    ROBOTS = "robots"  # a robots.txt task's result (not a claimed URL)
    SITEMAP = "sitemap"  # a sitemap task's result (not a claimed URL)


class EdgeKind(enum.StrEnum):
    """The kind of an edge of the link graph (``edges.tsv``)."""

    LINK = "link"  # a link of a page (a, area, frame, iframe) to its target
    REDIRECT = "redirect"  # a 3xx hop of a redirect chain
