"""Boilerplate inside a page's main content: the blocks a region holds that name
themselves as something other than its text, dropped in place.

A ``main`` landmark, an ``article`` or the region an extractor chose
(:mod:`crawler.content.main`) often wraps more than the text: a news site's ``main``
holds the share bar, the author box and the comment form under the story. The region
is kept; :func:`prune` drops inside it:

1. **Blocks named boilerplate**: a container (:data:`CONTAINERS`) whose ``class`` or
   ``id`` names a kind of boilerplate (:data:`BOILERPLATE`: comments and their form,
   sharing, related or recommended stories, newsletters, breadcrumbs, pagination,
   widgets, advertising and sponsoring, ratings, author boxes and bylines, tags, meta
   lines, copyright and credits, paywall notices): the words Readability (Mozilla's
   ``unlikelyCandidates``) and trafilatura (``OVERALL_DISCARD_XPATH``) look for, each
   matched as a part of a class or id token.
2. **Forms** (a comment or newsletter form; the labels around its controls are not the
   text) and **footers** (HTML standard 4.3.9: a section's footer holds "who wrote it,
   links to related documents, copyright data"), but a quotation's or figure's footer,
   its attribution, stays.

The named blocks are kept, all of them, when together they hold :data:`MAX_SHARE` or
more of the region's text: the names then describe the text itself (a forum thread or
an issue page whose posts are ``div.comment``). A block is never dropped when it holds
:data:`MAX_SHARE` or more of the region's text (a wrapper named ``post-with-comments``
holds the post) or holds an ``h1`` (the text's title), and nothing inside ``pre`` or
``code`` is looked at. An ``id`` that is the slug of the heading opening the block
names a section of the text, not a kind of block (docutils writes
``<section id="buffer-related-functions">``) and is not read; a token of
:data:`SLUG_PARTS` parts or more is a slug too, as is a docutils class made from a
title (``admonition-related-topics``), and docutils' sidebar directive is the text's.
What is dropped goes with its content; its tail text stays.

Raises nothing.
"""

from __future__ import annotations

import re

import lxml.html

from crawler.content.document import drop, text_of

__all__ = ["prune", "BOILERPLATE", "CONTAINERS", "MAX_SHARE"]

#: Words that name boilerplate in a ``class`` or ``id``, case-insensitively, as a whole
#: part of a token: parts are cut at ``-``, ``_``, digits and where a lower-case letter
#: meets an upper-case one (``shareBar``, ``comment-respond``; not ``padding``, ``loads``).
#: A word that describes a block instead of naming it does not count: a BEM modifier
#: (after ``--``: ``Section--Ads``), after ``has-``, ``with-`` or ``no-`` (``has-sidebar``),
#: or before ``-layout`` or ``-title``. ``widget`` counts at a token's start only (WordPress's
#: ``widget_text``; page builders call every block of the text ``elementor-widget``).
#: ``teaser`` is not a word here: German CMSs name an article's lead paragraph so.
BOILERPLATE = re.compile(
    r"(?:^|(?<=[\s_])|(?<=[^-]-)|(?-i:(?<=[a-z])(?=[A-Z])))(?<!has-)(?<!with-)(?<!no-)(?:"
    r"comments?|commentlist|respond|reply|replies|disqus|akismet"
    r"|share|sharing|shariff|social|sociable"
    r"|related\w*|recommend(?:ed|ations?)?|read-?next|more-?(?:stories|articles|news)|most-?(?:read|popular)"
    r"|newsletter|subscribe|subscription|signup"
    r"|breadcrumbs?|pagination|pager"
    r"|(?<![^\s])widgets?|sidebar"
    r"|ads?|advert(?:s|isement|ising)?|sponsor(?:s|ed)?|promos?|promotions?|outbrain|taboola"
    r"|ratings?|authors?|author-?(?:bio|box|info|section)|contributor-?bio|byline"
    r"|meta|tags|tag-?list|copyright|credits?|paywall"
    r")(?=$|[\s\d_]|-(?!layout|title)|(?-i:(?<=[a-z])[A-Z]))",
    re.IGNORECASE,
)
#: The elements step 1 reads the names of: blocks that hold other content (a ``dt``
#: named ``c.Py_GetCopyright`` is an API entry, a ``span`` a word or an anchor, a
#: ``table`` named ``ratings`` the text's data).
CONTAINERS = frozenset(("div", "section", "aside", "ul", "ol", "nav", "header", "p", "figure"))
#: A class or id token of this many ``-``-joined parts or more is a title's slug, not a
#: name (docutils: ``admonition-you-can-t-share-pickles-between-versions``).
SLUG_PARTS = 4
#: Class prefixes that docutils gives a title's slug (``.. admonition:: Related
#: topics`` is ``admonition-related-topics``): the text's own blocks.
_TITLE_CLASS_PREFIXES = ("admonition-", "topic-", "sidebar-")
#: docutils' sidebar directive (``aside.sidebar`` opening with ``p.sidebar-title``) is
#: part of the text.
_DOCUTILS_SIDEBAR = "sidebar"
#: Share of the region's text at or above which a block is the text's own wrapper.
MAX_SHARE = 0.5
_DROPPED_TAGS = frozenset(("form", "footer"))
_CODE = frozenset(("pre", "code"))
_HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))
_JUDGED = tuple(sorted(CONTAINERS | _DROPPED_TAGS))
_SLUG_WORD = re.compile(r"[^\W_]+")
#: A heading's section number (Sphinx: "5.3.4. "), not part of its slug.
_SECTION_NUMBER = re.compile(r"^\d+(?:\.\d+)*\.\s+")


def prune(region: lxml.html.HtmlElement) -> bool:
    """Drop the boilerplate blocks inside ``region``, in place (the module docstring).
    Returns whether a block inside ``region`` names boilerplate, dropped or not: a sign
    that ``region`` holds more than its text (:mod:`crawler.content.main` then asks the
    extractor which nodes count)."""
    total = None
    found = False
    forms, named, named_length = [], [], 0
    taken: set[lxml.html.HtmlElement] = set()  # the blocks dropped: a block inside one is not judged
    # The tags judged only (lxml makes a Python object for each element it hands out; a
    # walk over every element cost 2 ms of a Sphinx page), in document order, so a block
    # comes before the blocks it holds.
    for element in region.iter(*_JUDGED):
        form = element.tag in _DROPPED_TAGS
        if form:
            if _attribution(element):
                continue
        elif not _named_boilerplate(element):
            continue
        elif element is not region:
            found = True
        if _inside(element, region, taken):
            continue
        if total is None:
            total = _length(region)
        length = _length(element)
        if length < MAX_SHARE * total and next(element.iter("h1"), None) is None:
            taken.add(element)
            if form:
                forms.append(element)
            else:
                named.append(element)
                named_length += length
    if named_length >= MAX_SHARE * (total or 0):  # the names describe the text: a thread of comments
        named = []
    for element in forms + named:
        drop(element)
    return found


def _inside(element: lxml.html.HtmlElement, region: lxml.html.HtmlElement, taken: set) -> bool:
    """Whether ``element`` lies in code or in a block taken already, below ``region``."""
    for ancestor in element.iterancestors():
        if ancestor is region:
            return False
        if ancestor in taken or ancestor.tag in _CODE:
            return True
    return False


def _attribution(element: lxml.html.HtmlElement) -> bool:
    """A ``footer`` of a quotation or figure: who said it (HTML 4.4.4's example of
    ``blockquote``), not the page's."""
    parent = element.getparent()
    return element.tag == "footer" and parent is not None and parent.tag in ("blockquote", "figure")


def _named_boilerplate(element: lxml.html.HtmlElement) -> bool:
    """Whether ``element``'s class, or its id unless a heading opens it, names
    boilerplate (slugs of titles aside)."""
    names = element.get("class") or ""
    identifier = element.get("id")
    if identifier and not _slug_of_heading(element, identifier):
        names = f"{names} {identifier}"
    tokens = names.split()
    if not tokens or (_DOCUTILS_SIDEBAR in tokens and element.find("p[@class='sidebar-title']") is not None):
        return False
    return any(
        BOILERPLATE.search(token)
        for token in tokens
        if token.count("-") < SLUG_PARTS and not token.startswith(_TITLE_CLASS_PREFIXES)
    )


def _slug_of_heading(element: lxml.html.HtmlElement, identifier: str) -> bool:
    """Whether ``identifier`` is the slug of the heading that opens ``element`` (its first
    child that shows text, empty anchors such as docutils' ``<span id="comments"></span>``
    passed over): the heading's words, after its section number ("5.3.4. The meta
    path"), lower-cased and joined by ``-``, the whole id or its end (Django's
    ``s-comments``). A comment section's ``id="comments"`` opened by "2 comments" is a
    name."""
    if (element.text or "").strip():
        return False
    for child in element:
        if not isinstance(child.tag, str):
            continue
        if child.tag in _HEADINGS:
            title = _SECTION_NUMBER.sub("", _title(child).strip())
            slug = "-".join(_SLUG_WORD.findall(title.lower()))
            return bool(slug) and (identifier == slug or identifier.endswith("-" + slug))
        if any(text.strip() for text in child.itertext()) or (child.tail or "").strip():
            return False  # text before the heading (itertext stops at the first)
    return False


def _title(heading: lxml.html.HtmlElement) -> str:
    """A heading's text less its section number where an element holds it (Sphinx's
    ``span.section-number``, pandoc's ``span.header-section-number``, Bikeshed's
    ``span.secno``)."""
    parts = [heading.text or ""]
    for child in heading:
        classes = (child.get("class") or "") if isinstance(child.tag, str) else ""
        if not ("section-number" in classes or "secno" in classes):
            parts.append(text_of(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _length(element: lxml.html.HtmlElement) -> int:
    return len(text_of(element).strip())
