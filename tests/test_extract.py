"""Tests for crawler.content.links: title/base/href extraction and link resolution (C08-C12)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.content.links import PageLinks, effective_base, extract, resolve_links
from crawler.web import urlnorm


def links(page_url: str, html: str) -> list[str]:
    return resolve_links(page_url, extract(html))


# --- extract(): the raw values -------------------------------------------------------------


def test_extract_basic_shapes():
    page = extract(
        "<html><head><title>Hello</title><base href='/root/'></head><body>"
        "<a href='a.html'>a</a><img src='i.png'><script src='s.js'></script>"
        "<link rel=stylesheet href='c.css'><map><area href='area.html'></map>"
        "<iframe src='frame.html'></iframe><frameset><frame src='f2.html'></frameset>"
        "<a name='no-href'>x</a><a href='a.html'>dup</a></body></html>"
    )
    assert page == PageLinks(
        title="Hello",
        base_href="/root/",
        hrefs=("a.html", "area.html", "frame.html", "f2.html", "a.html"),
    )


def test_extract_keeps_raw_values_entity_decoded():
    page = extract('<a href="\n\t  /x?a=1&amp;b=2  ">x</a><a href="Ab%7e">y</a>')
    assert page.hrefs == ("\n\t  /x?a=1&b=2  ", "Ab%7e")


def test_attribute_without_value_is_empty_string():
    assert extract("<a href>x</a>").hrefs == ("",)


def test_document_order_across_tag_kinds():
    page = extract('<iframe src="1"></iframe><a href="2"></a><area href="3"><a href="4"></a>')
    assert page.hrefs == ("1", "2", "3", "4")


def test_comments_script_and_textarea_are_not_links():
    page = extract(
        '<!-- <a href="c"> --><script>var s = "<a href=d>";</script>'
        '<textarea><a href="t"></textarea><a href="real">r</a>'
    )
    assert page.hrefs == ("real",)


def test_no_title():
    assert extract("<p>no title here</p>").title is None


def test_empty_title_is_none():
    assert extract("<title>  \n\t </title>").title is None


def test_title_with_newlines_collapsed():
    page = extract("<html><head><title>\n  The   quick\n\tbrown\r\n fox  </title></head></html>")
    assert page.title == "The quick brown fox"


def test_title_keeps_nbsp():
    # HTML "strip and collapse ASCII whitespace": U+00A0 is not ASCII whitespace.
    assert extract("<title>a\u00a0b</title>").title == "a\u00a0b"


def test_first_title_wins():
    assert extract("<title>One</title><title>Two</title>").title == "One"


def test_title_with_entities_and_unicode():
    assert extract("<title>Caf&eacute; &amp; Привет</title>").title == "Café & Привет"


def test_first_base_with_href_wins_target_only_skipped():
    page = extract('<base target="_blank"><base href="/first/"><base href="/second/">')
    assert page.base_href == "/first/"


def test_no_base():
    assert extract("<a href=x>").base_href is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "\x00\x01\x02",
        "\ufffd\ufffd garbage \x00",
        "<<<<>>>></a></title>",
        "<a href='x",
        "\ud800 lone surrogate <a href='y'>",
        '<?xml version="1.0" encoding="iso-8859-1"?><a href="z">',
    ],
)
def test_garbage_does_not_raise(text):
    page = extract(text)
    assert isinstance(page, PageLinks)


def test_unclosed_title_swallows_the_rest_like_a_browser():
    # <title> is an RCDATA element: without </title> the rest of the file is its text.
    page = extract("<title>T <a href='x'>y")
    assert page.title == "T <a href='x'>y"
    assert page.hrefs == ()


def test_empty_and_binary_give_empty_pagelinks():
    assert extract("") == PageLinks()
    assert extract(bytes(range(256)).decode("latin-1")) == PageLinks()


def test_malformed_html_still_yields_links():
    page = extract(
        "<html><title>Broken</title><p>unclosed <a href='one.html'>one<div><a href=two.html>two"
        "<table><tr><td><a href=\"three.html\">3</table></b></i><a href='four.html'"
    )
    assert page.title == "Broken"
    assert page.hrefs[:3] == ("one.html", "two.html", "three.html")


def test_xml_declaration_with_encoding_is_accepted():
    page = extract('<?xml version="1.0" encoding="iso-8859-1"?><html><a href="/é">x</a></html>')
    assert page.hrefs == ("/é",)


def test_meta_charset_in_decoded_text_is_ignored():
    page = extract('<meta charset="windows-1252"><title>Привет</title><a href="/é">')
    assert page.title == "Привет"
    assert page.hrefs == ("/é",)


def test_pagelinks_is_frozen():
    page = extract("<a href=x>")
    with pytest.raises(AttributeError):
        page.title = "changed"  # type: ignore[misc]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(list("<>/=\"' abhref\x00é\n") + ["<a href=", "</a>", "<title>", "<base href="]),
        max_size=60,
    )
)
def test_fuzz_never_raises(pieces):
    page = extract("".join(pieces))
    assert all(isinstance(h, str) for h in page.hrefs)


# --- C08: whitespace around an href ---------------------------------------------------------


def test_c08_href_with_newlines_tabs_and_spaces():
    html = '<a href="\n\t    /feeds/atom.xml\n\t  ">Atom</a>'
    assert links("http://example.com/blog/", html) == ["http://example.com/feeds/atom.xml"]


# --- C09: <base href> ----------------------------------------------------------------------


def test_c09a_absolute_base():
    html = (
        '<html><head><base href="https://example.com/">'
        '<link rel=stylesheet href="css/site.css"></head>'
        '<body><a href="page.php">p</a></body></html>'
    )
    page_url = "https://example.com/service/123/Title"
    page = extract(html)
    assert page.hrefs == ("page.php",)  # <link> is not a page link
    assert resolve_links(page_url, page) == ["https://example.com/page.php"]
    base = effective_base(page_url, page)
    assert base == "https://example.com/"
    # the stylesheet resolves against the same base, as the case expects
    assert urlnorm.normalize("css/site.css", base) == "https://example.com/css/site.css"


def test_c09b_relative_base_path():
    html = '<head><base href="/forum/"></head><a href="index.php/fa/9/0/">x</a>'
    assert links("https://example.com/forum/index.php/msg/77/", html) == ["https://example.com/forum/index.php/fa/9/0/"]


def test_c09c_relative_base_file():
    html = '<head><base href="myself.html"></head><a href="?param=value">x</a>'
    page_url = "http://example.com/dir/myself.html"
    assert effective_base(page_url, extract(html)) == "http://example.com/dir/myself.html"
    assert links(page_url, html) == ["http://example.com/dir/myself.html?param=value"]


def test_c09d_first_base_with_href_wins():
    html = '<head><base target="_blank"><base href="/first/"><base href="/second/"></head><a href="x">x</a>'
    page_url = "https://example.com/p/q"
    assert effective_base(page_url, extract(html)) == "https://example.com/first/"
    assert links(page_url, html) == ["https://example.com/first/x"]


def test_unusable_base_falls_back_to_page_url():
    html = '<base href="javascript:void(0)"><a href="x">x</a>'
    page_url = "https://example.com/a/b"
    assert effective_base(page_url, extract(html)) == page_url
    assert links(page_url, html) == ["https://example.com/a/x"]


def test_no_base_uses_page_url():
    page_url = "https://example.com/a/b"
    assert effective_base(page_url, extract("<a href=x>")) == page_url


# --- C10: relative paths against a file-like page URL -------------------------------------


@pytest.mark.parametrize(
    "page_url, hrefs, expected",
    [
        ("http://example.com/gov/spaq/t193.shtml", ["./P0201.xlsx"], ["http://example.com/gov/spaq/P0201.xlsx"]),
        (
            "https://example.com/English/index.html",
            ["blog/index.html"],
            ["https://example.com/English/blog/index.html"],
        ),
        (
            "https://example.com/curriculum.php",
            ["pdf/Course Information.pdf"],
            ["https://example.com/pdf/Course%20Information.pdf"],
        ),
        (
            "https://example.com/a/b/c/d.html",
            ["../../x.html", "../../../../x.html"],
            ["https://example.com/a/x.html", "https://example.com/x.html"],
        ),
    ],
    ids=["a", "b", "c", "d"],
)
def test_c10_relative_resolution(page_url, hrefs, expected):
    html = "<body>" + "".join(f'<a href="{h}">l</a>' for h in hrefs) + "</body>"
    assert links(page_url, html) == expected


# --- C11: protocol-relative links ----------------------------------------------------------


@pytest.mark.parametrize(
    "page_url, href, expected",
    [
        ("https://www.example.com/news/", "//cdn.example.org/lib/app.js", "https://cdn.example.org/lib/app.js"),
        ("http://www.example.com/news/", "//cdn.example.org/lib/app.js", "http://cdn.example.org/lib/app.js"),
        ("https://www.example.com/news/", "//WWW.example.com", "https://www.example.com/"),
    ],
    ids=["a", "b", "c"],
)
def test_c11_protocol_relative(page_url, href, expected):
    assert links(page_url, f'<a href="{href}">x</a>') == [expected]


# --- C12: non-http schemes, fragment-only, empty and '?' hrefs --------------------------------


def test_c12_filtering_and_special_references():
    page_url = "https://example.com/contact/?lang=en"
    hrefs = [
        "tel:+15550100",
        "mailto:info@example.com",
        "javascript:void(0)",
        "data:text/html,hi",
        "ftp://files.example.com/x",
        "#top",
        "",
        "   ",
        "?",
        "HTTPS://EXAMPLE.COM/about",
    ]
    html = "<body>" + "".join(f'<a href="{h}">l</a>' for h in hrefs) + "</body>"
    page = extract(html)
    assert page.hrefs == tuple(hrefs)
    assert resolve_links(page_url, page) == [
        "https://example.com/about",
        "https://example.com/contact/?",
        "https://example.com/contact/?lang=en",
    ]


@pytest.mark.parametrize("href", ["#top", "", "   "])
def test_c12_self_references_give_the_page(href):
    page_url = "https://example.com/contact/?lang=en"
    assert links(page_url, f'<a href="{href}">x</a>') == [page_url]


def test_c12_question_mark_is_a_different_url():
    page_url = "https://example.com/contact/?lang=en"
    assert links(page_url, '<a href="?">x</a>') == ["https://example.com/contact/?"]


@pytest.mark.parametrize(
    "href",
    [
        "tel:+15550100",
        "mailto:info@example.com",
        "javascript:void(0)",
        "data:text/html,hi",
        "ftp://files.example.com/x",
    ],
)
def test_c12_non_http_schemes_dropped(href):
    assert links("https://example.com/contact/?lang=en", f'<a href="{href}">x</a>') == []


# --- resolve_links shape -------------------------------------------------------------------


def test_resolve_links_sorted_and_deduplicated():
    html = '<a href="/b">1</a><a href="/a">2</a><a href="/b#frag">3</a><a href="/a">4</a>'
    assert links("https://example.com/", html) == ["https://example.com/a", "https://example.com/b"]


def test_resolve_links_empty_page():
    assert resolve_links("https://example.com/", PageLinks()) == []


# ------------------------------------------------ meta refresh and rel=canonical

from crawler.content.links import refresh_url  # noqa: E402


@pytest.mark.parametrize(
    "content, expected",
    [
        ("0; url=/next", "/next"),
        ("0;URL='/q'x", "/q"),
        ('0;url = "/x" trailing', "/x"),
        ("3, http://a/b", "http://a/b"),
        ("0 /plain", "/plain"),
        (" .5; url=/d", "/d"),
        ("0; urlfoo", "urlfoo"),  # "url" without "=" is the URL itself
        ("0; u", "u"),
        ("5", None),  # a reload of the same page
        ("0;url=", None),
        ("x; url=/no", None),  # no time: not a refresh
        ("", None),
    ],
)
def test_refresh_url_html_standard_steps(content, expected):
    assert refresh_url(content) == expected


def test_meta_refresh_is_a_link_and_canonical_is_kept_apart():
    links = extract(
        '<html><head><meta http-equiv="Refresh" content="2; URL=/a">'
        '<meta http-equiv="refresh" content="0; url=/b">'
        '<link rel="stylesheet" href="/s.css"><link rel="alternate CANONICAL" href="/c">'
        '<link rel="canonical" href="/d"></head><body><a href="/x">x</a></body></html>'
    )
    assert links.hrefs == ("/a", "/x") and links.canonical == "/c"
    assert extract("<p>none</p>").canonical is None
