"""Tests for crawler.content.markdown: html2text set up for an LLM corpus (C33, C34)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.content.links import effective_base, extract
from crawler.content.markdown import CorpusHTML2Text, to_markdown

PAGE = "https://example.com/section/page.html"


def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


# --- C33: no hard wrap, long URLs unbroken, images as alt text ------------------------------

C33_HTML = (
    '<p>Read <a href="https://example.com/articles/2024/05/a-really-long-slug-that-keeps-going-and-going.html">'
    'the article</a> and see <img alt="Chart" '
    'src="https://example.com/wp-content/uploads/2016/06/a-long-file-name-with-many-dashes-150x150.jpg"></p>'
)


def test_c33_long_link_unbroken_and_image_as_alt():
    md = to_markdown(C33_HTML, PAGE)
    link = "[the article](https://example.com/articles/2024/05/a-really-long-slug-that-keeps-going-and-going.html)"
    assert md == f"Read {link} and see Chart"
    assert "\n" not in md
    assert "wp-content" not in md  # project choice: images as alt text, no image URL


def test_no_hard_wrap_of_long_paragraphs_and_list_items():
    words = " ".join(["word"] * 60)
    assert to_markdown(f"<p>{words}</p>", PAGE) == words
    assert to_markdown(f"<ul><li>{words}</li></ul>", PAGE) == f"  * {words}"


# --- C34: <br> and '|' inside table cells ----------------------------------------------------

C34_HTML = "<table><tr><th>Rate<br>(low)</th><th>Modes</th></tr><tr><td>97%<br>avg</td><td>a|b</td></tr></table>"


def test_c34_exact():
    assert to_markdown(C34_HTML, PAGE) == "| Rate (low) | Modes |\n| --- | --- |\n| 97% avg | a\\|b |"


def test_c34_structure():
    lines = to_markdown(C34_HTML, PAGE).split("\n")
    assert len(lines) == 3
    counts = {unescaped_pipes(line) for line in lines}
    assert counts == {3}  # 2 columns with outer pipes: 3 separators on every line
    assert "\\|" in lines[2]


def test_table_br_p_and_lists_in_cells_stay_on_one_line():
    html = (
        "<table><tr><th>A</th><th>B</th><th>C</th></tr>"
        "<tr><td><p>p1</p><p>p2</p></td><td>x<br/>y<br>z</td><td><ul><li>i</li><li>j</li></ul></td></tr>"
        "</table>"
    )
    lines = to_markdown(html, PAGE).split("\n")
    assert len(lines) == 3
    assert lines[0] == "| A | B | C |"
    assert lines[1] == "| --- | --- | --- |"
    assert lines[2].startswith("| p1 p2 | x y z |")
    assert {unescaped_pipes(line) for line in lines} == {4}


def test_pipe_from_entity_and_in_code_escaped():
    html = "<table><tr><th>h1</th><th>h2</th></tr><tr><td>x&#124;y</td><td><code>a|b</code></td></tr></table>"
    assert to_markdown(html, PAGE) == "| h1 | h2 |\n| --- | --- |\n| x\\|y | `a\\|b` |"


def test_omitted_end_tags_and_nested_table():
    # The nested table is flattened into the outer cell. (The double space after
    # "outer" is html2text keeping the text's own trailing space plus the separator.)
    html = (
        "<table><tr><th>k<th>v"
        "<tr><td>a<td>outer <table><tr><td>in1<td>in2</table> tail"
        "<tr><td>b<td>c</table><p>after</p>"
    )
    assert to_markdown(html, PAGE) == ("| k | v |\n| --- | --- |\n| a | outer  in1 in2 tail |\n| b | c |\n\nafter")


def test_colspan_padded_with_empty_cells():
    html = "<table><tr><th colspan=3>Wide</th></tr><tr><td>a<td colspan=\"2\">bc</tr><tr><td colspan=2>ab<td>c</table>"
    md = to_markdown(html, PAGE)
    assert md == "| Wide | | |\n| --- | --- | --- |\n| a | bc | |\n| ab | | c |"
    assert {unescaped_pipes(line) for line in md.split("\n")} == {4}


def test_one_column_table_is_not_a_setext_heading():
    assert to_markdown("<table><tr><th>Only</th></tr><tr><td>v</td></tr></table>", PAGE) == ("| Only |\n| --- |\n| v |")


def test_adjacent_tables_are_separated():
    html = "<table><tr><td>a</td></tr></table><table><tr><td>b</td></tr></table>"
    assert to_markdown(html, PAGE) == "| a |\n| --- |\n\n| b |\n| --- |"


def test_br_outside_table_is_a_line_break():
    assert to_markdown("<p>one<br>two</p>", PAGE) == "one\ntwo"


# --- general conversion ----------------------------------------------------------------------


def test_headings():
    html = "<h1>Main</h1><p>Intro text.</p><h2>Part <em>two</em></h2><h3>Deep</h3><p>End.</p>"
    assert to_markdown(html, PAGE) == "# Main\n\nIntro text.\n\n## Part *two*\n\n### Deep\n\nEnd."


def test_relative_links_absolute_against_base_href():
    html = (
        '<html><head><base href="/docs/v2/"></head><body><p>See <a href="guide/intro.html">the guide</a>, '
        '<a href="../v1/old.html">v1</a> and <a href="https://other.example/x">elsewhere</a>.</p></body></html>'
    )
    base = effective_base(PAGE, extract(html))
    assert base == "https://example.com/docs/v2/"
    assert to_markdown(html, base) == (
        "See [the guide](https://example.com/docs/v2/guide/intro.html), "
        "[v1](https://example.com/docs/v1/old.html) and [elsewhere](https://other.example/x)."
    )


def test_relative_link_against_page_url():
    assert to_markdown('<a href="other.html">o</a>', PAGE) == "[o](https://example.com/section/other.html)"


def test_link_whitespace_cleaned_and_spaces_encoded():
    html = '<a href="\n\t  ../feeds/atom.xml\n ">feed</a> <a href="pdf/Course Information.pdf">pdf</a>'
    assert to_markdown(html, PAGE) == (
        "[feed](https://example.com/feeds/atom.xml) [pdf](https://example.com/section/pdf/Course%20Information.pdf)"
    )


def test_script_and_style_content_absent():
    html = (
        '<html><head><title>T</title><style>body { color: red }</style><script>var secret = "LEAK1";</script>'
        '</head><body><p>Visible</p><script type="text/javascript">document.write("<p>LEAK2</p>");</script>'
        '<style>.x{content:"LEAK3"}</style><p>Also visible</p></body></html>'
    )
    md = to_markdown(html, PAGE)
    assert md == "Visible\n\nAlso visible"
    assert "LEAK" not in md


def test_pre_code_block_preserved():
    html = (
        "<p>Example:</p><pre>def f(x):\n    if x &lt; 1:\n        return [x]  # *not* emphasis\n"
        "    return {}\n</pre><p>Done.</p>"
    )
    assert to_markdown(html, PAGE) == (
        "Example:\n```\ndef f(x):\n    if x < 1:\n        return [x]  # *not* emphasis\n    return {}\n```\n\nDone."
    )


def test_nested_lists():
    html = (
        "<ul><li>Fruit<ul><li>Apple</li><li>Pear<ol><li>Conference</li><li>Williams</li></ol></li></ul></li>"
        "<li>Vegetables</li></ul>"
    )
    assert to_markdown(html, PAGE) == (
        "  * Fruit\n    * Apple\n    * Pear\n      1. Conference\n      2. Williams\n  * Vegetables"
    )


def test_unicode_kept():
    assert to_markdown("<p>Café — naïve “quotes” &amp; 日本語 &eacute;</p>", PAGE) == (
        "Café — naïve “quotes” & 日本語 é"
    )


def test_no_trailing_whitespace_and_no_blank_line_runs():
    html = "<p>a<br></p><br><br><br><div></div><p>b</p><ul><li>x</li></ul><ol><li>y</li></ol>"
    md = to_markdown(html, PAGE)
    assert not md.startswith("\n") and md == md.rstrip()
    assert all(line == line.rstrip() for line in md.split("\n"))
    assert "\n\n\n" not in md


def test_empty_input():
    assert to_markdown("", PAGE) == ""
    assert to_markdown("<html><head><title>x</title></head><body></body></html>", PAGE) == ""


def test_fresh_converter_per_call_no_state_leak():
    first = to_markdown('<p>one <a href="a">a</a></p><table><tr><td>x', PAGE)
    second = to_markdown("<p>two</p>", PAGE)
    assert second == "two"
    assert first.startswith("one [a](https://example.com/section/a)")


def test_subclass_is_an_html2text():
    import html2text

    assert issubclass(CorpusHTML2Text, html2text.HTML2Text)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "<table>",
                "</table>",
                "<tr>",
                "</tr>",
                "<td>",
                "</td>",
                "<th>",
                "<br>",
                "|",
                "a",
                " ",
                "<p>",
                "<pre>",
                "</pre>",
                "<ul>",
                "<li>",
                "</ul>",
                '<a href="x y">',
                "</a>",
                "\n",
                "<script>",
                "&#124;",
            ]
        ),
        max_size=40,
    )
)
def test_fuzz_never_raises(pieces):
    md = to_markdown("".join(pieces), PAGE)
    assert isinstance(md, str)
