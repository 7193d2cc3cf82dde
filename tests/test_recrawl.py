"""Recrawl (``--recrawl``): the next generation of a finished crawl asks every URL again
with the validators of its stored record, and says what changed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawler.api import crawl
from crawler.config import CrawlConfig
from crawler.engine.prior import build
from crawler.errors import ConfigError
from crawler.output import generations
from crawler.output.current import export_current
from crawler.output.shards import iter_records
from crawler.output.warc import SERVER_NOT_MODIFIED
from tests.helpers.validatorsite import ValidatorSite

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"


def html(title: str, *links: str, text: str = "") -> str:
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    head = f"<html><head><title>{title}</title></head>"
    return f"{head}<body><main><h1>{title}</h1><p>{text or title} body text.</p>{anchors}</main></body></html>"


def site_a() -> ValidatorSite:
    site = ValidatorSite(
        {
            "/": html("A home", "/etag/a", "/lm/a", "/etag/gone", "/ignore/a"),
            "/ignore/a": html("Ignores validators"),
            "/etag/a": html("Etag a", "/etag/b", "/etag/late"),
            "/etag/b": html("Etag b"),
            "/etag/late": html("Late"),
            "/lm/a": html("Lm a"),
            "/etag/gone": html("Gone soon"),
        }
    )
    site.robots = "User-agent: *\nDisallow: /etag/late\n"
    return site


def site_b() -> ValidatorSite:
    return ValidatorSite(
        {"/": html("B home", "/1", "/2", "/3", "/4"), **{f"/{n}": html(f"B {n}") for n in range(1, 5)}}, kind="newetag"
    )


def generation(out: str, number: int) -> dict[str, dict]:
    """The records of one generation, by URL (a URL twice fails)."""
    found: dict[str, dict] = {}
    for record in iter_records(out):
        if record["generation"] == number:
            assert record["url"] not in found, record["url"]
            found[record["url"]] = record
    return found


def changes(out: str, number: int) -> list[list[str]]:
    with open(os.path.join(out, f"changes-{number}.tsv"), encoding="utf-8") as f:
        header, *rows = f.read().splitlines()
    assert header == "url\tchange\tprevious_fingerprint\tfingerprint"
    return [row.split("\t") for row in rows]


def config(a: ValidatorSite, b: ValidatorSite, out: str, **settings) -> CrawlConfig:
    settings.setdefault("workers", 1)
    settings.setdefault("threads", 1)
    return CrawlConfig(seeds=(a.url("/"), b.url("/")), out_dir=out, progress_interval_s=60.0, **settings)


def test_recrawl_sends_validators_and_records_every_change(tmp_path):
    out = str(tmp_path / "out")
    with site_a() as a, site_b() as b:
        first = crawl(config(a, b, out, warc=True))
        assert (first["pages"], first["generation"], first["skipped_by_reason"]) == (
            11,
            1,
            {"robots.txt disallows": 1},
        )
        one = generation(out, 1)
        assert {r["change"] for r in one.values()} == {"new"}
        a_log, b_log = len(a.requests()), len(b.requests())
        a.edit("/etag/b", html("Etag b", text="Edited"))
        del a.pages["/etag/gone"]
        a.robots = ""
        summary = crawl(config(a, b, out, warc=True, recrawl=True))
        a_sent = [r for r in a.requests(a_log) if r[0] != "/robots.txt"]
        b_sent = [r for r in b.requests(b_log) if r[0] != "/robots.txt"]
    tag = {url[len(a.url("")) :]: one[url]["etag"] for url in one if url.startswith(a.url(""))}
    lm_a = one[a.url("/lm/a")]["last_modified"]
    # site A: its ETags and Last-Modified, each exactly as sent, on every page stored as a 200
    assert sorted(a_sent) == sorted(
        [
            ("/", 304, tag["/"], None),
            ("/etag/a", 304, tag["/etag/a"], None),
            ("/etag/b", 200, tag["/etag/b"], None),
            ("/etag/gone", 404, tag["/etag/gone"], None),
            ("/lm/a", 304, None, lm_a),
            ("/ignore/a", 200, '"fixed"', one[a.url("/ignore/a")]["last_modified"]),  # validators ignored
            ("/etag/late", 200, None, None),  # new: found only through the 304 page's stored links
        ]
    )
    # site B: a new ETag on every response; after three 200s with the same content the origin
    # gets If-Modified-Since alone, which it answers with 304
    lm_b = one[b.url("/1")]["last_modified"]
    assert [(path, status, inm is not None, ims) for path, status, inm, ims in b_sent] == [
        ("/", 200, True, lm_b),
        ("/1", 200, True, lm_b),
        ("/2", 200, True, lm_b),
        ("/3", 304, False, lm_b),
        ("/4", 304, False, lm_b),
    ]
    two = generation(out, 2)
    fingerprint = {url: r["fingerprint"] for url, r in one.items()}
    new_fp = {url: r["fingerprint"] for url, r in two.items()}
    expected = {
        a.url("/"): "unchanged",
        a.url("/etag/a"): "unchanged",
        a.url("/etag/b"): "changed",
        a.url("/etag/gone"): "gone",
        a.url("/etag/late"): "new",
        a.url("/lm/a"): "unchanged",
        a.url("/ignore/a"): "unchanged",  # a 200 with the same Markdown
        **{b.url(p): "unchanged" for p in ("/", "/1", "/2", "/3", "/4")},
    }
    assert changes(out, 2) == [
        [url, change, fingerprint.get(url) or "", new_fp.get(url) or ""] for url, change in sorted(expected.items())
    ]
    assert {url: r["change"] for url, r in two.items()} == expected
    assert summary["changes"] == {"new": 1, "changed": 1, "unchanged": 9, "gone": 1, "failed": 0, "skipped": 0}
    assert summary["changes_by_site"][a.url("")]["changed_share"] == 0.2
    assert summary["changes_by_site"][b.url("")]["changed_share"] == 0.0
    assert (summary["generation"], summary["reconciled"], summary["failed_by_reason"]) == (2, True, {"http 404": 1})
    # a 304 carries the record forward: no Markdown, the same fingerprint, links followed
    home = two[a.url("/")]
    assert (home["status"], home["markdown"], home["fingerprint"], home["content_generation"]) == (
        304,
        None,
        one[a.url("/")]["fingerprint"],
        1,
    )
    assert home["conditional"] == ["If-None-Match"] and home["etag"] == tag["/"]
    assert two[a.url("/lm/a")]["conditional"] == ["If-Modified-Since"]
    assert two[a.url("/etag/late")]["parent"] == a.url("/etag/a")
    assert two[b.url("/1")]["conditional"] == ["If-Modified-Since", "If-None-Match"]
    assert two[b.url("/3")]["conditional"] == ["If-Modified-Since"]
    # the WARC records of generation 2: revisits for a 304 and for an identical payload
    kinds = {}
    for path in sorted(os.listdir(out)):
        if path.endswith(".warc.gz"):
            with open(os.path.join(out, path), "rb") as f:
                for rec in ArchiveIterator(f):
                    if rec.rec_type in ("response", "revisit"):
                        uri = rec.rec_headers.get_header("WARC-Target-URI")
                        kinds.setdefault(uri, []).append((rec.rec_type, rec.rec_headers.get_header("WARC-Profile")))
    assert kinds[a.url("/")] == [("response", None), ("revisit", SERVER_NOT_MODIFIED)]
    assert kinds[b.url("/1")] == [("response", None), ("revisit", IDENTICAL)]
    assert kinds[b.url("/3")] == [("response", None), ("revisit", SERVER_NOT_MODIFIED)]
    assert kinds[a.url("/etag/b")] == [("response", None), ("response", None)]
    assert kinds[a.url("/ignore/a")] == [("response", None), ("revisit", IDENTICAL)]
    # the current corpus: one record per URL, the Markdown of a 304 page from generation 1
    current = str(tmp_path / "current")
    assert export_current(out, current) == {"records": 11, "gone": 1, "carried": 5, "urls": 12}
    now = {r["url"]: r for r in iter_records(current)}
    assert set(now) == set(expected) - {a.url("/etag/gone")}
    assert now[a.url("/")]["markdown"] == one[a.url("/")]["markdown"]
    assert now[a.url("/etag/b")]["markdown"] == two[a.url("/etag/b")]["markdown"]
    assert "Edited body text." in now[a.url("/etag/b")]["markdown"]
    manifest = json.loads(open(os.path.join(out, "manifest.json"), encoding="utf-8").read())
    assert [(g["generation"], g["records"]) for g in manifest["generations"]] == [(1, 11), (2, 12)]
    assert os.path.exists(os.path.join(out, "generations", "0001", "summary.json"))


def test_skip_unchanged_for_lists_the_pages_it_does_not_ask(tmp_path):
    out = str(tmp_path / "out")
    with site_a() as a, site_b() as b:
        crawl(config(a, b, out))
        crawl(config(a, b, out, recrawl=True))
        since = len(a.requests())
        a.edit("/etag/b", html("Etag b", text="Edited"))
        summary = crawl(config(a, b, out, recrawl=True, skip_unchanged_for=1))
        asked = sorted(r[0] for r in a.requests(since) if r[0] != "/robots.txt")
    # /etag/b was unchanged in generation 2 as well: not asked, so its edit is not seen yet
    assert asked == []
    reasons = summary["skipped_by_reason"]
    assert reasons == {"unchanged in the last 1 generations (--skip-unchanged-for)": 11}
    assert {row[1] for row in changes(out, 3)} == {"skipped"}


def test_recrawl_needs_a_finished_crawl_with_the_same_seeds(tmp_path):
    out = str(tmp_path / "out")
    with site_a() as a, site_b() as b:
        with pytest.raises(ConfigError, match="--recrawl needs a folder that holds a crawl"):
            crawl(config(a, b, out, recrawl=True))
        crawl(config(a, b, out))
        other = CrawlConfig(seeds=(a.url("/"),), out_dir=out, recrawl=True, workers=1)
        with pytest.raises(ConfigError, match="holds a crawl with seeds"):
            crawl(other)
    assert not os.path.exists(os.path.join(out, "generations.json"))  # nothing was started
    with pytest.raises(ConfigError, match="--recrawl and --restart"):
        CrawlConfig(seeds=("http://127.0.0.1/",), out_dir=out, recrawl=True, restart=True).validated()
    with pytest.raises(ConfigError, match="--skip-unchanged-for needs --recrawl"):
        CrawlConfig(seeds=("http://127.0.0.1/",), out_dir=out, skip_unchanged_for=2).validated()


def test_a_recrawl_killed_with_sigkill_resumes_with_every_url_once(tmp_path):
    out = tmp_path / "out"
    pages = {"/": html("home", *[f"/p{n}" for n in range(40)])}
    pages.update({f"/p{n}": html(f"page {n}") for n in range(40)})
    with ValidatorSite(pages, kind="lm") as site:
        command = [
            sys.executable,
            "-m",
            "crawler",
            site.url("/"),
            "--out",
            str(out),
            "--workers",
            "2",
            "--threads",
            "2",
            "--quiet",
        ]
        assert subprocess.run(command, cwd=ROOT, capture_output=True, timeout=120).returncode == 0
        for n in range(0, 40, 4):
            site.edit(f"/p{n}", html(f"page {n}", text="Edited"))
        site.delay_s = 0.05
        since = len(site.requests())
        first = subprocess.Popen(command + ["--recrawl"], cwd=ROOT, start_new_session=True, stderr=subprocess.PIPE)
        while len(site.requests(since)) < 12:
            assert first.poll() is None
            time.sleep(0.01)
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate(timeout=60)
        site.delay_s = 0.0
        second = subprocess.run(command + ["--recrawl"], cwd=ROOT, capture_output=True, text=True, timeout=120)
        asked = [r for r in site.requests(since) if r[0] != "/robots.txt"]
    assert second.returncode == 0, second.stderr
    rows = changes(str(out), 2)
    assert [row[0] for row in rows] == sorted(site.url(p) for p in pages)
    edited = {site.url(f"/p{n}") for n in range(0, 40, 4)}
    assert {row[0]: row[1] for row in rows} == {
        site.url(p): "changed" if site.url(p) in edited else "unchanged" for p in pages
    }
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert (summary["generation"], summary["reconciled"], summary["claimed"]) == (2, True, 41)
    repeated = len(asked) - len({r[0] for r in asked})
    assert repeated <= 4  # at most the fetches under way at the kill
    # every edited page was downloaded (200) and every other one answered 304 at least once
    assert {r[0] for r in asked if r[1] == 200} == {p for p in pages if site.url(p) in edited}


def test_a_start_cut_short_is_completed_by_the_next_run(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for name in ("summary.json", "edges-00.tsv", "pages-00-00000.jsonl"):
        (out / name).write_text(name, "utf-8")
    (out / "generations.json").write_text(
        json.dumps(
            {
                "current": 2,
                "archived": False,
                "generations": [
                    {"generation": 1, "shards": [[0, 0]], "archive": None},
                    {"generation": 2, "shards": None, "archive": None},
                ],
            }
        ),
        "utf-8",
    )
    (out / "generations" / "0001").mkdir(parents=True)
    (out / "generations" / "0001" / "tree.txt").write_text("moved before the kill", "utf-8")
    generations.finish_archive(str(out))
    assert sorted(os.listdir(out / "generations" / "0001")) == ["edges-00.tsv", "summary.json", "tree.txt"]
    assert (out / "generations" / "0001" / "summary.json").read_text("utf-8") == "summary.json"
    assert sorted(os.listdir(out)) == ["generations", "generations.json", "pages-00-00000.jsonl"]
    data = generations.load(str(out))
    assert (data["archived"], data["generations"][0]["archive"]) == (True, "generations/0001")
    assert generations.current_shards(str(out)) == []


def test_change_of_a_page_that_stays_gone_is_unchanged():
    from crawler.engine.prior import PriorPage
    from crawler.engine.recrawl import change_of

    missing = {"url": "u", "final_url": "u", "status": 404, "error": "http 404"}
    page = {"url": "u", "final_url": "u", "status": 200, "error": None, "fingerprint": "a"}
    assert change_of(PriorPage("u", 1, "new", 0, missing), dict(missing)) == "unchanged"
    assert change_of(PriorPage("u", 1, "new", 0, page), {**missing, "status": 410}) == "gone"
    assert change_of(PriorPage("u", 1, "new", 0, page), {**missing, "status": 503, "error": "http 503"}) == "failed"
    assert change_of(PriorPage("u", 1, "new", 0, missing), {**page, "fingerprint": "b"}) == "changed"
    assert change_of(None, page) == "new"


def test_a_smaller_max_depth_skips_the_deeper_urls_and_304_duplicates_count(tmp_path):
    out = str(tmp_path / "out")
    with site_a() as a, site_b() as b:
        a.pages["/copy"] = a.pages["/"]  # an exact duplicate of the home page
        a.pages["/"] = a.pages["/"].replace("</main>", '<a href="/copy">copy</a></main>')
        a.pages["/copy"] = a.pages["/"]
        first = crawl(config(a, b, out))
        since = len(a.requests())
        summary = crawl(config(a, b, out, recrawl=True, max_depth=1))
        asked = sorted(r[0] for r in a.requests(since) if r[0] != "/robots.txt")
    assert first["duplicates"] == summary["duplicates"] == 1
    assert asked == ["/", "/copy", "/etag/a", "/etag/gone", "/ignore/a", "/lm/a"]
    assert summary["skipped_by_reason"] == {"deeper than --max-depth": 1}  # /etag/b; /etag/late is not linked within it
    rows = {row[0]: row[1] for row in changes(out, 2)}
    assert rows[a.url("/etag/b")] == "skipped"


def test_the_current_corpus_takes_carried_markdown_whatever_the_shard_order(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    base = {"url": "http://a.test/", "final_url": "http://a.test/", "error": None, "status": 200}
    # fetcher 0 recrawled it (generation 2, a 304); fetcher 1 had crawled it (generation 1)
    later = {**base, "status": 304, "markdown": None, "generation": 2, "change": "unchanged", "content_generation": 1}
    first = {**base, "markdown": "the text", "generation": 1, "change": "new", "content_generation": 1}
    (out / "pages-00-00000.jsonl").write_text(json.dumps(later) + "\n", "utf-8")
    (out / "pages-01-00000.jsonl").write_text(json.dumps(first) + "\n", "utf-8")
    assert export_current(str(out), str(tmp_path / "current")) == {"records": 1, "gone": 0, "carried": 1, "urls": 1}
    assert [r["markdown"] for r in iter_records(str(tmp_path / "current"))] == ["the text"]


def test_a_page_keeps_its_links_through_a_generation_it_failed_in(tmp_path):
    out = str(tmp_path / "out")
    pages = {"/": html("home", "/a"), "/a": html("a", "/b"), "/b": html("b")}
    with ValidatorSite(pages) as site:
        settings = {"seeds": (site.url("/"),), "out_dir": out, "workers": 1, "threads": 1, "retries": 0}
        crawl(CrawlConfig(**settings))
        broken = site.pages.pop("/a")
        site.pages["/a-missing"] = broken  # /a answers 404 in generation 2...
        crawl(CrawlConfig(**settings, recrawl=True))
        site.pages["/a"] = broken  # ...and 304 again in generation 3
        since = len(site.requests())
        crawl(CrawlConfig(**settings, recrawl=True))
        asked = sorted((r[0], r[1]) for r in site.requests(since) if r[0] != "/robots.txt")
    assert asked == [("/", 304), ("/a", 200), ("/b", 304)]
    edges = open(os.path.join(out, "edges.tsv"), encoding="utf-8").read()
    assert f"{site.url('/a')}\t{site.url('/b')}\tlink\t1" in edges


def test_an_exact_duplicate_is_asked_in_full_and_its_copy_kept_when_the_first_changes(tmp_path):
    out = str(tmp_path / "out")
    pages = {"/": html("home", "/x", "/y"), "/x": html("same"), "/y": html("same")}
    with ValidatorSite(pages) as site:
        settings = {"seeds": (site.url("/"),), "out_dir": out, "workers": 1, "threads": 1}
        crawl(CrawlConfig(**settings))
        one = generation(out, 1)
        site.edit("/x", html("same", text="Now other"))
        since = len(site.requests())
        crawl(CrawlConfig(**settings, recrawl=True))
        asked = dict((r[0], (r[1], r[2])) for r in site.requests(since) if r[0] != "/robots.txt")
    assert one[site.url("/y")]["duplicate_of"] == site.url("/x")
    assert asked["/y"] == (200, None)  # no validators for a duplicate
    export_current(out, str(tmp_path / "current"))
    now = {r["url"]: r for r in iter_records(str(tmp_path / "current"))}
    assert now[site.url("/y")]["duplicate_of"] is None
    assert now[site.url("/y")]["markdown"] == one[site.url("/x")]["markdown"]
    assert "Now other" in now[site.url("/x")]["markdown"]


def test_a_start_killed_after_its_commit_point_resumes_with_recrawl(tmp_path):
    out = str(tmp_path / "out")
    with site_a() as a, site_b() as b:
        crawl(config(a, b, out))
        build(out, 2)  # what a kill right after the start's commit point leaves: no state file yet
        generations.begin_next(out)
        summary = crawl(config(a, b, out, recrawl=True))
    assert (summary["generation"], summary["reconciled"]) == (2, True)
    assert summary["changes"]["unchanged"] == 11
    assert generations.current(out) == 2
