"""The corpus handed off: the folder loads as a dataset (its card declares every field's
type), and ``export`` writes Parquet that pyarrow, DuckDB and ``datasets`` read back
with the records' exact values, one row per URL after resumes and recrawls."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import xxhash

from crawler.api import crawl
from crawler.config import CrawlConfig
from crawler.errors import SeedFailed
from crawler.output.card import MARKER, is_ours
from crawler.output.export import export, token_estimate
from crawler.output.schema import RECORD_FIELDS
from crawler.output.shards import iter_records, list_shards
from tests.helpers.siteserver import Route, SiteServer, page
from tests.helpers.validatorsite import ValidatorSite

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ROUTES = {
    "/": page("Home", "/a", "/b", "/broken", "/same", "/file.txt", body="<p>The home page of a small site.</p>"),
    "/a": page("A", "/", head='<link rel="canonical" href="/a-canonical">', body="<p>Page a has words.</p>"),
    "/b": page("B", "/a", body="<p>Page b has other words.</p>"),
    "/same": page("Home", "/a", "/b", "/broken", "/same", "/file.txt", body="<p>The home page of a small site.</p>"),
    "/file.txt": Route(b"plain text", content_type="text/plain"),
}


@pytest.fixture
def hf(tmp_path, monkeypatch):
    """``datasets``, offline, with its cache under the test's folder."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    import datasets

    datasets.disable_progress_bars()
    return datasets


def crawled(tmp_path, **settings) -> str:
    out = str(tmp_path / "out")
    with SiteServer(ROUTES) as site:
        settings.setdefault("workers", 2)
        settings.setdefault("threads", 1)
        crawl(CrawlConfig(seeds=(site.url("/"),), out_dir=out, progress_interval_s=60.0, **settings))
    return out


def test_every_record_field_has_a_declared_type(tmp_path):
    out = crawled(tmp_path, workers=1)
    for record in iter_records(out):
        assert list(record) == [name for name, _ in RECORD_FIELDS]


@pytest.mark.parametrize("compress", [None, "zstd", "gzip"])
def test_the_folder_loads_with_datasets_whatever_the_nulls(tmp_path, hf, compress):
    # one record per shard: the 404's shard is the only one with an `error`, the canonical
    # page's the only one with a `canonical`; inferring a schema from the first fails
    out = crawled(tmp_path, shard_bytes=1, compress=compress)
    records = {r["url"]: r for r in iter_records(out)}
    assert len(list_shards(out)) == len(records) == 6  # 5 paths and the broken link
    assert is_ours(os.path.join(out, "README.md"))
    with pytest.raises(hf.exceptions.DatasetGenerationError):  # the schema inferred from the first shard
        hf.load_dataset("json", data_files=[s.path for s in list_shards(out)], cache_dir=str(tmp_path / "plain"))
    data = hf.load_dataset(out, split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert data.num_rows == 6
    assert {name: str(feature) for name, feature in data.features.items()} == {
        name: {
            "string": "Value('string')",
            "int64": "Value('int64')",
            "float64": "Value('float64')",
            "bool": "Value('bool')",
            "list<string>": "List(Value('string'))",
        }[kind]
        for name, kind in RECORD_FIELDS
    }
    loaded = {row["url"]: row for row in data}
    assert loaded == records  # every value as written, nulls included


def test_a_readme_that_is_not_ours_is_left_alone(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "README.md").write_text("my notes\n", "utf-8")
    crawled(tmp_path, workers=1)
    assert (out / "README.md").read_text("utf-8") == "my notes\n"


def _current(out: str) -> dict[str, dict]:
    """Per URL the latest record, by the rule of docs/recrawl.md, computed plainly."""
    latest: dict[str, dict] = {}
    for record in iter_records(out):
        url = record["url"]
        transient = record["error"] and record["status"] not in (404, 410)
        if url in latest and transient and not (latest[url]["error"] and latest[url]["status"] not in (404, 410)):
            continue
        if url not in latest or record["generation"] >= latest[url]["generation"]:
            latest[url] = record
    return latest


def test_parquet_reads_back_in_pyarrow_duckdb_and_datasets(tmp_path, hf):
    import duckdb
    import pyarrow.parquet as pq

    out = crawled(tmp_path, workers=1)
    to = str(tmp_path / "parquet")
    counts = export(out, "parquet", to, rows="all")
    assert counts == {"rows": 6, "files": 1, "gone": 0, "carried": 0}
    records = _current(out)
    table = pq.read_table(os.path.join(to, "part-00000.parquet"))
    assert table.schema.names == [name for name, _ in RECORD_FIELDS]
    assert {row["url"]: row for row in table.to_pylist()} == records
    rows = duckdb.sql(f"SELECT url, status, markdown, redirect_chain FROM '{to}/part-00000.parquet' ORDER BY url")
    assert rows.fetchall() == [(u, r["status"], r["markdown"], r["redirect_chain"]) for u, r in sorted(records.items())]
    loaded = hf.load_dataset(to, split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert {row["url"]: row for row in loaded} == records
    # pages only (the default): the HTML pages, the exact duplicate a row without Markdown
    pages = str(tmp_path / "pages")
    assert export(out, "parquet", pages)["rows"] == 4
    rows = pq.read_table(os.path.join(pages, "part-00000.parquet")).to_pylist()
    duplicate = [r for r in rows if r["duplicate_of"]]
    assert [(r["url"].rsplit("/", 1)[1], r["markdown"]) for r in duplicate] == [("same", None)]


def test_an_export_stopped_part_way_runs_again(tmp_path):
    out = crawled(tmp_path, workers=1)
    to = tmp_path / "parquet"
    to.mkdir()
    (to / "part-00000.parquet.tmp").write_bytes(b"half a file")  # what a kill leaves
    assert export(out, "parquet", str(to))["rows"] == 4
    assert sorted(os.listdir(to)) == ["README.md", "export.json", "part-00000.parquet"]
    (to / "notes.txt").write_text("mine", "utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "crawler", "export", out, "--format", "parquet", "--to", str(to)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"crawler: error: --to {to} holds files this export did not write (notes.txt, ...)"
    ]


def test_export_of_a_recrawled_folder_has_one_row_per_url_the_latest(tmp_path):
    import pyarrow.parquet as pq

    out = str(tmp_path / "out")
    pages = {"/": "<html><head><title>Home</title></head><body><main><p>Home text.</p>"}
    pages["/"] += '<a href="/x">x</a><a href="/y">y</a></main></body></html>'
    pages["/x"] = "<html><head><title>X</title></head><body><main><p>X before.</p></main></body></html>"
    pages["/y"] = "<html><head><title>Y</title></head><body><main><p>Y stays.</p></main></body></html>"
    with ValidatorSite(pages) as site:
        config = CrawlConfig(seeds=(site.url("/"),), out_dir=out, workers=1, threads=1, progress_interval_s=60.0)
        crawl(config)
        site.edit("/x", pages["/x"].replace("X before.", "X after."))
        crawl(CrawlConfig(**{**config.__dict__, "recrawl": True}))
    to = str(tmp_path / "parquet")
    assert export(out, "parquet", to) == {"rows": 3, "files": 1, "gone": 0, "carried": 2}
    rows = {r["url"]: r for r in pq.read_table(os.path.join(to, "part-00000.parquet")).to_pylist()}
    assert {u[len(site.url("")) :]: (r["generation"], r["change"], r["markdown"]) for u, r in rows.items()} == {
        "/": (2, "unchanged", f"Home text.\n\n[x]({site.url('/x')})[y]({site.url('/y')})"),
        "/x": (2, "changed", "X after."),
        "/y": (2, "unchanged", "Y stays."),
    }


def test_token_estimate_counts_words_and_marks():
    assert token_estimate("Hello, world! It's 2026.") == 9  # Hello , world ! It ' s 2026 .
    assert token_estimate("") == 0


def test_the_card_says_it_is_ours():
    from crawler.output.card import card_text

    text = card_text(["http://x/"], {"pages": 1})
    assert text.startswith("---\nconfigs:\n- config_name: default\n")
    assert MARKER in text
    assert json.dumps("pages-*.jsonl.zst") in text


LANGUAGES = {
    "/": page(
        "Home",
        "/de",
        "/fr",
        "/copy",
        body="<p>The river flows past the old mill, and in the evening the farmers bring their "
        "grain to be ground before the winter comes.</p>",
    ),
    "/de": page(
        "Mühle",
        body="<p>Der Fluss fließt an der alten Mühle vorbei, und am Abend bringen die Bauern ihr "
        "Getreide, damit es vor dem Winter gemahlen wird.</p>",
    ),
    "/fr": page(
        "Moulin",
        body="<p>La rivière coule devant le vieux moulin, et le soir les paysans apportent leur "
        "grain pour qu'il soit moulu avant l'hiver.</p>",
    ),
    "/copy": page(
        "Mühle",
        body="<p>Der Fluss fließt an der alten Mühle vorbei, und am Abend bringen die Bauern ihr "
        "Getreide, damit es vor dem Winter gemahlen wird.</p>",
    ),
}


def test_documents_have_the_training_fields_and_each_page_its_language(tmp_path, hf):
    import gzip

    out = str(tmp_path / "out")
    with SiteServer(LANGUAGES) as site:
        crawl(CrawlConfig(seeds=(site.url("/"),), out_dir=out, workers=1, threads=1, progress_interval_s=60.0))
    records = {r["url"]: r for r in iter_records(out)}
    to = str(tmp_path / "documents")
    assert export(out, "documents", to) == {"documents": 3, "files": 1, "gone": 0, "carried": 0}
    with gzip.open(os.path.join(to, "documents-00000.jsonl.gz"), "rt", encoding="utf-8") as f:
        docs = {d["url"]: d for d in map(json.loads, f)}
    german = next(u for u, r in records.items() if u.endswith(("/de", "/copy")) and not r["duplicate_of"])
    assert set(docs) == {site.url("/"), german, site.url("/fr")}  # the exact duplicate left out
    assert {u: d["language"] for u, d in docs.items()} == {site.url("/"): "en", german: "de", site.url("/fr"): "fr"}
    assert all(0.5 < d["language_score"] <= 1.0 for d in docs.values())
    home, record = docs[site.url("/")], records[site.url("/")]
    assert {k: v for k, v in home.items() if k not in ("language", "language_score")} == {
        "id": xxhash.xxh3_64_hexdigest(site.url("/").encode()),
        "text": record["markdown"],
        "url": site.url("/"),
        "title": "Home",
        "date": record["fetched_at"],
        "source": site.url(""),
        "token_count": token_estimate(record["markdown"]),
        "generation": 1,
    }
    loaded = hf.load_dataset(to, split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert sorted(loaded["url"]) == sorted(docs)


def test_llms_txt_export_of_the_current_corpus(tmp_path):
    out = str(tmp_path / "out")
    with SiteServer(LANGUAGES) as site:
        crawl(CrawlConfig(seeds=(site.url("/"),), out_dir=out, workers=1, threads=1, progress_interval_s=60.0))
    to = tmp_path / "llms"
    counts = export(out, "llms-txt", str(to))
    assert (counts["pages"], counts["duplicates"]) == (4, 1)
    text = (to / "llms.txt").read_text("utf-8")
    assert text.startswith("# Home\n\n> The river flows past the old mill")
    records = {r["url"]: r for r in iter_records(out)}
    first, copy = sorted((site.url("/de"), site.url("/copy")), key=lambda u: bool(records[u]["duplicate_of"]))
    assert f"- [Mühle]({first}): Der Fluss fließt an der alten Mühle vorbei" in text
    assert text.endswith(f"## Optional\n\n- [Mühle]({copy}): Same content as <{first}>.\n")
    assert sorted(os.listdir(to)) == ["export.json", "llms-full.txt", "llms.txt"]


def html_page(title: str, *links: str, text: str = "") -> str:
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return f"<html><head><title>{title}</title></head><body><main><p>{title} {text}</p>{anchors}</main></body></html>"


def test_a_readme_in_to_that_no_export_wrote_is_refused_and_kept(tmp_path):
    out = crawled(tmp_path, workers=1)
    to = tmp_path / "to"
    to.mkdir()
    (to / "README.md").write_text("my card\n", "utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "crawler", "export", out, "--format", "llms-txt", "--to", str(to)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "holds files this export did not write (README.md" in proc.stderr
    assert (to / "README.md").read_text("utf-8") == "my card\n"
    (to / "README.md").unlink()
    export(out, "llms-txt", str(to))
    export(out, "parquet", str(to))  # an earlier export's files are replaced
    assert sorted(os.listdir(to)) == ["README.md", "export.json", "part-00000.parquet"]


def test_the_generation_configs_load_with_their_declared_types(tmp_path, hf):
    out = str(tmp_path / "out")
    pages = {"/": html_page("Home", "/x", "/y"), "/x": html_page("X"), "/y": html_page("Y")}
    with ValidatorSite(pages) as site:
        config = CrawlConfig(seeds=(site.url("/"),), out_dir=out, workers=1, threads=1, shard_bytes=1)
        crawl(config)
        site.edit("/x", html_page("X", text="changed"))
        del site.pages["/y"]
        crawl(CrawlConfig(**{**config.__dict__, "recrawl": True}))
    cache = str(tmp_path / "hf-cache")
    for name, rows in (("default", 6), ("generation-1", 3), ("generation-2", 3)):
        data = hf.load_dataset(out, name, split="train", cache_dir=cache)
        assert data.num_rows == rows
        assert str(data.features["error"]) == "Value('string')"


def test_a_damaged_zstd_shard_is_an_error_not_an_empty_export(tmp_path):
    out = crawled(tmp_path, workers=1, compress="zstd")
    [shard] = list_shards(out)
    data = open(shard.path, "rb").read()
    with open(shard.path, "wb") as f:
        f.write(data[: len(data) // 2])
    manifest = json.loads(open(os.path.join(out, "manifest.json"), encoding="utf-8").read())
    manifest["shards"][0]["bytes"] = len(data) // 2  # as if the copy had been cut short
    open(os.path.join(out, "manifest.json"), "w", encoding="utf-8").write(json.dumps(manifest))
    for command in (
        ["export", out, "--format", "parquet", "--to", str(tmp_path / "p")],
        ["export-current", out, "--to", str(tmp_path / "c")],
    ):
        proc = subprocess.run([sys.executable, "-m", "crawler", *command], cwd=ROOT, capture_output=True, text=True)
        assert proc.returncode == 2, proc.stderr
        [line] = proc.stderr.strip().splitlines()
        assert line.startswith("crawler: error: ") and "is damaged: 0 of the 6 records" in line, line


def test_an_empty_export_is_an_empty_parquet_file_without_a_card(tmp_path):
    import pyarrow.parquet as pq

    out = str(tmp_path / "out")
    with SiteServer({"/": Route(b"gone", status=404)}) as site:
        with pytest.raises(SeedFailed):
            crawl(CrawlConfig(seeds=(site.url("/"),), out_dir=out, workers=1, threads=1))
    to = str(tmp_path / "p")
    assert export(out, "parquet", to)["rows"] == 0
    assert pq.read_table(os.path.join(to, "part-00000.parquet")).num_rows == 0
    assert sorted(os.listdir(to)) == ["export.json", "part-00000.parquet"]  # datasets loads no empty split
    assert os.path.exists(os.path.join(out, "pages-00-00000.jsonl")) and os.path.exists(os.path.join(out, "README.md"))


def test_export_of_a_resumed_folder_keeps_the_last_record_of_a_url(tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    out.mkdir()
    base = dict.fromkeys(name for name, _ in RECORD_FIELDS)
    page = {**base, "url": "http://a.test/", "final_url": "http://a.test/", "status": 200, "fingerprint": "1"}
    # a run killed after writing the record, before the state file knew: the resume fetched it again
    first = {**page, "markdown": "before the kill", "fetched_at": "2026-12-01T00:00:00.000Z"}
    again = {**page, "markdown": "after the resume", "fetched_at": "2026-12-01T01:00:00.000Z"}
    other = {**page, "url": "http://a.test/b", "final_url": "http://a.test/b", "markdown": "b", "fingerprint": "2"}
    (out / "pages-00-00000.jsonl").write_text(json.dumps(first) + "\n" + json.dumps(other) + "\n", "utf-8")
    (out / "pages-00-00001.jsonl").write_text(json.dumps(again) + "\n", "utf-8")
    to = str(tmp_path / "p")
    assert export(str(out), "parquet", to)["rows"] == 2
    rows = {r["url"]: r["markdown"] for r in pq.read_table(os.path.join(to, "part-00000.parquet")).to_pylist()}
    assert rows == {"http://a.test/": "after the resume", "http://a.test/b": "b"}
