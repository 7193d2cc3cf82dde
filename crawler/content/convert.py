"""The HTML-to-Markdown converters and the choice between them (``--converter``).

Two converters, each behind the same call (HTML fragment or page, base URL -> Markdown):

* ``html2text``: the one the design named (:mod:`crawler.content.markdown`, pure Python);
* ``html-to-markdown``: a Rust core with Python bindings (MIT, 3.x), CommonMark output
  with pipe tables, fenced code blocks byte for byte and the escapes CommonMark needs
  at a line start, in link text and in code spans.

:func:`convert` runs the chosen one; if it raises, the other converts the page instead,
and if that raises too the page's plain text is kept (converter ``"text"``); the errors
are returned with the Markdown, so a converter's failure never loses a fetched page.
Which one is the default, and why, is in docs/content.md.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from html import unescape

import html_to_markdown
import lxml.etree
import lxml.html

from crawler.content import escapes
from crawler.content.document import drop
from crawler.content.markdown import to_markdown as html2text_markdown

HTML2TEXT = "html2text"
HTML_TO_MARKDOWN = "html-to-markdown"
#: The last resort when both converters raise: the page's text, no Markdown markup.
PLAIN_TEXT = "text"
#: The converters ``--converter`` offers, the default first.
CONVERTERS = (HTML_TO_MARKDOWN, HTML2TEXT)
#: The converter a crawl uses unless told otherwise (chosen by measurement:
#: docs/content.md, "Markdown").
DEFAULT_CONVERTER = HTML_TO_MARKDOWN
#: Longest error text kept in a record (the exception's message can be a page long).
ERROR_CHARS = 300
#: html-to-markdown's own clean-up (it drops ``aside``, ``nav`` and forms) is off: what
#: to keep is :mod:`crawler.content.main`'s choice, and a docutils sidebar is content.
_NO_PREPROCESSING = html_to_markdown.PreprocessingOptions(enabled=False)
_BLOCKS = (
    *("p", "div", "li", "tr", "br", "pre", "table", "ul", "ol", "dl", "dt", "dd", "blockquote", "section"),
    *("article", "main", "header", "footer", "aside", "nav", "h1", "h2", "h3", "h4", "h5", "h6"),
)


@dataclasses.dataclass(frozen=True, slots=True)
class Conversion:
    """The Markdown of a page and how it was made.

    Attributes:
        markdown: the Markdown (no leading or trailing blank lines).
        converter: what made it: one of :data:`CONVERTERS`, or :data:`PLAIN_TEXT`.
        error: when the converter asked for raised, its error (``"html-to-markdown:
            ValueError: ..."``; both converters' errors, ``"; "``-joined, when the plain
            text was kept), else None.
    """

    markdown: str
    converter: str
    error: str | None = None


def html_to_markdown_markdown(html: str, base: str) -> str:
    """Markdown of ``html`` by html-to-markdown: links and images made absolute against
    ``base`` (the page's effective base URL), ATX headings, ``-`` bullets, fenced code, no
    wrapping, no metadata block, no clean-up of its own; ``*`` in text escaped, ``_``
    where it could be emphasis (``__init__`` is not bold), the other escapes only where
    CommonMark needs them (a line's start, link text, code spans, and what
    :mod:`crawler.content.escapes` marks);
    what markup hides dropped (``hidden_content="drop"``, its default: the ``hidden``
    attribute, a hiding ``style``; :func:`crawler.content.fragment.prepare` removes
    those attributes, so a page's hidden tab panels are kept), ``details`` kept;
    table cells not padded to a column width (``| a | 1 |``); no abbreviation expanded, no
    quotation's ``cite`` URL or ``==highlight==`` added."""
    options = html_to_markdown.ConversionOptions(
        base_url=base,
        extract_metadata=False,
        heading_style="atx",
        bullets="-",
        code_block_style="backticks",
        wrap=False,
        escape_asterisks=True,
        escape_underscores=False,  # only at a word's edge: crawler/content/escapes.py
        hidden_content="drop",  # "reachable" made every page convert in its slower tier 2
        compact_tables=True,
        preprocessing=_NO_PREPROCESSING,
        expand_abbreviations=False,
        include_blockquote_citations=False,
        highlight_style="none",
    )
    html, marked = escapes.mark(html)
    markdown = (html_to_markdown.convert(html, options).content or "").strip("\n")
    return escapes.unmark(markdown) if marked else markdown


def html2text_escaped_markdown(html: str, base: str) -> str:
    """Markdown of ``html`` by html2text (:func:`crawler.content.markdown.to_markdown`),
    with what CommonMark would read as markup escaped (:mod:`crawler.content.escapes`)."""
    html, marked = escapes.mark(html, escapes.HTML2TEXT)
    markdown = html2text_markdown(html, base)
    return escapes.unmark(markdown) if marked else markdown


_CONVERT: dict[str, Callable[[str, str], str]] = {
    HTML2TEXT: html2text_escaped_markdown,
    HTML_TO_MARKDOWN: html_to_markdown_markdown,
}


def convert(html: str, base: str, converter: str = DEFAULT_CONVERTER) -> Conversion:
    """The Markdown of ``html`` (relative links resolved against ``base``) by
    ``converter``, or by the other converter if that one raises.

    A converter that returns no Markdown for HTML that has text has failed too.

    Raises:
        ValueError: an unknown ``converter`` (a page never makes it raise).
    """
    try:
        first = _CONVERT[converter]
    except KeyError:
        raise ValueError(f"unknown converter {converter!r}: one of {', '.join(CONVERTERS)}") from None
    try:
        markdown = first(html, base)
        if markdown.strip() or not _has_text(html):
            return Conversion(markdown, converter)
        raise ValueError("no text from a page that has some")  # html-to-markdown past its nesting limit
    except Exception as exc:  # a converter's bug must not lose the page: the other one tries
        error = error_text(converter, exc)
    other = next(name for name in CONVERTERS if name != converter)
    try:
        return Conversion(_CONVERT[other](html, base), other, error)
    except Exception as exc:
        return Conversion(plain_text(html), PLAIN_TEXT, f"{error}; {error_text(other, exc)}")


def error_text(step: str, exc: BaseException) -> str:
    """``"step: Type: message"`` on one line, at most :data:`ERROR_CHARS` characters."""
    return " ".join(f"{step}: {type(exc).__name__}: {exc}".split())[:ERROR_CHARS]


_TAG = re.compile(r"<[^>]*>")
_SCRIPT = re.compile(r"(?is)<(script|style)\b.*?</\1\s*>")


def _between_tags(markup: str, separator: str) -> str:
    """The text of ``markup`` outside its tags, scripts and styles, each tag replaced
    by ``separator``, character references decoded (a regex pass: no nesting limit)."""
    return unescape(_TAG.sub(separator, _SCRIPT.sub(" ", markup)))


def _has_text(markup: str) -> bool:
    """True if ``markup`` has text outside its tags, scripts and styles (a cheap test,
    run only when a converter returned nothing)."""
    return bool(_between_tags(markup, " ").strip())


def _lines(text: str) -> str:
    """``text`` with whitespace runs collapsed within lines and blank lines removed."""
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def plain_text(markup: str) -> str:
    """The text of ``markup`` (no ``script``/``style``), blank lines collapsed. Past
    lxml's nesting limit (2,048 levels with ``huge_tree``), the text between the tags."""
    text = _lxml_text(markup)
    if text or not _has_text(markup):
        return text
    return _lines(_between_tags(markup, "\n"))


def _lxml_text(markup: str) -> str:
    try:
        root = lxml.html.document_fromstring(markup, parser=lxml.html.HTMLParser(huge_tree=True))
    except (lxml.etree.ParserError, ValueError):
        return ""
    for element in list(root.iter("script", "style")):
        if element.getparent() is not None:
            drop(element)
    for element in root.iter(*_BLOCKS):  # a block ends its line
        element.tail = "\n" + (element.tail or "")
    return _lines(root.text_content())
