"""Select a page's main content (strip the page chrome) before Markdown conversion.

:func:`main_content` takes the decoded HTML of a page and returns the HTML of its main
content for :func:`crawler.markdown.to_markdown`, or ``None`` when nothing usable is
found (the caller then converts the whole page). Links, title and canonical are still
extracted from the whole page by :mod:`crawler.extract`; only the Markdown uses this.

The rule, in order:

1. **Pre-pass: remove the chrome the page itself labels.** Outside the main landmark
   (below) and outside ``article`` elements, these subtrees are dropped:

   * ``nav`` and ``aside`` (HTML standard 4.3.4 and 4.3.5: "a section with navigation
     links", "content tangentially related"), ``header`` and ``footer`` (4.3.8, 4.3.9:
     "introductory or navigational aids", the section's footer; HTML-AAM maps them to the
     ``banner``/``contentinfo`` landmarks exactly when they are not inside ``article``,
     ``aside``, ``main``, ``nav`` or ``section``, which is the scope used here);
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
   is the main content: the author said so, and no heuristic can do better.
3. **Link-dense pages keep everything the pre-pass kept.** When at least half of the
   remaining body text is link text (:data:`LINK_DENSE`: tables of contents, indexes,
   site maps), the pre-passed body is returned: extractors score link density as
   boilerplate by design and drop exactly such pages (measured below). So does a page
   whose extraction came back as one bare paragraph while the pre-passed body has
   several blocks: trafilatura's baseline fall-back for short documents (below about
   100 characters of text) flattens headings and paragraphs into one paragraph.
4. **Otherwise the extractor decides**: trafilatura's
   :func:`trafilatura.bare_extraction` (``favor_recall``, tables, links and formatting
   kept, no comments, no de-duplication) selects the body; its XML is turned back into
   HTML by :func:`_xml_to_html` (not trafilatura's own HTML output, which writes every
   inline ``<code>`` as a ``<pre>`` block and so splits sentences and table rows).
5. **Fall-back**: ``None`` (convert the whole page) when the extractor returns nothing,
   or text with fewer than :data:`MIN_WORDS` words while the pre-passed page has more.

Why trafilatura, and why landmarks first. Measured on the real Debian docs (CPython 3.11,
trafilatura 2.3.1, readability-lxml 0.9, lxml 6.1.3, shared 2-core machine) by the
prototype of ``bench/content.py --compare`` (same metrics; the script in the repository
was not re-run for these figures). Reference: each page's Sphinx ``div[role=main]``.
"words": share of its words (multiset) in the candidate's text; "blocks": share of its
``p``/``pre``/``h1-h6``/``dt``/``td``/``th`` found verbatim (whitespace collapsed);
"dense": words on link-dense pages (link text over half the text: genindex, modindex,
tables of contents); "nav": share of the words outside the main element that survive;
"tables": Markdown tables kept; ms: CPU per page of the selection alone.

================================  =====  ======  =====  =====  =======  =====
python3.11-doc, 530 pages         words  blocks  dense  nav    tables   ms
================================  =====  ======  =====  =====  =======  =====
readability-lxml, raw page        0.712  0.686   0.234  0.009  176/354  47.0
trafilatura, raw page             0.974  0.971   0.304  0.004  196/354  61.0
the role=main element alone      1.000  1.000   1.000  0.000  354/354   5.1
================================  =====  ======  =====  =====  =======  =====

================================  =====  ======  =====  =====  =======  =====
flask-doc, 77 pages               words  blocks  dense  nav    tables   ms
================================  =====  ======  =====  =====  =======  =====
readability-lxml, raw page        0.551  0.383   0.085  0.002   2/30    15.7
trafilatura, raw page             0.980  0.988   0.727  0.009   4/30    27.3
this module                       1.000  1.000   1.000  0.000  30/30     1.2
this module, role=main removed    0.967  0.923   1.000  0.000  29/30    29.5
================================  =====  ======  =====  =====  =======  =====

readability-lxml keeps one best-scoring block, so on long multi-section pages it keeps
one section (0.6% of flask's ``api.html``, 0 words of some genindex pages); trafilatura
keeps 97-98% of the words but drops link lists (30% on python's link-dense pages) and its
own HTML output writes inline code as ``<pre>`` (hence 4/30 tables). So: the author's
landmark when there is one (every Sphinx page: the reference above is that same element,
so the 1.000 there shows only that nothing is lost, not extractor quality); the link-dense
guard; and trafilatura, which has the better recall of the two, with our own XML-to-HTML
mapping, for pages without landmarks ("role=main removed": 0.967 of the words, headings
mostly lost: trafilatura dropped them on these pages; cause not investigated).
"""

from __future__ import annotations

import re

import lxml.etree as ET
import lxml.html

__all__ = ["main_content", "LINK_DENSE", "MIN_WORDS"]

#: Link text / all text of the pre-passed body at or above which the extractor is skipped.
LINK_DENSE = 0.5
#: An extraction with fewer words than this (while the page has more) counts as nothing.
MIN_WORDS = 10

_CHROME_TAGS = frozenset(("nav", "aside", "header", "footer"))
_CHROME_ROLES = frozenset(("navigation", "banner", "contentinfo", "complementary", "search"))
_CHROME_CLASSES = frozenset(("sphinxsidebar", "related", "footer"))
_CONSENT = re.compile(r"consent|gdpr|cookiebot|cookie[-_]?(?:banner|notice|bar|law|popup|modal|"
                      r"message|alert|policy|dialog|warning|info|wrapper|container|accept)",
                      re.IGNORECASE)
_WORD = re.compile(r"\w+")


def main_content(html: str) -> str | None:
    """The HTML of the page's main content, or ``None`` to convert the whole page.

    Args:
        html: the decoded document (:func:`crawler.decode.decode_html`).

    Returns:
        An HTML fragment (serialized by lxml; relative links are left as written, so
        :func:`crawler.markdown.to_markdown` resolves them against the page's base), or
        ``None`` when the document cannot be parsed, has no body text, or the extractor
        finds nothing usable (rule 5 of the module docstring).

    Raises:
        Nothing for malformed markup; a fresh parser per call, so it is thread-safe.
    """
    try:
        root = lxml.html.document_fromstring(html)
    except (ET.ParserError, ValueError):  # empty or unparsable document
        return None
    _strip_chrome(root)
    main = _main_landmark(root)
    if main is not None:
        return _serialize(main)
    body = root.find("body")
    if body is None:
        return None
    text = _text(body)
    if not text.strip():
        return None
    links = sum(len(_text(a)) for a in body.iter("a"))
    if links >= LINK_DENSE * len(text):
        return _serialize(body)
    selected = _extract(root)
    if selected is None:
        return None
    if _flattened(selected, body):
        return _serialize(body)
    words = len(_WORD.findall(_text(selected)))
    if words == 0 or (words < MIN_WORDS and len(_WORD.findall(text)) > words):
        return None
    return _serialize(selected)


_BLOCKS = ("p", "pre", "li", "table", "blockquote", "dt", "dd", *(f"h{n}" for n in range(1, 7)))


def _flattened(selected, body) -> bool:
    """Whether the extraction is one bare paragraph (trafilatura's baseline fall-back)
    while ``body`` has more than one block (step 3)."""
    if len(selected) != 1 or selected[0].tag != "p" or len(selected[0]):
        return False
    return sum(1 for _ in body.iter(*_BLOCKS)) > 1


def _classes(element) -> set[str]:
    return set((element.get("class") or "").split())


def _is_chrome(element) -> bool:
    """Whether ``element`` is labelled chrome by the rules of step 1."""
    if element.tag in _CHROME_TAGS:
        return True
    if (element.get("role") or "").strip().lower() in _CHROME_ROLES:
        return True
    classes = _classes(element)
    if classes & _CHROME_CLASSES:
        return True
    return any(_CONSENT.search(token) for token in classes | {element.get("id") or ""})


def _is_content(element) -> bool:
    """``main``, ``article`` or ``role=main``: nothing inside is removed."""
    return (element.tag in ("main", "article")
            or (element.get("role") or "").strip().lower() == "main")


def _strip_chrome(root) -> None:
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
        element.drop_tree()


def _main_landmark(root):
    """The one ``main`` element, else the one ``role=main`` element, else ``None``."""
    mains = [el for el in root.iter("main") if el.get("hidden") is None]
    if len(mains) == 1:
        return mains[0]
    if not mains:
        roles = root.xpath("//*[@role='main']")
        if len(roles) == 1:
            return roles[0]
    return None


def _text(element) -> str:
    """The text of ``element`` (``script``/``style`` are gone after the pre-pass)."""
    return ET.tostring(element, method="text", encoding="unicode", with_tail=False)


def _serialize(element) -> str:
    return lxml.html.tostring(element, encoding="unicode", method="html")


# trafilatura's XML (its own TEI-like tags) -> HTML that html2text renders well.
_HEADINGS = {f"h{n}": f"h{n}" for n in range(1, 7)}
#: Tags (trafilatura's, and the HTML ones they became) whose ``code`` child is inline.
_INLINE_PARENTS = frozenset(("p", "item", "li", "cell", "td", "th", "ref", "a", "hi", "strong", "em",
                             "head", *(f"h{n}" for n in range(1, 7))))
_HI = {"#b": "strong", "#i": "em", "#u": "u", "#t": "code", "#sub": "sub", "#sup": "sup"}


def _extract(root):
    """trafilatura's selection of ``root`` as an HTML ``div`` element, or ``None``."""
    import trafilatura  # imported on first use: only pages without a main landmark need it

    for pre in root.iter("pre"):
        _wrap_in_span(pre)
    document = trafilatura.bare_extraction(
        root, favor_recall=True, include_comments=False, include_tables=True,
        include_formatting=True, include_links=True, include_images=False,
        deduplicate=False, with_metadata=False)
    body = getattr(document, "body", None)
    if body is None or not len(body) and not (body.text or "").strip():
        return None
    return _xml_to_html(body)


def _wrap_in_span(pre) -> None:
    """Move the content of ``pre`` into one ``span``: trafilatura keeps a ``pre`` as code
    only when it wraps a single span (or looks like code); otherwise it makes it a quote
    and the line breaks are lost."""
    span = lxml.html.Element("span")
    span.text, pre.text = pre.text, None
    for child in list(pre):
        span.append(child)
    pre.append(span)


def _xml_to_html(body):
    """Rename trafilatura's XML tags to HTML, in place; returns the new ``div`` root.

    ``code`` becomes a ``pre`` block only when its text spans lines or it stands alone
    (not inside a paragraph, list item, cell or link), else inline ``code``.
    """
    for element in body.iter():
        tag = element.tag
        if not isinstance(tag, str):
            continue
        if tag == "head":
            element.tag = _HEADINGS.get(element.get("rend", ""), "h3")
        elif tag == "list":
            element.tag = "ol" if element.get("rend", "").startswith("ol") else "ul"
        elif tag == "item":
            element.tag = "li"
        elif tag == "quote":
            element.tag = "blockquote"
        elif tag == "lb":
            element.tag = "br"
        elif tag == "ref":
            element.tag = "a"
            element.set("href", element.get("target", ""))
        elif tag == "hi":
            element.tag = _HI.get(element.get("rend", ""), "em")
        elif tag == "row":
            element.tag = "tr"
        elif tag == "cell":
            element.tag = "th" if element.get("role") == "head" else "td"
        elif tag == "code" and element.getparent() is not None \
                and element.getparent().tag in ("pre", "code"):
            element.tag = "span"  # trafilatura nests code in code: one block, not two
        elif tag == "code":
            parent = element.getparent()
            inline = "\n" not in (element.text or "") and parent is not None \
                and parent.tag in _INLINE_PARENTS
            element.tag = "code" if inline else "pre"
        elif tag == "doc" or tag == "body":
            element.tag = "div"
        if element.tag != "a":
            keep_href = None
        else:
            keep_href = element.get("href")
        element.attrib.clear()
        if keep_href is not None:
            element.set("href", keep_href)
    body.tag = "div"
    return body
