"""PageProcessor in-process (local VisitedTable, RecordWriter in tmp_path, a real local
server) and the fetcher thread loop's survival of an unexpected exception."""

from __future__ import annotations

import dataclasses
import queue
import re
import socket
import threading
import time

import pytest

import crawler.engine.worker as worker
from crawler.config import CrawlConfig
from crawler.content.neardup import simhash
from crawler.engine.messages import (
    DEFERRED,
    FAILED,
    KIND_ROBOTS,
    KIND_SITEMAP,
    NON_HTML,
    PAGE,
    REDIRECT,
    RETRY,
    ROBOTS,
    SITEMAP,
    STOP,
    Exchanged,
    FetchTask,
    TaskDone,
)
from crawler.engine.visited import VisitedTable
from crawler.output.shards import iter_records
from crawler.output.warc import payload_digest
from crawler.output.writers import RecordWriter, edges_path
from crawler.web.fetch import HttpClient
from tests.helpers.siteserver import Route, SiteServer, redirect

WAIT_S = 10
EXTERNAL = "http://external.test/page"

INDEX = """<!doctype html><html><head><title>Home page</title></head><body>
<h1>Welcome home</h1>
<p>Some text with <a href="/a">A</a>, <a href="b#section">B</a> and <a href="/b">B again</a>.</p>
<a href="/claimed-before">old</a>
<a href="/">self</a>
<a href="http://external.test/page">external</a>
<a href="mailto:someone@example.org">mail</a>
<a href="javascript:void(0)">js</a>
</body></html>"""


class Harness:
    """A processor wired to a local table, a writer in tmp_path and a site server."""

    def __init__(self, site: SiteServer, out_dir, **config) -> None:
        self.site = site
        self.out_dir = str(out_dir)
        self.config = CrawlConfig(
            seeds=(site.url("/"),),
            out_dir=self.out_dir,
            workers=1,
            connect_timeout_s=5.0,
            read_timeout_s=5.0,
            total_timeout_s=10.0,
            **config,
        )
        self.table = VisitedTable(8)
        self.writer = RecordWriter(self.out_dir, 0)
        self.exchanged: list[Exchanged] = []  # what the processor told before parsing
        self.processor = worker.PageProcessor(0, self.config, self.table, self.writer, self.exchanged.append)
        self.client = HttpClient.from_config(self.config)

    def run(self, path_or_url: str, depth: int = 0, parent=None, chain=()) -> TaskDone:
        url = path_or_url if "://" in path_or_url else self.site.url(path_or_url)
        assert self.table.claim(url)
        return self.run_task(FetchTask(url, depth, parent, tuple(chain)))

    def run_task(self, task: FetchTask) -> TaskDone:
        """Run ``task``; its measured latency is checked, then left out (``None``) so
        that results compare exactly. A task that sent no request has none."""
        done = self.processor.run(task, self.client)
        if done.error in (worker.CRASHED, worker.DEFERRED):
            assert done.latency_s is None
        else:
            assert done.latency_s is not None and 0 <= done.latency_s < WAIT_S
        return dataclasses.replace(done, latency_s=None)

    def records(self) -> list[dict]:
        return list(iter_records(self.out_dir))

    def edges(self) -> list[str]:
        with open(edges_path(self.out_dir, 0), encoding="utf-8") as f:
            return f.read().splitlines()

    def close(self) -> None:
        self.client.close()
        self.writer.close()


@pytest.fixture
def make(tmp_path):
    made = []

    def factory(routes, **config):
        site = SiteServer(routes).__enter__()
        harness = Harness(site, tmp_path, **config)
        made.append(harness)
        return harness

    yield factory
    for harness in made:
        harness.close()
        harness.site.__exit__(None, None, None)


def test_html_page_record_edges_and_discovered(make):
    h = make({"/": Route(INDEX)})
    u = h.site.url
    h.table.claim(u("/claimed-before"))
    before = time.monotonic()
    done = h.run("/")
    after = time.monotonic()

    [record] = h.records()
    # the origin was told free once the body was read, before the page was parsed
    assert [(e.worker_id, e.url, e.status) for e in h.exchanged] == [(0, u("/"), 200)]
    [exchanged] = h.exchanged
    assert 0 <= exchanged.latency_s < WAIT_S
    # the body was read at ended_at, on the dispatcher's clock, one latency after the start
    assert before <= exchanged.ended_at - exchanged.latency_s <= exchanged.ended_at <= after
    assert done == TaskDone(
        0,
        u("/"),
        PAGE,
        200,
        None,
        len(INDEX.encode()),
        (
            FetchTask(u("/a"), 1, u("/")),
            FetchTask(u("/b"), 1, u("/")),
        ),
        content=(int(record["fingerprint"], 16), int(record["simhash"], 16)),
    )
    assert record["simhash"] == f"{simhash(record['markdown']):016x}"
    assert set(record) == {
        "url",
        "request_url",
        "final_url",
        "status",
        "content_type",
        "depth",
        "parent",
        "redirect_chain",
        "title",
        "markdown",
        "fingerprint",
        "fetched_at",
        "elapsed_ms",
        "bytes",
        "truncated",
        "attempts",
        "error",
        "canonical",
        "duplicate_of",
        "content",
        "converter",
        "fallback_error",
        "simhash",
        "near_duplicate_of",
        "near_duplicate_distance",
        "etag",
        "last_modified",
        "payload_digest",
        "generation",
        "change",
        "content_generation",
        "conditional",
        "warc_date",
    }
    assert (record["generation"], record["change"], record["content_generation"], record["conditional"]) == (
        1,
        "new",
        1,
        None,
    )
    assert record["payload_digest"] == payload_digest(INDEX.encode())
    assert (record["converter"], record["fallback_error"]) == ("html-to-markdown", None)
    assert record["url"] == record["final_url"] == record["request_url"] == u("/")
    assert record["status"] == 200
    assert record["content_type"] == "text/html; charset=utf-8"
    assert record["depth"] == 0
    assert record["parent"] is None
    assert record["redirect_chain"] == []
    assert record["title"] == "Home page"
    assert "Welcome home" in record["markdown"]
    assert re.fullmatch(r"[0-9a-f]{16}", record["fingerprint"])
    assert record["fingerprint"] == worker.markdown_fingerprint(record["markdown"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["fetched_at"])
    assert isinstance(record["elapsed_ms"], float) and record["elapsed_ms"] > 0
    assert record["bytes"] == len(INDEX.encode())
    assert record["truncated"] is False
    assert record["error"] is None

    assert sorted(h.edges()) == sorted(
        [
            f"{u('/')}\t{u('/')}\tlink\t1",
            f"{u('/')}\t{u('/a')}\tlink\t1",
            f"{u('/')}\t{u('/b')}\tlink\t1",
            f"{u('/')}\t{u('/claimed-before')}\tlink\t1",
            f"{u('/')}\t{EXTERNAL}\tlink\t0",
        ]
    )
    assert h.table.state(u("/")) == "visited"
    assert h.table.state(u("/a")) == "in_flight"
    assert h.table.state(u("/b")) == "in_flight"
    assert h.table.state(EXTERNAL) is None
    assert len(h.table) == 4
    assert h.site.hits == {"/": 1}


def test_child_page_carries_depth_and_parent(make):
    h = make({"/a": Route('<title>A</title><a href="/c">c</a>')})
    u = h.site.url
    done = h.run("/a", depth=1, parent=u("/"))
    assert done.discovered == (FetchTask(u("/c"), 2, u("/a")),)
    [record] = h.records()
    assert (record["depth"], record["parent"], record["title"]) == (1, u("/"), "A")


def test_allowed_domain_link_is_claimed(make):
    h = make({"/": Route(INDEX)}, allow_domains=("external.test",))
    u = h.site.url
    done = h.run("/")
    assert [t.url for t in done.discovered] == sorted([u("/a"), u("/b"), u("/claimed-before"), EXTERNAL])
    assert f"{u('/')}\t{EXTERNAL}\tlink\t1" in h.edges()


def test_excluded_links_are_out_of_scope_edges(make):
    h = make({"/": Route(INDEX)}, exclude=(r"/b$",))
    u = h.site.url
    done = h.run("/")
    assert [t.url for t in done.discovered] == [u("/a"), u("/claimed-before")]
    assert f"{u('/')}\t{u('/b')}\tlink\t0" in h.edges()
    assert h.table.state(u("/b")) is None


@pytest.mark.parametrize("max_depth, claimed", [(0, []), (1, ["/a", "/b"]), (None, ["/a", "/b"])])
def test_max_depth_from_the_seed(make, max_depth, claimed):
    h = make({"/": Route(INDEX)}, max_depth=max_depth)
    u = h.site.url
    h.table.claim(u("/claimed-before"))
    done = h.run("/")
    assert [t.url for t in done.discovered] == [u(p) for p in claimed]
    assert len(h.edges()) == 5  # edges are recorded whatever the depth limit
    assert len(h.table) == 2 + len(claimed)


def test_max_depth_honoured_below_the_seed(make):
    h = make({"/deep": Route('<a href="/deeper">x</a><a href="/other">y</a>')}, max_depth=2)
    u = h.site.url
    done = h.run("/deep", depth=2, parent=u("/"))
    assert done.outcome == PAGE
    assert done.discovered == ()
    assert h.edges() == [f"{u('/deep')}\t{u('/deeper')}\tlink\t1", f"{u('/deep')}\t{u('/other')}\tlink\t1"]
    assert h.table.state(u("/deeper")) is None
    assert h.table.state(u("/other")) is None
    assert len(h.table) == 1


def test_redirect_claims_target_with_same_depth_and_chain(make):
    h = make({"/old": redirect("/new#frag"), "/new": Route("new")})
    u = h.site.url
    done = h.run("/old", depth=3, parent=u("/p"))
    assert done == TaskDone(0, u("/old"), REDIRECT, 301, None, 0, (FetchTask(u("/new"), 3, u("/old"), (u("/old"),)),))
    [record] = h.records()
    assert (record["url"], record["final_url"], record["status"]) == (u("/old"), u("/new"), 301)
    assert (record["depth"], record["parent"], record["error"], record["markdown"]) == (3, u("/p"), None, None)
    assert h.edges() == [f"{u('/old')}\t{u('/new')}\tredirect\t1"]
    assert h.table.state(u("/old")) == "visited"
    assert h.table.state(u("/new")) == "in_flight"
    assert h.site.hits == {"/old": 1}


def test_second_hop_extends_the_chain(make):
    h = make({"/r2": redirect("/r3", 302)})
    u = h.site.url
    done = h.run("/r2", depth=1, parent=u("/r1"), chain=[u("/r1")])
    assert done.discovered == (FetchTask(u("/r3"), 1, u("/r2"), (u("/r1"), u("/r2"))),)
    assert h.records()[0]["redirect_chain"] == [u("/r1")]


def test_redirect_to_an_already_claimed_target_discovers_nothing(make):
    h = make({"/old": redirect("/new")})
    u = h.site.url
    h.table.claim(u("/new"))
    done = h.run("/old")
    assert (done.outcome, done.discovered) == (REDIRECT, ())


def test_redirect_out_of_scope_is_an_edge_not_a_claim(make):
    h = make({"/away": redirect("http://elsewhere.test/x", 307)})
    u = h.site.url
    done = h.run("/away")
    assert (done.outcome, done.status, done.discovered) == (REDIRECT, 307, ())
    assert h.edges() == [f"{u('/away')}\thttp://elsewhere.test/x\tredirect\t0"]
    assert h.records()[0]["final_url"] == "http://elsewhere.test/x"
    assert h.table.state("http://elsewhere.test/x") is None


def test_redirect_back_into_the_chain_is_a_loop(make):
    h = make({"/b": redirect("/a")})
    u = h.site.url
    done = h.run("/b", parent=u("/a"), chain=[u("/a")])
    assert done == TaskDone(0, u("/b"), FAILED, 301, "redirect loop", 0, ())
    [record] = h.records()
    assert (record["error"], record["final_url"]) == ("redirect loop", u("/a"))
    assert h.edges() == [f"{u('/b')}\t{u('/a')}\tredirect\t1"]
    assert h.table.state(u("/b")) == "failed"


def test_redirect_to_itself_is_a_loop(make):
    h = make({"/self": redirect("/self")})
    done = h.run("/self")
    assert (done.outcome, done.error) == (FAILED, "redirect loop")
    assert h.table.state(h.site.url("/self")) == "failed"


def test_chain_longer_than_max_redirects_fails(make):
    h = make({"/r3": redirect("/r4"), "/r2": redirect("/r3")}, max_redirects=2)
    u = h.site.url
    # /r1 -> /r2 -> /r3: two redirects followed, the limit
    ok = h.run("/r2", parent=u("/r1"), chain=[u("/r1")])
    assert ok.outcome == REDIRECT
    assert ok.discovered == (FetchTask(u("/r3"), 0, u("/r2"), (u("/r1"), u("/r2"))),)
    # /r3 -> /r4 would be the third
    done = h.run_task(ok.discovered[0])
    assert done == TaskDone(0, u("/r3"), FAILED, 301, "too many redirects", 0, ())
    assert h.records()[1]["final_url"] == u("/r4")
    assert h.table.state(u("/r3")) == "failed"
    assert h.table.state(u("/r4")) is None


def test_unusable_redirect_location_fails(make):
    h = make({"/m": redirect("mailto:x@example.org")})
    done = h.run("/m")
    assert (done.outcome, done.error, done.status) == (FAILED, "bad redirect location", 301)
    assert h.edges() == []
    assert h.table.state(h.site.url("/m")) == "failed"


def test_404_fails(make):
    h = make({})
    u = h.site.url
    done = h.run("/missing", depth=1, parent=u("/"))
    assert done == TaskDone(0, u("/missing"), FAILED, 404, "http 404", len(b"<h1>not found</h1>"), ())
    assert h.exchanged == []  # nothing to parse: the result itself frees the origin
    [record] = h.records()
    assert (record["status"], record["error"], record["markdown"], record["title"]) == (404, "http 404", None, None)
    assert h.edges() == []
    assert h.table.state(u("/missing")) == "failed"


def test_non_html_is_recorded_without_markdown(make):
    pdf = b"%PDF-1.4 <a href='/x'>not a link</a>"
    h = make({"/doc.pdf": Route(pdf, content_type="application/pdf")})
    u = h.site.url
    done = h.run("/doc.pdf")
    assert done == TaskDone(0, u("/doc.pdf"), NON_HTML, 200, None, len(pdf), ())
    [record] = h.records()
    assert record["content_type"] == "application/pdf"
    assert (record["markdown"], record["title"], record["fingerprint"], record["error"]) == (None, None, None, None)
    assert record["bytes"] == len(pdf)
    assert h.edges() == []
    assert h.table.state(u("/doc.pdf")) == "visited"
    assert len(h.table) == 1


def test_network_failure_is_a_failed_record(make):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    sock.close()
    h = make({}, retries=0)
    done = h.run(dead)
    assert done == TaskDone(0, dead, FAILED, None, "connection", 0, ())
    [record] = h.records()
    assert (record["status"], record["content_type"], record["elapsed_ms"], record["error"]) == (
        None,
        None,
        None,
        "connection",
    )
    assert h.table.state(dead) == "failed"


def test_a_transient_failure_before_the_last_attempt_is_a_retry_with_nothing_written(make):
    h = make(
        {
            "/busy": Route("slow down", 429, {"Retry-After": "7"}),
            "/down": Route("oops", 503),
            "/gone": Route("gone", 410),
        },
        retries=1,
    )
    u = h.site.url
    assert h.run("/busy") == TaskDone(0, u("/busy"), RETRY, 429, "http 429", 9, retry_after_s=7.0)
    # the origin is paused for 7 s in this process: a queued task goes back unrequested
    deferred = h.run("/down")
    assert (deferred.outcome, deferred.status, deferred.error) == (RETRY, None, DEFERRED)
    assert 6 < deferred.retry_after_s <= 7 and h.site.hits["/down"] == 0
    h.processor.paused.clear()
    assert h.run_task(FetchTask(u("/down"), 0)) == TaskDone(
        0, u("/down"), RETRY, 503, "http 503", 4, retry_after_s=None
    )
    assert h.run("/gone").outcome == FAILED  # a 410 is an answer, not an accident
    assert [r["url"] for r in h.records()] == [u("/gone")]
    assert h.table.state(u("/busy")) == h.table.state(u("/down")) == "in_flight"
    # the last attempt records the failure, with the attempt count
    last = h.run_task(FetchTask(u("/busy"), 0, attempt=1))
    assert (last.outcome, last.error) == (FAILED, "http 429")
    assert h.records()[-1]["attempts"] == 2 and h.table.state(u("/busy")) == "failed"


def test_C24c_a_retry_after_over_the_cap_fails_at_once_with_the_reason(make):
    h = make({"/day": Route("later", 429, {"Retry-After": "86400"})}, retries=3)
    done = h.run("/day")
    assert (done.outcome, done.error) == (FAILED, "http 429 (Retry-After 86400 s is over --max-retry-wait)")


def test_a_crashed_robots_or_sitemap_task_writes_no_record(make):
    # found by a reviewer: a robots.txt task's crash wrote a page record for the origin,
    # and the dispatcher's store then raised KeyError for that URL
    h = make({})
    u = h.site.url
    for kind, outcome in ((KIND_ROBOTS, ROBOTS), (KIND_SITEMAP, SITEMAP)):
        done = h.processor.crash(
            FetchTask(u("/sitemap.xml"), 0, kind=kind),
            UnicodeEncodeError("ascii", "é", 0, 1, "ordinal not in range(128)"),
        )
        assert done == TaskDone(0, u("/sitemap.xml"), outcome, None, "internal error: UnicodeEncodeError")
    assert h.records() == []


def test_crash_writes_a_failed_record_and_marks_the_table(make):
    h = make({})
    u = h.site.url
    h.table.claim(u("/x"))
    done = h.processor.crash(FetchTask(u("/x"), 2, u("/")), RuntimeError("boom"))
    assert done == TaskDone(0, u("/x"), FAILED, None, "internal error: RuntimeError")
    [record] = h.records()
    assert record["error"] == "internal error: RuntimeError: boom"
    assert (record["url"], record["depth"], record["parent"], record["status"]) == (u("/x"), 2, u("/"), None)
    assert h.table.state(u("/x")) == "failed"


def test_crash_after_settling_leaves_the_state(make):
    h = make({})
    u = h.site.url
    h.table.claim(u("/x"))
    h.table.mark_visited(u("/x"))
    done = h.processor.crash(FetchTask(u("/x"), 0), ValueError("late"))
    assert (done.outcome, done.error) == (FAILED, "internal error: ValueError")
    assert h.table.state(u("/x")) == "visited"


def test_crash_survives_a_broken_table(make):
    h = make({})

    class Broken:
        def state(self, url):
            raise ConnectionError("manager gone")

    h.processor.table = Broken()
    done = h.processor.crash(FetchTask(h.site.url("/x"), 0), KeyError("k"))
    assert done == TaskDone(0, h.site.url("/x"), FAILED, None, "internal error: KeyError")


def test_thread_loop_survives_an_exception(make, monkeypatch):
    h = make({"/good": Route("<title>Good</title>")})
    u = h.site.url
    bad, good = u("/bad"), u("/good")
    h.table.claim_many([bad, good])
    real_run = h.processor.run

    def run(task, client):
        if task.url == bad:
            raise RuntimeError("exploded")
        return real_run(task, client)

    monkeypatch.setattr(h.processor, "run", run)
    tasks, results = queue.Queue(), queue.Queue()
    for item in (FetchTask(bad, 0), FetchTask(good, 0), STOP, FetchTask(u("/never"), 0)):
        tasks.put(item)
    thread = threading.Thread(target=worker._thread_loop, args=(h.processor, tasks, results), daemon=True)
    thread.start()
    thread.join(WAIT_S)
    assert not thread.is_alive()

    got = [results.get(timeout=WAIT_S) for _ in range(2)]
    assert results.empty()
    assert isinstance(got[0], TaskDone)
    assert (got[0].url, got[0].outcome) == (bad, FAILED)
    assert got[0].error == "internal error: RuntimeError"
    assert (got[1].url, got[1].outcome, got[1].status) == (good, PAGE, 200)
    assert tasks.get_nowait() == FetchTask(u("/never"), 0)  # the loop stopped at STOP
    assert h.table.state(bad) == "failed"
    assert h.table.state(good) == "visited"
    assert [r["error"] for r in h.records()] == ["internal error: RuntimeError: exploded", None]
    assert h.site.hits == {"/good": 1}


def test_utc_now_iso_format():
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", worker.utc_now_iso())


def test_markdown_fingerprint_is_xxh3_hex():
    assert worker.markdown_fingerprint("") == "2d06800538d394c2"
    assert len(worker.markdown_fingerprint("# héllo")) == 16


def test_a_table_failure_after_the_record_is_written_writes_no_second_record(make, monkeypatch):
    h = make({"/": Route("<title>T</title><p>text</p>")})
    u = h.site.url
    h.table.claim(u("/"))

    def broken_settle(*args):
        raise BrokenPipeError("manager gone")

    monkeypatch.setattr(h.table, "settle", broken_settle)
    monkeypatch.setattr(h.table, "register_content", broken_settle)  # the table is gone for all
    tasks, results = queue.Queue(), queue.Queue()
    for item in (FetchTask(u("/"), 0), STOP):
        tasks.put(item)
    worker._thread_loop(h.processor, tasks, results)
    done = results.get(timeout=WAIT_S)
    assert (done.outcome, done.error, done.table_failed, done.discovered) == (PAGE, None, True, ())
    assert [r["url"] for r in h.records()] == [u("/")]  # one record, the real one
    assert h.records()[0]["markdown"] == "text" and h.records()[0]["error"] is None


def _links_page(*paths: str) -> str:
    return "<html><body>" + "".join(f'<a href="{p}">{p}</a>' for p in paths) + "</body></html>"


def test_a_key_offered_once_is_not_sent_to_the_table_again(make, monkeypatch):
    h = make({"/": Route(_links_page("/a", "/b")), "/a": Route(_links_page("/b", "/c", "/"))})
    sent = []
    settle = h.table.settle
    monkeypatch.setattr(
        h.table, "settle", lambda url, state, links: (sent.append(list(links)), settle(url, state, links))[1]
    )
    home = h.run("/")
    a = h.run_task(home.discovered[0])  # /a, claimed by the home page
    url = h.site.url
    # /b was offered by the home page: not sent again; / was claimed outside the
    # processor, so it is offered once (and loses in the table)
    assert sent == [[url("/a"), url("/b")], [url("/"), url("/c")]]
    assert [t.url for t in home.discovered] == [url("/a"), url("/b")]
    assert [t.url for t in a.discovered] == [url("/c")]
    assert h.table.state(url("/")) == "visited" and h.table.state(url("/b")) == "in_flight"
    # the edges still list every link, offered before or not
    assert sum(1 for e in h.edges() if e.startswith(url("/a") + "\t")) == 3


def test_a_huge_robots_txt_is_read_only_up_to_its_limit(make):
    from crawler.web.robots import ROBOTS_MAX_BYTES

    h = make(
        {
            "/robots.txt": Route(
                "User-agent: *\nDisallow: /x\n" + "#" * (3 * ROBOTS_MAX_BYTES), content_type="text/plain"
            )
        }
    )
    done = h.run_task(FetchTask(h.site.url("/").rstrip("/"), 0, kind=KIND_ROBOTS))
    assert (done.outcome, done.status) == (ROBOTS, 200)
    assert done.body_bytes == len(done.robots_body) == ROBOTS_MAX_BYTES  # not 1.5 MB read
