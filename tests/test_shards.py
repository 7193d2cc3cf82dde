"""Page-record shards: names, rotation at the size limit, compression (none, gzip, zstd)
read back with the standard decompressors, the manifest checked with hashlib, the crash
leftovers (partial line, plain + compressed twin, unfinished .tmp), and crawls that
write compressed shards, killed with SIGKILL and resumed."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import signal

import pytest
import zstandard

from crawler.cli import build_parser, config_from_args
from crawler.config import DEFAULT_SHARD_BYTES, CrawlConfig
from crawler.engine.resume import remove_outputs
from crawler.errors import ConfigError
from crawler.output.card import MARKER
from crawler.output.shards import (
    compress_shard,
    finish_shards,
    iter_lines,
    iter_records,
    list_shards,
    next_shard_number,
    parse_shard_name,
    settle,
    shard_name,
    write_manifest,
)
from crawler.output.writers import RecordWriter, ShardWriter
from tests.helpers.crawlutil import read_records, run_crawl
from tests.helpers.generatedsite import DEADLINE_S, PAGES, GeneratedSite, markdown_by_path, start
from tests.helpers.siteserver import SiteServer

FLASK_DOC = "/usr/share/doc/python-flask-doc/html"
LIMIT = 250  # bytes per shard in the unit tests
# Line sizes (bytes, newline included) and the shards they must land in at LIMIT:
# 100+100 | 100 (300 would pass 250) | 300 alone (over the limit) | 100+50+100 = 250 exactly.
SIZES = (100, 100, 100, 300, 100, 50, 100)
EXPECTED_SPLIT = (2, 1, 1, 3)


def record_of(n: int, size: int) -> dict:
    """A record whose JSON line is exactly ``size`` bytes with its newline; the text has
    two-byte characters, so bytes and characters differ."""
    record = {"url": f"http://a.example/{n}", "markdown": ""}
    overhead = len(json.dumps(record, ensure_ascii=False).encode("utf-8")) + 1
    pad = size - overhead
    record["markdown"] = "é" * (pad // 2) + "x" * (pad % 2)
    assert len(json.dumps(record, ensure_ascii=False).encode("utf-8")) + 1 == size
    return record


def raw_bytes(path: str) -> bytes:
    """A shard's uncompressed bytes, with the standard library or zstandard directly."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".gz"):
        return gzip.decompress(data)
    if path.endswith(".zst"):
        return zstandard.ZstdDecompressor().decompress(data)
    return data


def shard_files(out: str) -> list[str]:
    return sorted(name for name in os.listdir(out) if name.startswith("pages-"))


def check_manifest(out: str, manifest: dict) -> None:
    """``manifest`` matches ``manifest.json`` and the files on disk, recomputed here."""
    with open(os.path.join(out, "manifest.json"), encoding="utf-8") as f:
        assert json.load(f) == manifest
    assert [entry["file"] for entry in manifest["shards"]] == shard_files(out)
    for entry in manifest["shards"]:
        path = os.path.join(out, entry["file"])
        with open(path, "rb") as f:
            on_disk = f.read()
        data = raw_bytes(path)
        assert entry["sha256"] == hashlib.sha256(on_disk).hexdigest()
        assert entry["bytes"] == len(on_disk) == os.path.getsize(path)
        assert entry["uncompressed_bytes"] == len(data)
        assert entry["records"] == data.count(b"\n") and data.endswith(b"\n")
    assert manifest["records"] == sum(entry["records"] for entry in manifest["shards"])


@pytest.mark.parametrize(
    "name, parsed",
    [
        ("pages-00-00000.jsonl", (0, 0, None)),
        ("pages-07-00012.jsonl.zst", (7, 12, "zstd")),
        ("pages-123-100000.jsonl.gz", (123, 100000, "gzip")),
        ("pages-03.jsonl", (3, -1, None)),  # before shards: read as shard -1
        ("pages-00-00001.jsonl.zst.tmp", None),
        ("pages-00-00001.jsonl.bz2", None),
        ("pages-0-00001.jsonl", None),
        ("edges-00.tsv", None),
        ("manifest.json", None),
    ],
)
def test_parse_shard_name(name, parsed):
    assert parse_shard_name(name) == parsed


def test_shard_name():
    assert shard_name(0, 0) == "pages-00-00000.jsonl"
    assert shard_name(5, 42, "zstd") == "pages-05-00042.jsonl.zst"
    assert shard_name(130, 123456, "gzip") == "pages-130-123456.jsonl.gz"
    for args in ((0, 0), (5, 42, "zstd"), (130, 123456, "gzip")):
        assert parse_shard_name(shard_name(*args)) == (args + (None,))[:3]


@pytest.mark.parametrize("compression", [None, "gzip", "zstd"])
def test_round_trip_with_rotation(tmp_path, compression):
    out = str(tmp_path)
    records = [record_of(n, size) for n, size in enumerate(SIZES)]
    writer = ShardWriter(out, 3, LIMIT, compression)
    for record in records:
        writer.write_lines([json.dumps(record, ensure_ascii=False)])
    writer.close()
    suffix = {None: ".jsonl", "gzip": ".jsonl.gz", "zstd": ".jsonl.zst"}[compression]
    # closed shards are compressed by the writer; the last one stays plain until the end
    assert shard_files(out) == [shard_name(3, n, compression) for n in range(3)] + [shard_name(3, 3)]
    assert list(iter_records(out)) == records
    assert finish_shards(out, compression) == (
        [] if compression is None else [os.path.join(out, shard_name(3, 3, compression))]
    )
    names = shard_files(out)
    assert names == [f"pages-03-{n:05d}{suffix}" for n in range(4)]
    assert list(iter_records(out)) == records  # identical and in order
    lines = [raw_bytes(os.path.join(out, name)).splitlines(keepends=True) for name in names]
    assert tuple(map(len, lines)) == EXPECTED_SPLIT
    for shard in lines:
        assert sum(map(len, shard)) <= LIMIT or len(shard) == 1
    assert [json.loads(line) for shard in lines for line in shard] == records
    manifest = write_manifest(out, LIMIT)
    check_manifest(out, manifest)
    assert (manifest["format"], manifest["compression"], manifest["max_shard_bytes"]) == ("jsonl", compression, LIMIT)
    assert manifest["records"] == len(records)
    assert [e["uncompressed_bytes"] for e in manifest["shards"]] == [200, 100, 300, 250]
    if compression is not None:
        assert all(e["bytes"] != e["uncompressed_bytes"] for e in manifest["shards"])


def test_gzip_and_zstd_shards_are_reproducible_files(tmp_path):
    """gzip: no file name, mtime 0, so the same records give the same file; zstd: one
    frame with the content size and checksum."""
    data = b"".join(json.dumps(record_of(n, 120)).encode() + b"\n" for n in range(5))
    made = {}
    for compression in ("gzip", "zstd", "gzip"):
        path = tmp_path / shard_name(0, 0)
        path.write_bytes(data)
        packed = compress_shard(str(path), compression)
        assert not path.exists() and not os.path.exists(packed + ".tmp")
        with open(packed, "rb") as f:
            made.setdefault(compression, []).append(f.read())
        os.remove(packed)
    first, again = made["gzip"]
    assert first == again and gzip.decompress(first) == data
    assert first[3] == 0 and first[4:8] == bytes(4)  # FLG: no FNAME; MTIME 0 (RFC 1952)
    (frame,) = made["zstd"]
    assert frame == zstandard.ZstdCompressor(level=3, write_checksum=True).compress(data)
    params = zstandard.get_frame_parameters(frame)
    assert (params.content_size, params.has_checksum) == (len(data), True)
    with pytest.raises(ValueError, match="unknown compression"):
        compress_shard(str(tmp_path / "x.jsonl"), "lz4")
    with pytest.raises(ValueError, match="not a plain shard"):
        compress_shard(str(tmp_path / "x.jsonl.gz"), "gzip")


def write_plain(out, worker_id: int, number: int, records, tail: bytes = b"") -> str:
    path = os.path.join(out, shard_name(worker_id, number))
    with open(path, "wb") as f:
        f.write(b"".join(json.dumps(r).encode() + b"\n" for r in records) + tail)
    return path


def test_partial_last_line_of_a_plain_shard_is_skipped_then_cut(tmp_path):
    out = str(tmp_path)
    a = [record_of(n, 80) for n in range(3)]
    b = [record_of(n, 90) for n in range(10, 12)]
    compress_shard(write_plain(out, 0, 0, a), "zstd")
    partial = write_plain(out, 0, 1, b, tail=b'{"url": "http://a.example/cut", "markdown": "\xc3')
    assert list(iter_records(out)) == a + b  # the cut write (mid-character) is no record
    assert settle(out) == len(b'{"url": "http://a.example/cut", "markdown": "\xc3')
    with open(partial, "rb") as f:
        assert f.read().endswith(b"}\n")
    assert settle(out) == 0
    assert list(iter_records(out)) == a + b
    assert next_shard_number(out, 0) == 2 and next_shard_number(out, 1) == 0


def test_plain_shard_with_compressed_twin_is_read_once_and_removed(tmp_path):
    """A crash between the rename and the delete leaves both; the twin is complete."""
    out = str(tmp_path)
    a = [record_of(n, 100) for n in range(4)]
    path = write_plain(out, 1, 0, a)
    with open(path, "rb") as f:
        plain = f.read()
    compress_shard(path, "gzip")
    with open(path, "wb") as f:
        f.write(plain[:150])  # the plain file may be anything by then: it is not read
    second = write_plain(out, 1, 1, a[:1])
    assert [s.path for s in list_shards(out)] == [path + ".gz", second]
    assert list(iter_records(out)) == a + a[:1]
    settle(out)
    assert shard_files(out) == [shard_name(1, 0, "gzip"), shard_name(1, 1)]
    assert finish_shards(out, "zstd") == [second[: -len(".jsonl")] + ".jsonl.zst"]  # another compression
    manifest = write_manifest(out, 1000)
    check_manifest(out, manifest)
    assert manifest["compression"] == "mixed" and manifest["records"] == 5
    assert [e["compression"] for e in manifest["shards"]] == ["gzip", "zstd"]


def test_unfinished_compressed_copy_is_deleted_and_the_shard_compressed_again(tmp_path):
    out = str(tmp_path)
    a = [record_of(n, 100) for n in range(3)]
    path = write_plain(out, 0, 0, a)
    with open(path + ".zst.tmp", "wb") as f:
        f.write(b"\x28\xb5\x2f\xfd garbage")  # a copy cut by a kill
    other = tmp_path / "notes.tmp"
    other.write_text("not ours")
    assert list(iter_records(out)) == a
    finish_shards(out, "zstd")
    assert sorted(os.listdir(out)) == ["notes.tmp", shard_name(0, 0, "zstd")]
    assert list(iter_records(out)) == a


def test_a_new_writer_starts_after_every_existing_shard(tmp_path):
    out = str(tmp_path)
    write_plain(out, 0, 0, [record_of(0, 100)])
    compress_shard(write_plain(out, 0, 4, [record_of(1, 100)]), "gzip")
    (tmp_path / "pages-00.jsonl").write_text(json.dumps(record_of(2, 100)) + "\n")  # older version
    writer = RecordWriter(out, 0, 1000, "zstd")
    assert writer.pages.path == os.path.join(out, shard_name(0, 5))
    assert not os.path.exists(writer.pages.path)  # opened at the first record only
    writer.write(record_of(3, 100), [("http://a.example/3", "http://a.example/4", "link", True)])
    writer.close()
    assert [r["url"] for r in iter_records(out)] == [f"http://a.example/{n}" for n in (2, 0, 1, 3)]
    assert RecordWriter(out, 7).pages.path == os.path.join(out, shard_name(7, 0))


def test_a_failed_compression_keeps_the_record_and_the_plain_shard(tmp_path, monkeypatch, caplog):
    import crawler.output.writers

    def fail(path, compression):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(crawler.output.writers, "compress_shard", fail)
    writer = ShardWriter(str(tmp_path), 0, 150, "gzip")
    for n in range(3):
        writer.write_lines([json.dumps(record_of(n, 100))])
    writer.close()
    assert shard_files(str(tmp_path)) == [shard_name(0, n) for n in range(3)]
    assert "could not compress" in caplog.text and "No space left" in caplog.text
    assert len(list(iter_lines(str(tmp_path)))) == 3


def test_restart_removes_shards_and_manifest_only(tmp_path):
    names = [
        shard_name(0, 0),
        shard_name(0, 1, "zstd"),
        shard_name(1, 0, "gzip"),
        shard_name(1, 1, "gzip") + ".tmp",
        shard_name(2, 0, "zstd") + ".tmp",
        "pages-04.jsonl",
        "manifest.json",
        "manifest.json.tmp",
        "edges-00.tsv",
        "summary.json",
    ]
    for name in names + ["notes.txt", "pages.txt", "changes-my-notes.tsv", "changes-2.tsv", "generations.json"]:
        (tmp_path / name).write_text("x")
    (tmp_path / "README.md").write_text(f"---\n---\n{MARKER}\n")  # the crawl's dataset card
    remove_outputs(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["changes-my-notes.tsv", "notes.txt", "pages.txt"]
    (tmp_path / "README.md").write_text("the user's own\n")
    remove_outputs(str(tmp_path))
    assert (tmp_path / "README.md").read_text() == "the user's own\n"


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"compress": "lz4"}, "--compress must be zstd or gzip, got 'lz4'"),
        ({"shard_bytes": 0}, "--shard-size must be from 1 byte to 1048576 MiB, got 0 bytes"),
        ({"shard_bytes": 2**41}, "--shard-size must be from 1 byte to 1048576 MiB"),
    ],
)
def test_config_rejects_bad_shard_settings(tmp_path, settings, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")) as info:
        CrawlConfig(seeds=("http://a.example/",), out_dir=str(tmp_path), **settings).validated()
    assert "\n" not in str(info.value)


def test_config_needs_zstandard_for_zstd(tmp_path, monkeypatch):
    monkeypatch.setattr("crawler.config.zstd_available", lambda: False)
    with pytest.raises(ConfigError, match="needs the zstandard package"):
        CrawlConfig(seeds=("http://a.example/",), out_dir=str(tmp_path), compress="zstd").validated()


def test_command_line_flags(tmp_path):
    parse = build_parser().parse_args
    config = config_from_args(
        parse(["http://a.example/", "--out", str(tmp_path), "--compress", "gzip", "--shard-size", "0.5"])
    )
    assert (config.compress, config.shard_bytes) == ("gzip", 512 * 1024)
    config = config_from_args(parse(["http://a.example/", "--out", str(tmp_path)]))
    assert (config.compress, config.shard_bytes) == (None, DEFAULT_SHARD_BYTES) == (None, 128 * 2**20)
    for bad in (["--compress", "bz2"], ["--shard-size", "0"], ["--shard-size", "nan"]):
        with pytest.raises(SystemExit) as info:
            parse(["http://a.example/", *bad])
        assert info.value.code == 2


def stable(records: dict) -> dict:
    """Records without the fields that change from one fetch to the next."""
    return {url: {k: v for k, v in r.items() if k not in ("fetched_at", "elapsed_ms")} for url, r in records.items()}


@pytest.mark.skipif(
    not os.path.isdir(FLASK_DOC), reason="Debian's python-flask-doc is not installed (.ci/run installs it)"
)
def test_crawl_with_zstd_and_small_shards_writes_the_same_records(tmp_path):
    limit = 32 * 1024
    with SiteServer(root=FLASK_DOC) as server:
        plain_summary, plain = run_crawl(tmp_path / "plain", server.url("/index.html"))
        summary, packed = run_crawl(tmp_path / "zstd", server.url("/index.html"), compress="zstd", shard_bytes=limit)
    assert stable(packed) == stable(plain)
    assert summary["visited"] + summary["failed"] == len(packed) == len(plain) > 70
    out = str(tmp_path / "zstd" / "out")
    names = shard_files(out)
    assert names and all(name.endswith(".jsonl.zst") for name in names)
    assert not [n for n in os.listdir(out) if n.endswith(".tmp")]
    with open(os.path.join(out, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    check_manifest(out, manifest)
    assert (manifest["compression"], manifest["max_shard_bytes"], manifest["records"]) == ("zstd", limit, len(packed))
    assert len(names) > 2 * 4  # the two fetchers rotated several times
    for entry in manifest["shards"]:
        assert entry["uncompressed_bytes"] <= limit or entry["records"] == 1
    plain_out = str(tmp_path / "plain" / "out")
    assert all(name.endswith(".jsonl") for name in shard_files(plain_out))
    plain_manifest = write_manifest(plain_out)  # the crawl wrote it; again, the same
    assert plain_manifest["records"] == manifest["records"]
    assert sum(e["uncompressed_bytes"] for e in plain_manifest["shards"]) == sum(
        len(raw_bytes(os.path.join(plain_out, n))) for n in shard_files(plain_out)
    )


def test_sigkill_with_compressed_shards_then_resume(tmp_path, reference):
    out = tmp_path / "out"
    args = ("--quiet", "--compress", "zstd", "--shard-size", "0.002")  # about 2 KB: 4 records
    with GeneratedSite(wanted=40) as site:
        first = start(site, out, *args)
        assert site.reached.wait(DEADLINE_S)
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate(timeout=DEADLINE_S)
        before = shard_files(str(out))
        assert any(name.endswith(".jsonl.zst") for name in before)  # closed during the crawl
        assert "manifest.json" not in os.listdir(out)
        recorded_before = set(read_records(str(out)))
        second = start(site, out, *args)
        _, err = second.communicate(timeout=DEADLINE_S)
    assert second.returncode == 0, err
    records = read_records(str(out))  # fails on a URL recorded twice
    assert set(records) >= recorded_before
    assert markdown_by_path(records, site) == reference
    names = shard_files(str(out))
    assert all(name.endswith(".jsonl.zst") for name in names), names
    with open(out / "manifest.json", encoding="utf-8") as f:
        manifest = json.load(f)
    check_manifest(str(out), manifest)
    assert manifest["records"] == len(records) == PAGES
    for entry in manifest["shards"]:
        assert entry["uncompressed_bytes"] <= 2097 or entry["records"] == 1
    # the resumed fetchers wrote new shard numbers after the killed run's
    first_run = {parse_shard_name(n)[:2] for n in before if parse_shard_name(n)}  # not .tmp
    assert first_run <= {parse_shard_name(n)[:2] for n in names}
    for worker in (0, 1):
        numbers = [num for w, num in first_run if w == worker]
        later = [num for w, num, _ in map(parse_shard_name, names) if w == worker and num > max(numbers, default=-1)]
        assert later, worker
