"""Boilerplate inside the main content (crawler/content/prune.py), and the region's
clean-up of what the extractor left out (crawler/content/main.py, step 4)."""

from __future__ import annotations

import lxml.html
import pytest

from crawler.content.prune import BOILERPLATE, prune
from crawler.engine.worker import page_markdown

BASE = "http://h/news/story.html"
P1 = "The council voted on Tuesday to keep the old library open for another ten years at least."
P2 = "Its reading room, built in 1911, will be restored first, and the archive moves to the cellar."


def md(html: str) -> tuple[str, str]:
    """(Markdown by the default converter, what was converted), as a crawl writes it."""
    conversion, kind, error = page_markdown(html, BASE)
    assert error is None
    return conversion.markdown, kind


@pytest.mark.parametrize(
    ("names", "named"),
    [
        ("comment-respond", True),
        ("comments-area", True),
        ("shareBar", True),  # a case change cuts the parts
        ("post-share", True),
        ("related-posts", True),
        ("relatedlinks", True),
        ("widget widget_text", True),
        ("ads-box", True),
        ("entry-meta", True),
        ("author-bio", True),
        ("padding", False),  # "ad" inside a word
        ("loads", False),
        ("headline", False),
        ("Section--Ads", False),  # a BEM modifier describes the block
        ("o-section--has-ads", False),
        ("no-sidebar", False),
        ("c-fixed-sidebar-layout", False),
        ("sidebar-title", False),
        ("elementor-widget", False),  # a page builder's every block
        ("node-promoted", False),
        ("article-teaser", False),  # a German CMS's lead paragraph
    ],
)
def test_boilerplate_words_are_whole_parts_of_a_name(names, named):
    assert (BOILERPLATE.search(names) is not None) is named


def test_a_news_article_loses_its_share_bar_author_box_related_list_and_comments():
    html = (
        "<html><body><main><article><h1>Library stays open</h1>"
        "<div class='share-buttons'><a href='https://x.example/s'>Share</a> <a href='mailto:'>Mail</a></div>"
        f"<p>{P1}</p><p>{P2}</p>"
        "<div class='author-box'><p>Ann Lee writes about the city for the paper.</p></div>"
        "</article>"
        "<section class='related-articles'><h2>Read more</h2><ul><li><a href='/a'>Bridge closes</a></li>"
        "<li><a href='/b'>New mayor</a></li></ul></section>"
        "<div id='comments'><h3>2 comments</h3><p>Great news, finally!</p></div>"
        "<form id='commentform'><label>Your comment</label><textarea></textarea></form>"
        "</main><footer>Copyright 2024 The Paper</footer></body></html>"
    )
    assert md(html) == (f"# Library stays open\n\n{P1}\n\n{P2}", "main")


def test_a_blog_post_keeps_its_text_table_code_and_quotation_and_loses_its_meta_and_tags():
    html = (
        "<html><body><div id='page'><div class='site-title'><a href='/'>A blog</a></div>"
        "<main><div class='post'><h1>Counting words</h1>"
        "<p class='post-meta'>Posted on 3 May by Bo</p>"
        f"<p>{P1}</p><pre>wc -w story.txt</pre>"
        "<table><tr><th>file</th><th>words</th></tr><tr><td>story.txt</td><td>120</td></tr></table>"
        f"<blockquote><p>{P2}</p></blockquote>"
        "<div class='tags'><a href='/t/unix'>unix</a> <a href='/t/text'>text</a></div>"
        "<footer class='entry-footer'>Filed under Tools</footer>"
        "</div></main></div></body></html>"
    )
    assert md(html) == (
        f"# Counting words\n\n{P1}\n\n```\nwc -w story.txt\n```\n\n| file | words |\n| --- | --- |\n"
        f"| story.txt | 120 |\n\n> {P2}",
        "main",
    )


def test_a_docs_page_keeps_sections_named_after_their_headings_and_docutils_sidebars():
    # docutils writes a section's id from its heading, an admonition's class from its
    # title and a sidebar directive as aside.sidebar: all of it is the text
    html = (
        "<html><body><div role='main'><section id='buffer-related-functions'><h2>Buffer-related"
        f" functions</h2><p>{P1}</p></section>"
        "<div class='section' id='s-comments'><span id='comments'></span><h2>Comments</h2>"
        f"<p>{P2}</p></div>"
        "<div class='admonition-you-can-t-share-pickles-between-versions admonition'>"
        "<p class='admonition-title'>Pickles</p><p>Do not share them.</p></div>"
        "<aside class='sidebar'><p class='sidebar-title'>Aside</p><p>A sidebar of the text.</p></aside>"
        "</div></body></html>"
    )
    assert md(html) == (
        f"## Buffer-related functions\n\n{P1}\n\n## Comments\n\n{P2}\n\nPickles\n\nDo not share them.\n\n"
        "Aside\n\nA sidebar of the text.",
        "main",
    )


def test_a_wrapper_holding_most_of_the_text_or_the_title_stays_whatever_its_name():
    html = (
        "<main><div class='post-with-comments'>"
        f"<p>{P1}</p><p>{P2}</p></div><div class='social'><h1>The title</h1><p>short</p></div></main>"
    )
    region = lxml.html.fromstring(html)
    prune(region)
    assert [el.get("class") for el in region] == ["post-with-comments", "social"]


def test_code_inside_the_region_is_not_looked_into():
    region = lxml.html.fromstring(
        f"<main><p>{P1}</p><pre><span class='comment'># note</span>\nx = 1<div class='share'>y</div></pre>"
        "<code><span class='share'>share()</span><p class='meta'>z</p><form>q</form></code></main>"
    )
    prune(region)
    assert region.text_content() == f"{P1}# note\nx = 1yshare()zq"


def test_a_quotations_attribution_a_titled_admonition_and_a_data_table_stay():
    # found by a reviewer: each went as a footer, a "related" name or a "ratings" name
    html = (
        f"<html><body><main><h1>Notes</h1><p>{P1}</p>"
        "<blockquote><p>Now is better than never.</p><footer>Tim Peters</footer></blockquote>"
        "<div class='admonition-related-topics admonition'><p class='admonition-title'>Related topics</p>"
        "<p>Read the tutorial first.</p></div>"
        "<table class='ratings'><tr><th>film</th><th>stars</th></tr><tr><td>Heat</td><td>5</td></tr></table>"
        "</main></body></html>"
    )
    assert md(html) == (
        f"# Notes\n\n{P1}\n> Now is better than never.\n>\n> Tim Peters\n\nRelated topics\n\n"
        "Read the tutorial first.\n\n| film | stars |\n| --- | --- |\n| Heat | 5 |",
        "main",
    )


def test_a_docs_page_without_a_landmark_keeps_its_sections_and_code():
    # a Sphinx layout with role=main removed: the chrome goes by the pre-pass, the region
    # is trafilatura's, and prune reads the section ids as the headings' slugs
    html = (
        "<html><body><div class='related'><a href='/'>index</a> | <a href='/mod'>modules</a></div>"
        "<div class='document'><div class='body'><section id='buffer-related-functions'>"
        f"<h1>Buffer-related functions</h1><p>{P1}</p><section id='comments'><h2>Comments</h2><p>{P2}</p>"
        "<div class='highlight'><pre>x = buffer(1)</pre></div></section></section></div></div>"
        "<div class='sphinxsidebar'><h3>Navigation</h3><ul><li><a href='/a'>A</a></li></ul></div>"
        "<div class='footer'>© Copyright 2024.</div></body></html>"
    )
    assert md(html) == (
        f"# Buffer-related functions\n\n{P1}\n\n## Comments\n\n{P2}\n\n```\nx = buffer(1)\n```",
        "main",
    )


def test_a_form_feed_beside_a_dropped_block_does_not_break_the_selection():
    # found by a reviewer: lxml refused the joined tail text (ValueError), and the page
    # fell back to the whole page with its navigation
    html = (
        f"<html><body><nav><a href='/'>Home</a></nav><main><p>{P1}</p>\x0c"
        f"<div class='share'>Share</div>\n<p>{P2}</p></main></body></html>"
    )
    conversion, kind, error = page_markdown(html, BASE)
    assert (conversion.markdown, kind, error) == (f"{P1}\n\n{P2}", "main", None)


def test_a_thread_whose_posts_are_named_comments_is_the_text():
    # an issue page or forum thread: every post is a div.comment; together they are most
    # of the text, so the name describes the text
    posts = "".join(f"<div class='comment'><p>{text}</p></div>" for text in (P1, P2, P1.upper()))
    html = f"<html><body><main><h1>Build fails on ARM64</h1>{posts}<div class='share'>Share</div></main></body></html>"
    assert md(html) == (f"# Build fails on ARM64\n\n{P1}\n\n{P2}\n\n{P1.upper()}\n\nShare", "main")


def test_a_numbered_sections_id_is_the_slug_of_its_title_without_the_number():
    # pandoc and Quarto put the number in its own span, with no dot after it
    html = (
        f"<html><body><main><h1>A study</h1><p>{P1}</p><section id='related-work'><h2>"
        f"<span class='header-section-number'>2</span> Related work</h2><p>{P2}</p></section></main></body></html>"
    )
    assert md(html) == (f"# A study\n\n{P1}\n\n## 2 Related work\n\n{P2}", "main")


def test_a_named_block_inside_a_dropped_one_is_counted_once():
    # the related box holds 40% of the text with its share bar; counted twice (once for
    # each name) the named blocks would reach half the text and all stay, as a thread
    words = " ".join(f"w{i}" for i in range(60))
    share = " ".join(f"s{i}" for i in range(20))
    region = lxml.html.fromstring(
        f"<main><p>{words}</p><div class='related'><p>{share}</p><div class='share'>{share}</div></div></main>"
    )
    prune(region)
    assert [el.tag for el in region] == ["p"]


_READING = "<h2>Further reading</h2><ul><li><a href='/a'>The tutorial</a></li><li><a href='/b'>The API</a></li></ul>"


def test_a_landmark_without_named_boilerplate_is_kept_whole_and_the_extractor_never_runs(monkeypatch):
    # a Sphinx page's main: the author's text, nothing inside names boilerplate
    import crawler.content.main as main_module

    def no_extractor(document):
        raise AssertionError("the extractor ran on a landmark that names no boilerplate")

    monkeypatch.setattr(main_module, "_extract_text", no_extractor)
    html = (
        "<html><body><main><h1>Library stays open</h1>"
        f"<p>{P1}</p><div class='elsewhere'><h2>Elsewhere</h2><p>{P2}</p></div></main></body></html>"
    )
    assert md(html) == (f"# Library stays open\n\n{P1}\n\n## Elsewhere\n\n{P2}", "main")


@pytest.mark.parametrize(
    ("html", "markdown"),
    [
        (  # a reply form beside a thread of comments (kept by prune as the text)
            "<html><body><main><h1>Crash on empty input</h1><p>Parsing an empty file fails.</p>"
            f"<div class='comment'><p>{P1}</p></div><div class='comment'><p>{P2}</p></div>"
            "<form action='/comment'><textarea name='body'></textarea></form></main></body></html>",
            f"# Crash on empty input\n\nParsing an empty file fails.\n\n{P1}\n\n{P2}",
        ),
        (  # named breadcrumbs beside a docs page's text and its link list
            "<html><body><main><div class='breadcrumbs'><a href='/'>Docs</a></div>"
            f"<div class='text'><h1>Library stays open</h1><p>{P1}</p><div class='photo'><p>Photo: the hall.</p></div>"
            f"{_READING}</div></main></body></html>",
            f"# Library stays open\n\n{P1}\n\nPhoto: the hall.\n\n## Further reading\n\n"
            "- [The tutorial](http://h/a)\n- [The API](http://h/b)",
        ),
    ],
    ids=["thread-and-form", "breadcrumbs-and-links"],
)
def test_a_landmark_naming_boilerplate_keeps_its_text_after_the_extractor_ran(monkeypatch, html, markdown):
    # the extractor decides node by node inside such a landmark (crawler/content/nodes.py);
    # an earlier region rule lost a thread's comments and link lists (docs/performance.md)
    import crawler.content.main as main_module

    documents = []
    extract = main_module._extract_text

    def read(document):
        documents.append(lxml.html.tostring(document, encoding="unicode"))
        return extract(document)

    monkeypatch.setattr(main_module, "_extract_text", read)
    html = html.replace("<body>", "<body><div class='banner'>Outside the landmark</div>")
    assert md(html) == (markdown, "main")
    assert len(documents) == 1 and "<main>" in documents[0] and "Outside the landmark" not in documents[0]


def test_text_after_an_html_comment_counts_as_selected(monkeypatch):
    # found by a reviewer: a comment's tail was not read, so a block whose selected text
    # follows a comment (Vue's <!--[--> markers) looked unselected and, half links, went
    import crawler.content.main as main_module

    monkeypatch.setattr(main_module, "_extract_text", lambda document: f"Library stays open {P1} Prices are listed at")
    html = (
        f"<html><body><div id='page'><div class='text'><h1>Library stays open</h1><p>{P1}</p>"
        "<div><!--[-->Prices are listed at <a href='/p'>the full price list page</a></div></div></div></body></html>"
    )
    # the block stays; its link, whose text the extractor did not select, goes as before
    assert md(html) == (f"# Library stays open\n\n{P1}\n\nPrices are listed at", "main")
