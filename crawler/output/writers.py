"""Output writers. Each fetcher process owns its own files, so no two processes write one
file; the threads of a fetcher share them under a lock.

Files in the output folder:
    pages-NN-SSSSS.jsonl  one JSON object per fetched URL (NN = fetcher number, SSSSS =
                          shard number; see :mod:`crawler.output.shards`)
    edges-NN.tsv          source, target, kind (link | redirect), in_scope (1 | 0)
Records are written with one ``write`` of a whole line and flushed, so a crash can at
worst leave one partial last line.
"""

from __future__ import annotations

import io
import json
import logging
import os
import threading
from collections.abc import Iterable

from crawler.output.shards import DEFAULT_SHARD_BYTES, compress_shard, next_shard_number, shard_name

log = logging.getLogger("crawler")


#: With ``--redis``: the dispatcher's skips (``url depth parent reason``, no header), one
#: line as each happens, so ``merge`` lists them even when the machine was killed.
SKIP_LOG = "skip-log.tsv"


def edges_path(out_dir: str, worker_id: int) -> str:
    """Path of fetcher ``worker_id``'s link-graph edges."""
    return os.path.join(out_dir, f"edges-{worker_id:02d}.tsv")


class LineWriter:
    """Append whole lines to a file, thread-safe, flushed after every call.

    Args:
        path: file to append to (created if missing).
    """

    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8", newline="\n")
        self._lock = threading.Lock()

    def write_lines(self, lines: Iterable[str]) -> None:
        """Append ``lines`` (strings without newlines) as one write."""
        text = "".join(line + "\n" for line in lines)
        if text:
            with self._lock:
                self._file.write(text)
                self._file.flush()

    def close(self) -> None:
        """Flush and close the file."""
        with self._lock:
            self._file.close()


class ShardWriter:
    """Append whole lines to the numbered shards of one fetcher, thread-safe, flushed
    after every call; a shard is closed before a line would take it past ``max_bytes``.

    The first shard is opened at the first line, numbered after every shard of this
    fetcher already in the folder (a resumed fetcher starts a new shard). A closed shard
    is compressed by the thread whose line closed it, outside the lock (the other
    threads go on writing to the next shard); the last one is left plain for
    :func:`crawler.output.shards.finish_shards` at the end of the crawl.

    Args:
        out_dir: the crawl's output folder.
        worker_id: fetcher number (names the files).
        max_bytes: most uncompressed bytes per shard (>= 1); a longer line gets a shard
            of its own.
        compression: ``None``, ``"zstd"`` or ``"gzip"``: what closed shards become.
    """

    def __init__(
        self, out_dir: str, worker_id: int, max_bytes: int = DEFAULT_SHARD_BYTES, compression: str | None = None
    ) -> None:
        self.out_dir, self.worker_id = out_dir, worker_id
        self.max_bytes, self.compression = max_bytes, compression
        self._number = next_shard_number(out_dir, worker_id)
        self._file: io.BufferedWriter | None = None
        self._size = 0
        self._lock = threading.Lock()

    @property
    def path(self) -> str:
        """The shard being written (or the next one, before its first line)."""
        return os.path.join(self.out_dir, shard_name(self.worker_id, self._number))

    def write_lines(self, lines: Iterable[str]) -> None:
        """Append ``lines`` (strings without newlines) as one write, in one shard.

        Raises:
            OSError: the write failed (a failed compression is only logged).
        """
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        if not data:
            return
        closed = None
        with self._lock:
            if self._file is not None and self._size + len(data) > self.max_bytes:
                closed = self.path
                self._file.close()
                self._file, self._size = None, 0
                self._number += 1
            if self._file is None:
                self._file = open(self.path, "ab")
            self._file.write(data)
            self._file.flush()
            self._size += len(data)
        if closed is not None and self.compression is not None:
            try:
                compress_shard(closed, self.compression)
            except Exception as exc:  # the record is written; the end of the crawl retries
                log.warning("could not compress %s (%s); it stays plain for now", closed, exc)

    def close(self) -> None:
        """Flush and close the open shard (left plain)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class RecordWriter:
    """The page records and edges of one fetcher process.

    Args:
        out_dir: the crawl's output folder.
        worker_id: fetcher number (names the files).
        shard_bytes, compression: the page shards' size limit and compression
            (:class:`ShardWriter`).
    """

    def __init__(
        self, out_dir: str, worker_id: int, shard_bytes: int = DEFAULT_SHARD_BYTES, compression: str | None = None
    ) -> None:
        self.pages = ShardWriter(out_dir, worker_id, shard_bytes, compression)
        self.edges = LineWriter(edges_path(out_dir, worker_id))

    def write(self, record: dict, edges: Iterable[tuple[str, str, str, bool]]) -> None:
        """Write one page record and its edges ``[(source, target, kind, in_scope)]``.

        Edges go first: a record on disk implies its edges are on disk too.
        """
        self.edges.write_lines(f"{s}\t{t}\t{k}\t{int(i)}" for s, t, k, i in edges)
        self.pages.write_lines((json.dumps(record, ensure_ascii=False),))

    def close(self) -> None:
        """Close both files."""
        self.pages.close()
        self.edges.close()
