"""Crash-safe crawl state in the output folder (``state.sqlite``); the rows of the frontier on disk.

Every claimed URL has one row, keyed by its normalized URL (:attr:`FetchTask.url`)::

    add / DiskFrontier.push --> frontier --pop--> in_flight --> visited | failed | skipped
                                   ^                  |
                                   +------------------+  retry, or taken back at a stop
                                    (push, update_task)  (and reset_for_resume after a crash)

so a crawl killed at 3 a.m. (SIGKILL, reboot) resumes from the last :meth:`StateStore.commit`:
what was waiting is still waiting, what was in flight is waiting again
(:meth:`StateStore.reset_for_resume`), and what was visited, failed or skipped stays so.
A fetch whose outcome was not committed before the crash is done again (its record
may then be in the output twice). The :class:`crawler.engine.diskfrontier.DiskFrontier` keeps the waiting URLs in
that same table and only a bounded window of them in memory, so the dispatcher's memory
stays flat however large the site.

Storage: SQLite from the standard library, one file, ``PRAGMA journal_mode=WAL`` and
``synchronous=NORMAL``. In WAL mode a commit appends the transaction's pages to
``state.sqlite-wal``; with NORMAL that append is not fsync'ed (checkpoints are), so a
commit costs no disk flush. This is durable across a crash of the *process* (SIGKILL,
out of memory: the pages are in the OS page cache, which reaches the disk anyway) and
never corrupts the file. A power loss or kernel panic may lose the transactions since
the last checkpoint, each rolled back as a whole, never half applied. That loss is
acceptable: a lost transaction only sends URLs back to waiting or in flight, and
in-flight work is redone at the resume; no URL is lost and none is recorded twice in
the store. (``synchronous=FULL`` would fsync every commit: milliseconds each.)

Writes are batched: the first write opens a transaction and :meth:`StateStore.commit`
ends it; the dispatcher commits once per loop turn (or every N ms). A transaction is the
unit of crash safety: after a crash the file holds exactly the committed transactions.
SQLite checkpoints the WAL into the main file inside a commit once it holds 1,000 pages
(4 MiB); the ``-wal`` file is cut back to 64 MiB after a checkpoint and removed by the
last close.

Use. :func:`crawler.engine.resume.prepare` owns the start of every run, new or resumed,
through the resume's part of this API: ``open_run(settings)`` (the stored settings, or
None for a new crawl), ``reset_for_resume()``, ``settle_recorded(task, state, reason)``
for a page whose record is on disk, ``earlier_outcomes()``, and the streams
``urls_in(*states)`` and ``contents()`` to rebuild the visited table. Then
``DiskFrontier(store)``. In the dispatcher's loop: ``pop``
(the row is in flight), then ``set_state([url], VISITED | FAILED | SKIPPED, reason)`` for
the outcome; a discovered URL skipped by a guard before any push: ``add([task], SKIPPED,
reason)``; a retry waiting its turn: ``update_task(retry, IN_FLIGHT)``, then ``push(retry)``
when it is due; a robots.txt answer: ``set_robots_status(origin, status)``; ``commit()``
every turn.

One writer: the process that uses the store (the dispatcher; single-threaded). Another
process may read the file meanwhile (``sqlite3 state.sqlite 'select state, count(*) ...'``).
The connection is opened in the process that uses it: the constructor checks the file
and closes it again, the first call opens it, a :class:`StateStore` pickles as its path
(so it can be sent to a ``spawn`` child), and a ``fork`` child that uses an inherited store
opens its own connection (the inherited one is never used nor closed there: SQLite
forbids carrying a connection across ``fork()``). Do not write to one file from two
processes at once.

Its costs at 1,000,000 URLs are in docs/performance.md ("The state store").
"""

from __future__ import annotations

import functools
import heapq
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from crawler.engine.messages import KIND_PAGE, FetchTask
from crawler.errors import StateError
from crawler.vocabulary import UrlState
from crawler.web.cookies import CookieTuple
from crawler.web.urlnorm import origin_of

if TYPE_CHECKING:  # the frontier on disk uses this store; only its type is named here
    from crawler.engine.diskfrontier import DiskFrontier

__all__ = ["FAILED", "FRONTIER", "IN_FLIGHT", "SKIPPED", "STATES", "STATE_FILE", "VISITED", "StateError", "StateStore"]

#: Name of the state file in the output folder (plus ``-wal`` and ``-shm`` while open).
STATE_FILE = "state.sqlite"

#: URL states (the ``state`` column).
FRONTIER, IN_FLIGHT, VISITED, FAILED, SKIPPED = (
    UrlState.FRONTIER.value,
    UrlState.IN_FLIGHT.value,
    UrlState.VISITED.value,
    UrlState.FAILED.value,
    UrlState.SKIPPED.value,
)
STATES = (FRONTIER, IN_FLIGHT, VISITED, FAILED, SKIPPED)

#: ``kind`` of a ``contents`` row: the first page with its Markdown, an exact duplicate
#: (``duplicate_of``), a near duplicate (``near_duplicate_of``).
CONTENT_FIRST, CONTENT_DUPLICATE, CONTENT_NEAR = 0, 1, 2


def content_kind(duplicate: bool, near_duplicate: bool) -> int:
    """The ``kind`` of a page: an exact duplicate, else a near duplicate, else the first."""
    return CONTENT_DUPLICATE if duplicate else CONTENT_NEAR if near_duplicate else CONTENT_FIRST


#: ``PRAGMA user_version`` of the schema below; a file with a higher one is refused.
SCHEMA_VERSION = 1
#: ``PRAGMA application_id`` of a state file ("CRLS"), so another SQLite file is refused.
APPLICATION_ID = 0x43524C53
#: Rows per ``executemany`` call and per page of a streamed read.
BATCH_ROWS = 1000
#: SQLite page cache, KiB (the default is 2,000 KiB): fewer reads of index pages when
#: rows are inserted in random URL order; bounds the store's share of the RSS.
CACHE_KIB = 16384
#: Bytes the ``-wal`` file is truncated to after a checkpoint (it grows past it during
#: one large transaction).
WAL_SIZE_LIMIT_BYTES = 64 * 2**20
#: Seconds a write waits for a lock held by another connection before failing.
BUSY_TIMEOUT_S = 5.0

_SCHEMA = f"""
CREATE TABLE settings (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    json TEXT NOT NULL
);
CREATE TABLE urls (
    seq INTEGER PRIMARY KEY,       -- order of (re-)entry: FIFO within a depth
    url TEXT NOT NULL UNIQUE,      -- the key: FetchTask.url
    origin TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN {tuple(map(str, STATES))!r}),
    depth INTEGER NOT NULL,
    parent TEXT,
    redirect_chain TEXT NOT NULL DEFAULT '[]',
    request_url TEXT,
    attempt INTEGER NOT NULL DEFAULT 0,
    crashes INTEGER NOT NULL DEFAULT 0,
    reason TEXT,
    loaded INTEGER NOT NULL DEFAULT 0,  -- 1: in a DiskFrontier window in memory
    cookies TEXT                   -- FetchTask.cookies as a JSON array, NULL when none
);
-- every index entry ends with the rowid (seq): (state, depth, seq) order for free
CREATE INDEX urls_by_state ON urls (state, depth);
-- only the rows a DiskFrontier may still read into a window
CREATE INDEX urls_waiting ON urls (origin, depth) WHERE state = 'frontier' AND loaded = 0;
PRAGMA application_id = {APPLICATION_ID};
PRAGMA user_version = {SCHEMA_VERSION};
"""

# The content registry of the pages recorded, so that a resumed crawl compares its pages
# with the earlier runs' (exact and near duplicates). Created on open when missing: a
# state file written before it existed gains it (no schema version change).
_CONTENTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS contents (
    seq INTEGER PRIMARY KEY,       -- order of registration
    url TEXT NOT NULL UNIQUE,
    fingerprint INTEGER NOT NULL,  -- xxh3-64 of the Markdown, as a signed 64-bit int
    simhash INTEGER NOT NULL,      -- SimHash of the Markdown, as a signed 64-bit int
    kind INTEGER NOT NULL          -- CONTENT_FIRST, CONTENT_DUPLICATE or CONTENT_NEAR
);
"""

# The robots.txt outcome of every origin asked, so that a resumed crawl's sites.tsv still
# has the status of origins an earlier run settled. Created on open when missing, as above.
_ROBOTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS robots (
    origin TEXT PRIMARY KEY,       -- scheme://host[:port] (crawler.web.urlnorm.origin_of)
    status TEXT NOT NULL           -- the last outcome: '200', '404', 'unreachable (http 503)'
);
"""

_COLUMNS = "seq, url, depth, parent, redirect_chain, request_url, attempt, cookies"
_EMPTY_CHAIN = "[]"

# Connections inherited through fork(): kept referenced so that they are never closed
# (a close could checkpoint the parent's WAL) nor used in the child.
_INHERITED: list[sqlite3.Connection] = []


_MASK64 = 2**64 - 1


def _signed(value: int) -> int:
    """An unsigned 64-bit int as SQLite's signed INTEGER (two's complement)."""
    return value - 2**64 if value >= 2**63 else value


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _translated(method: Callable[Concatenate[StateStore, _P], _R]) -> Callable[Concatenate[StateStore, _P], _R]:
    """Turn the sqlite3 errors raised by ``method`` into :class:`StateError`."""

    @functools.wraps(method)
    def wrapper(self: StateStore, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: {_one_line(exc)}") from exc

    return wrapper


def _check_state(state: str) -> None:
    if state not in STATES:
        raise ValueError(f"unknown state {state!r} (one of {', '.join(STATES)})")


def _chain_text(chain: tuple[str, ...]) -> str:
    return json.dumps(list(chain), separators=(",", ":")) if chain else _EMPTY_CHAIN


def _cookies_text(cookies: tuple[CookieTuple, ...]) -> str | None:
    return json.dumps(cookies, separators=(",", ":")) if cookies else None


def _task(
    url: str,
    depth: int,
    parent: str | None,
    chain: str,
    request_url: str | None,
    attempt: int,
    cookies: str | None = None,
) -> FetchTask:
    redirect_chain = tuple(json.loads(chain)) if chain != _EMPTY_CHAIN else ()
    kept = tuple(tuple(cookie) for cookie in json.loads(cookies)) if cookies else ()
    return FetchTask(url, depth, parent, redirect_chain, request_url, attempt, cookies=kept)


def _page_task(task: FetchTask) -> FetchTask:
    if task.kind != KIND_PAGE:
        raise ValueError(f"only page tasks are stored, not '{task.kind}' ({task.url})")
    return task


class StateStore:
    """The crawl's URL rows and settings in one SQLite file (see the module docstring).

    Args:
        path: the state file; created with its schema if missing or empty.

    Raises:
        StateError: ``path`` is not a state store (another SQLite file, not SQLite at
            all), is corrupt (``PRAGMA quick_check`` fails), has a newer schema, or
            cannot be opened or created. Checking an existing file reads it whole.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None
        self._seq = 0  # highest seq given out
        self._frontier: DiskFrontier | None = None  # the DiskFrontier owning FRONTIER rows
        self._takes: dict[str, int] = {}  # url -> seq of the rows popped, not yet written IN_FLIGHT
        self._closed = False
        try:
            conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        except sqlite3.Error as exc:
            raise StateError(f"{path}: cannot open the crawl state ({_one_line(exc)})") from exc
        try:
            self._check_or_create(conn)
        except sqlite3.Error as exc:
            raise StateError(f"{path}: not a readable crawl state store ({_one_line(exc)})") from exc
        finally:
            conn.close()

    def _check_or_create(self, conn: sqlite3.Connection) -> None:
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if app == 0 and version == 0:
            if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                raise StateError(f"{self.path}: not a crawl state store (another SQLite database)")
            self._configure(conn)
            conn.executescript("BEGIN IMMEDIATE;" + _SCHEMA + "COMMIT;")  # all or nothing
            return
        if app != APPLICATION_ID:
            raise StateError(f"{self.path}: not a crawl state store (application_id {app:#x})")
        if version > SCHEMA_VERSION:
            raise StateError(
                f"{self.path}: written by a newer crawler (schema {version}, this one reads {SCHEMA_VERSION})"
            )
        if version < SCHEMA_VERSION:
            raise StateError(f"{self.path}: schema {version} is not supported (expected {SCHEMA_VERSION})")
        problems = [row[0] for row in conn.execute("PRAGMA quick_check(3)")]
        if problems != ["ok"]:
            raise StateError(f"{self.path}: corrupt ({' '.join(' '.join(problems).split())})")
        self._configure(conn)
        if "cookies" not in {row[1] for row in conn.execute("PRAGMA table_info(urls)")}:
            conn.execute("ALTER TABLE urls ADD COLUMN cookies TEXT")  # a file from before the column

    def _configure(self, conn: sqlite3.Connection) -> None:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode != "wal":
            raise StateError(f"{self.path}: cannot use WAL mode (journal_mode {mode})")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT_BYTES}")
        conn.executescript(_CONTENTS_SCHEMA + _ROBOTS_SCHEMA)

    @classmethod
    def open(cls, out_dir: str) -> StateStore:
        """The store of the output folder ``out_dir`` (``out_dir/state.sqlite``), created
        if missing. ``out_dir`` must exist. Raises StateError as the constructor."""
        return cls(os.path.join(out_dir, STATE_FILE))

    @staticmethod
    def exists(out_dir: str) -> bool:
        """True if ``out_dir`` holds a state file with saved settings (a crawl that can
        be resumed); False if there is no file, or one without settings (a crawl that
        died before it started: start afresh).

        Raises:
            StateError: there is a file, but it is not a usable state store.
        """
        path = os.path.join(out_dir, STATE_FILE)
        if not os.path.isfile(path):
            return False
        store = StateStore(path)
        try:
            return store.load_settings() is not None
        finally:
            store.close()

    # -- connection ----------------------------------------------------------------
    def _connection(self, flush: bool = True) -> sqlite3.Connection:
        """The connection of this process, opened on first use; the pending takes are
        written first unless ``flush`` is false (see :meth:`take_row`)."""
        if self._pid == os.getpid():
            assert self._conn is not None  # set with _pid when opened
            if self._takes and flush:
                self._flush_takes(self._conn)
            return self._conn
        if self._closed:
            raise StateError(f"{self.path}: the state store is closed")
        if self._conn is not None:  # inherited through fork()
            _INHERITED.append(self._conn)
            self._frontier = None  # a frontier's window belongs to the parent
            self._takes = {}
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        try:
            self._configure(conn)
            self._seq = conn.execute("SELECT max(seq) FROM urls").fetchone()[0] or 0
        except BaseException:
            conn.close()
            raise
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _writer(self, flush: bool = True) -> sqlite3.Connection:
        """The connection, inside a write transaction (opened by the first write); the
        pending takes written first unless ``flush`` is false."""
        return self._begin(self._connection(flush))

    def _begin(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        if not conn.in_transaction:
            conn.execute("BEGIN IMMEDIATE")
            # under the write lock: another process may have written since (one at a time)
            self._seq = max(self._seq, conn.execute("SELECT max(seq) FROM urls").fetchone()[0] or 0)
        return conn

    def _flush_takes(self, conn: sqlite3.Connection) -> None:
        """Write the pending takes as IN_FLIGHT (see :meth:`take_row`)."""
        self._begin(conn).executemany(
            "UPDATE urls SET state = 'in_flight', loaded = 0 WHERE seq = ?", [(seq,) for seq in self._takes.values()]
        )
        self._takes = {}  # only once written: a failed write is tried again by the next access

    def __getstate__(self) -> dict:
        if self._closed:
            raise StateError(f"{self.path}: the state store is closed")
        return {"path": self.path}

    def __setstate__(self, state: dict) -> None:
        self.path = state["path"]
        self._conn = self._pid = self._frontier = None
        self._takes = {}
        self._seq = 0
        self._closed = False

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @_translated
    def commit(self) -> None:
        """End the open write transaction, if any: what it wrote survives a crash from
        now on. No fsync (see the module docstring), except once the WAL holds 1,000 pages
        (4 MiB): SQLite then checkpoints inside the commit (fsync of the WAL, pages copied
        into the main file, fsync)."""
        conn = self._connection()  # the pending takes first: in flight at a crash from now on
        if conn.in_transaction:
            conn.execute("COMMIT")

    def close(self) -> None:
        """Commit, then close (the last connection to the file checkpoints and removes
        the ``-wal`` file). Idempotent; any later call raises StateError."""
        if self._closed:
            return
        try:
            if self._conn is not None and self._pid == os.getpid():
                try:
                    self._connection()  # the popped rows written
                    if self._conn.in_transaction:
                        self._conn.execute("COMMIT")
                finally:
                    self._conn.close()
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: {_one_line(exc)}") from exc
        finally:
            self._conn = None
            self._pid = None
            self._closed = True

    # -- the start of a run: what crawler.engine.resume uses ----------------------------
    def open_run(self, settings: dict) -> dict | None:
        """The settings of the crawl this store holds, or None for a new crawl: then
        ``settings`` are saved and committed (see :meth:`save_settings`)."""
        stored = self.load_settings()
        if stored is None:
            self.save_settings(settings)
            self.commit()
        return stored

    @_translated
    def settle_recorded(self, task: FetchTask, state: str, reason: str | None) -> bool:
        """A page whose record is on disk while its row is not final: move its row to
        ``state`` (visited or failed) with ``reason``, or add it so if the store never
        had it (dispatched after the last commit). True if the row is new.

        Raises:
            ValueError: ``state`` is not a final state, or ``task`` is not a page.
        """
        if state not in (VISITED, FAILED, SKIPPED):
            raise ValueError(f"settle_recorded takes a final state, not {state!r}")
        if self.state_of(task.url) is None:
            self.add([task], state, reason)
            return True
        self.set_states([(task.url, state, reason)])
        return False

    def earlier_outcomes(self) -> tuple[dict[str | None, int], dict[str | None, int]]:
        """What earlier runs finished: visited URLs by outcome and failed ones by reason
        (the counters of a resumed crawl start from them)."""
        return self.reason_counts(VISITED), self.reason_counts(FAILED)

    # -- settings ------------------------------------------------------------------
    @_translated
    def load_settings(self) -> dict | None:
        """The settings saved by :meth:`save_settings`, or None if none were."""
        row = self._connection().execute("SELECT json FROM settings WHERE id = 1").fetchone()
        return None if row is None else json.loads(row[0])

    @_translated
    def save_settings(self, settings: dict) -> None:
        """Store the crawl's settings (a JSON-able dict: seeds, scope, limits...) to check
        a resume against; replaces earlier ones. Part of the open transaction.

        Raises:
            TypeError, ValueError: ``settings`` is not JSON-able.
        """
        text = json.dumps(settings, sort_keys=True)
        self._writer().execute("INSERT OR REPLACE INTO settings (id, json) VALUES (1, ?)", (text,))

    # -- content registry ----------------------------------------------------------
    @_translated
    def add_content(self, url: str, fingerprint: int, simhash: int, kind: int) -> None:
        """Keep the page ``url``'s Markdown ``fingerprint`` and ``simhash`` (unsigned
        64-bit ints) and its ``kind`` (:data:`CONTENT_FIRST`, :data:`CONTENT_DUPLICATE`,
        :data:`CONTENT_NEAR`); a URL already present is replaced. Part of the open
        transaction."""
        self._writer().execute(
            "INSERT OR REPLACE INTO contents (url, fingerprint, simhash, kind) VALUES (?, ?, ?, ?)",
            (url, _signed(fingerprint), _signed(simhash), kind),
        )

    def contents(self) -> Iterator[tuple[int, int, str]]:
        """``(fingerprint, simhash, url)`` of every page registered in the content
        registry (not the exact duplicates), in the order they were registered."""
        for _, fingerprint, simhash, url in self._keyset(
            "SELECT seq, fingerprint, simhash, url FROM contents WHERE kind <> ? AND seq > ? ORDER BY seq LIMIT ?",
            (CONTENT_DUPLICATE,),
        ):
            yield fingerprint & _MASK64, simhash & _MASK64, url

    @_translated
    def content_counts(self) -> dict[int, int]:
        """Pages by ``kind`` over every run: ``{CONTENT_FIRST: n, CONTENT_DUPLICATE: n,
        CONTENT_NEAR: n}``."""
        counts = dict.fromkeys((CONTENT_FIRST, CONTENT_DUPLICATE, CONTENT_NEAR), 0)
        counts.update(self._connection().execute("SELECT kind, count(*) FROM contents GROUP BY kind"))
        return counts

    # -- robots.txt outcomes ---------------------------------------------------------
    @_translated
    def set_robots_status(self, origin: str, status: str) -> None:
        """Keep ``status``, the latest robots.txt outcome of ``origin``, in one line
        (:meth:`crawler.web.robots.RobotsRules.status_line`); replaces the one before. Part
        of the open transaction."""
        self._writer().execute("INSERT OR REPLACE INTO robots (origin, status) VALUES (?, ?)", (origin, status))

    @_translated
    def robots_statuses(self) -> dict[str, str]:
        """``{origin: status}`` of every origin whose robots.txt was asked, over every run."""
        return dict(self._connection().execute("SELECT origin, status FROM robots"))

    # -- URL rows ------------------------------------------------------------------
    @_translated
    def add(self, tasks: Iterable[FetchTask], state: str = FRONTIER, reason: str | None = None) -> None:
        """Insert a row per task, in ``state`` (with ``reason``, e.g. a skip reason); a URL
        already present keeps its row as is (ON CONFLICT (url) DO NOTHING). Each new URL
        writes a random page of the URL index.

        Raises:
            ValueError: an unknown ``state``; a task not of kind "page" (the tasks of
                the batch of 1,000 holding it are not written, earlier batches are);
                ``FRONTIER`` while a :class:`DiskFrontier` is open on this store (push
                to it instead: it must know every waiting row).
        """
        _check_state(state)
        if state == FRONTIER and self._frontier is not None:
            raise ValueError("a DiskFrontier owns the frontier rows: push to it")
        conn = self._writer()  # from here self._seq is ours
        sql = (
            "INSERT INTO urls (seq, url, origin, state, depth, parent, redirect_chain, request_url,"
            " attempt, reason, cookies) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (url) DO NOTHING"
        )
        rows = []
        for task in tasks:
            _page_task(task)
            self._seq += 1
            rows.append(
                (
                    self._seq,
                    task.url,
                    origin_of(task.url),
                    state,
                    task.depth,
                    task.parent,
                    _chain_text(task.redirect_chain),
                    task.request_url,
                    task.attempt,
                    reason,
                    _cookies_text(task.cookies),
                )
            )
            if len(rows) == BATCH_ROWS:
                conn.executemany(sql, rows)
                rows = []
        if rows:
            conn.executemany(sql, rows)

    @_translated
    def set_state(self, urls: Iterable[str], state: str, reason: str | None = None) -> None:
        """Move each URL of ``urls`` to ``state``, setting ``reason`` (None clears it).
        Moving to ``FRONTIER`` gives the row a new seq (behind the other waiting rows of
        its depth). One statement per 1,000 URLs.

        Raises:
            ValueError: an unknown ``state``; while a :class:`DiskFrontier` is open on
                this store, ``FRONTIER`` (push to the frontier instead) or a URL that is
                waiting in it (pop it first).
            KeyError: a URL without a row. The other URLs of its batch of 1,000 (and
                earlier batches) are moved.
        """
        _check_state(state)
        if state != FRONTIER:
            self.set_states((url, state, reason) for url in urls)
            return
        if self._frontier is not None:
            raise ValueError("a DiskFrontier owns the frontier rows: push to it")
        sql = "UPDATE urls SET state = 'frontier', reason = ?, loaded = 0, seq = ? WHERE url = ?"
        batch: list[str] = []
        for url in urls:
            batch.append(url)
            if len(batch) == BATCH_ROWS:
                self._set_frontier_batch(sql, batch, reason)
                batch = []
        if batch:
            self._set_frontier_batch(sql, batch, reason)

    @_translated
    def set_states(self, rows: Iterable[tuple[str, str, str | None]]) -> None:
        """Move each URL to its own state with its own reason: ``rows`` of ``(url, state,
        reason)``, none of them ``FRONTIER``, in one statement per 1,000 rows (the
        dispatcher settles a loop turn's results at once). Same errors as
        :meth:`set_state`."""
        sql = "UPDATE urls SET state = ?, reason = ?, loaded = 0 WHERE url = ?"
        if self._frontier is not None:
            sql += " AND state <> 'frontier'"
        batch: list[tuple[str, str | None, str]] = []
        popped: list[tuple[str, str | None, int, str]] = []  # rows of pending takes, by seq
        for url, state, reason in rows:
            _check_state(state)
            if state == FRONTIER:
                raise ValueError("set_states cannot move a URL to the frontier: use set_state")
            seq = self._takes.get(url)
            if seq is not None:  # popped, its take still pending: written by seq, take dropped
                popped.append((state, reason, seq, url))
            else:
                batch.append((state, reason, url))
            if len(batch) + len(popped) == BATCH_ROWS:
                self._settle_batch(sql, batch, popped)
                batch, popped = [], []
        if batch or popped:
            self._settle_batch(sql, batch, popped)

    def _settle_batch(
        self, sql: str, batch: list[tuple[str, str | None, str]], popped: list[tuple[str, str | None, int, str]]
    ) -> None:
        """Write one batch of :meth:`set_states`: the rows of pending takes by seq (their
        takes then dropped: a final state needs no in-flight write first), the others by
        URL. A batch refused earlier leaves its pending takes as they were."""
        conn = self._writer(flush=False)  # the URLs of pending takes are all in ``popped``
        if popped:
            conn.executemany(
                "UPDATE urls SET state = ?, reason = ?, loaded = 0 WHERE seq = ?", [row[:3] for row in popped]
            )
            for _state, _reason, _seq, url in popped:
                self._takes.pop(url, None)
        if batch and conn.executemany(sql, batch).rowcount != len(batch):
            self._explain_missing([url for _state, _reason, url in batch])

    def _set_frontier_batch(self, sql: str, urls: list[str], reason: str | None) -> None:
        params = []
        for url in urls:
            self._seq += 1
            params.append((reason, self._seq, url))
        if self._writer().executemany(sql, params).rowcount != len(urls):
            self._explain_missing(urls)

    def _explain_missing(self, urls: list[str]) -> None:
        for url in urls:
            current = self.state_of(url)
            if current is None:
                raise KeyError(url)
            if current == FRONTIER and self._frontier is not None:
                raise ValueError(f"{url} is waiting in the DiskFrontier: pop it first")

    @_translated
    def update_task(self, task: FetchTask, state: str, reason: str | None = None) -> None:
        """Store every field of ``task`` (depth, parent, redirect_chain, request_url,
        attempt, cookies: e.g. a retry's attempt count while it waits) and move its row to
        ``state`` with ``reason``. To ``FRONTIER``: a new seq, as :meth:`set_state`.
        ~50 us at 300,000 rows, commit included (a random row and its index entries).

        Raises:
            ValueError: an unknown ``state``, a task not of kind "page", or, while a
                :class:`DiskFrontier` is open, ``FRONTIER`` or a URL waiting in it.
            KeyError: ``task.url`` has no row.
        """
        _check_state(state)
        _page_task(task)
        owned = self._frontier is not None
        if state == FRONTIER and owned:
            raise ValueError("a DiskFrontier owns the frontier rows: push to it")
        conn = self._writer()
        seq_sql = ", seq = ?" if state == FRONTIER else ""
        params: list = [
            state,
            reason,
            task.depth,
            task.parent,
            _chain_text(task.redirect_chain),
            task.request_url,
            task.attempt,
            _cookies_text(task.cookies),
        ]
        if state == FRONTIER:
            self._seq += 1
            params.append(self._seq)
        params.append(task.url)
        sql = (
            "UPDATE urls SET state = ?, reason = ?, loaded = 0, depth = ?, parent = ?,"
            f" redirect_chain = ?, request_url = ?, attempt = ?, cookies = ?{seq_sql} WHERE url = ?"
        )
        if owned:
            sql += " AND state <> 'frontier'"
        if conn.execute(sql, params).rowcount != 1:
            self._explain_missing([task.url])

    @_translated
    def bump_crashes(self, url: str) -> int:
        """Count one more fetcher death while ``url`` was in its hands; returns the new
        count (a URL that keeps killing fetchers can then be failed instead of retried).
        ~22 us at 300,000 rows, commit included.

        Raises:
            KeyError: ``url`` has no row.
        """
        row = (
            self._writer()
            .execute("UPDATE urls SET crashes = crashes + 1 WHERE url = ? RETURNING crashes", (url,))
            .fetchone()
        )
        if row is None:
            raise KeyError(url)
        return row[0]

    @_translated
    def state_of(self, url: str) -> str | None:
        """The state of ``url``, or None if it has no row (one lookup in the URL index)."""
        row = self._connection().execute("SELECT state FROM urls WHERE url = ?", (url,)).fetchone()
        return None if row is None else row[0]

    @_translated
    def crashes_of(self, url: str) -> int | None:
        """The crash count of ``url`` (see :meth:`bump_crashes`), or None without a row."""
        row = self._connection().execute("SELECT crashes FROM urls WHERE url = ?", (url,)).fetchone()
        return None if row is None else row[0]

    @_translated
    def reason_of(self, url: str) -> str | None:
        """The reason stored with ``url``'s state, or None (also without a row)."""
        row = self._connection().execute("SELECT reason FROM urls WHERE url = ?", (url,)).fetchone()
        return None if row is None else row[0]

    @_translated
    def counts(self) -> dict[str, int]:
        """Rows per state, every state present: {"frontier": n, "in_flight": n, ...}.
        Scans an index (all rows), so call it for a report, not every turn."""
        totals: dict[str, int] = dict.fromkeys(STATES, 0)
        totals.update(self._connection().execute("SELECT state, count(*) FROM urls GROUP BY state"))
        return totals

    @_translated
    def origin_count(self) -> int:
        """The origins with at least one row (a claimed URL). Scans the table: call it
        for a report."""
        return self._connection().execute("SELECT count(DISTINCT origin) FROM urls").fetchone()[0]

    @_translated
    def reason_counts(self, state: str) -> dict[str | None, int]:
        """Rows of ``state`` per stored reason (the outcome of a visited URL, the error
        of a failed one, the skip reason): what a resumed crawl's counters start from."""
        _check_state(state)
        return dict(
            self._connection().execute("SELECT reason, count(*) FROM urls WHERE state = ? GROUP BY reason", (state,))
        )

    @_translated
    def urls_with_reason(self, state: str, reason: str) -> list[str]:
        """URLs of ``state`` stored with ``reason`` (e.g. visited as ``"redirect"``)."""
        _check_state(state)
        return [
            url
            for (url,) in self._connection().execute(
                "SELECT url FROM urls WHERE state = ? AND reason = ? ORDER BY seq", (state, reason)
            )
        ]

    @_translated
    def skipped_rows(self) -> Iterator[tuple[str, int, str | None, str]]:
        """Stream ``(url, depth, parent, reason)`` of every SKIPPED row, by seq (a row
        stored without a reason reads ``"unknown"``: every skip has one)."""
        for _, url, depth, parent, reason in self._keyset(
            "SELECT seq, url, depth, parent, reason FROM urls WHERE state = ? AND seq > ? ORDER BY seq LIMIT ?",
            (SKIPPED,),
        ):
            yield url, depth, parent, reason if reason is not None else "unknown"

    def urls_in(self, *states: str) -> Iterator[str]:
        """Stream the URLs in any of ``states``, ordered by seq, 1,000 rows a query (no
        list of them in memory). Rows changed while iterating may be seen
        in their old state, their new one, or not at all.

        Raises:
            ValueError: an unknown state (when iteration starts).
        """
        for _, url, *_rest in self._stream(states, by_depth=False):
            yield url

    def tasks_in(self, *states: str) -> Iterator[FetchTask]:
        """Stream the tasks in any of ``states``, ordered by depth, then seq (so
        breadth-first, as they were queued), 1,000 rows a query.
        Same caveat as :meth:`urls_in` about rows changed while iterating.

        Raises:
            ValueError: an unknown state (when iteration starts).
        """
        for _, *fields in self._stream(states, by_depth=True):
            yield _task(*fields)

    def _stream(self, states: tuple[str, ...], by_depth: bool) -> Iterator[tuple]:
        """Rows (seq, url, depth, parent, chain, request_url, attempt, cookies) of ``states``:
        one keyset-paged query per (state, depth) present, merged by seq in Python."""
        for state in states:
            _check_state(state)
        depths_of = {state: self._depths(state) for state in dict.fromkeys(states)}
        if by_depth:
            for depth in sorted(set().union(*depths_of.values())):
                yield from heapq.merge(
                    *(self._rows(state, depth) for state, depths in depths_of.items() if depth in depths)
                )
        else:
            yield from heapq.merge(
                *(self._rows(state, depth) for state, depths in depths_of.items() for depth in depths)
            )

    @_translated
    def _depths(self, state: str) -> list[int]:
        """The depths present in ``state``: one index seek per depth."""
        conn = self._connection()
        depths: list[int] = []
        row = conn.execute("SELECT depth FROM urls WHERE state = ? ORDER BY depth LIMIT 1", (state,)).fetchone()
        while row is not None:
            depths.append(row[0])
            row = conn.execute(
                "SELECT depth FROM urls WHERE state = ? AND depth > ? ORDER BY depth LIMIT 1", (state, row[0])
            ).fetchone()
        return depths

    def _rows(self, state: str, depth: int) -> Iterator[tuple]:
        return self._keyset(
            f"SELECT {_COLUMNS} FROM urls WHERE state = ? AND depth = ? AND seq > ? ORDER BY seq LIMIT ?",
            (state, depth),
        )

    def _keyset(self, sql: str, params: tuple) -> Iterator[tuple]:
        """Stream the rows of ``sql``, :data:`BATCH_ROWS` a query, paged by ``seq`` (keyset
        pagination): ``sql`` selects ``seq`` first and ends with ``seq > ? ORDER BY seq
        LIMIT ?``, the two parameters after ``params``."""
        after = -1
        while True:
            page = self._page(sql, params + (after, BATCH_ROWS))
            yield from page
            if len(page) < BATCH_ROWS:
                return
            after = page[-1][0]

    @_translated
    def _page(self, sql: str, params: tuple) -> list[tuple]:
        return self._connection().execute(sql, params).fetchall()

    @_translated
    def reset_for_resume(self) -> int:
        """Before resuming a crawl: every ``IN_FLIGHT`` row back to ``FRONTIER`` (keeping
        its seq, so it comes out first within its depth) and no row marked as loaded in
        a window. Returns how many were in flight. Part of the open transaction.

        Raises:
            ValueError: a :class:`DiskFrontier` is open on this store (create it after).
        """
        if self._frontier is not None:
            raise ValueError("reset_for_resume must come before the DiskFrontier is created")
        conn = self._writer()
        moved = conn.execute("UPDATE urls SET state = 'frontier', loaded = 0 WHERE state = 'in_flight'").rowcount
        conn.execute("UPDATE urls SET loaded = 0 WHERE state = 'frontier' AND loaded = 1")
        return moved

    # -- the frontier's rows: the API crawler.engine.diskfrontier.DiskFrontier uses ------
    @_translated
    def attach_frontier(self, frontier: DiskFrontier) -> dict[str, dict[int, int]]:
        """Make ``frontier`` the owner of the FRONTIER rows; returns origin -> {depth:
        count} of the waiting rows, origins in the order of their first seq."""
        self._connection()
        if self._frontier is not None:
            raise ValueError("this store already has a DiskFrontier")
        counts = self._waiting_counts()
        self._frontier = frontier
        return counts

    @_translated
    def _waiting_counts(self) -> dict[str, dict[int, int]]:
        conn = self._writer()
        conn.execute("UPDATE urls SET loaded = 0 WHERE state = 'frontier' AND loaded = 1")
        firsts: dict[str, int] = {}
        counts: dict[str, dict[int, int]] = {}
        for origin, depth, count, first in conn.execute(
            "SELECT origin, depth, count(*), min(seq) FROM urls INDEXED BY urls_waiting"
            " WHERE state = 'frontier' AND loaded = 0 GROUP BY origin, depth"
        ):
            counts.setdefault(origin, {})[depth] = count
            firsts[origin] = min(first, firsts.get(origin, first))
        return {origin: counts[origin] for origin in sorted(counts, key=firsts.__getitem__)}

    @_translated
    def next_seq(self) -> int:
        """A new seq, for a task kept in memory only (not a page) in the frontier's order."""
        self._connection()
        self._seq += 1
        return self._seq

    @_translated
    def push_row(self, task: FetchTask, origin: str, loaded: bool) -> int:
        """Write ``task`` as waiting (a new row, or an in-flight one put back); its seq."""
        conn = self._writer(flush=task.url in self._takes)  # put back: its take first
        self._seq += 1
        cursor = conn.execute(
            "INSERT INTO urls (seq, url, origin, state, depth, parent, redirect_chain, request_url,"
            " attempt, loaded, cookies) VALUES (?, ?, ?, 'frontier', ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (url) DO UPDATE SET seq = excluded.seq, state = 'frontier', reason = NULL,"
            " depth = excluded.depth, parent = excluded.parent, redirect_chain = excluded.redirect_chain,"
            " request_url = excluded.request_url, attempt = excluded.attempt, loaded = excluded.loaded,"
            " cookies = excluded.cookies WHERE state = 'in_flight'",
            (
                self._seq,
                task.url,
                origin,
                task.depth,
                task.parent,
                _chain_text(task.redirect_chain),
                task.request_url,
                task.attempt,
                int(loaded),
                _cookies_text(task.cookies),
            ),
        )
        if cursor.rowcount != 1:
            raise ValueError(f"cannot push {task.url}: it is {self.state_of(task.url)}, not new or in flight")
        return self._seq

    def take_row(self, seq: int, url: str) -> None:
        """Mark the popped row ``seq`` (of ``url``) IN_FLIGHT. The write waits: until
        :meth:`commit` or any access that may read the row (one statement for the pops
        of a loop turn, and none for a row settled first: :meth:`set_states` writes its
        final state by seq). Nothing reads the row before, and a commit never leaves it
        waiting, so what survives a crash is as if it had been written at once."""
        self._takes[url] = seq

    @_translated
    def unload_row(self, seq: int) -> None:
        """A window's task goes back to disk: its row is read again by :meth:`load_rows`."""
        self._writer().execute("UPDATE urls SET loaded = 0 WHERE seq = ?", (seq,))

    @_translated
    def load_rows(self, origin: str, limit: int) -> list[tuple[int, FetchTask]]:
        """Mark the first ``limit`` unloaded waiting rows of ``origin`` loaded; returns
        them as ``(seq, task)`` in (depth, seq) order."""
        rows = (
            self._writer()
            .execute(
                f"UPDATE urls SET loaded = 1 WHERE seq IN (SELECT seq FROM urls INDEXED BY urls_waiting"
                f" WHERE origin = ? AND state = 'frontier' AND loaded = 0 ORDER BY depth, seq LIMIT ?)"
                f" RETURNING {_COLUMNS}",
                (origin, limit),
            )
            .fetchall()
        )
        rows.sort(key=lambda row: (row[2], row[0]))
        return [(row[0], _task(*row[1:])) for row in rows]
