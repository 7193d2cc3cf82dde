"""Convert an HTML page to Markdown for an LLM text corpus, with html2text.

Settings (see :func:`to_markdown`): no hard wrapping (``body_width = 0``: html2text's
default of 78 columns breaks long link URLs across lines), inline links made absolute
against the page's effective base URL, images replaced by their alt text, Unicode kept
as is, GitHub-flavoured-Markdown pipe tables, fenced code blocks for ``<pre>``, emphasis
written with ``*`` and no space added between an emphasis and the word it is part of
(html2text's own ``_`` cannot open or close inside a word, so it split ``<b>A</b>aaa``
into ``**A** aaa``; CommonMark reads ``**A**aaa``), the space that ends an emphasis's
first text kept (html2text stripped it: ``*Part of the[Stable ABI](...)*``), a space
pending at an emphasis's end written after its closing mark, and a ``dd`` written as a
paragraph (html2text indented it four spaces: an indented code block in CommonMark).

Two table fixes are made in :class:`CorpusHTML2Text`, a small subclass that overrides
html2text's tag and data hooks (no regexes over the HTML):

* a ``<br>`` (or a paragraph / heading / list break) inside a ``<td>``/``<th>`` becomes
  a space, never a newline, so every table row stays on one line;
* a literal ``|`` in cell text is written ``\\|`` (GFM spec, "Tables" extension: "include
  a pipe in a cell's content by escaping it"), so the column count stays right.

Rows are written with outer pipes (``| a | b |``, delimiter row ``| --- | --- |``), so a
one-column table cannot be mistaken for a setext heading. A table nested in a cell is
flattened into that cell's text, and a row whose ``</tr>`` was omitted is closed before
the next row or the table's end.

A cell with ``colspan=n`` is followed by n-1 empty cells, so the row keeps the column
count.

Known limits: a ``<pre>`` block inside a table cell still produces line breaks;
``rowspan`` is ignored (html2text's behaviour), so rows below such a cell have fewer
cells than the header.

Its cost per page is in docs/performance.md ("html2text alone").
"""

from __future__ import annotations

import re
from typing import Any

import html2text

__all__ = ["to_markdown", "CorpusHTML2Text"]

# WHATWG URL parser: leading/trailing C0 control or space is stripped, ASCII tab and
# newline anywhere are removed before parsing.
_C0_OR_SPACE = "".join(chr(i) for i in range(0x21))
_TAB_NL = re.compile(r"[\t\n\r]")


def _colspan(attrs: dict[str, str | None]) -> int:
    """The ``colspan`` of a cell, parsed as the HTML standard does (non-negative
    integer, 0 or unparsable -> 1, clamped to 1000)."""
    m = re.match(r"\s*\+?(\d+)", attrs.get("colspan") or "")
    n = int(m.group(1)) if m else 1
    return min(max(n, 1), 1000)


def _clean_url(value: str) -> str:
    """Apply the WHATWG URL pre-parse clean-up and encode spaces, keep the rest raw."""
    value = _TAB_NL.sub("", value.strip(_C0_OR_SPACE))
    return value.replace(" ", "%20")


class CorpusHTML2Text(html2text.HTML2Text):
    """``html2text.HTML2Text`` whose table rows always stay on one line and whose
    later HTML blocks are blocks.

    Hooks overridden (all other behaviour is html2text's):

    * ``handle_tag``: the blocks of :data:`_BLOCK_TAGS` (``section``, ``article``,
      ``details``...) are written as a ``div``; tracks whether we are inside a ``td``/``th`` (``_in_cell``);
      ``<br>`` there becomes a space; a ``<p>``/``<div>`` there a space; a table nested
      in a cell is flattened into that cell's text (its ``table``/``tr``/``td``/``th``
      tags become spaces, ``_flat_depth`` counts the nesting); a row left open by an
      omitted ``</tr>`` is closed before the next ``<tr>`` or ``</table>`` (the HTML
      parser does not imply end tags); ``a[href]``/``img[src]`` values get the WHATWG
      URL clean-up before html2text joins them to the base URL.
    * ``handle_data``: ``|`` inside a cell is written ``\\|``.
    * ``p``/``pbr`` (paragraph and line breaks requested by headings, lists, ...) and
      ``o`` (newlines inside emitted text): a space instead while in a cell.

    The last three are bound on the instance only while inside a cell
    (:meth:`_set_in_cell`), so text outside tables pays nothing for them.

    html2text's own ``split_next_td`` is not enough as the "in a cell" flag: it stays
    set from the first cell until ``</tr>``, between cells too.

    An instance keeps conversion state (output buffer, list/link/quote stacks, the
    html.parser buffer), so :func:`to_markdown` makes a fresh instance per call; do
    not reuse one for two documents.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # html2text.HTML2Text's arguments
        super().__init__(*args, **kwargs)
        self._in_cell = False
        self._flat_depth = 0
        self._span_pending = 0
        self._image_opened = False

    def _set_in_cell(self, in_cell: bool) -> None:
        """Enter or leave a cell. The cell-mode hooks are bound on the instance only
        while in a cell, so text outside tables (most of a page) runs html2text's own
        ``o``/``p``/``pbr``/``handle_data`` with no wrapper in between: html2text calls
        them through ``self``, so an instance attribute shadows the class method."""
        if in_cell == self._in_cell:
            return
        self._in_cell = in_cell
        if in_cell:
            # instance attributes shadow html2text's methods on purpose (docstring above)
            self.o = self._cell_o  # type: ignore[method-assign]
            self.p = self._cell_space  # type: ignore[method-assign]
            self.pbr = self._cell_space  # type: ignore[method-assign]
            self.handle_data = self._cell_data  # type: ignore[method-assign]
        else:
            del self.o, self.p, self.pbr, self.handle_data

    def handle_data(self, data: str, entity_char: bool = False) -> None:
        """html2text's, less the space it puts between an emphasis and a word right
        after it (``**A** aaa`` for ``<b>A</b>aaa``): with ``*`` marks, CommonMark reads
        emphasis inside a word; and with the space that ends an emphasis's first text
        when more of the emphasis follows."""
        if not self.stressed:
            self.preceding_stressed = False
        # html2text strips both ends of an emphasis's first text: the space before a
        # link or an inner emphasis went with it ("Part of the[Stable ABI](...)")
        space_after = self.stressed and data[-1:].isspace() and bool(data.strip())
        if self._image_opened:  # html2text strips the emphasis's first text: an image's was
            self._image_opened = False
            if self.stressed and data[:1].isspace() and data.strip():
                self.space = True
        super().handle_data(data, entity_char)
        if space_after:
            self.space = True

    def handle_tag(self, tag: str, attrs: dict[str, str | None], start: bool) -> None:
        if tag in _BLOCK_TAGS:
            tag = "div"
        if start and tag in _EMPHASIS_TAGS:  # no space before an emphasis inside a word
            self.preceding_data = " "
        if not start and tag in _MARKED_TAGS and self.space:  # a closing mark after no space
            self.space = False
            super().handle_tag(tag, attrs, start)
            self.space = True
            return
        if start and tag == "img" and self.stressed and (attrs.get("alt") or "").strip():
            super().handle_tag(tag, attrs, start)
            self._image_opened = True  # the next text keeps its leading space (handle_data)
            return
        if start and tag == "input" and (attrs.get("type") or "").lower() == "checkbox":
            self.o("[x]" if "checked" in attrs else "[ ]")  # a task list's box: the only ones
            self.space = True  # crawler.content.fragment.prepare keeps
            return
        if start and tag == "dd":  # a paragraph: html2text's four spaces make its first line code
            self.current_tag = tag
            self.p()
            return
        if self.ignore_tables or self.bypass_tables:
            self._set_in_cell(False)
            super().handle_tag(tag, attrs, start)
            return
        if tag in _TABLE_TAGS:
            if self._flat_depth or (tag == "table" and start and self._in_cell):
                # table nested in a cell: flatten it into the cell's text
                if tag == "table":
                    self._flat_depth += 1 if start else -1
                self.space = True
                return
            if tag == "table" or tag == "tr":
                self._set_in_cell(False)
                if self.split_next_td and (start if tag == "tr" else not start):
                    self._end_row({})  # close a row left open
                if tag == "tr" and not start:
                    self._end_row(attrs)
                    return
            else:  # td, th
                if start:
                    # Write the separator ourselves ("| a | b", not html2text's
                    # "a| b"), with single spaces whatever the cell starts with.
                    if self.split_next_td:
                        self.space = True
                    self._pad_span()
                    self.o("|")
                    self.space = True
                    self.split_next_td = False  # so html2text adds no "| " of its own
                    self._span_pending = _colspan(attrs) - 1
                self._set_in_cell(start)
            super().handle_tag(tag, attrs, start)
            if tag == "table" and not start:
                self.p()  # blank line after a table: the next one must not continue it
            return
        if start and (tag == "a" or tag == "img"):
            for name in ("href", "src"):
                value = attrs.get(name)
                if value:
                    attrs[name] = _clean_url(value)
        if self._in_cell and (tag == "br" or tag == "p" or tag == "div"):
            if start or tag != "br":
                self.space = True
            if tag == "br":
                return
        super().handle_tag(tag, attrs, start)

    def _pad_span(self) -> None:
        """After a cell with ``colspan=n``, write n-1 empty cells so the row keeps the
        table's column count (the header's delimiter row counts them too)."""
        for _ in range(self._span_pending):
            self.o("|")
            self.space = True
        self.td_count += self._span_pending
        self._span_pending = 0

    def _end_row(self, attrs: dict[str, str | None]) -> None:
        """``</tr>``: write the row's trailing pipe and, after the first row that has
        cells, the delimiter row with outer pipes (``| --- | --- |``) instead of
        html2text's ``---|---``, so a one-column table cannot be read as a setext
        heading (CommonMark 4.3; GFM tables allow the outer pipes)."""
        self._set_in_cell(False)
        had_cells = self.split_next_td and self.td_count > 0
        if had_cells:
            self.space = True
            self._pad_span()
            self.o("|")
        header_pending = self.table_start
        self.table_start = False  # keep html2text from writing its own delimiter row
        super().handle_tag("tr", attrs, False)
        if header_pending:
            if had_cells:
                self.o("| " + " | ".join(["---"] * self.td_count) + " |")
                self.soft_br()
            else:
                self.table_start = True  # an empty <tr>: the header is still to come

    # Cell-mode hooks, bound on the instance by _set_in_cell while in a cell.
    def _cell_data(self, data: str, entity_char: bool = False) -> None:
        if "|" in data:
            data = data.replace("|", "\\|")
        CorpusHTML2Text.handle_data(self, data, entity_char)  # the class's: self.handle_data is this one

    def _cell_o(self, data: str, puredata: bool = False, force: bool | str = False) -> None:
        if not force and "\n" in data:
            data = data.replace("\n", " ")
        html2text.HTML2Text.o(self, data, puredata, force)

    def _cell_space(self) -> None:
        """``p``/``pbr`` in a cell: a space instead of a paragraph or line break."""
        self.space = True


_TABLE_TAGS = frozenset(("table", "tr", "td", "th"))
#: The tags html2text writes with ``emphasis_mark``.
_EMPHASIS_TAGS = frozenset(("em", "i", "u"))
#: The tags html2text writes between marks (``*``, ``**``, ``~~``).
_MARKED_TAGS = frozenset((*_EMPHASIS_TAGS, "b", "strong", "del", "strike", "s"))
#: Blocks (HTML standard 4.3-4.4, 4.10, 4.11, 15.3.3) that html2text writes inline, as
#: if ``<section>a</section><section>b</section>`` said ``ab``: written as a ``div``.
_BLOCK_TAGS = frozenset(
    (
        *("article", "section", "nav", "aside", "header", "footer", "main", "hgroup", "address", "search"),
        *("figure", "figcaption", "details", "summary", "fieldset", "legend", "center", "dialog"),
    )
)


def _make_converter(base_url: str) -> CorpusHTML2Text:
    h = CorpusHTML2Text(baseurl=base_url, bodywidth=0)
    h.body_width = 0  # no hard wrap (conformance C33)
    h.unicode_snob = True  # keep Unicode characters, no ASCII approximations
    h.images_to_alt = True  # images become their alt text
    h.emphasis_mark = "*"  # not "_": CommonMark reads * emphasis inside a word
    h.ignore_images = False
    h.ignore_links = False
    h.inline_links = True  # [text](url), not reference-style footnotes
    h.protect_links = False
    h.wrap_links = False
    h.wrap_list_items = False
    h.wrap_tables = False
    h.ignore_tables = False
    h.bypass_tables = False
    h.pad_tables = False
    h.backquote_code_style = True  # <pre> -> fenced ``` code block
    h.mark_code = False
    h.single_line_break = False
    return h


def to_markdown(html: str, base_url: str) -> str:
    """Convert one HTML document to Markdown.

    Args:
        html: the decoded document text (see :func:`crawler.web.decode.decode_html`).
        base_url: the absolute URL relative links are resolved against, i.e. the
            page's *effective* base (``crawler.content.links.effective_base``, which honours
            ``<base href>``). Link targets are cleaned the WHATWG URL way (outer
            whitespace/control characters and inner tabs/newlines removed, spaces as
            ``%20``) and joined with :func:`urllib.parse.urljoin` (RFC 3986 section 5).

    Returns:
        Markdown text (CommonMark plus GFM pipe tables): no hard line wrapping, inline
        absolute links ``[text](url)``, images as their alt text, ``<script>``,
        ``<style>`` and ``<head>`` content dropped, ``<pre>`` as fenced code blocks,
        Unicode preserved. Outside code blocks, trailing whitespace is removed from
        every line (so html2text's two-space hard breaks become plain newlines) and
        runs of blank lines become one; leading/trailing blank lines of the document
        are removed (no final newline). ``""`` for a document without text.

    Raises:
        Nothing for malformed markup (html.parser is lenient). A fresh converter is
        built per call, so calls are independent and thread-safe.
    """
    if not html:
        return ""
    converter = _make_converter(base_url)
    return _tidy(converter.handle(html))


def _tidy(markdown: str) -> str:
    """Strip trailing whitespace from lines and collapse blank-line runs to one blank
    line outside fenced code blocks (whose lines are kept verbatim, except the blank
    lines html2text leaves before the closing fence); strip the ends."""
    out: list[str] = []
    in_code = False
    out_fence = 0  # index in ``out`` of the opening fence of the current code block
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            if in_code:  # closing fence: drop html2text's blank line(s) before it
                while out and not out[-1].strip() and out_fence < len(out) - 1:
                    out.pop()
            else:
                out_fence = len(out)
            in_code = not in_code
            out.append(line.rstrip())
            continue
        if in_code:
            out.append(line)
            continue
        line = line.rstrip()
        if not line and out and not out[-1]:
            continue
        out.append(line)
    return "\n".join(out).strip("\n").rstrip()
