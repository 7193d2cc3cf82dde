"""The one parse of a page: its decoded HTML as an ``lxml.html`` tree, shared by the
steps of the page work.

A fetcher parses each page once (libxml2's HTML parser, in recovery mode, as browsers
repair markup) and hands the tree to the steps: :func:`crawler.content.links.links_of`
reads it, then :func:`crawler.content.main.main_content` changes it in place (it drops
the chrome), so the readers go first. Parsing is the dearest step after the Markdown
(docs/performance.md, "Page work"); doing it once instead of once per step is the point.
"""

from __future__ import annotations

import re
import typing

import lxml.etree as ET
import lxml.html

__all__ = ["collapsed_text", "drop", "parse", "text_of"]

#: What lxml refuses in a text or tail it is given (XML 1.0 Char): C0 controls but tab,
#: line feed and carriage return. The HTML parser keeps them in the tree it builds.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
#: Every element is an ``lxml.html.HtmlElement``, chosen in C. lxml.html's own lookup
#: calls a Python method for each element object made (2,000 a Sphinx page) to give form
#: controls their own classes, which no step uses.
_CLASSES = ET.ElementDefaultClassLookup(
    element=lxml.html.HtmlElement,
    comment=lxml.html.HtmlComment,
    pi=lxml.html.HtmlProcessingInstruction,
    entity=lxml.html.HtmlEntity,
)


def parse(text: str) -> lxml.html.HtmlElement | None:
    """The document tree of ``text``, or ``None`` for a document with nothing to parse.

    Args:
        text: the decoded document (:func:`crawler.web.decode.decode_html`). Any string is
            accepted: malformed markup is repaired.

    Returns:
        The root element (``html``; libxml2 adds ``html`` and ``body`` a fragment lacks),
        or ``None`` for empty input and input the parser makes nothing of (binary garbage).

    Raises:
        Nothing; a fresh parser per call (lxml parser objects must not be shared between
        threads).
    """
    if not text:
        return None
    # UTF-8 bytes with an explicit encoding: a str holding an <?xml encoding=...?>
    # declaration is refused by lxml, and the explicit encoding makes libxml2 ignore any
    # <meta charset> in the already decoded text. Lone surrogates become U+FFFD.
    # huge_tree: past 256 levels of nesting libxml2 would drop the rest of the page.
    parser = ET.HTMLParser(encoding="utf-8", no_network=True, remove_pis=True, huge_tree=True)
    parser.set_element_class_lookup(_CLASSES)
    try:
        return typing.cast(lxml.html.HtmlElement, ET.fromstring(text.encode("utf-8", "replace"), parser))
    except Exception:  # lxml raises XMLSyntaxError/ParserError/ValueError on hopeless input
        return None


def drop(element: lxml.html.HtmlElement) -> None:
    """Remove ``element`` and its content from its tree, its tail text kept (lxml's
    ``drop_tree``). Where that text, or the text it joins, holds a control character
    lxml refuses (a form feed in the page's text: ``ValueError``), the control
    characters of both become spaces first. Nothing for an element without a parent.
    """
    parent = element.getparent()
    if parent is None:
        return
    try:
        element.drop_tree()
    except ValueError:
        previous = element.getprevious()
        if element.tail:
            element.tail = _NOT_XML.sub(" ", element.tail)
        if previous is not None and previous.tail:
            previous.tail = _NOT_XML.sub(" ", previous.tail)
        elif previous is None and parent.text:
            parent.text = _NOT_XML.sub(" ", parent.text)
        element.drop_tree()


def text_of(element: lxml.html.HtmlElement) -> str:
    """The text of ``element`` and its descendants, as written (no tail; comments and
    processing instructions add nothing): libxml2's text serialization, cheaper than
    ``text_content()``'s XPath."""
    return ET.tostring(element, method="text", encoding="unicode", with_tail=False)


def collapsed_text(element: lxml.html.HtmlElement) -> str:
    """:func:`text_of` ``element`` with each run of whitespace as one space, stripped:
    the text as a reader sees it, for lengths and comparisons across markup."""
    return " ".join(text_of(element).split())
