"""The current corpus of a folder that has been recrawled: one record per URL.

The rule (:mod:`crawler.engine.recrawl` says how records get their ``change``): for each
URL, its latest record (highest ``generation``, then the last written) that is not a
transient failure (``change`` ``failed``: a timeout, a 5xx...; when every record of the
URL is one, the latest of them); a URL whose chosen record is ``gone`` (404, 410) is
not in the corpus. A chosen record without Markdown whose ``content_generation`` is an
earlier generation (a 304 carried it forward) gets the Markdown of the URL's last
record in that generation. Exact duplicates stay as recorded (``duplicate_of`` names the
URL whose record holds the Markdown).

:func:`export_current` writes it as plain page shards (``pages-00-SSSSS.jsonl``, or
compressed) and ``manifest.json`` in a new folder, streaming: three reads of the shards
and a SQLite file of one small row per record (and the carried Markdown) beside the
output; memory holds the line numbers of the chosen records.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator

from crawler.errors import ConfigError
from crawler.output.shards import COMPRESSIONS, DEFAULT_SHARD_BYTES, finish_shards, iter_lines, write_manifest
from crawler.output.writers import ShardWriter

#: The working file, removed at the end.
_INDEX = ".export-current.sqlite"
_BATCH = 1000


def _lines(out_dir: str) -> Iterator[tuple[int, dict]]:
    for seq, line in enumerate(iter_lines(out_dir)):
        yield seq, json.loads(line)


def export_current(out_dir: str, to_dir: str, compression: str | None = None) -> dict:
    """Write the current corpus of ``out_dir`` to ``to_dir`` (new or empty). Returns
    ``{"records": written, "gone": URLs left out as gone, "carried": records given the
    Markdown of an earlier generation, "urls": distinct URLs}``.

    Raises:
        ConfigError: ``out_dir`` holds no page records, or ``to_dir`` is not new or
            empty, or is ``out_dir``; an unknown ``compression``.
        OSError, ValueError: a file cannot be read or written.
    """
    if compression not in (None, *COMPRESSIONS):
        raise ConfigError(f"--compress must be zstd or gzip, got {compression!r}")
    if not os.path.isdir(out_dir) or not any(n.startswith("pages-") for n in os.listdir(out_dir)):
        raise ConfigError(f"{out_dir} holds no page records")
    if os.path.exists(to_dir) and (os.listdir(to_dir) or os.path.samefile(to_dir, out_dir)):
        raise ConfigError(f"--to {to_dir} must be a new or empty folder")
    os.makedirs(to_dir, exist_ok=True)
    index = os.path.join(to_dir, _INDEX)
    conn = sqlite3.connect(index)
    try:
        conn.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
            "CREATE TABLE recs (seq INTEGER PRIMARY KEY, url TEXT, generation INTEGER, transient INTEGER,"
            " markdown INTEGER);"
            "CREATE TABLE chosen (seq INTEGER PRIMARY KEY);"
            "CREATE TABLE carried (seq INTEGER PRIMARY KEY, markdown TEXT);"
        )
        _index(conn, out_dir)
        counts = _write(conn, out_dir, to_dir, compression)
    finally:
        conn.close()
        with contextlib.suppress(FileNotFoundError):
            os.remove(index)
    finish_shards(to_dir, compression)
    write_manifest(to_dir, DEFAULT_SHARD_BYTES)
    return counts


def _index(conn: sqlite3.Connection, out_dir: str) -> None:
    """The first read: a small row per record, and each URL's chosen record."""
    rows = []
    for seq, record in _lines(out_dir):
        transient = bool(record.get("error")) and record.get("status") not in (404, 410)
        rows.append((seq, record["url"], record.get("generation") or 1, transient, record.get("markdown") is not None))
        if len(rows) == _BATCH:
            conn.executemany("INSERT INTO recs VALUES (?, ?, ?, ?, ?)", rows)
            rows = []
    conn.executemany("INSERT INTO recs VALUES (?, ?, ?, ?, ?)", rows)
    conn.execute("CREATE INDEX recs_by_url ON recs (url, transient, generation, seq)")
    conn.execute(
        "INSERT INTO chosen SELECT r.seq FROM recs r WHERE r.seq = ("
        " SELECT seq FROM recs WHERE url = r.url ORDER BY transient ASC, generation DESC, seq DESC LIMIT 1)"
    )


def _write(conn: sqlite3.Connection, out_dir: str, to_dir: str, compression: str | None) -> dict:
    """The second and third reads: which chosen records take an earlier record's
    Markdown, then the records written, that Markdown kept aside until they come."""
    chosen = set()
    for (seq,) in conn.execute("SELECT seq FROM chosen"):
        chosen.add(seq)
    # Which chosen records carry their Markdown from an earlier line: read their
    # content_generation in this pass (the first pass kept only small columns).
    carry: dict[int, int] = {}  # markdown line -> chosen line
    wanted: dict[int, tuple[str, int]] = {}  # chosen line -> (url, content generation)
    gone = 0
    for seq, record in _lines(out_dir):  # only the chosen records' own fields
        if seq not in chosen:
            continue
        if record.get("change") == "gone":
            gone += 1
            continue
        origin_generation = record.get("content_generation")
        if record.get("markdown") is None and origin_generation and origin_generation != record.get("generation"):
            wanted[seq] = (record["url"], origin_generation)
    for seq, (url, generation) in wanted.items():
        row = conn.execute(
            "SELECT seq FROM recs WHERE url = ? AND generation = ? AND markdown ORDER BY seq DESC LIMIT 1",
            (url, generation),
        ).fetchone()
        if row is not None:
            carry[row[0]] = seq
    writer = ShardWriter(to_dir, 0, DEFAULT_SHARD_BYTES, compression)
    written = carried = 0
    urls = len(chosen)
    try:
        for seq, record in _lines(out_dir):
            if seq in carry:
                conn.execute("INSERT INTO carried VALUES (?, ?)", (carry[seq], record["markdown"]))
            if seq not in chosen or record.get("change") == "gone":
                continue
            if seq in wanted:
                row = conn.execute("SELECT markdown FROM carried WHERE seq = ?", (seq,)).fetchone()
                if row is not None:
                    record["markdown"] = row[0]
                    carried += 1
            writer.write_lines((json.dumps(record, ensure_ascii=False),))
            written += 1
    finally:
        writer.close()
    return {"records": written, "gone": gone, "carried": carried, "urls": urls}
