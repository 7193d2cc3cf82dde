"""The per-site report, ``sites.tsv``: one row per origin, counted from the output folder.

Written at the end of every crawl (:func:`crawler.api.finish_outputs`) from what is on
disk, so after a resume it covers every run: the page records of all shards (plain or
compressed, :func:`crawler.output.shards.iter_records`), the skipped rows (those of
``skipped.tsv``) and the robots.txt outcomes kept in the state store
(:meth:`crawler.engine.statestore.StateStore.robots_statuses`). A header line, then one row per
origin (``scheme://host[:port]``, :func:`crawler.web.urlnorm.origin_of`: ``http`` and
``https`` of one host are two rows), sorted by origin; tab-separated:

* ``pages``, ``non_html``, ``redirects``, ``failed``: records by outcome
  (:func:`crawler.output.shards.outcome_of`, as ``summary.json`` counts them: a duplicate page
  is a page);
* ``skipped``: skipped rows (robots.txt, ``--max-pages``, a trap guard, a stop);
* ``robots``: the last robots.txt outcome (:meth:`crawler.web.robots.RobotsRules.status_line`):
  ``200``, ``404`` (all allowed), ``unreachable (http 503)``; ``ignored`` under
  ``--ignore-robots`` (for every origin, whatever an earlier run found); ``-`` when it was
  never asked (every URL of the origin skipped before);
* ``bytes``: body bytes read, summed over the records;
* ``first_fetch``, ``last_fetch``: the earliest and latest ``fetched_at`` of the records
  (ISO 8601 UTC), ``-`` when there is none.

Only origins with a record or a skipped row get a row. One pass over the records; memory
grows with the number of origins, not of pages.
"""

from __future__ import annotations

import collections
import dataclasses
import os
from collections.abc import Iterable, Mapping

from crawler.output.shards import iter_records, outcome_of
from crawler.vocabulary import UrlState
from crawler.web.robots import IGNORED
from crawler.web.urlnorm import origin_of

#: The report's file name in the output folder.
SITES_FILE = "sites.tsv"
#: Its columns, the header line.
COLUMNS = (
    "origin",
    "pages",
    "non_html",
    "redirects",
    "failed",
    "skipped",
    "robots",
    "bytes",
    "first_fetch",
    "last_fetch",
)
#: A value that is not known (robots.txt never asked, no record).
UNKNOWN = "-"

_OUTCOME_FIELD = {"page": "pages", "non_html": "non_html", "redirect": "redirects"}


@dataclasses.dataclass
class SiteCounts:
    """The counts of one origin's row."""

    pages: int = 0
    non_html: int = 0
    redirects: int = 0
    failed: int = 0
    skipped: int = 0
    bytes: int = 0
    first_fetch: str | None = None
    last_fetch: str | None = None

    def add_record(self, record: dict) -> None:
        """Count one page record (its outcome, bytes and ``fetched_at``)."""
        state, reason = outcome_of(record)
        field = "failed" if state == UrlState.FAILED else _OUTCOME_FIELD[reason]
        setattr(self, field, getattr(self, field) + 1)
        self.bytes += record.get("bytes") or 0
        at = record.get("fetched_at")
        if at:  # ISO 8601 UTC with milliseconds: string order is time order
            self.first_fetch = at if self.first_fetch is None else min(self.first_fetch, at)
            self.last_fetch = at if self.last_fetch is None else max(self.last_fetch, at)


def site_counts(records: Iterable[dict], skipped_urls: Iterable[str]) -> dict[str, SiteCounts]:
    """``{origin: SiteCounts}`` of the page ``records`` and the ``skipped_urls``. Pure."""
    return _site_counts(records, collections.Counter(origin_of(url) for url in skipped_urls))


def _site_counts(records: Iterable[dict], skipped_by_origin: Mapping[str, int]) -> dict[str, SiteCounts]:
    sites: collections.defaultdict[str, SiteCounts] = collections.defaultdict(SiteCounts)
    for record in records:
        sites[origin_of(record["url"])].add_record(record)
    for origin, count in skipped_by_origin.items():
        sites[origin].skipped += count
    return dict(sites)


def site_rows(sites: dict[str, SiteCounts], robots: dict[str, str], obey_robots: bool = True) -> list[tuple]:
    """The report's rows, sorted by origin: :data:`COLUMNS` values, ``robots`` from
    ``robots`` (``{origin: status}``), or ``ignored`` for all when not ``obey_robots``. Pure."""
    rows = []
    for origin in sorted(sites):
        c = sites[origin]
        status = robots.get(origin, UNKNOWN) if obey_robots else IGNORED
        rows.append(
            (
                origin,
                c.pages,
                c.non_html,
                c.redirects,
                c.failed,
                c.skipped,
                status,
                c.bytes,
                c.first_fetch or UNKNOWN,
                c.last_fetch or UNKNOWN,
            )
        )
    return rows


def write_sites(
    out_dir: str,
    skipped_by_origin: Mapping[str, int],
    robots: dict[str, str],
    obey_robots: bool = True,
    records: Iterable[dict] | None = None,
) -> int:
    """Write ``out_dir/sites.tsv`` from the page records in ``out_dir`` (or ``records``:
    a recrawl's, those of its generation) and ``skipped_by_origin`` (the rows of
    ``skipped.tsv`` per origin); returns the number of rows.

    Raises:
        OSError: the file cannot be written; and what :func:`crawler.output.shards.iter_records`
            raises for a shard that cannot be read.
    """
    records = iter_records(out_dir) if records is None else records
    rows = site_rows(_site_counts(records, skipped_by_origin), robots, obey_robots)
    path = os.path.join(out_dir, SITES_FILE)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\t".join(COLUMNS) + "\n")
        for row in rows:
            f.write("\t".join(map(str, row)) + "\n")
    return len(rows)
