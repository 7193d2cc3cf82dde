"""Select a page's main content (strip the page chrome) before Markdown conversion.

:func:`main_content` takes the decoded HTML of a page and returns the HTML of its main
content for :func:`crawler.content.markdown.to_markdown`, or ``None`` when nothing usable is
found (the caller then converts the whole page). Links, title and canonical are still
extracted from the whole page by :mod:`crawler.content.links`; only the Markdown uses this.

The rule, in order:

1. **Pre-pass: remove the chrome the page itself labels.** Outside the main landmark
   (below) and outside ``article`` elements, these subtrees are dropped:

   * ``nav`` (HTML standard 4.3.4: "a section with navigation links");
   * ``aside``, ``header`` and ``footer`` (4.3.5, 4.3.8, 4.3.9: "content tangentially
     related", "introductory or navigational aids", the section's footer) when they are
     children of ``body`` (the page's own banner, sidebar and footer) or at least half
     their text is link text (:data:`LINK_DENSE`). HTML-AAM maps every ``header`` and
     ``footer`` outside ``article``, ``aside``, ``main``, ``nav`` and ``section`` to the
     banner and contentinfo landmarks, but inside a wrapper ``div`` they are as often the
     text's own: that rule dropped a post's title and byline (its ``header``) and a
     warning set in an ``aside``, so the narrower one;
   * any element whose ``role`` is one of the WAI-ARIA 1.2 landmark roles ``navigation``,
     ``banner``, ``contentinfo``, ``complementary`` or ``search``;
   * cookie and consent banners: an ``id`` or ``class`` token containing ``consent``,
     ``gdpr``, ``cookiebot`` or ``cookie`` followed by a banner word (``cookie-banner``,
     ``cookie_notice``, ``cookieBar``, ``cookie-law``, ``cookie-policy``...; no
     standard names them, these are the names the common consent managers use); a bare
     ``cookie`` is not enough: a recipe site's ``cookie-list`` is content;
   * Sphinx theme blocks: class ``sphinxsidebar``, ``related`` and ``footer``.

   Inside ``main``/``article`` nothing is removed: docutils writes footnotes and
   sidebars of the text as ``aside``, and an article's own ``header`` holds its heading.
2. **The main landmark.** If, after the pre-pass, the document has exactly one ``main``
   element (HTML standard 4.4.14: "the dominant contents of the document"), or else
   exactly one element with ``role="main"`` (WAI-ARIA 1.2 ``main`` landmark), that element
   is the main content: the author said so, and no heuristic can do better. When a
   container inside it names boilerplate (:func:`crawler.content.prune.prune` finds one:
   a news site's ``main`` holds the story with its teasers and comments; a Sphinx
   ``main`` names none), the extractor of step 4 reads the landmark alone, after prune,
   and the blocks it leaves out go node by node (:func:`crawler.content.nodes.keep_selected`);
   not in a landmark whose text is half links (step 3's rule), nor past
   :data:`MAX_EXTRACT_CHARS`.
3. **Link-dense pages keep everything the pre-pass kept.** When at least half of the
   remaining body text is link text (:data:`LINK_DENSE`: tables of contents, indexes,
   site maps), the pre-passed body is returned: extractors score link density as
   boilerplate by design and drop exactly such pages (measured below). So is a page
   over :data:`MAX_EXTRACT_CHARS` of HTML, whose extraction would take seconds.
4. **Otherwise the extractor chooses the region, html2text renders it**: trafilatura's
   :func:`trafilatura.bare_extraction` (``favor_recall``, tables kept, no comments, no
   de-duplication) selects the body text; :func:`_region` finds the element of the page
   that holds at least :data:`REGION_SHARE` of that text and returns it, less the
   link-dense blocks the extractor left out. The page's own HTML of that element is
   converted, not trafilatura's rewrite of it: the rewrite loses what the corpus needs
   (its output had turned a code block into a one-line quote, dropped a table and the
   headings, and nested ``code`` in ``code``). Inside the region the blocks holding
   none of the extractor's text go, but for the text's structure and what extractors
   are known to leave out (:mod:`crawler.content.nodes`).
   Before steps 3 and 4, when the caller gives the page's site and its counts, the
   text blocks the body repeats from more than half of the site's pages go
   (:mod:`crawler.content.repeats`: footers, "subscribe" boxes no class names).
5. **Fall-back**: ``None`` (convert the whole page) when the extractor returns nothing,
   or text with fewer than :data:`MIN_WORDS` words while the pre-passed page has more.

Why trafilatura, and why landmarks first: measured with ``bench/content.py --compare``
against readability-lxml on the Debian docs (docs/performance.md, "Main-content
extractors").
"""

from __future__ import annotations

import copy
import re

import lxml.etree as ET
import lxml.html

from crawler.content.document import drop, parse, text_of
from crawler.content.fragment import prepare
from crawler.content.nodes import keep_selected, selected_weights
from crawler.content.prune import prune
from crawler.content.repeats import SiteBlocks, drop_repeated

__all__ = ["main_content", "whole_page", "LINK_DENSE", "MIN_WORDS"]

#: Link text / all text of the pre-passed body at or above which the extractor is skipped.
LINK_DENSE = 0.5
#: An extraction with fewer words than this (while the page has more) counts as nothing.
MIN_WORDS = 10
#: Pages longer than this (characters of HTML) without a main landmark keep what the
#: pre-pass kept instead of going to the extractor: trafilatura and the region search
#: grow faster than the page, unbounded by any timeout, holding the fetcher process's
#: GIL (``bench/content.py --sizes``, docs/performance.md: seconds at 1 MB).
MAX_EXTRACT_CHARS = 1_000_000
#: Share of the extractor's text an element must hold to be taken as the region (step 4).
REGION_SHARE = 0.9

_SECTION_CHROME_TAGS = frozenset(("aside", "header", "footer"))
_CHROME_ROLES = frozenset(("navigation", "banner", "contentinfo", "complementary", "search"))
_CHROME_CLASSES = frozenset(("sphinxsidebar", "related", "footer"))
_CONSENT = re.compile(
    r"consent|gdpr|cookiebot|cookie[-_]?(?:banner|notice|bar|law|popup|modal|"
    r"message|alert|policy|dialog|warning|info|wrapper|container|accept)",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+")
#: The ``role="main"`` attributes of a tree (their elements are the landmarks): half the
#: time of ``//*[@role='main']``, which tests every element (bench/page_work.py).
_MAIN_ROLES = ET.XPath("//@role[.='main']")


def main_content(
    html: str,
    root: lxml.html.HtmlElement | None = None,
    site: str | None = None,
    blocks: SiteBlocks | None = None,
) -> str | None:
    """The HTML of the page's main content, or ``None`` to convert the whole page.

    Args:
        html: the decoded document (:func:`crawler.web.decode.decode_html`).
        root: ``parse(html)`` (:func:`crawler.content.document.parse`) when the caller
            has it: it is changed in place (the chrome dropped); ``None``: parsed here.
        site: the page's site (its origin), with ``blocks``: the text blocks the page's
            body repeats from most of the site's pages go before steps 3-4
            (:func:`crawler.content.repeats.drop_repeated`; a ``main`` landmark is kept
            whole); ``None``: no such step.
        blocks: the fetcher's :class:`crawler.content.repeats.SiteBlocks`.

    Returns:
        An HTML fragment (serialized by lxml; relative links are left as written, so
        :func:`crawler.content.markdown.to_markdown` resolves them against the page's base), or
        ``None`` when the document cannot be parsed, has no body text, or the extractor
        finds nothing usable (rule 5 of the module docstring).

    Raises:
        Nothing for malformed markup; thread-safe (a fresh parser per call).
    """
    if root is None:
        root = parse(html)
        if root is None:  # empty or unparsable document
            return None
    _strip_chrome(root)
    main = _main_landmark(root)
    if main is not None:
        if prune(main) and len(html) <= MAX_EXTRACT_CHARS and not _link_dense(main):
            extracted = _extract_text(_document_of(main))  # the landmark names boilerplate
            if extracted is not None:
                keep_selected(main, selected_weights(main, extracted))
        return _serialize(main)
    body = root.find("body")
    if body is None:
        return None
    if site is not None and blocks is not None:
        drop_repeated(body, site, blocks)
    text = text_of(body)
    if not text.strip():
        return None
    if _link_dense(body, len(text)):
        return _serialize(body)
    if len(html) > MAX_EXTRACT_CHARS:  # the extractor's cost grows faster than the page
        return _serialize(body)
    extracted = _extract_text(copy.deepcopy(root))
    if extracted is None:
        return None
    weight = selected_weights(body, extracted)
    region = _region(body, weight)
    if region is None:
        return None
    words = len(_WORD.findall(text_of(region)))
    if words == 0 or (words < MIN_WORDS and len(_WORD.findall(text)) > words):
        return None
    prune(region)
    keep_selected(region, weight)
    return _serialize(region)


def whole_page(html: str, root: lxml.html.HtmlElement | None = None) -> str:
    """The HTML of the whole page for the converter, tidied as a main content is
    (:func:`crawler.content.fragment.prepare`): what is converted when no main content
    is (``--keep-boilerplate``, or none found).

    Args:
        html: the decoded document.
        root: ``parse(html)``, unchanged, when the caller has it; ``None``: parsed here.

    Returns:
        The serialized tidied document, or ``html`` itself when it cannot be parsed.
    """
    if root is None:
        root = parse(html)
        if root is None:
            return html
    return _serialize(root)


def _classes(element: lxml.html.HtmlElement) -> set[str]:
    return set((element.get("class") or "").split())


def _is_chrome(element: lxml.html.HtmlElement) -> bool:
    """Whether ``element`` is labelled chrome by the rules of step 1."""
    if element.tag == "nav":
        return True
    if element.tag in _SECTION_CHROME_TAGS:  # the page's own, or a block of links
        parent = element.getparent()
        return (parent is not None and parent.tag == "body") or _link_dense(element)
    if (element.get("role") or "").strip().lower() in _CHROME_ROLES:
        return True
    classes = _classes(element)
    if classes & _CHROME_CLASSES:
        return True
    return any(_CONSENT.search(token) for token in classes | {element.get("id") or ""})


def _is_content(element: lxml.html.HtmlElement) -> bool:
    """``main``, ``article`` or ``role=main``: nothing inside is removed."""
    return element.tag in ("main", "article") or (element.get("role") or "").strip().lower() == "main"


def _strip_chrome(root: lxml.html.HtmlElement) -> None:
    """Drop the chrome subtrees outside the main content, in place (step 1)."""
    doomed = []
    stack = [root]
    while stack:
        element = stack.pop()
        for child in element:
            if not isinstance(child.tag, str) or _is_content(child):
                continue
            if _is_chrome(child):
                doomed.append(child)
            else:
                stack.append(child)
    doomed.extend(root.iter("script", "style"))
    for element in doomed:
        if element.getparent() is not None:  # a chrome ``script``/``style`` is listed twice
            drop(element)


def _main_landmark(root: lxml.html.HtmlElement) -> lxml.html.HtmlElement | None:
    """The one ``main`` element, else the one ``role=main`` element, else ``None``."""
    mains = [el for el in root.iter("main") if el.get("hidden") is None]
    if len(mains) == 1:
        return mains[0]
    if not mains:
        roles = _MAIN_ROLES(root)
        if len(roles) == 1:
            return roles[0].getparent()
    return None


def _serialize(element: lxml.html.HtmlElement) -> str:
    """The HTML of ``element`` for the converter, tidied for conversion
    (:func:`crawler.content.fragment.prepare`: the controls inside it go too)."""
    prepare(element)
    return lxml.html.tostring(element, encoding="unicode", method="html")


def _document_of(landmark: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
    """A document whose body holds a copy of ``landmark``: the extractor reads the
    landmark only, a smaller tree than the page (docs/performance.md, "Main content")."""
    document = lxml.html.Element("html")
    ET.SubElement(document, "body").append(copy.deepcopy(landmark))
    return document


def _extract_text(document: lxml.html.HtmlElement) -> str | None:
    """The text trafilatura selects as the body of ``document`` (a tree it may change:
    trafilatura prunes the tree it is given), whitespace collapsed; ``None`` when it
    selects nothing."""
    import trafilatura  # imported on first use: only some pages need it

    extraction = trafilatura.bare_extraction(
        document,
        favor_recall=True,
        include_comments=False,
        include_tables=True,
        include_formatting=False,
        include_links=False,
        include_images=False,
        deduplicate=False,
        with_metadata=False,
    )
    body = getattr(extraction, "body", None)
    if body is None:
        return None
    text = " ".join(ET.tostring(body, method="text", encoding="unicode").split())
    return text or None


def _region(body: lxml.html.HtmlElement, weight: dict) -> lxml.html.HtmlElement | None:
    """The element of ``body`` that holds the text trafilatura selected (step 4), with
    the link-dense blocks it left out removed; ``None`` when none of it is found.

    ``weight``: the selected text each element holds
    (:func:`crawler.content.nodes.selected_weights` of ``body``); from ``body``
    down, the child holding at least :data:`REGION_SHARE` of it is taken while there is
    one, but never past an ``article``, into a single text block, or past a sibling
    before it with a heading (the title an extractor leaves out of its text stays).
    Inside that element, blocks with none of the selected text whose text is half links
    or more (menus, tag clouds, "related" lists the pre-pass did not know) go.
    """
    total = weight.get(body, 0)
    if not total:
        return None
    region = body
    while region.tag != "article":  # a self-contained composition: taken whole
        children = [c for c in region if isinstance(c.tag, str)]
        best = max(children, key=lambda c: weight.get(c, 0), default=None)
        if (
            best is None
            or weight.get(best, 0) < REGION_SHARE * total
            or best.tag in _TEXT_BLOCKS
            or any(_has_heading(c) for c in children[: children.index(best)])
        ):
            break
        region = best
    doomed, stack = [], [region]
    while stack:
        for child in stack.pop():
            if not isinstance(child.tag, str):
                continue
            if weight.get(child, 0) == 0 and _link_dense(child):
                doomed.append(child)
            else:
                stack.append(child)
    for element in doomed:
        drop(element)
    return region


#: Elements the region never narrows into: one block of text, not a container of them.
_TEXT_BLOCKS = frozenset(("p", "pre", "li", "ul", "ol", "dl", "table", "blockquote", *(f"h{n}" for n in range(1, 7))))
_HEADINGS = tuple(f"h{n}" for n in range(1, 7))


def _has_heading(element: lxml.html.HtmlElement) -> bool:
    """Whether ``element`` is or holds a heading with text (it introduces what follows:
    extractors leave a title out of their text, the region must not)."""
    return any(text_of(h).strip() for h in element.iter(*_HEADINGS))


def _link_dense(element: lxml.html.HtmlElement, text_length: int | None = None) -> bool:
    """Whether at least :data:`LINK_DENSE` of ``element``'s text is link text;
    ``text_length``: that text's length if the caller has it (else its stripped text's)."""
    if text_length is None:
        text_length = len(text_of(element).strip())
    return text_length > 0 and sum(len(text_of(a)) for a in element.iter("a")) >= LINK_DENSE * text_length
