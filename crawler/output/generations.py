"""The generations of one output folder: a crawl, then each ``--recrawl`` of it.

``generations.json`` (absent until the first recrawl: the folder then holds generation
1 only)::

    {"current": 3, "archived": true,
     "generations": [{"generation": 1, "shards": [[0, 0], [1, 0]], "archive": "generations/0001"},
                     {"generation": 2, "shards": [[0, 1], [1, 1]], "archive": "generations/0002"},
                     {"generation": 3, "shards": null, "archive": null}]}

A generation's page records are the shards it wrote, named by ``[fetcher, number]``
(:class:`crawler.output.shards.Shard`: the name changes when a shard is compressed, the
pair does not); the current generation's shards are all the others. Shards are never
moved: every generation's records stay in the folder's ``pages-*`` files, each record
saying its ``generation``. What a run derives from its own state (edge files, tree,
skipped URLs, sites, summary, the state file) is moved into ``generations/GGGG/`` when
the next generation starts, so each generation's link graph stays as it was.

Starting a generation is crash-safe: :func:`begin_next` writes the file with
``"archived": false`` (the commit point), then moves the earlier generation's files
(each move is skipped when already done), then sets ``"archived": true``;
:func:`finish_archive` completes an interrupted start.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
from collections.abc import Iterator

from crawler.output.shards import Shard, iter_shard_lines, list_shards

#: The folder's generation list.
GENERATIONS_FILE = "generations.json"
#: The folder the earlier generations' derived files are moved into.
ARCHIVE_DIR = "generations"
#: What a run derives from its own state, moved into the archive when the next
#: generation starts (page shards, WARC files and ``changes-*.tsv`` stay).
PER_GENERATION = (
    "edges-*.tsv",
    "edges.tsv",
    "tree.txt",
    "skipped.tsv",
    "sites.tsv",
    "summary.json",
    "skip-log.tsv",
    "state.sqlite",
    "state.sqlite-wal",
    "state.sqlite-shm",
)


def changes_file(generation: int) -> str:
    """The name of generation ``generation``'s list of changes: ``changes-G.tsv``."""
    return f"changes-{generation}.tsv"


def archive_dir(out_dir: str, generation: int) -> str:
    """Where generation ``generation``'s derived files go once the next one starts."""
    return os.path.join(out_dir, ARCHIVE_DIR, f"{generation:04d}")


def load(out_dir: str) -> dict:
    """The folder's ``generations.json``, or the one a folder without it stands for
    (generation 1, current, nothing archived).

    Raises:
        OSError, ValueError: the file cannot be read or is not JSON.
    """
    path = os.path.join(out_dir, GENERATIONS_FILE)
    if not os.path.exists(path):
        return {"current": 1, "archived": True, "generations": [{"generation": 1, "shards": None, "archive": None}]}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def current(out_dir: str) -> int:
    """The folder's current generation (1 without ``generations.json``)."""
    return int(load(out_dir)["current"])


def earlier_shards(out_dir: str) -> dict[tuple[int, int], int]:
    """``{(fetcher, number): generation}`` of the shards written by earlier generations."""
    found: dict[tuple[int, int], int] = {}
    for entry in load(out_dir)["generations"]:
        for worker, number in entry["shards"] or ():
            found[(worker, number)] = entry["generation"]
    return found


def shard_generation(out_dir: str) -> dict[tuple[int, int], int]:
    """``{(fetcher, number): generation}`` of every shard in the folder now."""
    earlier, now = earlier_shards(out_dir), current(out_dir)
    return {(s.worker_id, s.number): earlier.get((s.worker_id, s.number), now) for s in list_shards(out_dir)}


def current_shards(out_dir: str) -> list[Shard]:
    """The shards of the current generation, in reading order."""
    earlier = earlier_shards(out_dir)
    return [s for s in list_shards(out_dir) if (s.worker_id, s.number) not in earlier]


def current_lines(out_dir: str) -> Iterator[str]:
    """Every complete record line of the current generation's shards (as
    :func:`crawler.output.shards.iter_lines` for the whole folder)."""
    for shard in current_shards(out_dir):
        yield from iter_shard_lines(shard)


def current_records(out_dir: str) -> Iterator[dict]:
    """The current generation's page records, in reading order."""
    for line in current_lines(out_dir):
        yield json.loads(line)


def remove_archive(out_dir: str) -> None:
    """``--restart``: delete the archive folder of earlier generations (only the files
    :data:`PER_GENERATION` names, then the folders left empty)."""
    root = os.path.join(out_dir, ARCHIVE_DIR)
    for folder in sorted(glob.glob(os.path.join(root, "[0-9]" * 4))):
        for pattern in PER_GENERATION:
            for path in glob.glob(os.path.join(folder, pattern)):
                os.remove(path)
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    with contextlib.suppress(OSError):
        os.rmdir(root)


def _write(out_dir: str, data: dict) -> None:
    path = os.path.join(out_dir, GENERATIONS_FILE)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def begin_next(out_dir: str) -> int:
    """Start the next generation: list the current one's shards, make the next one
    current, and archive the current one's derived files. Returns the new generation.

    Raises:
        OSError: a file cannot be written or moved (the start is completed by the next
            :func:`finish_archive`).
    """
    data = load(out_dir)
    done = int(data["current"])
    earlier = earlier_shards(out_dir)
    shards = sorted({(s.worker_id, s.number) for s in list_shards(out_dir)} - set(earlier))
    entries = [e for e in data["generations"] if e["generation"] != done]
    entries.append({"generation": done, "shards": [list(pair) for pair in shards], "archive": None})
    entries.append({"generation": done + 1, "shards": None, "archive": None})
    _write(out_dir, {"current": done + 1, "archived": False, "generations": entries})
    finish_archive(out_dir)
    return done + 1


def finish_archive(out_dir: str) -> None:
    """Move the previous generation's derived files into its archive folder if a start
    was interrupted (nothing to do otherwise)."""
    data = load(out_dir)
    if data.get("archived", True):
        return
    done = int(data["current"]) - 1
    target = archive_dir(out_dir, done)
    os.makedirs(target, exist_ok=True)
    for pattern in PER_GENERATION:
        for path in sorted(glob.glob(os.path.join(out_dir, pattern))):
            os.replace(path, os.path.join(target, os.path.basename(path)))
    for entry in data["generations"]:
        if entry["generation"] == done:
            entry["archive"] = os.path.relpath(target, out_dir)
    data["archived"] = True
    _write(out_dir, data)
