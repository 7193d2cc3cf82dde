"""What a recrawl knows of each URL before it asks again: ``previous.sqlite``.

Built once when a generation starts (:func:`build`), from the folder's page records of
every earlier generation and the last generation's edge files; read by the fetchers
(:class:`PriorReader`, read-only, one connection per thread) and by the dispatcher's
start (:func:`seed_frontier`). Nothing writes to it during a crawl. Tables::

    pages    url, generation and change of its latest record, streak (the latest
             generations in a row whose record was ``unchanged``), depth, parent, and
             ``record``: its latest record that is not a transient failure (a 404 or
             410 is kept: that is a ``gone`` page), without Markdown, as JSON, with
             ``content_generation``: the generation whose record holds the Markdown
    links    source, target, in_scope: the ``link`` edges each page's ``record`` saw (from
             the edge files of that record's generation, archived or not)
    origins  origin, etag_ignored: in the records of every generation, the origin answered
             If-None-Match with 200 and unchanged content at least ETAG_IGNORED_AFTER
             times and never with 304, or had If-None-Match dropped
             (:class:`crawler.engine.recrawl.Validators`)

The file is written to ``previous.sqlite.tmp`` and renamed, so it is whole or absent.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator

from crawler.engine.messages import FetchTask
from crawler.output import generations
from crawler.output.shards import iter_lines
from crawler.web.urlnorm import origin_of

#: The file, in the output folder.
PRIOR_FILE = "previous.sqlite"
#: Responses of an origin to If-None-Match that were 200 with the same content, with no
#: 304 at all, after which its ETags are taken as new on every response.
ETAG_IGNORED_AFTER = 3
#: Status codes whose failure means the page is gone (RFC 9110 §15.5.5, §15.5.11).
GONE_STATUSES = (404, 410)

_SCHEMA = """
CREATE TABLE seen (url TEXT NOT NULL, generation INTEGER NOT NULL, change TEXT, transient INTEGER NOT NULL,
                   depth INTEGER, parent TEXT, record TEXT NOT NULL, chained INTEGER NOT NULL);
CREATE TABLE pages (url TEXT PRIMARY KEY, generation INTEGER NOT NULL, change TEXT, streak INTEGER NOT NULL,
                    depth INTEGER NOT NULL, parent TEXT, record TEXT, record_generation INTEGER,
                    chained INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE links (source TEXT NOT NULL, target TEXT NOT NULL, in_scope INTEGER NOT NULL);
CREATE UNIQUE INDEX links_by_source ON links (source, target);
CREATE TABLE edges (generation INTEGER NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL,
                    in_scope INTEGER NOT NULL);
CREATE TABLE origins (origin TEXT PRIMARY KEY, etag_ignored INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1), generation INTEGER NOT NULL);
"""
_BATCH = 1000


def transient_failure(record: dict) -> bool:
    """A failed record that says nothing of the page (timeout, 5xx...): not a 404/410."""
    return bool(record.get("error")) and record.get("status") not in GONE_STATUSES


def build(out_dir: str, generation: int) -> str:
    """Write ``out_dir/previous.sqlite`` for generation ``generation`` from the folder's
    records (every shard) and its current ``edges-*.tsv`` files; returns its path.

    Raises:
        OSError, sqlite3.Error, ValueError: a file cannot be read or written.
    """
    path = os.path.join(out_dir, PRIOR_FILE)
    temp = path + ".tmp"
    with contextlib.suppress(FileNotFoundError):
        os.remove(temp)
    conn = sqlite3.connect(temp)
    try:
        conn.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + _SCHEMA)
        conn.execute("INSERT INTO meta VALUES (1, ?)", (generation,))
        _load_seen(conn, out_dir)
        _fill_pages(conn, generation - 1)
        _fill_origins(conn)
        conn.execute("DROP TABLE seen")
        _fill_links(conn, out_dir, generation - 1)
        conn.commit()
    finally:
        conn.close()
    with open(temp, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(temp, path)
    return path


def _load_seen(conn: sqlite3.Connection, out_dir: str) -> None:
    rows = []
    sql = "INSERT INTO seen VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    for line in iter_lines(out_dir):
        record = json.loads(line)
        if record.pop("markdown", None) is not None:  # before records had the field
            record["content_generation"] = record.get("content_generation") or record.get("generation") or 1
        rows.append(
            (
                record["url"],
                record.get("generation") or 1,
                record.get("change") or "new",
                transient_failure(record),
                record.get("depth") or 0,
                record.get("parent"),
                json.dumps(record, ensure_ascii=False),
                bool(record.get("redirect_chain")),
            )
        )
        if len(rows) == _BATCH:
            conn.executemany(sql, rows)
            rows = []
    conn.executemany(sql, rows)
    conn.execute("CREATE INDEX seen_by_url ON seen (url, generation)")


def _fill_pages(conn: sqlite3.Connection, last: int) -> None:
    """One row per URL from ``seen``, streamed in URL order (the streak needs each
    URL's generations in order: the last record of a generation is its outcome)."""
    out = []
    sql = "INSERT INTO pages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    for url, rows in _grouped(conn.execute("SELECT * FROM seen ORDER BY url, generation, rowid")):
        by_generation: dict[int, tuple] = {}
        content = None
        for row in rows:
            by_generation[row[1]] = row
            if not row[3]:
                content = row
        latest = rows[-1]
        streak = 0
        number = last
        while number in by_generation and by_generation[number][2] == "unchanged":
            streak += 1
            number -= 1
        record = None if content is None else content[6]
        generation = None if content is None else content[1]
        out.append((url, latest[1], latest[2], streak, latest[4], latest[5], record, generation, latest[7]))
        if len(out) == _BATCH:
            conn.executemany(sql, out)
            out = []
    conn.executemany(sql, out)


def _grouped(rows: Iterable[tuple]) -> Iterator[tuple[str, list[tuple]]]:
    url: str | None = None
    group: list[tuple] = []
    for row in rows:
        if row[0] != url and group:
            yield url, group  # type: ignore[misc]  # set with the group
            group = []
        url = row[0]
        group.append(row)
    if group:
        yield url, group  # type: ignore[misc]


def _fill_origins(conn: sqlite3.Connection) -> None:
    """The verdict per origin on its ETags, over every generation's records (see the
    module docstring)."""
    counts: dict[str, list[int]] = {}
    for (text,) in conn.execute("SELECT record FROM seen"):
        record = json.loads(text)
        sent = record.get("conditional") or []
        if not sent:
            continue
        tally = counts.setdefault(origin_of(record["url"]), [0, 0, 0])
        if "If-None-Match" in sent:
            if record.get("status") == 304:
                tally[1] += 1
            elif record.get("status") == 200 and record.get("change") == "unchanged":
                tally[0] += 1
        elif record.get("etag"):  # sent If-Modified-Since alone though it had an ETag
            tally[2] += 1
    conn.executemany(
        "INSERT INTO origins VALUES (?, ?)",
        [(origin, int(c[2] > 0 or (c[0] >= ETAG_IGNORED_AFTER and c[1] == 0))) for origin, c in counts.items()],
    )


def _fill_links(conn: sqlite3.Connection, out_dir: str, last: int) -> None:
    """Each page's links: the ``link`` edges its record of ``pages.record`` saw, read from
    the edge files of that record's generation (the top folder's for the last one, an
    archive folder's for an earlier one: a page that failed or went unasked since keeps
    the links of its last good record)."""
    folders = {last: out_dir}
    for entry in generations.load(out_dir)["generations"]:
        if entry.get("archive") and entry["generation"] != last:
            folders[entry["generation"]] = os.path.join(out_dir, entry["archive"])
    sql = "INSERT INTO edges VALUES (?, ?, ?, ?)"
    for number, folder in sorted(folders.items()):
        for path in sorted(glob.glob(os.path.join(folder, "edges-*.tsv"))):
            rows = []
            with open(path, encoding="utf-8") as f:
                for line in f:
                    parts = line.rstrip("\n").split("\t")
                    if not line.endswith("\n") or len(parts) != 4 or parts[2] != "link":
                        continue
                    rows.append((number, parts[0], parts[1], parts[3] == "1"))
                    if len(rows) == _BATCH:
                        conn.executemany(sql, rows)
                        rows = []
            conn.executemany(sql, rows)
    conn.execute(
        "INSERT OR IGNORE INTO links SELECT e.source, e.target, e.in_scope FROM edges e"
        " JOIN pages p ON p.url = e.source AND p.record_generation = e.generation ORDER BY e.rowid"
    )
    conn.execute("DROP TABLE edges")


class PriorReader:
    """Read-only lookups in ``previous.sqlite``, one connection per thread (the
    fetcher's threads each ask for their own tasks). Picklable as its path."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()

    def __getstate__(self) -> dict:
        return {"path": self.path}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"])  # type: ignore[misc]  # re-run: a new thread-local

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            self._local.conn = conn
        return conn

    def page(self, url: str) -> PriorPage | None:
        """The URL's row, or None: a URL the earlier generations never recorded."""
        row = (
            self._conn()
            .execute("SELECT generation, change, streak, record FROM pages WHERE url = ?", (url,))
            .fetchone()
        )
        if row is None:
            return None
        return PriorPage(url, row[0], row[1], row[2], json.loads(row[3]) if row[3] else None)

    def links(self, url: str) -> list[tuple[str, bool]]:
        """``(target, in_scope)`` of the ``link`` edges the last generation saw on ``url``."""
        rows = self._conn().execute("SELECT target, in_scope FROM links WHERE source = ? ORDER BY rowid", (url,))
        return [(target, bool(in_scope)) for target, in_scope in rows]

    def fingerprints(self) -> Iterator[tuple[str, str | None]]:
        """``(url, fingerprint)`` of every URL: its stored record's Markdown fingerprint,
        or None (no such record, or not a page)."""
        for url, text in self._conn().execute("SELECT url, record FROM pages"):
            yield url, json.loads(text).get("fingerprint") if text else None

    def etag_ignored(self) -> set[str]:
        """The origins whose ETags the last generation found new on every response."""
        return {origin for (origin,) in self._conn().execute("SELECT origin FROM origins WHERE etag_ignored")}

    def generation(self) -> int:
        """The generation this file was built for."""
        return int(self._conn().execute("SELECT generation FROM meta").fetchone()[0])

    def tasks(self, chained: bool = True) -> Iterator[tuple[FetchTask, int]]:
        """Every URL of the earlier generations as a task (depth and parent of its
        latest record), with its streak, by depth then URL; without ``chained``, not
        those whose latest record was reached through a redirect (its chain is asked
        again from its start: a redirect may set the cookie the target needs)."""
        sql = "SELECT url, depth, parent, streak FROM pages" + ("" if chained else " WHERE NOT chained")
        for url, depth, parent, streak in self._conn().execute(sql + " ORDER BY depth, url"):
            yield FetchTask(url, depth, parent), streak

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class PriorPage:
    """One URL as the earlier generations left it (a row of ``pages``).

    Attributes:
        url: the URL (a visited-table key).
        generation: the generation of its latest record.
        change: that record's change (``new``, ``changed``, ``unchanged``, ``gone``,
            ``failed``).
        streak: the latest generations in a row in which it was ``unchanged``.
        record: its latest record that was not a transient failure, without Markdown,
            with ``content_generation``; None if every record was one.
    """

    __slots__ = ("url", "generation", "change", "streak", "record")

    def __init__(self, url: str, generation: int, change: str, streak: int, record: dict | None) -> None:
        self.url = url
        self.generation = generation
        self.change = change
        self.streak = streak
        self.record = record
