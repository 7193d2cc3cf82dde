"""llms.txt and llms-full.txt (crawler.output.llmstxt): a crawled site's files pinned
whole, the first-sentence rules, names and links, sections from a hand-made tree."""

import os
import re

import pytest
from markdown_it import MarkdownIt

from crawler.errors import ConfigError
from crawler.output.llmstxt import (
    MAX_NOTE,
    first_sentence,
    link_text,
    link_url,
    listed_order,
    page_title,
    sections,
    write_llms_txt,
)
from tests.helpers.crawlutil import run_crawl
from tests.helpers.siteserver import Route, SiteServer, page, redirect

#: 250 characters without a sentence end: the note is cut at a space.
LONG = "This first post rambles on " + "and on " * 31 + "without a stop"
LONG_NOTE = "This first post rambles on " + "and on " * 24 + "and…"

SITE = {
    "/": page(
        "Example [Site]",
        *("/about.html", "/docs/", "/blog/", "/moved.html", "/missing.html", "/notes.txt"),
        body="<p>Example Site makes <em>widgets</em>, e.g. this one. It is small.</p>",
    ),
    "/about.html": page("About", body="<p>We are a <strong>small</strong> team. Write to us.</p>"),
    "/docs/": page(
        "Docs",
        *("/docs/intro.html", "/docs/api.html", "/docs/untitled.html"),
        body="<p>Read the <a href='/docs/intro.html'>intro</a> first! Then the API.</p>",
    ),
    "/docs/intro.html": page(
        "Intro", body="<pre><code>pip install example\n</code></pre><p>Start here. Then go on.</p>"
    ),
    "/docs/api.html": page("API [v2]", "/docs/api/call.html"),
    "/docs/api/call.html": page("call()", body="<p>Calls Dr. Who (not a real doctor). Returns nothing.</p>"),
    "/docs/untitled.html": Route("<html><body><p>No title here, but text.</p></body></html>"),
    "/blog/": page("Blog", "/blog/first.html"),
    "/blog/first.html": page("First post", "/old-about.html", body=f"<p>{LONG}</p>"),
    "/old-about.html": page("About", body="<p>We are a <strong>small</strong> team. Write to us.</p>"),
    "/moved.html": redirect("/contact.html"),
    "/contact.html": page("Contact", body="<p>Mail us at <a href='mailto:x@example.com'>x@example.com</a>.</p>"),
    "/notes.txt": Route("plain text", content_type="text/plain"),
}

#: llms.txt of SITE; {u} is the server's http://127.0.0.1:PORT, {fetched} the date part.
EXPECTED = """\
# Example [Site]

> Example Site makes widgets, e.g. this one.

11 pages crawled from <{u}/>, {fetched}. Sections follow the site tree: a page, then \
the pages below it. Optional lists pages whose content repeats another page's. \
llms-full.txt holds the Markdown of every page listed here.

## Example [Site]

- [Example (Site)]({u}/): Example Site makes widgets, e.g. this one.
- [About]({u}/about.html): We are a small team.
- [Contact]({u}/contact.html): Mail us at x@example.com.

## Blog

- [Blog]({u}/blog/)
- [First post]({u}/blog/first.html): {long}

## Docs

- [Docs]({u}/docs/): Read the intro first!
- [API (v2)]({u}/docs/api.html)
- [call()]({u}/docs/api/call.html): Calls Dr. Who (not a real doctor).
- [Intro]({u}/docs/intro.html): Start here.
- [/docs/untitled.html]({u}/docs/untitled.html): No title here, but text.

## Optional

- [About]({u}/old-about.html): Same content as <{u}/about.html>.
"""

#: The pages as llms.txt lists them.
LISTING = [
    "/",
    "/about.html",
    "/contact.html",
    "/blog/",
    "/blog/first.html",
    "/docs/",
    "/docs/api.html",
    "/docs/api/call.html",
    "/docs/intro.html",
    "/docs/untitled.html",
    "/old-about.html",
]
#: The pages in tree order (llms-full.txt's order).
TREE_ORDER = [
    "/",
    "/about.html",
    "/blog/",
    "/blog/first.html",
    "/old-about.html",
    "/docs/",
    "/docs/api.html",
    "/docs/api/call.html",
    "/docs/intro.html",
    "/docs/untitled.html",
    "/contact.html",
]

#: The reference parser's pattern of a file-list line (llmstxt.org): name, URL, notes.
REFERENCE_LINE = re.compile(r"-\s*\[(?P<title>[^\]]+)\]\((?P<url>[^\)]+)\)(?::\s*(?P<desc>.*))?")


def _fetched(records) -> str:
    days = sorted({r["fetched_at"][:10] for r in records.values() if r["markdown"] is not None or r["duplicate_of"]})
    return f"fetched on {days[0]}" if len(days) == 1 else f"fetched from {days[0]} to {days[-1]}"


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    """SITE crawled by one fetcher thread, then its llms files written: ``(u, records by
    URL, llms.txt, llms-full.txt, counts, to_dir)``, ``u`` the server's origin."""
    tmp = tmp_path_factory.mktemp("llms")
    with SiteServer(SITE) as server:
        u = server.url("/").rstrip("/")
        _summary, records = run_crawl(tmp, server.url("/"), workers=1, threads=1)
    to_dir = str(tmp / "export")
    counts = write_llms_txt(str(tmp / "out"), to_dir)
    with open(os.path.join(to_dir, "llms.txt"), encoding="utf-8") as f:
        llms = f.read()
    with open(os.path.join(to_dir, "llms-full.txt"), encoding="utf-8") as f:
        full = f.read()
    return u, records, llms, full, counts, to_dir


def test_llms_txt_of_a_crawled_site_is_pinned(crawled):
    u, records, llms, _full, counts, to_dir = crawled
    assert records[u + "/old-about.html"]["duplicate_of"] == u + "/about.html"
    assert llms == EXPECTED.format(u=u, fetched=_fetched(records), long=LONG_NOTE)
    assert counts == {"pages": 11, "duplicates": 1, "sections": 4, "sites": 1}
    assert sorted(os.listdir(to_dir)) == ["llms-full.txt", "llms.txt"]  # no work file, no temporary


def test_llms_txt_parses_as_the_spec_and_commonmark_read_it(crawled):
    u, _records, llms, *_ = crawled
    head, *parts = re.split(r"^## (.*)$", llms, flags=re.MULTILINE)
    assert re.fullmatch(r"# [^\n]+\n\n> [^\n]+\n\n[^\n#>][^\n]*\n\n", head)
    names = parts[::2]
    assert names == ["Example [Site]", "Blog", "Docs", "Optional"]
    lines = [line for body in parts[1::2] for line in body.splitlines() if line.strip()]
    parsed = [REFERENCE_LINE.fullmatch(line) for line in lines]
    assert all(parsed), lines
    assert [m["url"] for m in parsed] == [u + path for path in LISTING]
    # CommonMark: one link per list item, its text the title (brackets made parentheses)
    tokens = MarkdownIt("commonmark").parse(llms)
    items, depth = [], 0
    for token in tokens:
        depth += {"list_item_open": 1, "list_item_close": -1}.get(token.type, 0)
        if token.type == "inline" and depth:
            children = token.children or []
            items.append((children[0].attrGet("href"), children[1].content, children[2].type))
    assert items == [(m["url"], m["title"].replace("\\\\", "\\"), "link_close") for m in parsed]
    assert len(LONG_NOTE) <= MAX_NOTE


def test_llms_full_txt_holds_every_page_in_tree_order(crawled):
    u, records, llms, full, *_ = crawled
    head = llms.split("\n\n", 2)
    assert full.startswith(f"{head[0]}\n\n{head[1]}\n\n<doc ")
    assert full.endswith("</doc>\n") and not full.endswith("\n\n")
    opening = re.findall(r'^<doc title="([^"]*)" url="([^"]*)">$', full, flags=re.MULTILINE)
    assert [url for _, url in opening] == [u + path for path in TREE_ORDER]
    assert opening[0] == ("Example [Site]", u + "/")
    assert opening[9] == ("/docs/untitled.html", u + "/docs/untitled.html")
    intro = u + "/docs/intro.html"
    assert f'\n\n<doc title="Intro" url="{intro}">\n{records[intro]["markdown"]}\n</doc>\n\n' in full
    assert records[intro]["markdown"].startswith("# Intro\n\n```")
    duplicate = f'\n\n<doc title="About" url="{u}/old-about.html">\nSame content as <{u}/about.html>.\n</doc>\n\n'
    assert duplicate in full
    # the <doc> lines split the file back into every page's Markdown
    pages = re.findall(r'^<doc title="[^"]*" url="([^"]*)">\n(.*?)^</doc>$', full, flags=re.MULTILINE | re.DOTALL)
    assert [url for url, _ in pages] == [u + path for path in TREE_ORDER]
    for url, content in pages:
        if not records[url]["duplicate_of"]:
            assert content == records[url]["markdown"] + "\n"


def test_records_argument_tree_rules_and_doc_escaping(tmp_path):
    """Records given, not read: two roots, a childless third root and one not in the tree
    (Other pages), a page titled Optional, Markdown holding the delimiter lines."""
    out = tmp_path / "out"
    out.mkdir()
    h, g = "http://a.test", "http://b.test"
    (out / "tree.txt").write_text(
        f"{h}/\n  {h}/gone\n    {h}/kept\n  {h}/opt/\n    {h}/opt/x\n{g}/\n  {g}/y\n{h}/lone\n", encoding="utf-8"
    )

    def rec(url, title, markdown, day="01"):
        return {
            "url": url,
            "title": title,
            "markdown": markdown,
            "error": None,
            "fetched_at": f"2024-05-{day}T10:00:00Z",
        }

    records = [
        rec(f"{h}/", "A", "Site A is first. Yes."),
        {"url": f"{h}/gone", "title": None, "markdown": None, "error": "http 404"},
        rec(f"{h}/kept", "Kept", "Under a failure."),
        rec(f"{h}/opt/", "Optional", "A page titled Optional."),
        rec(f"{h}/opt/x", "X", '<doc title="x">\n</doc>\n</document> stays\n```\n</doc>\n```'),
        rec(f"{g}/", "B", ""),
        rec(f"{g}/y", "Y", "Why."),
        rec(f"{h}/lone", "Lone", "Alone.", day="03"),
        rec(f"{h}/zz", None, None) | {"duplicate_of": f"{h}/kept"},
        rec(f"{h}/extra", "Extra", "Not in the tree."),
    ]
    counts = write_llms_txt(str(out), str(tmp_path / "to"), records)
    assert counts == {"pages": 9, "duplicates": 1, "sections": 5, "sites": 2}
    llms = (tmp_path / "to" / "llms.txt").read_text(encoding="utf-8")
    assert llms == (
        "# A\n\n> Site A is first.\n\n"
        f"9 pages crawled from <{h}/> (2 sites), fetched from 2024-05-01 to 2024-05-03. Sections follow the site "
        "tree: a page, then the pages below it. Optional lists pages whose content repeats another page's. "
        "llms-full.txt holds the Markdown of every page listed here.\n\n"
        f"## A\n\n- [A]({h}/): Site A is first.\n- [Kept]({h}/kept): Under a failure.\n\n"
        f"## Optional (2)\n\n- [Optional]({h}/opt/): A page titled Optional.\n- [X]({h}/opt/x)\n\n"
        f"## B\n\n- [B]({g}/)\n- [Y]({g}/y): Why.\n\n"
        f"## Other pages\n\n- [Lone]({h}/lone): Alone.\n- [Extra]({h}/extra): Not in the tree.\n\n"
        f"## Optional\n\n- [/zz]({h}/zz): Same content as <{h}/kept>.\n"
    )
    full = (tmp_path / "to" / "llms-full.txt").read_text(encoding="utf-8")
    assert re.findall(r'^<doc title="[^"]*" url="([^"]*)">$', full, flags=re.MULTILINE) == [
        f"{h}/",
        f"{h}/kept",
        f"{h}/opt/",
        f"{h}/opt/x",
        f"{g}/",
        f"{g}/y",
        f"{h}/lone",
        f"{h}/extra",
        f"{h}/zz",
    ]
    assert (
        f'<doc title="X" url="{h}/opt/x">\n\\<doc title="x">\n\\</doc>\n</document> stays\n```\n\\</doc>\n```\n</doc>\n'
        in full
    )
    assert f'<doc title="B" url="{g}/">\n</doc>\n' in full


def test_nothing_to_name_the_files_by(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(ConfigError):
        write_llms_txt(str(tmp_path / "out"), str(tmp_path / "to"), [])
    assert os.listdir(tmp_path / "to") == []


def test_a_failed_seed_still_names_the_files(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "tree.txt").write_text("http://a.test:8080/\n", encoding="utf-8")
    records = [{"url": "http://a.test:8080/", "markdown": None, "error": "timeout"}]
    assert write_llms_txt(str(out), str(out), records) == {"pages": 0, "duplicates": 0, "sections": 0, "sites": 0}
    assert (out / "llms.txt").read_text(encoding="utf-8") == (
        "# a.test:8080\n\n> Pages crawled from <http://a.test:8080/>.\n\n"
        "0 pages crawled from <http://a.test:8080/>. Sections follow the site tree: a page, then the pages below "
        "it. llms-full.txt holds the Markdown of every page listed here.\n"
    )
    assert (out / "llms-full.txt").read_text(encoding="utf-8") == (
        "# a.test:8080\n\n> Pages crawled from <http://a.test:8080/>.\n\n"
    )


FIRST_SENTENCES = [
    ("# Title\n\nFirst para. Second.", "First para."),
    ("Title\n=====\n\nBody text.", "Body text."),  # a setext heading
    ("Sub\n---\n\nBody.", "Body."),
    ("```python\ncode. Here\n```\n\nReal text. More.", "Real text."),
    ("~~~\nfenced ~\n~~~\n\nTilde done.", "Tilde done."),
    ("    indented code.\n\nAfter code.", "After code."),
    ("***\n\nAfter a break.", "After a break."),
    ("| a | b |\n|---|---|\n| 1 | 2 |\n\nAfter the table.", "After the table."),
    ("<div>html</div>\n\nText.", "Text."),
    ("![logo](x.png)\n\nHello world! Bye.", "Hello world!"),
    ("[![logo](x.png)](/)\n\nHello world? Bye.", "Hello world?"),
    ("[Home](/) | [About](/a)\n\nText here.", "Text here."),  # a navigation line
    ("- [Nav](/)\n- [Other](/o)\n\n- An item.\n\nPara text.", "Para text."),  # paragraphs first
    ("- Only an item here. More", "Only an item here."),  # no paragraph: the first item
    ("> Quoted words. Here\n\n- item one", "Quoted words."),
    ("See [the docs](http://x/a.html) now. More.", "See the docs now."),
    ("Visit <https://example.com/x>. Then.", "Visit https://example.com/x."),
    ("Mail <a@example.com> now. Then.", "Mail a@example.com now."),
    ("This is **bold**, __strong__, *em*, _it_ and ~~gone~~. Next.", "This is bold, strong, em, it and gone."),
    ("Call my_func_name or 2 * 3 * 4 today. Next.", "Call my_func_name or 2 * 3 * 4 today."),
    ("Run `pip install x.y`. Done.", "Run pip install x.y."),
    ("Code `a\\*b` and \\*not em\\*. Next.", "Code a\\*b and *not em*."),
    ("AT&amp;T is &lt;big&gt;. Then.", "AT&T is <big>."),
    ("Line one\ncontinues here. Next.", "Line one continues here."),
    ("Use tools, e.g. this one. Then more.", "Use tools, e.g. this one."),
    ("Use tools (e.g. Python) daily. Then.", "Use tools (e.g. Python) daily."),
    ("Dr. Smith wrote it. Next.", "Dr. Smith wrote it."),
    ("J. R. R. Tolkien wrote books. Yes.", "J. R. R. Tolkien wrote books."),
    ("Apples, pears, etc. and more. Fine.", "Apples, pears, etc. and more."),
    ("Apples, pears, etc. Then more.", "Apples, pears, etc."),
    ("Yahoo! is a company. Next.", "Yahoo! is a company."),
    ('He said "hi." Then left.', 'He said "hi."'),
    ("Version 3.11 is out. Yes.", "Version 3.11 is out."),
    ("# Only a heading", ""),
    ("", ""),
]


@pytest.mark.parametrize("markdown, expected", FIRST_SENTENCES)
def test_first_sentence(markdown, expected):
    assert first_sentence(markdown) == expected


def test_first_sentence_is_cut_at_a_space_within_the_limit():
    note = first_sentence("A " + "very " * 60 + "long sentence.")
    assert note == "A " + "very " * 38 + "very…"  # the 199th character is inside a word
    assert first_sentence("x" * 300) == "x" * (MAX_NOTE - 1) + "…"
    assert first_sentence("Short, " + "x" * 300) == "Short, " + "x" * (MAX_NOTE - 8) + "…"


def test_titles_and_urls_in_a_list_line():
    assert link_text("API [v2] \\ [draft]") == "API (v2) \\\\ (draft)"
    assert link_url("http://a.test/a b(1)<x>\t") == "http://a.test/a%20b%281%29%3Cx%3E%09"
    assert page_title("http://a.test/", "  Two\n words ") == "Two words"
    assert page_title("http://a.test:81/", None) == "a.test:81"
    assert page_title("http://a.test/p/q.html?x=1", "") == "/p/q.html?x=1"
    line = f"- [{link_text('a [b] c')}]({link_url('http://a.test/(x) y')}): note"
    assert REFERENCE_LINE.fullmatch(line).groupdict() == {
        "title": "a (b) c",
        "url": "http://a.test/%28x%29%20y",
        "desc": "note",
    }
    text = link_text("a [b] c\\")
    tokens = MarkdownIt("commonmark").parseInline(f"[{text}](u)")[0].children
    assert [t.type for t in tokens] == ["link_open", "text", "link_close"] and tokens[1].content == "a (b) c\\"


def test_sections_from_a_tree():
    tree = [(0, "r"), (1, "a"), (1, "b"), (2, "b1"), (3, "b2"), (1, "c"), (2, "d"), (3, "e"), (0, "s"), (0, "t")]
    duplicates = {"r": False, "a": False, "b": False, "b1": False, "b2": False, "c": False, "e": False}
    duplicates |= {"s": False, "t": False, "a2": True}
    order = listed_order(tree, duplicates.get)  # d is not listed: e hangs from c
    assert order == [(0, "r"), (1, "a"), (1, "b"), (2, "b1"), (3, "b2"), (1, "c"), (2, "e"), (0, "s"), (0, "t")]
    titles = {"r": "Home", "a": "A", "b": "Same", "b1": "B1", "b2": "B2", "c": "same", "e": "E", "s": "S", "t": "T"}
    assert sections(order + [(None, "a2")], titles.__getitem__) == [
        ("Home", ["r", "a"]),
        ("Same", ["b", "b1", "b2"]),
        ("same (2)", ["c", "e"]),
        ("Other pages", ["s", "t"]),
        ("Optional", ["a2"]),
    ]
    assert sections([(0, "r")], {"r": "Optional"}.__getitem__) == [("Optional (2)", ["r"])]
