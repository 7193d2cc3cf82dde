"""Does a page's Markdown say what its HTML says? Render the Markdown back to HTML with
markdown-it-py (CommonMark, plus GFM pipe tables) and compare the two documents: the
words in order, the headings and their levels, list nesting, table rows and cells,
``<pre>`` blocks byte for byte, inline code, and link texts and targets.

Used by ``tests/test_convert.py`` and ``bench/fidelity.py``. What a converter drops by
design is dropped from the source first: ``script``, ``style``, ``template`` and
``noscript`` elements and HTML comments; an image counts as its ``alt`` text, apart from a
letter or a digit beside it (a browser shows the image beside a word, never as part of
it: :func:`_beside_words`) unless that text is one character (a drop cap's ``T``, an
address's ``@``); an inline quotation (``q``) counts as its text in quotation marks (as
a browser shows it), and a checkbox that opens a list item (nothing before it in the
item, through the elements holding it: GFM 5.3), or a ``disabled`` one that opens a
table cell, as ``[x]`` or ``[ ]``. A heading or a table without words is not counted (nothing in it to keep), and
a table counts as its grid (every row as wide as the widest, ``colspan`` and ``rowspan``
spread), as a pipe table writes it. Raw HTML
in the Markdown counts against it (:attr:`Fidelity.raw_html`): a reader renders it as
markup, so a converter that passes its input through, or leaves ``<div>`` of the text
unescaped, is not faithful however well the rendering matches.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import urllib.parse

import lxml.html
from markdown_it import MarkdownIt

_RENDERER = MarkdownIt("commonmark").enable(["table", "strikethrough"])
#: An autolink's text is the URI or address as written (CommonMark 0.31, 6.5, and its
#: reference renderer: ``<https://x/%C3%BC>`` shows ``https://x/%C3%BC``); markdown-it
#: decodes percent-escapes and punycode in it for display, which would count a page's
#: ``%C3%BC`` or ``xn--`` as changed.
_RENDERER.normalizeLinkText = lambda link: link  # type: ignore[method-assign]
_DROPPED = ("script", "style", "template", "noscript")
_BLOCKS = (
    "p", "div", "section", "article", "main", "aside", "header", "footer", "nav", "li", "ul", "ol", "dl", "dt", "dd",
    "table", "thead", "tbody", "tfoot", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote",
    "figure", "figcaption", "br", "hr", "caption", "form", "fieldset", "details", "summary", "address", "button",
)  # fmt: skip
_WORD = re.compile(r"\S+")
#: Open and close an image's ``alt`` text while the words are read (noncharacters).
_IMAGE, _IMAGE_END = "\ufdee", "\ufdef"
#: An image's text touching a letter or digit before or after it, or another image.
_BESIDE_WORD = re.compile(r"(?<=[^\W_])\ufdee|\ufdef(?=[^\W_]|\ufdee)")
_MARKS = re.compile("[\ufdee\ufdef]")
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
#: Block content that a GFM pipe table's cell cannot hold (one line per row).
_CELL_BLOCKS = ("ul", "ol", "dl", "pre", "blockquote", "table", *_HEADINGS)  # a lone <p> fits a cell


@dataclasses.dataclass(frozen=True)
class Shape:
    """What the comparison reads from one HTML document."""

    words: list[str]
    headings: list[tuple[int, str]]
    lists: list[tuple[int, bool, int]]  # (nesting depth, ordered, items) per list outside tables
    tables: list[list[int]]  # cells per row, per table whose cells hold no block (a pipe table's)
    pre: list[str]
    code: list[str]  # inline code, outside pre
    links: list[tuple[str, str]]  # (text, absolute href)


@dataclasses.dataclass(frozen=True)
class Fidelity:
    """The comparison of a page's HTML (``source``) with its rendered Markdown.

    Attributes:
        raw_html: HTML blocks and inline HTML in the Markdown (CommonMark passes them
            through as markup).
    """

    source: Shape
    rendered: Shape
    raw_html: int = 0

    @property
    def text_exact(self) -> bool:
        """The same words in the same order, and no raw HTML in the Markdown."""
        return self.source.words == self.rendered.words and not self.raw_html

    def added(self) -> dict[str, int]:
        """Per structure, the items of the rendering that the source does not have."""
        kept = self.kept()
        return {name: len(getattr(self.rendered, name)) - k for name, (k, _) in kept.items()}

    def kept(self) -> dict[str, tuple[int, int]]:
        """Per structure, ``(kept, in the source)``: an item is kept when the rendered
        page has it equal, matched in order (a longest common subsequence)."""
        s, r = self.source, self.rendered
        return {
            "headings": (_lcs(s.headings, r.headings), len(s.headings)),
            "lists": (_lcs(s.lists, r.lists), len(s.lists)),
            "tables": (_lcs(s.tables, r.tables), len(s.tables)),
            "pre": (_lcs(s.pre, r.pre), len(s.pre)),
            "code": (_lcs(s.code, r.code), len(s.code)),
            "links": (_lcs(s.links, r.links), len(s.links)),
        }

    def word_diff(self) -> int:
        """Words added or lost (by the words' longest common subsequence)."""
        common = _lcs(self.source.words, self.rendered.words)
        return len(self.source.words) + len(self.rendered.words) - 2 * common


def render(markdown: str) -> str:
    """The HTML a CommonMark reader (with pipe tables) makes of ``markdown``."""
    return _RENDERER.render(markdown)


def _opens(element: lxml.html.HtmlElement, containers: tuple[str, ...]) -> bool:
    """Nothing shown before ``element`` in its list item or table cell (``containers``),
    through the elements holding it, none code (an empty element is nothing shown)."""
    for parent in element.iterancestors():
        if parent.tag in ("pre", "code", "kbd", "samp", "tt"):
            return False
        previous = element.getprevious()
        while previous is not None and not "".join(previous.itertext()).strip() and not (previous.tail or "").strip():
            if previous.tag in ("img", "input") or next(previous.iter("img", "input"), None) is not None:
                break
            previous = previous.getprevious()
        if previous is not None or (parent.text or "").strip():
            return False
        if parent.tag in containers:
            return True
        element = parent
    return False


def compare(html: str, markdown: str, base: str) -> Fidelity:
    """Compare the HTML fragment or page ``html`` (links relative to ``base``) with the
    rendering of its ``markdown``."""
    raw = 0
    for token in _RENDERER.parse(markdown):
        raw += token.type == "html_block"
        raw += sum(child.type == "html_inline" for child in token.children or ())
    return Fidelity(shape(html, base), shape(render(markdown), base, rendered=True), raw)


def shape(html: str, base: str, rendered: bool = False) -> Shape:
    """The words and structures of ``html`` (see the module docstring); ``rendered``:
    markdown-it's output (its ``<pre><code>`` holds the code as is)."""
    root = lxml.html.fragment_fromstring(html or "<p></p>", create_parent="div")
    for element in list(root.iter(*_DROPPED)):
        _drop(element)
    for comment in list(root.iter(lxml.etree.Comment)):
        _drop(comment)
    for quote in root.iter("q"):  # a browser shows an inline quotation in quotation marks
        quote.text = '"' + (quote.text or "")
        if len(quote):
            quote[-1].tail = (quote[-1].tail or "") + '"'
        else:
            quote.text += '"'
    for box in list(root.iter("input")):  # a GFM task list item's box: [x] or [ ]; others show no text
        opened = ("li", "td", "th") if box.get("disabled") is not None else ("li",)
        if (box.get("type") or "").lower() == "checkbox" and _opens(box, opened):
            _replace_with_text(box, "[x] " if box.get("checked") is not None else "[ ] ")  # a word of its own
    for image in list(root.iter("img")):
        alt = image.get("alt") or ""
        _replace_with_text(image, f"{_IMAGE}{alt}{_IMAGE_END}" if len(alt.strip()) > 1 else alt)  # _beside_words
    # HTML: a newline right after <pre>'s start tag is not part of its content
    pre = [_beside_words("".join(p.itertext())) for p in root.iter("pre")]
    pre = [(text if rendered else _strip_one(text, "\n")).rstrip("\n") for text in pre]
    # CommonMark: a code span's line endings are spaces, one space each side is padding
    code = [" ".join(_beside_words("".join(c.itertext())).split()) for c in root.iter("code") if not _inside(c, "pre")]
    headings = [(int(h.tag[1]), " ".join(_WORD.findall(_text(h)))) for h in root.iter(*_HEADINGS)]
    headings = [heading for heading in headings if heading[1]]  # one without words says nothing to keep
    lists = [
        (_depth(lst), lst.tag == "ol", len([li for li in lst if li.tag == "li"]))
        for lst in root.iter("ul", "ol")
        if not _inside(lst, "table")  # a pipe table's cell holds no list
    ]
    tables = [
        _grid_rows(table)
        if not rendered
        else [len(row.findall("td")) + len(row.findall("th")) for row in table.iter("tr")]
        for table in root.iter("table")
        # else no pipe table can hold it; one with no text says nothing a table must keep
        if not any(e is not table for e in table.iter(*_CELL_BLOCKS))
        and any("".join(cell.itertext()).strip() for cell in table.iter("td", "th"))
    ]
    links = [
        (" ".join(_WORD.findall(_text(a))), _href(base, a.get("href", "")))
        for a in root.iter("a")
        if a.get("href") is not None
    ]
    return Shape(_words(root), headings, lists, tables, pre, code, links)


def _words(root: lxml.html.HtmlElement) -> list[str]:
    """The document's words in order; a block boundary separates words, inline markup
    does not (``<b>A</b>aaa`` is one word)."""
    pieces: list[str] = []

    def walk(element: lxml.html.HtmlElement) -> None:
        block = isinstance(element.tag, str) and element.tag in _BLOCKS
        if block:
            pieces.append(" ")
        if element.text:
            pieces.append(element.text)
        for child in element:
            walk(child)
            if child.tail:
                pieces.append(child.tail)
        if block:
            pieces.append(" ")

    walk(root)
    return _WORD.findall(_beside_words("".join(pieces)))


def _text(element: lxml.html.HtmlElement) -> str:
    return _beside_words("".join(element.itertext()))


def _beside_words(text: str) -> str:
    """``text`` with the marks around an image's ``alt`` text gone: a space where a
    letter or a digit touches it (a browser shows the image beside the word, never as
    part of it), nothing elsewhere (``Reuter.`` and an image's text stay one run, as a
    converter writing images as text, html2text, writes them)."""
    return _MARKS.sub("", _BESIDE_WORD.sub(" ", text))


def _href(base: str, href: str) -> str:
    """``href`` absolute and percent-decoded (a renderer percent-encodes what the HTML
    wrote raw: ``/a b`` and ``/a%20b`` are one target)."""
    return urllib.parse.unquote(urllib.parse.urljoin(base, href.strip()))


def _strip_one(text: str, prefix: str) -> str:
    return text[len(prefix) :] if text.startswith(prefix) else text


def _drop(element: lxml.html.HtmlElement) -> None:
    parent = element.getparent()
    if parent is not None:
        element.drop_tree()


def _replace_with_text(element: lxml.html.HtmlElement, text: str) -> None:
    parent = element.getparent()
    if parent is None:
        return
    previous = element.getprevious()
    joined = text + (element.tail or "")
    if previous is not None:
        previous.tail = (previous.tail or "") + joined
    else:
        parent.text = (parent.text or "") + joined
    parent.remove(element)


def _grid_rows(table: lxml.html.HtmlElement) -> list[int]:
    """The cells per row of ``table`` as a pipe table must write them: every row as wide
    as the table's grid. The HTML table model (HTML standard 4.9.12.1, forming a table)
    spreads a cell over ``colspan`` columns and ``rowspan`` rows of its row group
    (``thead``, ``tbody``, ``tfoot``, or the rows directly in the table; 0: the rest of
    it), and a row with fewer cells than the widest still spans the grid; a GFM table
    has one cell per column in every row (a reader pads a short row). Rows are the
    ``tr`` that hold a cell or that a cell above spans into. Time grows with the cells
    and the spans still open at each row, not with the columns they cover."""
    widths: list[int] = []
    for group in _row_groups(table):
        below: list[tuple[int, int, int]] = []  # (first column, past the last, rows left) from rows above
        for index, row in enumerate(group):
            taken = _merged([(first, end) for first, end, _ in below])
            opened, column, at = [], 0, 0
            for cell in row:
                if cell.tag not in ("td", "th"):
                    continue
                while at < len(taken) and taken[at][1] <= column:
                    at += 1
                if at < len(taken) and taken[at][0] <= column:
                    column = taken[at][1]
                span = max(1, _span(cell.get("colspan"), 1, 1000))
                down = _span(cell.get("rowspan"), 1, 65534) or len(group) - index
                if down > 1:
                    opened.append((column, column + span, down - 1))
                column += span
            widths.append(max(column, taken[-1][1] if taken else 0))
            below = [(first, end, left - 1) for first, end, left in below if left > 1] + opened
    width = max(widths, default=0)
    return [width for w in widths if w]


def _row_groups(table: lxml.html.HtmlElement) -> list[list[lxml.html.HtmlElement]]:
    """The rows of ``table`` by row group, in document order: a ``rowspan`` ends with its
    group."""
    groups: dict[lxml.html.HtmlElement, list[lxml.html.HtmlElement]] = {}
    for row in table.iter("tr"):
        groups.setdefault(row.getparent(), []).append(row)
    return list(groups.values())


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` (first column, past the last) sorted, overlapping ones joined."""
    merged: list[tuple[int, int]] = []
    for first, end in sorted(spans):
        if merged and first <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((first, end))
    return merged


def _span(value: str | None, default: int, cap: int) -> int:
    """A ``colspan`` or ``rowspan`` as the HTML standard parses it (the rules for parsing
    non-negative integers; none or an error gives ``default``), at most ``cap``."""
    digits = re.match(r"\s*\+?(\d+)", value or "")
    return min(int(digits.group(1)), cap) if digits else default


def _inside(element: lxml.html.HtmlElement, tag: str) -> bool:
    return any(ancestor.tag == tag for ancestor in element.iterancestors())


def _depth(element: lxml.html.HtmlElement) -> int:
    return sum(1 for ancestor in element.iterancestors() if ancestor.tag in ("ul", "ol"))


def _lcs(a: list, b: list) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (exact for short
    lists; for long ones, such as a page's words, difflib's matching blocks, a lower
    bound that is exact when the lists are equal)."""
    if a == b:
        return len(a)
    if len(a) * len(b) > 250_000:
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        return sum(block.size for block in matcher.get_matching_blocks())
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]
