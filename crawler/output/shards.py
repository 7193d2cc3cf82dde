"""Page-record shards: their names, reading them back, compressing them, the manifest.

Fetcher process NN appends its page records (JSON Lines: one UTF-8 JSON object and a
``\\n`` per record) to ``pages-NN-SSSSS.jsonl``, SSSSS the shard number. A shard is
closed before a record would take it past the crawl's maximum shard size (uncompressed
bytes; a record is never split, so a record larger than the limit is a shard of its own)
and the next number is opened. A closed shard may be compressed to
``pages-NN-SSSSS.jsonl.zst`` (Zstandard, RFC 8878, one frame with its content checksum)
or ``pages-NN-SSSSS.jsonl.gz`` (gzip, RFC 1952): the extension says how to read it.

Crash safety. The open shard is plain and only appended to, so a crash leaves at worst one
partial last line, which :func:`settle` cuts and readers skip. Compression writes
``<compressed name>.tmp``, fsyncs it, renames it to the compressed name, fsyncs the
folder and only then deletes the plain shard. So a ``.tmp`` file is an unfinished copy
(deleted), and a plain shard whose compressed twin exists is complete in the twin
(deleted too).

``pages-NN.jsonl`` (one file per fetcher, before shards) is read as shard number -1 of
fetcher NN, so an output folder of an older version still resumes.

``manifest.json`` (:func:`write_manifest`) lists every shard with its record count, its
size on disk and uncompressed, and the SHA-256 of the file on disk.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import os
import re
import zlib
from collections.abc import Iterator, Mapping
from typing import Protocol

from crawler.vocabulary import UrlState

#: Default most uncompressed bytes of one page-record shard (``pages-NN-SSSSS.jsonl``):
#: a shard this size is compressed within the 10 s a stopping fetcher is given
#: (pool.JOIN_TIMEOUT_S) with gzip too, and twice this size is not (``bench/shards.py``,
#: docs/performance.md).
DEFAULT_SHARD_BYTES = 128 * 2**20

#: Compressions of closed shards (``--compress``); ``None`` keeps them plain.
COMPRESSIONS = ("zstd", "gzip")
#: File-name ending of a shard by its compression.
SUFFIXES = {None: ".jsonl", "zstd": ".jsonl.zst", "gzip": ".jsonl.gz"}
#: Ending of an unfinished compressed copy.
TEMP_SUFFIX = ".tmp"
MANIFEST_FILE = "manifest.json"
#: zlib level of gzip shards: the gzip command's default (Python's own default, 9, takes
#: about twice the time for a file under 1% smaller on JSON Lines of Markdown).
GZIP_LEVEL = 6
#: Zstandard level: the library's default.
ZSTD_LEVEL = 3
#: Width of the shard number in file names (more digits are used past 99,999).
SHARD_DIGITS = 5
_CHUNK_BYTES = 1 << 20
_NAME = re.compile(r"pages-(\d{2,})(?:-(\d+))?\.jsonl(\.zst|\.gz)?")
_COMPRESSION_OF = {"": None, ".zst": "zstd", ".gz": "gzip"}


@dataclasses.dataclass(frozen=True)
class Shard:
    """One shard file.

    Attributes:
        path: the file.
        worker_id: the fetcher that wrote it (NN).
        number: its shard number (SSSSS); -1 for an older version's ``pages-NN.jsonl``.
        compression: ``None``, ``"zstd"`` or ``"gzip"``, from the extension.
    """

    path: str
    worker_id: int
    number: int
    compression: str | None


def zstd_available() -> bool:
    """Whether the ``zstandard`` package (needed for ``"zstd"``) can be imported."""
    try:
        import zstandard  # noqa: F401
    except ImportError:
        return False
    return True


def shard_name(worker_id: int, number: int, compression: str | None = None) -> str:
    """File name of shard ``number`` of fetcher ``worker_id``: ``pages-NN-SSSSS.jsonl``
    plus ``.zst`` or ``.gz``.

    Raises:
        KeyError: an unknown compression.
    """
    return f"pages-{worker_id:02d}-{number:0{SHARD_DIGITS}d}{SUFFIXES[compression]}"


def parse_shard_name(name: str) -> tuple[int, int, str | None] | None:
    """``(worker_id, number, compression)`` of a shard file name, or None for any other
    name (temporary files included). ``pages-NN.jsonl`` gives number -1."""
    match = _NAME.fullmatch(name)
    if match is None:
        return None
    number = int(match[2]) if match[2] is not None else -1
    return int(match[1]), number, _COMPRESSION_OF[match[3] or ""]


def _all_shards(out_dir: str) -> list[Shard]:
    """Every shard file in ``out_dir``, twins included, by (worker, number, name)."""
    found = []
    for name in os.listdir(out_dir):
        parsed = parse_shard_name(name)
        if parsed is not None:
            found.append(Shard(os.path.join(out_dir, name), *parsed))
    found.sort(key=lambda s: (s.worker_id, s.number, s.path))
    return found


def list_shards(out_dir: str) -> list[Shard]:
    """The shards of ``out_dir`` in reading order: by fetcher number, then shard number.

    A shard that exists both plain and compressed is listed once, compressed (the plain
    file is what a crash between rename and delete left: :func:`settle` removes it).
    """
    chosen: dict[tuple[int, int], Shard] = {}
    for shard in _all_shards(out_dir):
        key = (shard.worker_id, shard.number)
        if key not in chosen or chosen[key].compression is None:
            chosen[key] = shard
    return [chosen[key] for key in sorted(chosen)]


def next_shard_number(out_dir: str, worker_id: int) -> int:
    """The first shard number of fetcher ``worker_id`` not used in ``out_dir`` yet (a
    resumed fetcher never appends to an earlier run's shard)."""
    numbers = [s.number for s in _all_shards(out_dir) if s.worker_id == worker_id]
    return max(numbers, default=-1) + 1


def open_binary(path: str, compression: str | None) -> io.BufferedIOBase:
    """A binary reader of the uncompressed bytes of a shard (close it after use)."""
    if compression is None:
        return open(path, "rb")
    if compression == "gzip":
        return gzip.open(path, "rb")
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), read_across_frames=True)
    return io.BufferedReader(reader, _CHUNK_BYTES)


def iter_lines(out_dir: str) -> Iterator[str]:
    """Every complete record line of every shard, ``\\n`` included, in
    :func:`list_shards` order and file order. A last line without ``\\n`` (a write cut
    by a crash) is not a record and is skipped.

    Raises:
        OSError, EOFError, zstandard.ZstdError: a shard cannot be read or decompressed.
        UnicodeDecodeError: a line is not UTF-8.
    """
    for shard in list_shards(out_dir):
        yield from iter_shard_lines(shard)


def iter_shard_lines(shard: Shard) -> Iterator[str]:
    """Every complete record line of one shard (as :func:`iter_lines`)."""
    with open_binary(shard.path, shard.compression) as f:
        for line in f:
            if not line.endswith(b"\n"):
                break
            yield line.decode("utf-8")


def outcome_of(record: dict) -> tuple[str, str]:
    """(state, reason) a record stands for: failed with its error, else visited with
    its outcome ("redirect", "non_html" or "page"). A map's record (no Markdown ever)
    says its outcome in ``outcome``; a page's record without Markdown (a duplicate, or
    a recrawl's ``unchanged`` page) has ``duplicate_of`` or ``fingerprint``."""
    if record.get("error"):
        return UrlState.FAILED, record["error"]
    if record.get("final_url") != record["url"]:
        return UrlState.VISITED, "redirect"
    if record.get("outcome") in ("non_html", "page"):
        return UrlState.VISITED, record["outcome"]
    if record.get("markdown") is None and record.get("duplicate_of") is None and record.get("fingerprint") is None:
        return UrlState.VISITED, "non_html"  # a recrawl's 304 of a page keeps its fingerprint
    return UrlState.VISITED, "page"


def iter_records(out_dir: str) -> Iterator[dict]:
    """Every page record of ``out_dir`` as a dict, in :func:`iter_lines` order (per
    fetcher, in the order it wrote them).

    Raises:
        json.JSONDecodeError: a line is not JSON; and what :func:`iter_lines` raises.
    """
    for line in iter_lines(out_dir):
        yield json.loads(line)


def cut_partial_line(path: str) -> int:
    """Truncate ``path`` after its last newline (a crash can leave one partial last
    line). Returns the bytes removed."""
    with open(path, "rb+") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        step, end = 1 << 16, size
        while end > 0:
            start = max(0, end - step)
            f.seek(start)
            chunk = f.read(end - start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                keep = start + cut + 1
                break
            end = start
        else:
            keep = 0
        f.truncate(keep)
        return size - keep


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def compress_shard(path: str, compression: str) -> str:
    """Compress the closed plain shard ``path`` next to it and delete ``path``.

    Writes ``<compressed name>.tmp``, fsyncs it, renames it, fsyncs the folder, then
    deletes ``path``: a crash at any point leaves either the complete plain shard or the
    complete compressed one (see the module docstring). gzip: level
    :data:`GZIP_LEVEL`, no file name, mtime 0 (the same bytes give the same file).
    zstd: level :data:`ZSTD_LEVEL`, one frame with the content size and checksum.

    Returns:
        the compressed file's path.

    Raises:
        ValueError: ``compression`` is not one of :data:`COMPRESSIONS` or ``path`` is
            not a plain shard's name.
        OSError: reading or writing failed (the plain shard is kept).
    """
    if compression not in COMPRESSIONS:
        raise ValueError(f"unknown compression {compression!r}")
    if not path.endswith(SUFFIXES[None]):
        raise ValueError(f"not a plain shard: {path}")
    final = path[: -len(SUFFIXES[None])] + SUFFIXES[compression]
    temp = final + TEMP_SUFFIX
    with open(path, "rb") as source, open(temp, "wb") as target:
        if compression == "gzip":
            with gzip.GzipFile(filename="", mode="wb", fileobj=target, compresslevel=GZIP_LEVEL, mtime=0) as packed:
                while chunk := source.read(_CHUNK_BYTES):
                    packed.write(chunk)
        else:
            import zstandard

            compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True)
            compressor.copy_stream(source, target, size=os.fstat(source.fileno()).st_size)
        target.flush()
        os.fsync(target.fileno())
    os.replace(temp, final)
    _fsync_dir(os.path.dirname(final) or ".")
    os.remove(path)
    return final


def settle(out_dir: str) -> int:
    """Repair the shards after a crash (no fetcher may be writing): delete unfinished
    ``.tmp`` copies and plain shards whose compressed twin exists, and cut a partial
    last line off each plain shard.

    Returns:
        the bytes of partial lines cut.
    """
    for name in os.listdir(out_dir):
        if name.endswith(TEMP_SUFFIX) and parse_shard_name(name[: -len(TEMP_SUFFIX)]):
            os.remove(os.path.join(out_dir, name))
    kept = {shard.path for shard in list_shards(out_dir)}
    cut = 0
    for shard in _all_shards(out_dir):
        if shard.path not in kept:
            os.remove(shard.path)
        elif shard.compression is None:
            cut += cut_partial_line(shard.path)
    return cut


def finish_shards(out_dir: str, compression: str | None) -> list[str]:
    """End of a crawl (every fetcher stopped): :func:`settle`, then compress every plain
    shard when ``compression`` is set (the last shard of each fetcher, and those a
    killed run left plain).

    Returns:
        the paths of the files compressed now.
    """
    settle(out_dir)
    if compression is None:
        return []
    return [compress_shard(shard.path, compression) for shard in list_shards(out_dir) if shard.compression is None]


class _Decompressor(Protocol):
    """What :func:`_measure` uses of a zlib or zstandard decompression object."""

    def decompress(self, data: bytes, /) -> bytes: ...


def _measure(shard: Shard) -> dict:
    """One read of the file: its SHA-256, size, and the uncompressed size and lines
    (a gzip shard is one member, as :func:`compress_shard` writes it)."""
    digest, size, plain_bytes, records = hashlib.sha256(), 0, 0, 0
    unpack: _Decompressor | None
    if shard.compression == "gzip":
        unpack = zlib.decompressobj(wbits=31)
    elif shard.compression == "zstd":
        import zstandard

        unpack = zstandard.ZstdDecompressor().decompressobj(read_across_frames=True)
    else:
        unpack = None
    with open(shard.path, "rb") as f:
        while chunk := f.read(_CHUNK_BYTES):
            digest.update(chunk)
            size += len(chunk)
            data = unpack.decompress(chunk) if unpack is not None else chunk
            plain_bytes += len(data)
            records += data.count(b"\n")
    return {
        "file": os.path.basename(shard.path),
        "compression": shard.compression,
        "records": records,
        "bytes": size,
        "uncompressed_bytes": plain_bytes,
        "sha256": digest.hexdigest(),
    }


def write_manifest(
    out_dir: str,
    max_shard_bytes: int | None = None,
    generation_of: Mapping[tuple[int, int], int] | None = None,
    current_generation: int = 1,
) -> dict:
    """Write ``out_dir/manifest.json`` (atomically) describing every shard.

    Args:
        max_shard_bytes: the shard size limit of the crawl (recorded as is).
        generation_of: ``{(fetcher, number): generation}`` of a recrawled folder
            (:func:`crawler.output.generations.shard_generation`): then each shard
            says its ``generation`` and the manifest lists ``generations``
            (``generation``, ``shards``, ``records``, in order, up to
            ``current_generation``, which a shard not in the mapping belongs to); None:
            neither.

    Returns:
        the manifest: ``{"format": "jsonl", "compression": None | "zstd" | "gzip" |
        "mixed" (shards of runs with different --compress), "max_shard_bytes": int,
        "records": total, "shards": [{"file", "compression", "records" (complete lines),
        "bytes" (on disk), "uncompressed_bytes", "sha256" (hex, of the file on disk)}]}``.

    Raises:
        OSError, zlib.error, zstandard.ZstdError: a shard cannot be read or decompressed.
    """
    shards = []
    for shard in list_shards(out_dir):
        entry = _measure(shard)
        if generation_of is not None:
            entry["generation"] = generation_of.get((shard.worker_id, shard.number), current_generation)
        shards.append(entry)
    kinds = {entry["compression"] for entry in shards}
    manifest: dict = {
        "format": "jsonl",
        "compression": kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else None),
        "max_shard_bytes": max_shard_bytes,
        "records": sum(entry["records"] for entry in shards),
        "shards": shards,
    }
    if generation_of is not None:
        numbers = range(1, current_generation + 1)
        manifest["generations"] = [
            {
                "generation": number,
                "shards": sum(e["generation"] == number for e in shards),
                "records": sum(e["records"] for e in shards if e["generation"] == number),
            }
            for number in numbers
        ]
    path = os.path.join(out_dir, MANIFEST_FILE)
    with open(path + TEMP_SUFFIX, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    os.replace(path + TEMP_SUFFIX, path)
    return manifest
