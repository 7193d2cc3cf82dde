"""``python -m crawler export OUT --format F [--to DIR]``: the current corpus of a crawl
folder (:class:`crawler.output.current.CurrentCorpus`: one record per URL, the latest,
after resumes and recrawls) in the forms corpus tools load.

Formats:

- ``parquet``: ``part-NNNNN.parquet``, Zstandard-compressed, with the record's explicit
  Arrow schema (:mod:`crawler.output.schema`), one row per record. ``--rows pages`` (the
  default) keeps the HTML pages (an exact duplicate is a row whose ``markdown`` is null
  and whose ``duplicate_of`` names the page holding it: the text is there once); ``--rows
  all`` keeps every current record (non-HTML files, redirects, failures). A row group is
  closed at :data:`ROW_GROUP_BYTES` of text or :data:`ROW_GROUP_ROWS` rows, a file at
  :data:`FILE_BYTES` of text, so a reader reads a group's column in one piece of a few
  tens of megabytes.
- ``documents``: ``documents-NNNNN.jsonl.gz``, one document per HTML page with Markdown
  (duplicates left out), shaped as FineWeb's and Dolma's: ``id`` (16 hex digits of the
  xxh3-64 of the URL), ``text`` (the Markdown), ``url``, ``title``, ``date`` (the fetch
  time, ISO 8601 UTC), ``source`` (the site: its origin), ``language`` and
  ``language_score`` (:func:`crawler.content.language.identify`), ``token_count`` (an
  estimate: :func:`token_estimate`), ``generation``.
- ``llms-txt``: ``llms.txt`` and ``llms-full.txt`` (:mod:`crawler.output.llmstxt`).

``parquet`` and ``documents`` also write a dataset card, unless they wrote no row (``README.md``,
:mod:`crawler.output.card`) so the folder loads with ``datasets.load_dataset(DIR)``. Files
are written under a ``.tmp`` name and renamed when complete, and ``export.json`` (the
format, the counts, the files written) last; an export stopped part-way is run again with
the same command (the files of the earlier run are replaced, and only they: a folder with
other files is refused). Memory stays bounded: records are streamed
(:class:`~crawler.output.current.CurrentCorpus` keeps one small row per record on disk).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import xxhash

from crawler.errors import ConfigError
from crawler.output import card
from crawler.output.current import CurrentCorpus, check_source, prepare_target
from crawler.output.schema import RECORD_FIELDS, arrow_schema
from crawler.output.shards import outcome_of
from crawler.web.urlnorm import origin_of

FORMATS = ("parquet", "documents", "llms-txt")
ROWS = ("pages", "all")
#: Text (Markdown and title characters) per Parquet row group, and rows at most.
ROW_GROUP_BYTES = 64 * 2**20
ROW_GROUP_ROWS = 10_000
#: Text per Parquet file (and per documents file) before the next is started.
FILE_BYTES = 1024 * 2**20
#: The fields of a ``documents`` row.
DOCUMENT_FIELDS: tuple[tuple[str, str], ...] = (
    ("id", "string"),
    ("text", "string"),
    ("url", "string"),
    ("title", "string"),
    ("date", "string"),
    ("source", "string"),
    ("language", "string"),
    ("language_score", "float64"),
    ("token_count", "int64"),
    ("generation", "int64"),
)
_TOKEN = re.compile(r"\w+|[^\w\s]")
#: The list of files an export wrote, in ``--to``, written last: a rerun may replace them.
WRITTEN_FILE = "export.json"
#: What a run that did not finish leaves: files under a ``.tmp`` name, working files.
_UNFINISHED = re.compile(r"(part-\d{5}\.parquet|documents-\d{5}\.jsonl\.gz|README\.md)\.tmp|\.llms(-full)?\.txt\.tmp")


def token_estimate(text: str) -> int:
    """An estimate of the text's tokens: its words and its other non-space characters,
    each counted once (``\\w+|[^\\w\\s]``, the pre-tokenization of GPT-2-style BPE
    tokenizers before merges). It ignores sub-word splits, so it undercounts rare words
    and scripts without spaces; it needs no vocabulary file."""
    return sum(1 for _ in _TOKEN.finditer(text))


def _written(to_dir: str) -> set[str]:
    """The files an earlier export listed in ``to_dir/export.json`` (none without it)."""
    try:
        with open(os.path.join(to_dir, WRITTEN_FILE), encoding="utf-8") as f:
            return set(json.load(f)["files"])
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def _ours_in(to_dir: str) -> Callable[[str], bool]:
    """Whether a file in ``to_dir`` is one an export wrote: listed in its
    ``export.json``, that list itself, or left by a run that did not finish (a ``.tmp``
    file, a working file). A ``README.md`` not listed is the user's."""
    written = _written(to_dir)

    def ours(name: str) -> bool:
        if name in written or name == WRITTEN_FILE:
            return True
        return bool(_UNFINISHED.fullmatch(name)) or name in (".current-index.sqlite", ".llms-txt.sqlite")

    return ours


def _progress(total: int, label: str) -> Any:
    """A tqdm bar on a terminal, else nothing shown."""
    from tqdm import tqdm

    return tqdm(total=total, unit=" records", desc=label, disable=not sys.stderr.isatty(), leave=False)


def export(out_dir: str, fmt: str, to_dir: str | None = None, rows: str = "pages") -> dict:
    """Export the current corpus of ``out_dir`` as ``fmt`` (:data:`FORMATS`) into
    ``to_dir`` (default ``OUT/export-FORMAT``). Returns the counts written.

    Raises:
        ConfigError: an unknown format or ``rows``, a folder without page records, a
            ``to_dir`` holding other files, pyarrow missing for ``parquet``.
        OSError, ValueError: a file cannot be read or written.
    """
    if fmt not in FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if rows not in ROWS:
        raise ConfigError(f"--rows must be pages or all, got {rows!r}")
    check_source(out_dir)
    to_dir = to_dir or os.path.join(out_dir, f"export-{fmt}")
    prepare_target(to_dir, out_dir, _ours_in(to_dir) if os.path.isdir(to_dir) else lambda name: False)
    for name in os.listdir(to_dir):  # an earlier run's files: this run writes them again
        os.remove(os.path.join(to_dir, name))
    corpus = CurrentCorpus(out_dir, to_dir)
    seeds = _seeds(out_dir)
    layout: dict[str, object]
    if fmt == "parquet":
        counts = _parquet(corpus, to_dir, rows)
        layout = {"patterns": ("part-*.parquet",), "fields": RECORD_FIELDS, "about": _ABOUT_PARQUET}
    elif fmt == "documents":
        counts = _documents(corpus, to_dir)
        layout = {"patterns": ("documents-*.jsonl.gz",), "fields": DOCUMENT_FIELDS, "about": _ABOUT_DOCUMENTS}
    else:
        from crawler.output.llmstxt import write_llms_txt

        counts = write_llms_txt(out_dir, to_dir, _counted(corpus))
        return _finish(to_dir, fmt, {**counts, "gone": corpus.gone, "carried": corpus.carried})
    if counts.get("rows", counts.get("documents")):  # datasets loads no split of 0 rows: no card then
        card.write_card(to_dir, seeds, counts, None, **layout)
    return _finish(to_dir, fmt, {**counts, "gone": corpus.gone, "carried": corpus.carried})


def _finish(to_dir: str, fmt: str, counts: dict) -> dict:
    """Write ``export.json`` (the format, the counts, the files written), last."""
    files = sorted(name for name in os.listdir(to_dir) if not name.startswith("."))
    with open(os.path.join(to_dir, WRITTEN_FILE + ".tmp"), "w", encoding="utf-8") as f:
        json.dump({"format": fmt, "counts": counts, "files": files}, f, indent=1)
    os.replace(os.path.join(to_dir, WRITTEN_FILE + ".tmp"), os.path.join(to_dir, WRITTEN_FILE))
    return counts


_ABOUT_PARQUET = (
    "The current corpus of a crawl (per URL its latest record), exported by crawler as Parquet",
    "(`part-NNNNN.parquet`, Zstandard) with the record's schema.",
)
_ABOUT_DOCUMENTS = (
    "The current corpus of a crawl as documents for training (FineWeb/Dolma shape), exported by",
    "crawler: one per HTML page with Markdown, exact duplicates left out. `token_count` is an",
    "estimate: the words and other non-space characters of the text (`\\w+|[^\\w\\s]`).",
)


def _counted(corpus: CurrentCorpus) -> Iterator[dict]:
    bar = _progress(corpus.index(), "export")
    try:
        for record in corpus:
            bar.update(1)
            yield record
    finally:
        bar.close()


def _seeds(out_dir: str) -> list[str]:
    try:
        with open(os.path.join(out_dir, "summary.json"), encoding="utf-8") as f:
            return list(json.load(f).get("seeds") or [])
    except (OSError, ValueError):
        return []


def _wanted(record: dict, rows: str) -> bool:
    if rows == "all":
        return True
    state, reason = outcome_of(record)
    return state == "visited" and reason == "page"


def _parquet(corpus: CurrentCorpus, to_dir: str, rows: str) -> dict:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError("--format parquet needs pyarrow: pip install 'crawler[export]'") from None
    schema = arrow_schema()
    names = [name for name, _ in RECORD_FIELDS]
    files = written = 0
    writer: Any = None
    path = ""
    batch: dict[str, list] = {name: [] for name in names}
    group_bytes = file_bytes = 0

    def flush() -> None:
        nonlocal group_bytes
        if batch["url"]:
            writer.write_table(pa.Table.from_pydict(batch, schema=schema))
            for column in batch.values():
                column.clear()
        group_bytes = 0

    try:
        for record in _counted(corpus):
            if not _wanted(record, rows):
                continue
            if writer is None:
                path = os.path.join(to_dir, f"part-{files:05d}.parquet")
                writer = pq.ParquetWriter(path + ".tmp", schema, compression="zstd")
                files += 1
            for name in names:
                batch[name].append(record.get(name))
            size = len(record.get("markdown") or "") + len(record.get("title") or "")
            group_bytes += size
            file_bytes += size
            written += 1
            if group_bytes >= ROW_GROUP_BYTES or len(batch["url"]) >= ROW_GROUP_ROWS:
                flush()
            if file_bytes >= FILE_BYTES:
                flush()
                writer.close()
                os.replace(path + ".tmp", path)
                writer, file_bytes = None, 0
        if writer is None:  # no row: an empty file with the schema, which readers load as such
            path = os.path.join(to_dir, "part-00000.parquet")
            writer = pq.ParquetWriter(path + ".tmp", schema, compression="zstd")
            files = 1
        flush()
        writer.close()
        os.replace(path + ".tmp", path)
    finally:
        if writer is not None and os.path.exists(path + ".tmp"):
            writer.close()
    return {"rows": written, "files": files}


def documents(records: Iterable[dict]) -> Iterator[dict]:
    """The ``documents`` rows of ``records``: HTML pages with Markdown, not duplicates
    (neither a record with ``duplicate_of`` nor a second record with a Markdown
    fingerprint already written: a recrawl can leave two copies recorded apart). Memory:
    one integer per document."""
    from crawler.content.language import identify

    seen: set[int] = set()  # the Markdown fingerprints written: a copy recorded on its own goes too
    for record in records:
        text = record.get("markdown")
        if not text or record.get("duplicate_of") or not _wanted(record, "pages"):
            continue
        fingerprint = int(record["fingerprint"], 16) if record.get("fingerprint") else None
        if fingerprint is not None:
            if fingerprint in seen:
                continue
            seen.add(fingerprint)
        language, score = identify(text)
        yield {
            "id": xxhash.xxh3_64_hexdigest(record["url"].encode("utf-8", "surrogatepass")),
            "text": text,
            "url": record["url"],
            "title": record.get("title"),
            "date": record.get("fetched_at"),
            "source": origin_of(record["url"]),
            "language": language,
            "language_score": round(score, 4),
            "token_count": token_estimate(text),
            "generation": record.get("generation") or 1,
        }


def _documents(corpus: CurrentCorpus, to_dir: str) -> dict:
    files = written = size = 0
    out = None
    path = ""
    try:
        for row in documents(_counted(corpus)):
            if out is None:
                path = os.path.join(to_dir, f"documents-{files:05d}.jsonl.gz")
                out = gzip.open(path + ".tmp", "wt", encoding="utf-8", compresslevel=6)
                files += 1
            line = json.dumps(row, ensure_ascii=False) + "\n"
            out.write(line)
            written += 1
            size += len(line)
            if size >= FILE_BYTES:
                out.close()
                os.replace(path + ".tmp", path)
                out, size = None, 0
        if out is None:  # no document: an empty file, so the folder still loads
            path = os.path.join(to_dir, "documents-00000.jsonl.gz")
            out = gzip.open(path + ".tmp", "wt", encoding="utf-8", compresslevel=6)
            files = 1
        out.close()
        os.replace(path + ".tmp", path)
        out = None
    finally:
        if out is not None:
            out.close()
    return {"documents": written, "files": files}
