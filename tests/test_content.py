"""Main-content selection (crawler/content/main.py) and its use by the fetcher."""

from __future__ import annotations

import collections
import os
import re

import lxml.html
import pytest

from crawler.content import main as content
from crawler.content.main import main_content
from crawler.engine.worker import page_markdown
from crawler.web.decode import decode_html
from tests.helpers.crawlutil import run_crawl
from tests.helpers.siteserver import Route, SiteServer

BASE = "http://h/docs/guide.html"

CHROME = """<!DOCTYPE html><html><head><title>Guide</title></head><body>
<header><a href="/">Home</a> <a href="/about">About us</a></header>
<nav><ul><li><a href="/a">Section A</a></li><li><a href="/b">Section B</a></li></ul></nav>
<div id="cookie-banner">We use cookies. <button>Accept</button></div>
<main>
<h1>Install</h1>
<p>Read the <a href="setup.html">setup notes</a> first.</p>
<ul><li>one</li><li>two</li></ul>
<table><tr><th>key</th><th>value</th></tr><tr><td>a</td><td>1</td></tr></table>
<pre>x = 1
y = 2</pre>
<aside class="footnote">A footnote of the text.</aside>
</main>
<aside>Related posts</aside>
<footer>Copyright 2024</footer>
</body></html>"""

CHROME_MAIN_MD = (
    "# Install\n\nRead the [setup notes](http://h/docs/setup.html) first.\n\n  * one\n  * two\n\n"
    "| key | value |\n| --- | --- |\n| a | 1 |\n```\nx = 1\ny = 2\n```\n\nA footnote of the text."
)

# The same by the default converter, html-to-markdown (a crawl's).
CHROME_MAIN_DEFAULT_MD = (
    "# Install\n\nRead the [setup notes](http://h/docs/setup.html) first.\n\n- one\n- two\n\n"
    "| key | value |\n| --- | --- |\n| a | 1 |\n\n```\nx = 1\ny = 2\n```\n\nA footnote of the text."
)

# No landmark at all: the extractor (trafilatura) picks the article out of div soup.
SOUP = """<html><head><title>Post</title></head><body>
<div class="menu"><a href="/">Home</a> | <a href="/blog">Blog</a> | <a href="/contact">Contact</a></div>
<div class="content"><h2>Why crawlers need politeness</h2>
<p>A crawler that sends many requests at once to one server can slow it down for every other visitor, so polite crawlers limit the requests in flight per host.</p>
<p>They also honour the robots.txt file, which tells them which paths the site owner does not want crawled, and the Crawl-delay some sites ask for.</p>
<p>Finally they back off when the server answers 429 or 503, waiting as long as its Retry-After header says before the next attempt.</p>
</div>
<div class="sidebar"><h3>Archive</h3><a href="/2023">2023</a> <a href="/2022">2022</a></div>
</body></html>"""


def md(html: str, base: str, **settings) -> tuple[str, str]:
    """(Markdown, what was converted) by html2text, the converter these cases pin."""
    conversion, kind, error = page_markdown(html, base, converter="html2text", **settings)
    assert error is None and conversion.converter == "html2text"
    return conversion.markdown, kind


def test_landmarked_chrome_is_removed_and_the_body_kept():
    assert md(CHROME, BASE) == (CHROME_MAIN_MD, "main")


def test_a_page_that_opens_with_an_xml_declaration_keeps_its_main_content():
    # XHTML served as text/html: lxml refuses a str holding an encoding declaration, so
    # the tree is parsed from UTF-8 bytes (7 of the 990 dev-set pages open like this)
    assert md('<?xml version="1.0" encoding="UTF-8"?>\n' + CHROME, BASE) == (CHROME_MAIN_MD, "main")


def test_keep_boilerplate_converts_the_whole_page():
    assert md(CHROME, BASE, keep_boilerplate=True) == (
        "[Home](http://h/) [About us](http://h/about)\n\n"
        "  * [Section A](http://h/a)\n  * [Section B](http://h/b)\n\n"
        "We use cookies. Accept\n\n" + CHROME_MAIN_MD + "\n\nRelated posts\n\nCopyright 2024",
        "page",
    )


def test_without_landmarks_the_extractor_selects_the_article():
    assert md(SOUP, BASE) == (
        "## Why crawlers need politeness\n\n"
        "A crawler that sends many requests at once to one server can slow it down for every other "
        "visitor, so polite crawlers limit the requests in flight per host.\n\n"
        "They also honour the robots.txt file, which tells them which paths the site owner does not "
        "want crawled, and the Crawl-delay some sites ask for.\n\n"
        "Finally they back off when the server answers 429 or 503, waiting as long as its "
        "Retry-After header says before the next attempt.",
        "main",
    )


def test_extracted_inline_code_stays_inline_and_blocks_stay_blocks():
    html = (
        "<html><body><div class='menu'><a href='/'>Home</a></div><div>"
        "<p>Call <code>crawl()</code> with a <a href='config.html'><code>CrawlConfig</code></a> "
        "and read the records it writes to the output folder, one per page.</p>"
        "<pre>crawl(config)\nprint(done)</pre>"
        "<p>The records are JSON lines, one file per fetcher process, appended to and never "
        "rewritten by a resumed crawl.</p></div></body></html>"
    )
    assert md(html, BASE) == (
        "Call `crawl()` with a [`CrawlConfig`](http://h/docs/config.html) and read the records it "
        "writes to the output folder, one per page.\n```\ncrawl(config)\nprint(done)\n```\n\n"
        "The records are JSON lines, one file per fetcher process, appended to and never rewritten "
        "by a resumed crawl.",
        "main",
    )


def test_an_extracted_pre_code_block_is_one_fenced_block():
    # trafilatura nests <code> in <code> for <pre><code>: its rendering once gave a third fence
    html = (
        "<html><body><div class='content'><p>Intro paragraph with enough words to count as "
        "a body of text here.</p><pre><code>x = 1\ny = 2</code></pre><p>after</p></div>"
        "</body></html>"
    )
    assert md(html, BASE) == (
        "Intro paragraph with enough words to count as a body of text here.\n```\nx = 1\ny = 2\n```\n\nafter",
        "main",
    )


def test_a_short_page_the_extractor_would_flatten_keeps_its_blocks():
    # trafilatura's baseline fall-back (short text) returns one paragraph of all the text
    html = "<html><body><h1>Same</h1><p>Same words.</p></body></html>"
    assert main_content(html) == "<body><h1>Same</h1><p>Same words.</p></body>"
    assert md(html, BASE) == ("# Same\n\nSame words.", "main")


@pytest.mark.parametrize(
    "token, removed",
    [
        ("cookie-banner", True),
        ("cookieConsent", True),
        ("CybotCookiebotDialog", True),
        ("gdpr-notice", True),
        ("cookie_notice", True),
        ("cookie-law-info-bar", True),
        ("cookie-list", False),
        ("cookies", False),
        ("fortune-cookie", False),
    ],
)
def test_consent_banners_go_but_a_bare_cookie_class_stays(token, removed):
    html = (
        f"<html><body><div class='{token}'>Chocolate chip and oatmeal raisin.</div>"
        "<main><p>Bake at 180 degrees for twelve minutes.</p></main></body></html>"
    )
    expected = "<main><p>Bake at 180 degrees for twelve minutes.</p></main>"
    assert main_content(html) == expected  # the main landmark is the content either way
    stripped = lxml.html.document_fromstring(html)
    content._strip_chrome(stripped)
    assert ("Chocolate" not in stripped.text_content()) is removed


P1 = "Install the package with pip and read the whole page before you start, it matters a lot."
P2 = "Do step one, then step two, and check the output of each before going on to the next one."


def test_without_a_landmark_the_region_keeps_notes_code_tables_and_headings():
    # found by a tester: trafilatura's own rendering lost the aside, the table and the
    # code block's lines; the page's HTML of the region it selects keeps them
    html = (
        f"<html><body><div class='menu'><a href='/'>Home</a> | <a href='/b'>Blog</a></div><div>"
        f"<h1>Setup notes</h1><p>{P1}</p><aside class='note'><p>Warning: never run this in "
        f"production without a backup; data loss follows.</p></aside><h2>Steps</h2><p>{P2}</p>"
        "<pre>pip install thing\nthing --init</pre><table><tr><th>option</th><th>value</th></tr>"
        "<tr><td>opt</td><td>val</td></tr></table></div></body></html>"
    )
    assert md(html, BASE) == (
        f"# Setup notes\n\n{P1}\n\nWarning: never run this in production without a backup; data "
        f"loss follows.\n\n## Steps\n\n{P2}\n```\npip install thing\nthing --init\n```\n\n"
        "| option | value |\n| --- | --- |\n| opt | val |",
        "main",
    )


def test_a_header_inside_the_text_stays_a_page_level_footer_goes():
    html = (
        f"<html><body><div class='content'><header><h1>Release 2.0 is out</h1><p>Posted by Ann "
        f"on 2024-01-01</p></header><p>{P1}</p><p>{P2}</p></div><footer>Copyright 2024 Example"
        "</footer></body></html>"
    )
    assert md(html, BASE) == (f"# Release 2.0 is out\n\nPosted by Ann on 2024-01-01\n\n{P1}\n\n{P2}", "main")


def test_the_region_keeps_the_title_before_it_and_drops_unselected_link_blocks():
    # a blog theme: the title outside the entry's div, tags and widgets of links
    html = (
        f"<html><body><div id='page'><div class='site-header'><a href='/'>Example blog</a></div>"
        f"<div class='wrap'><h1 class='entry-title'>A post title</h1><div class='entry-content'>"
        f"<p>{P1}</p><p>{P2}</p><div class='tags'><a href='/t/a'>alpha</a> <a href='/t/b'>beta</a>"
        " <a href='/t/c'>gamma</a></div></div></div><div class='widgets'><h3>Archive</h3>"
        "<a href='/2023'>2023</a> <a href='/2022'>2022</a></div></div></body></html>"
    )
    assert md(html, BASE) == (f"# A post title\n\n{P1}\n\n{P2}", "main")


P3 = "Readers asked for longer opening hours, and the council agreed to open on Sundays from May."
LIBRARY = (
    "# Library stays open\n\nThe council voted on Tuesday to keep the old library open for another ten "
    "years at least.\n\nIts reading room, built in 1911, will be restored first, and the archive moves to the "
    "cellar.\n\n"
)
L1, L2 = LIBRARY.split("\n\n")[1:3]


def default_md(html: str) -> str:
    """The Markdown a crawl writes (the default converter); the page's main content."""
    conversion, kind, error = page_markdown(html, "http://h/news/story.html")
    assert (kind, error) == ("main", None)
    return conversion.markdown


def test_a_news_landmark_loses_its_teasers_and_comments_and_keeps_its_table():
    # node-level selection (crawler/content/nodes.py): the teaser block names nothing,
    # so only the extractor's decision takes it out of the landmark
    html = (
        "<html><body><header><a href='/'>City News</a></header><main><article><h1>Library stays open</h1>"
        f"<p>{L1}</p><p>{L2}</p><h2>Opening hours</h2><p>{P3}</p>"
        "<table><tr><th>day</th><th>hours</th></tr><tr><td>Sunday</td><td>10-16</td></tr></table></article>"
        "<div class='more'><h3>More from the city</h3><div><a href='/a'>Bus lines change in June</a></div>"
        "<div><a href='/b'>New bridge opens to cyclists</a></div></div>"
        "<section id='comments'><h3>2 comments</h3><div class='c'><p>Great news for the town, thanks!</p></div>"
        "</section></main><footer>Copyright City News</footer></body></html>"
    )
    assert (
        default_md(html) == f"{LIBRARY}## Opening hours\n\n{P3}\n\n| day | hours |\n| --- | --- |\n| Sunday | 10-16 |"
    )


def test_a_blog_post_loses_its_share_bar():
    # no landmark, no names: the bar's label was kept by the region before
    html = (
        "<html><body><div id='top'><a href='/'>Ann's blog</a></div><div class='wrap'><div class='post'>"
        f"<h1>Library stays open</h1><p>{L1}</p><p>{L2}</p><p>{P3}</p><div class='bar'>Liked it? Tell your "
        "friends: <a href='https://twitter.com/x'>Tweet</a> <a href='https://facebook.com/y'>Facebook</a> "
        "<span>Print</span></div></div><div class='side'><h3>Archive</h3><a href='/2023'>2023</a></div></div>"
        "</body></html>"
    )
    assert default_md(html) == f"{LIBRARY}{P3}"


def test_a_docs_page_without_a_landmark_keeps_every_sentence_and_code_block():
    # what extractors leave out of docs: the sentence before a code block, one-line
    # API descriptions, version notes (django-doc's layout, reduced)
    html = (
        "<html><body><div id='hd'><h1><a href='/'>Django documentation</a></h1><div id='global-nav'>"
        "<a href='/'>Home</a> | <a href='/toc'>Contents</a> | <a href='/ix'>Index</a></div></div><div id='bd'>"
        f"<div class='section' id='s-prefetch'><h2>prefetch_related()</h2><p>{L1}</p><p>For example, suppose "
        "you have these models:</p><div class='highlight'><pre>class Topping(models.Model):\n    name = 1</pre>"
        "</div><p>and run:</p><div class='highlight'><pre>Pizza.objects.prefetch_related('toppings')</pre></div>"
        f"<p>{L2}</p><dl class='method'><dt>get_prefetch_queryset()</dt><dd><p>Returns a tuple.</p></dd></dl>"
        "<div class='versionchanged'><span class='title'>Changed in Django 3.2:</span> <p>In previous versions "
        "the lookup was ignored.</p></div></div></div></body></html>"
    )
    assert default_md(html) == (
        f"## prefetch_related()\n\n{L1}\n\nFor example, suppose you have these models:\n\n```\n"
        "class Topping(models.Model):\n    name = 1\n```\n\nand run:\n\n```\n"
        f"Pizza.objects.prefetch_related('toppings')\n```\n\n{L2}\n\nget_prefetch_queryset()\n\n"
        "Returns a tuple.\n\nChanged in Django 3.2:\n\nIn previous versions the lookup was ignored."
    )


def test_a_page_over_the_extraction_cap_keeps_what_the_pre_pass_kept(monkeypatch):
    # a reviewer measured 27 s of selection on a 6.4 MB page: past the cap, no extractor
    def extractor_must_not_run(root):
        raise AssertionError("the extractor ran")

    monkeypatch.setattr(content, "_extract_text", extractor_must_not_run)
    monkeypatch.setattr(content, "MAX_EXTRACT_CHARS", 100)
    html = (
        f"<html><body><nav><a href='/'>Home</a></nav><div class='menu'>Menu text</div>"
        f"<div><p>{P1}</p></div></body></html>"
    )
    assert main_content(html) == f"<body><div class=\"menu\">Menu text</div><div><p>{P1}</p></div></body>"


def test_a_link_dense_page_keeps_every_link_the_pre_pass_kept():
    html = (
        "<html><body><nav><a href='/'>Home</a></nav><ul><li><a href='a'>Alpha</a></li>"
        "<li><a href='b'>Beta</a> page</li></ul></body></html>"
    )
    assert md(html, "http://h/") == ("  * [Alpha](http://h/a)\n  * [Beta](http://h/b) page", "main")


def test_a_page_that_is_all_chrome_falls_back_to_the_whole_page():
    html = "<html><body><nav><a href='/'>Home</a> <a href='/x'>X</a></nav></body></html>"
    assert main_content(html) is None
    assert md(html, "http://h/") == ("[Home](http://h/) [X](http://h/x)", "page")


@pytest.mark.parametrize("selected", [None, "tiny"])
def test_an_extractor_finding_nothing_usable_falls_back_to_the_whole_page(monkeypatch, selected):
    monkeypatch.setattr(content, "_extract_text", lambda root: selected)
    assert main_content(SOUP) is None
    markdown, kind = md(SOUP, BASE)
    assert kind == "page" and markdown.startswith("[Home](http://h/) | [Blog](http://h/blog)")


@pytest.mark.parametrize("html", ["", "   ", "<html></html>", "<!-- only a comment -->"])
def test_empty_documents_give_none(html):
    assert main_content(html) is None


def test_header_inside_an_article_and_two_mains_are_kept():
    html = (
        "<html><body><header>Site banner</header><article><header><h1>Title</h1></header>"
        "<p>Body text of the article, long enough to be the article.</p></article>"
        "<footer>Site footer</footer></body></html>"
    )
    assert md(html, "http://h/")[0] == "# Title\n\nBody text of the article, long enough to be the article."


FLASK = "/usr/share/doc/python-flask-doc/html"
PYTHON = "/usr/share/doc/python3.11/html"
WORD = re.compile(r"[^\W_]+")  # letters and digits: html2text writes emphasis as _x_
LETTERS = re.compile(r"[^\W\d_]{3}")  # a line with a word of 3 letters, not "* * *" or "|"


def _doc_pages(root: str) -> list[tuple[str, str]]:
    pages = []
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    text = decode_html(f.read(), "text/html")[0]
                pages.append(("http://127.0.0.1/" + os.path.relpath(path, root), text))
    return sorted(pages)


def _chrome_and_body(root: str):
    """(pages, repeated lines, pages whose main Markdown holds one, pages that lost words,
    counts of the ``content`` kinds).

    Repeated lines: non-empty lines of whole-page Markdown found on at least half the
    pages (code fences aside). Lost words: words of the whole-page Markdown missing from
    the main-content Markdown that are not words of the chrome's own Markdown (the page
    with its ``role=main`` element deleted): text of the body that was dropped."""
    pages = _doc_pages(root)
    whole, main = {}, {}
    for url, text in pages:
        whole[url] = md(text, url, keep_boilerplate=True)[0]
        main[url] = md(text, url)
    seen = collections.Counter()
    for markdown in whole.values():
        seen.update({line for line in markdown.splitlines() if LETTERS.search(line) and not line.startswith("```")})
    repeated = {line for line, n in seen.items() if n >= len(pages) / 2}
    with_chrome = [url for url, (md, _) in main.items() if repeated & set(md.splitlines())]
    lost = {}
    for url, text in pages:
        tree = lxml.html.document_fromstring(text)
        tree.xpath("//*[@role='main']")[0].drop_tree()
        chrome = md(lxml.html.tostring(tree, encoding="unicode"), url, keep_boilerplate=True)[0]
        missing = (
            collections.Counter(WORD.findall(whole[url]))
            - collections.Counter(WORD.findall(main[url][0]))
            - collections.Counter(WORD.findall(chrome))
        )
        if missing:
            lost[url] = missing
    kinds = collections.Counter(kind for _, kind in main.values())
    return len(pages), repeated, with_chrome, lost, kinds


# Measured (see the module docstring of crawler/content/main.py): flask-doc has 77 pages, 9
# lines repeated on at least half of them in whole-page Markdown, none of them on any page
# of main-content Markdown, every page "main" and no body word lost.
# python3.11-doc: 530 pages, 20 such lines, none left, and no body word lost. (Seven
# pages once showed words of the whole page missing from the main content: the URLs of
# links inside <pre> and underscore tokens, which came from the whole page being converted
# untidied; it is tidied as the main content is now, crawler/content/main.py whole_page.)
FIGURES = {
    FLASK: (77, 9, set()),
    PYTHON: (530, 20, set()),
}


@pytest.mark.parametrize("root", [FLASK, PYTHON])
def test_real_docs_navigation_gone_body_intact(root):
    if not os.path.isdir(root):
        pytest.skip(f"{root} is not installed (apt-get install python-flask-doc / python3.11-doc)")
    n, repeated, with_chrome, lost, kinds = _chrome_and_body(root)
    assert (n, len(repeated), set(lost)) == FIGURES[root]
    assert "### Navigation" in repeated
    assert with_chrome == []
    assert kinds == {"main": n}


def test_crawl_writes_main_content_markdown_and_follows_navigation_links(tmp_path):
    with SiteServer() as server:
        server.routes.update(
            {
                "/": Route(CHROME.replace('href="/a"', 'href="/a.html"')),
                "/a.html": Route(
                    "<html><body><nav><a href='/'>Home</a></nav><main><p>Page A.</p></main></body></html>"
                ),
            }
        )
        summary, records = run_crawl(tmp_path, server.url("/"), obey_robots=False)
        home, a = records[server.url("/")], records[server.url("/a.html")]
        assert home["markdown"] == CHROME_MAIN_DEFAULT_MD.replace("http://h/docs/", server.url("/"))
        assert home["converter"] == "html-to-markdown" and home["fallback_error"] is None
        assert (home["content"], a["content"], a["markdown"]) == ("main", "main", "Page A.")
        assert home["title"] == "Guide"
        assert server.hits["/a.html"] == 1  # found only in the nav: still followed
        assert set(records) == {server.url(p) for p in ("/", "/a.html", "/b", "/about", "/setup.html")}
        assert summary["pages"] == 2
