"""The current corpus of a folder that has been recrawled: one record per URL.

The rule (:mod:`crawler.engine.recrawl` says how records get their ``change``): for each
URL, its latest record (highest ``generation``, then the last written) that is not a
transient failure (``change`` ``failed``: a timeout, a 5xx...; when every record of the
URL is one, the latest of them); a URL whose chosen record is a recrawl's 404 or 410
(``gone``, or ``unchanged`` when it was gone before) is not in the corpus. A chosen
record without Markdown whose ``content_generation`` is an earlier generation (a 304
carried it forward) gets the Markdown of the URL's last record in that generation.
Exact duplicates stay as recorded (``duplicate_of`` names the URL whose record holds
the Markdown).

:func:`export_current` writes it as plain page shards (``pages-00-SSSSS.jsonl``, or
compressed) and ``manifest.json`` in a new folder, streaming: three reads of the shards
and a SQLite file of one small row per record (and the carried Markdown) beside the
output; memory holds the line numbers of the chosen records. :class:`CurrentCorpus`
streams the same records to the other exports (:mod:`crawler.output.export`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterator

from crawler.errors import ConfigError
from crawler.output import folderlock
from crawler.output.shards import (
    COMPRESSIONS,
    DEFAULT_SHARD_BYTES,
    finish_shards,
    iter_lines,
    iter_shard_lines,
    list_shards,
    write_manifest,
)
from crawler.output.writers import ShardWriter

#: The working file, removed at the end.
_INDEX = ".current-index.sqlite"
_BATCH = 1000


def _lines(out_dir: str) -> Iterator[tuple[int, dict]]:
    for seq, line in enumerate(iter_lines(out_dir)):
        yield seq, json.loads(line)


def _check_complete(out_dir: str) -> None:
    """Raise ConfigError if a compressed shard that ``manifest.json`` lists (same file,
    same size) holds fewer complete lines than it says: a damaged Zstandard shard can read
    as shorter without an error."""
    try:
        with open(os.path.join(out_dir, "manifest.json"), encoding="utf-8") as f:
            listed = {entry["file"]: entry for entry in json.load(f)["shards"]}
    except (OSError, ValueError, KeyError, TypeError):
        return
    for shard in list_shards(out_dir):
        entry = listed.get(os.path.basename(shard.path))
        if shard.compression is None or entry is None or entry.get("bytes") != os.path.getsize(shard.path):
            continue
        lines = sum(1 for _ in iter_shard_lines(shard))
        if lines < entry["records"]:
            raise ConfigError(
                f"{shard.path} is damaged: {lines} of the {entry['records']} records manifest.json lists can be read"
            )


def _gone(record: dict) -> bool:
    """A recrawl's 404 or 410 (``gone``, or ``unchanged`` when it was one before); a
    crawl's first generation keeps its failures as records."""
    return (record.get("generation") or 1) > 1 and bool(record.get("error")) and record.get("status") in (404, 410)


def check_source(out_dir: str) -> None:
    """Raise ConfigError (one line) unless ``out_dir`` is a folder with page shards."""
    if not os.path.isdir(out_dir):
        raise ConfigError(f"{out_dir} is not a folder")
    if not list_shards(out_dir):
        raise ConfigError(f"{out_dir} holds no page records (pages-*.jsonl)")


class CurrentCorpus:
    """The current corpus of ``out_dir``, one record per URL (the module's rule),
    streamed: iterate once. Its working file lives in ``work_dir`` (created if needed)
    and is removed when the iteration ends or stops.

    Attributes, once iterated (``urls`` once :meth:`index` ran):
        urls: distinct URLs in the folder.
        chosen: records chosen (one per URL), gone ones included.
        gone: URLs left out because their chosen record is ``gone``.
        carried: records given the Markdown of an earlier generation.
        yielded: records yielded.
    """

    def __init__(self, out_dir: str, work_dir: str) -> None:
        check_source(out_dir)
        self.out_dir, self.work_dir = out_dir, work_dir
        self.urls = self.chosen = self.gone = self.carried = self.yielded = 0
        self._conn: sqlite3.Connection | None = None

    def index(self) -> int:
        """The first read: a small row per record and each URL's chosen record. Returns
        the number chosen (for a progress total); called by the iteration if needed."""
        if self._conn is not None:
            return self.chosen
        os.makedirs(self.work_dir, exist_ok=True)
        path = os.path.join(self.work_dir, _INDEX)
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        conn = self._conn = sqlite3.connect(path)
        conn.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
            "CREATE TABLE recs (seq INTEGER PRIMARY KEY, url TEXT, generation INTEGER, transient INTEGER,"
            " markdown INTEGER, borrows INTEGER);"
            "CREATE TABLE chosen (seq INTEGER PRIMARY KEY);"
            "CREATE TABLE carried (seq INTEGER PRIMARY KEY, markdown TEXT);"
        )
        rows = []
        sql = "INSERT INTO recs VALUES (?, ?, ?, ?, ?, ?)"
        _check_complete(self.out_dir)
        for seq, record in _lines(self.out_dir):
            transient = bool(record.get("error")) and record.get("status") not in (404, 410)
            generation = record.get("generation") or 1
            source = record.get("content_generation")
            has_markdown = record.get("markdown") is not None
            borrows = source if not has_markdown and source and source != generation and not _gone(record) else None
            rows.append((seq, record["url"], generation, transient, has_markdown, borrows))
            if len(rows) == _BATCH:
                conn.executemany(sql, rows)
                rows = []
        conn.executemany(sql, rows)
        conn.execute("CREATE INDEX recs_by_url ON recs (url, transient, generation, seq)")
        conn.execute(
            "INSERT INTO chosen SELECT r.seq FROM recs r WHERE r.seq = ("
            " SELECT seq FROM recs WHERE url = r.url ORDER BY transient ASC, generation DESC, seq DESC LIMIT 1)"
        )
        self.chosen = self.urls = conn.execute("SELECT count(*) FROM chosen").fetchone()[0]
        return self.chosen

    def __iter__(self) -> Iterator[dict]:
        try:
            self.index()
            yield from self._records()
        finally:
            self.close()

    def close(self) -> None:
        """Remove the working file (the iteration does it when it ends)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(self.work_dir, _INDEX))

    def _records(self) -> Iterator[dict]:
        """The second read keeps aside the Markdown that chosen records take from an
        earlier record (whatever the order of the shards); the third yields the records."""
        conn = self._conn
        assert conn is not None  # index() opened it
        chosen = {seq for (seq,) in conn.execute("SELECT seq FROM chosen")}
        carry: dict[int, int] = {}  # line holding the Markdown -> chosen line taking it
        for seq, url, generation in conn.execute(
            "SELECT r.seq, r.url, r.borrows FROM recs r JOIN chosen c ON c.seq = r.seq WHERE r.borrows IS NOT NULL"
        ).fetchall():
            row = conn.execute(
                "SELECT seq FROM recs WHERE url = ? AND generation = ? AND markdown ORDER BY seq DESC LIMIT 1",
                (url, generation),
            ).fetchone()
            if row is not None:
                carry[row[0]] = seq
        if carry:
            for seq, record in _lines(self.out_dir):
                if seq in carry:
                    conn.execute("INSERT INTO carried VALUES (?, ?)", (carry[seq], record["markdown"]))
        for seq, record in _lines(self.out_dir):
            if seq not in chosen:
                continue
            if _gone(record):
                self.gone += 1
                continue
            row = conn.execute("SELECT markdown FROM carried WHERE seq = ?", (seq,)).fetchone()
            if row is not None:
                record["markdown"] = row[0]
                self.carried += 1
            self.yielded += 1
            yield record


def prepare_target(to_dir: str, out_dir: str, ours: Callable[[str], bool]) -> None:
    """Make ``to_dir`` ready for an export: new, empty, or holding only files ``ours``
    says an earlier run of the same export wrote (they are replaced).

    Raises:
        ConfigError: ``to_dir`` is ``out_dir`` or holds other files.
    """
    if os.path.exists(to_dir):
        if os.path.samefile(to_dir, out_dir):
            raise ConfigError(f"--to {to_dir} must not be the crawl's folder")
        others = sorted(name for name in folderlock.entries(to_dir) if not ours(name))
        if others:
            raise ConfigError(f"--to {to_dir} holds files this export did not write ({others[0]}, ...)")
    os.makedirs(to_dir, exist_ok=True)


def _earlier_export(name: str) -> bool:
    """A file export_current writes (a run stopped part-way left it)."""
    return name in (_INDEX, "manifest.json", "manifest.json.tmp") or bool(
        re.fullmatch(r"pages-00-\d+\.jsonl(\.zst|\.gz)?(\.tmp)?", name)
    )


def export_current(out_dir: str, to_dir: str, compression: str | None = None) -> dict:
    """Write the current corpus of ``out_dir`` to ``to_dir`` (new or empty) as page
    shards and ``manifest.json``. Returns ``{"records": written, "gone": URLs left out
    as gone, "carried": records given the Markdown of an earlier generation, "urls":
    distinct URLs}``.

    Raises:
        ConfigError: ``out_dir`` holds no page records, or ``to_dir`` is not new or
            empty, or is ``out_dir``; an unknown ``compression``.
        OSError, ValueError: a file cannot be read or written.
    """
    if compression not in (None, *COMPRESSIONS):
        raise ConfigError(f"--compress must be zstd or gzip, got {compression!r}")
    check_source(out_dir)
    prepare_target(to_dir, out_dir, _earlier_export)
    for name in os.listdir(to_dir):  # a run stopped part-way: this one writes them again
        os.remove(os.path.join(to_dir, name))
    corpus = CurrentCorpus(out_dir, to_dir)
    writer = ShardWriter(to_dir, 0, DEFAULT_SHARD_BYTES, compression)
    try:
        for record in corpus:
            writer.write_lines((json.dumps(record, ensure_ascii=False),))
    finally:
        writer.close()
    finish_shards(to_dir, compression)
    write_manifest(to_dir, DEFAULT_SHARD_BYTES)
    return {"records": corpus.yielded, "gone": corpus.gone, "carried": corpus.carried, "urls": corpus.urls}
