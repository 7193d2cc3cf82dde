"""Crawler-trap guards on the path of a discovered URL: pure, no state.

Two kinds of endless link spaces show in the path alone:

* a relative link on a catch-all route (``docs/`` served under every path) makes
  ``/docs/docs/docs/...``: a segment, or a run of segments, repeated;
* an ever-deeper unique path (``/1/2/3/4/...``): too many segments.

The anchors are Heritrix's ``PathologicalPathDecideRule`` (reject when a run of
segments repeats more than 2 times in a row: regex ``.*?/(.*?/)\\1{2,}.*``),
``TooManyPathSegmentsDecideRule`` (reject more than 20 ``/`` in the path) and Apache
Nutch's default URL filter (reject ``(/[^/]+)/[^/]+\\1/[^/]+\\1/``: a segment at every
other position three times). :func:`trap_reason` with the defaults of
:mod:`crawler.config` (2 and 20) rejects every path those three reject. It looks at the
path only, where they match the whole URL: ``http://a/a/a/`` (a host name repeated as
the first segments) or a query holding ``x/x/x/`` is rejected by them alone.

The third trap of that site, a fresh session id in every link, is the normalizer's
(:func:`crawler.web.urlnorm.strip_path_session_ids`, ``strip_query_session_ids``); a query
that varies without end is the dispatcher's ``max_query_variants``.
"""

from __future__ import annotations

from crawler.web.urlnorm import split_reference

#: Skip reasons, as written to ``skipped.tsv`` and ``skipped_by_reason``.
REPEATED_PATH_SEGMENT = "repeated path segment"
TOO_MANY_PATH_SEGMENTS = "too many path segments"
URL_TOO_LONG = "url too long"


def path_segments(url: str) -> list[str]:
    """The segments of ``url``'s path (RFC 3986 §3.3: ``path-abempty = *( "/" segment )``),
    one per ``/``: ``'http://h/a/b/'`` -> ``['a', 'b', '']``, ``'http://h/'`` -> ``['']``.
    ``%2F`` is not a separator. A URL without a path has none."""
    path = split_reference(url).path
    return path.split("/")[1:] if path.startswith("/") else path.split("/") if path else []


def has_repeated_segments(segments: list[str], max_repeats: int) -> bool:
    """Whether a run of segments occurs more than ``max_repeats`` times in a row, or one
    non-empty segment at more than ``max_repeats`` alternate positions.

    The first is Heritrix's ``PathologicalPathDecideRule`` with ``maxRepetitions =
    max_repeats`` (runs of any length: ``a/b/a/b/a/b``), counting the last segment
    too; the second is Nutch's ``(/[^/]+)/[^/]+\\1/[^/]+\\1/`` (``a/x/a/y/a``),
    generalized from its 3 occurrences to ``max_repeats + 1``. With 2: ``/a/a/b`` and
    ``/a/x/a/b`` pass, ``/a/a/a``, ``/a/b/a/b/a/b/`` and ``/a/x/a/y/a`` do not.

    A run of ``k`` segments repeated ``r`` times in a row is ``segments[j] ==
    segments[j + k]`` for ``(r - 1) * k`` consecutive ``j``: each ``k`` is one linear
    scan, ``O(n**2 / max_repeats)`` for ``n`` segments in all (fewer than 120
    comparisons under the default limit of 20 segments).
    """
    n = len(segments)
    for k in range(1, n // (max_repeats + 1) + 1):
        run = 0
        for j in range(n - k):
            run = run + 1 if segments[j] == segments[j + k] else 0
            if run >= max_repeats * k:
                return True
    for start in (0, 1):  # each parity: the same segment two positions on
        run = 0
        for j in range(start, n - 2, 2):
            run = run + 1 if segments[j] and segments[j] == segments[j + 2] else 0
            if run >= max_repeats:
                return True
    return False


def trap_reason(url: str, max_path_repeats: int | None, max_path_segments: int | None) -> str | None:
    """Why ``url`` (normalized) looks like a crawler trap, or ``None``.

    Args:
        url: a normalized URL (:func:`crawler.web.urlnorm.normalize`).
        max_path_repeats: most times a segment (or a run of segments) may repeat in a
            row, or one segment at alternate positions (:func:`has_repeated_segments`);
            ``None``: no limit. The default, 2, is in :mod:`crawler.config`.
        max_path_segments: most path segments (``/`` in the path, as Heritrix counts);
            ``None``: no limit. The default, 20, is in :mod:`crawler.config`.

    Returns:
        :data:`TOO_MANY_PATH_SEGMENTS` (checked first: it bounds the cost of the other
        check), :data:`REPEATED_PATH_SEGMENT`, or ``None``.
    """
    segments = path_segments(url)
    if max_path_segments is not None and len(segments) > max_path_segments:
        return TOO_MANY_PATH_SEGMENTS
    if max_path_repeats is not None and has_repeated_segments(segments, max_path_repeats):
        return REPEATED_PATH_SEGMENT
    return None


def guard_reason(
    url: str, max_url_length: int, max_path_repeats: int | None, max_path_segments: int | None
) -> str | None:
    """Why a discovered ``url`` (normalized) is skipped by the guards that need no state:
    :data:`URL_TOO_LONG` past ``max_url_length`` characters, else :func:`trap_reason`.
    ``None`` to queue it. The dispatcher applies it to every link a fetch won, and a
    resume to every link it recovers from the edges of a crash."""
    if len(url) > max_url_length:
        return URL_TOO_LONG
    return trap_reason(url, max_path_repeats, max_path_segments)
