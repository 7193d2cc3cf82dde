"""End to end: exact and near duplicates flagged in one crawl (crawler.content.neardup through
the visited table)."""

import json
import sqlite3

import pytest

from tests.helpers.siteserver import Route
from tests.helpers.texts import PAGE

OTHER = (
    "Routing. Modern web applications use meaningful URLs to help users. Users are more "
    "likely to like a page and come back if the page uses a meaningful URL they can remember "
    "and use to directly visit a page. Use the route decorator to bind a function to a URL. "
    "You can do more! You can make parts of the URL dynamic and attach multiple rules to a "
    "function. Variable Rules. You can add variable sections to a URL by marking sections "
    "with angle brackets. Your function then receives the variable as a keyword argument. "
    "Optionally, you can use a converter to specify the type of the argument. Unique URLs "
    "and Redirection Behavior. The following two rules differ in their use of a trailing "
    "slash. The canonical URL for the projects endpoint has a trailing slash. It is similar "
    "to a folder in a file system. If you access the URL without a trailing slash, Flask "
    "redirects you to the canonical URL with the trailing slash. URL Building. To build a "
    "URL to a specific function, use the url_for function. It accepts the name of the "
    "function as its first argument and any number of keyword arguments."
)
# 392 words: a footer change moves a page of 220 words 4 bits and one of 392 words 3, in
# either converter's Markdown of the tidied page: within the 3 allowed
LONG = OTHER + "\n\n" + OTHER.replace("URL", "address").replace("function", "view")


def html(body: str, footer: str = "") -> Route:
    paragraphs = "".join(f"<p>{p}</p>" for p in body.split("\n\n"))
    return Route(f"<html><body>{paragraphs}<footer>{footer}</footer></body></html>")


LINKS = ["/t1", "/t2", "/f1", "/f2", "/e1", "/e2", "/d"]


def routes() -> dict:
    """Pages that differ only in their <footer> (a timestamp, links), exact copies, and a
    distinct page."""
    return {
        "/": Route("<html><body><h1>Home</h1>" + "".join(f'<a href="{h}">{h}</a> ' for h in LINKS) + "</body></html>"),
        "/t1": html(PAGE, "Last updated on 2024-01-05 10:22:31."),
        "/t2": html(PAGE, "Last updated on 2025-11-30 08:05:59."),
        "/f1": html(LONG, "© Pallets. <a href='/privacy'>Privacy</a> | <a href='/contact'>Contact</a>"),
        "/f2": html(LONG, "© 2010 Pallets Projects, all rights reserved. <a href='/imprint'>Imprint</a>"),
        "/e1": html("Exactly the same words on two pages."),
        "/e2": html("Exactly the same words on two pages."),
        "/d": html("A distinct page about something else entirely, with words of its own."),
        "/privacy": html("Privacy."),
        "/contact": html("Contact."),
        "/imprint": html("Imprint."),
    }


def test_near_and_exact_duplicates_in_one_crawl(site_server, crawl_into):
    # --keep-boilerplate: the footers are converted too, so the pages differ a little
    server = site_server(routes())
    summary, records = crawl_into(server.url("/"), keep_boilerplate=True)
    hits = dict(server.hits)
    u = server.url
    assert set(hits.values()) == {1} and len(hits) == 12  # 11 pages and robots.txt
    near = {
        url: (r["near_duplicate_of"], r["near_duplicate_distance"])
        for url, r in records.items()
        if r["near_duplicate_of"]
    }
    exact = {url: r["duplicate_of"] for url, r in records.items() if r["duplicate_of"]}
    # which page of a pair came first depends on timing: assert the pairs
    assert {frozenset((url, first)) for url, (first, _) in near.items()} == {
        frozenset((u("/t1"), u("/t2"))),
        frozenset((u("/f1"), u("/f2"))),
    }
    assert sorted(distance for _, distance in near.values()) == [0, 3]  # timestamp 0, footer 3 (of 3 allowed)
    assert {frozenset((url, first)) for url, first in exact.items()} == {frozenset((u("/e1"), u("/e2")))}
    for url in near:  # flagged, not dropped
        assert records[url]["markdown"] and records[url]["duplicate_of"] is None
    [copy] = exact
    assert records[copy]["markdown"] is None and records[copy]["near_duplicate_of"] is None
    assert records[copy]["simhash"] == records[exact[copy]]["simhash"]
    assert all(len(r["simhash"]) == 16 and int(r["simhash"], 16) >= 0 for r in records.values())
    assert (summary["pages"], summary["duplicates"], summary["near_duplicates"]) == (11, 1, 2)


def test_by_default_pages_that_differ_only_in_chrome_are_exact_duplicates(site_server, crawl_into):
    # the main content leaves the <footer> out: what differed there no longer does
    pages = routes()
    pages["/"] = Route(pages["/"].body.replace(b"</body>", b'<a href="/b1">b1</a><a href="/b2">b2</a></body>'))
    pages["/b1"] = html(PAGE + "\n\nLast updated on 2024-01-05 10:22:31.")  # in the text itself
    pages["/b2"] = html(PAGE + "\n\nLast updated on 2025-11-30 08:05:59.")
    server = site_server(pages)
    summary, records = crawl_into(server.url("/"))
    u = server.url
    exact = {frozenset((url, r["duplicate_of"])) for url, r in records.items() if r["duplicate_of"]}
    assert exact == {frozenset((u("/t1"), u("/t2"))), frozenset((u("/f1"), u("/f2"))), frozenset((u("/e1"), u("/e2")))}
    near = {frozenset((url, r["near_duplicate_of"])) for url, r in records.items() if r["near_duplicate_of"]}
    assert near == {frozenset((u("/b1"), u("/b2")))}
    assert (summary["pages"], summary["duplicates"], summary["near_duplicates"]) == (13, 3, 1)


def repeating_site() -> dict:
    """/a, /b with /a's Markdown exactly, /c with /a's text under another timestamp."""
    stamp = "\n\nLast updated on {}."
    return {
        "/": Route('<html><body><a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a></body></html>'),
        "/a": html(PAGE + stamp.format("2024-01-05 10:22:31")),
        "/b": html(PAGE + stamp.format("2024-01-05 10:22:31")),
        "/c": html(PAGE + stamp.format("2025-11-30 08:05:59")),
    }


def forget_the_registry_and_a(out, url: str) -> None:
    """Empty the state store's content registry and put ``url`` back in flight, as if the
    crash came before the commit of its result."""
    db = sqlite3.connect(str(out / "state.sqlite"))
    with db:
        db.execute("DELETE FROM contents")
        db.execute("UPDATE urls SET state = 'in_flight', reason = NULL WHERE url = ?", (url,))
    db.close()


def test_a_resumed_crawl_flags_pages_that_repeat_an_earlier_runs_pages(site_server, crawl_into):
    # run 1 stops at --max-pages 2 (/ and /a); run 2 fetches /b (the same Markdown as /a)
    # and /c (/a's text with another timestamp): the registry of run 1 came back from the
    # state store
    server = site_server(repeating_site())
    first, records = crawl_into(server.url("/"), workers=1, threads=1, max_pages=2)
    assert sorted(records) == [server.url("/"), server.url("/a")]
    summary, records = crawl_into(server.url("/"), workers=1, threads=1)
    hits = dict(server.hits)
    u = server.url
    assert hits == {"/robots.txt": 2, "/": 1, "/a": 1, "/b": 1, "/c": 1}
    assert records[u("/b")]["duplicate_of"] == u("/a") and records[u("/b")]["markdown"] is None
    assert (records[u("/c")]["near_duplicate_of"], records[u("/c")]["near_duplicate_distance"]) == (u("/a"), 0)
    assert (summary["pages"], summary["duplicates"], summary["near_duplicates"]) == (4, 1, 1)
    # the rates are this run's: 2 pages (/b, /c) and 3 URLs (/robots.txt is not one)
    assert summary["pages_per_s"] == pytest.approx(2 / summary["wall_s"], rel=0.01)
    assert summary["urls_per_s"] == pytest.approx(2 / summary["wall_s"], rel=0.01)


def test_a_record_the_store_never_heard_of_is_registered_on_resume(tmp_path, site_server, crawl_into):
    # /a recorded but its result never committed (a crash): resume takes it from the record
    server = site_server(repeating_site())
    crawl_into(server.url("/"), workers=1, threads=1, max_pages=2)
    forget_the_registry_and_a(tmp_path / "out", server.url("/a"))
    summary, records = crawl_into(server.url("/"), workers=1, threads=1)
    assert records[server.url("/b")]["duplicate_of"] == server.url("/a")
    assert summary["duplicates"] == 1


def test_a_folder_from_before_the_registry_was_stored_resumes_with_it(tmp_path, site_server, crawl_into):
    # found by a reviewer: records without "simhash" made the resume raise KeyError, and
    # an older folder's pages never entered the store's registry
    server = site_server(repeating_site())
    crawl_into(server.url("/"), workers=1, threads=1, max_pages=2)
    out = tmp_path / "out"
    for path in out.glob("pages-*.jsonl"):  # as an older version wrote them
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        path.write_text(
            "".join(
                json.dumps({k: v for k, v in r.items() if k != "simhash"}, ensure_ascii=False) + "\n" for r in lines
            ),
            encoding="utf-8",
        )
    forget_the_registry_and_a(out, server.url("/a"))  # and one record it never heard of
    summary, records = crawl_into(server.url("/"), workers=1, threads=1)
    u = server.url
    assert records[u("/b")]["duplicate_of"] == u("/a")
    assert records[u("/c")]["near_duplicate_of"] == u("/a")
    assert (summary["duplicates"], summary["near_duplicates"]) == (1, 1)
