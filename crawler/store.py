"""Output writers. Each fetcher process owns its own files, so no two processes write one
file; the threads of a fetcher share them under a lock.

Files in the output folder:
    pages-NN.jsonl   one JSON object per fetched URL (NN = fetcher number)
    edges-NN.tsv     source, target, kind (link | redirect), in_scope (1 | 0)
Records are written with one ``write`` of a whole line and flushed, so a crash can at
worst leave one partial last line.
"""

from __future__ import annotations

import json
import os
import threading


def pages_path(out_dir: str, worker_id: int) -> str:
    """Path of fetcher ``worker_id``'s page records."""
    return os.path.join(out_dir, f"pages-{worker_id:02d}.jsonl")


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

    def write_lines(self, lines) -> None:
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


class RecordWriter:
    """The page records and edges of one fetcher process.

    Args:
        out_dir: the crawl's output folder.
        worker_id: fetcher number (names the files).
    """

    def __init__(self, out_dir: str, worker_id: int) -> None:
        self.pages = LineWriter(pages_path(out_dir, worker_id))
        self.edges = LineWriter(edges_path(out_dir, worker_id))

    def write(self, record: dict, edges) -> None:
        """Write one page record and its edges ``[(source, target, kind, in_scope)]``.

        Edges go first: a record on disk implies its edges are on disk too.
        """
        self.edges.write_lines(f"{s}\t{t}\t{k}\t{int(i)}" for s, t, k, i in edges)
        self.pages.write_lines((json.dumps(record, ensure_ascii=False),))

    def close(self) -> None:
        """Close both files."""
        self.pages.close()
        self.edges.close()
