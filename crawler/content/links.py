"""Pull the title, the ``<base href>`` and the outgoing link targets out of an HTML page.

:func:`extract` returns the *raw* attribute values (entity-decoded, otherwise exactly as
written, surrounding whitespace included); :func:`resolve_links` turns them into
canonical absolute URLs with :func:`crawler.web.urlnorm.normalize`.

The parser is libxml2's HTML parser through lxml (:func:`crawler.content.document.parse`,
the page's one parse): the same links as BeautifulSoup (which sits on the same libxml2
parser) at a fraction of its cost (docs/performance.md, "Link extraction").

Which elements count as links follows the HTML standard's hyperlink and navigable
elements: ``a[href]``, ``area[href]`` and the nested browsing contexts ``frame[src]`` and
``iframe[src]``, plus the target of a ``<meta http-equiv="refresh">`` (a navigation the
browser makes by itself). ``img`` and ``script`` are sub-resources, not pages, and are
ignored; of ``link`` only ``rel=canonical`` is read, and kept apart
(:attr:`PageLinks.canonical`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import lxml.etree as ET

from crawler.content.document import parse
from crawler.web import urlnorm

__all__ = [
    "PageLinks",
    "extract",
    "links_of",
    "effective_base",
    "resolve_links",
    "link_targets",
    "refresh_url",
    "LINK_ATTRIBUTES",
]

#: Element name -> the attribute holding its link target.
LINK_ATTRIBUTES: dict[str, str] = {"a": "href", "area": "href", "frame": "src", "iframe": "src"}

_WANTED = ("a", "area", "frame", "iframe", "title", "base", "meta", "link")

# HTML standard "strip and collapse ASCII whitespace": ASCII whitespace is
# TAB, LF, FF, CR and SPACE (not NBSP or other Unicode spaces).
_ASCII_WS = re.compile(r"[\t\n\f\r ]+")


@dataclass(frozen=True, slots=True)
class PageLinks:
    """What :func:`extract` found in one document.

    Attributes:
        title: text of the first ``<title>`` element, ASCII whitespace stripped and
            collapsed to single spaces (as ``document.title`` in the HTML standard);
            ``None`` when there is no title or it is empty after collapsing.
        base_href: the raw ``href`` value of the first ``<base>`` element that has an
            ``href`` attribute (HTML standard, "frozen base URL"); ``None`` if none.
        hrefs: raw link targets in document order, duplicates kept: ``a[href]``,
            ``area[href]``, ``frame[src]``, ``iframe[src]`` and the URL of the first
            ``<meta http-equiv=refresh>`` that has one (:func:`refresh_url`).
        canonical: the raw ``href`` of the first ``<link rel=canonical>`` (``rel`` is
            a set of space-separated, ASCII case-insensitive tokens), or ``None``.
    """

    title: str | None = None
    base_href: str | None = None
    hrefs: tuple[str, ...] = ()
    canonical: str | None = None


_EMPTY = PageLinks()


def extract(text: str) -> PageLinks:
    """Parse an HTML document and return its title, ``<base href>`` and link targets:
    :func:`links_of` the tree :func:`crawler.content.document.parse` makes of ``text``.

    Args:
        text: the decoded document (see :func:`crawler.web.decode.decode_html`). Any
            string is accepted: malformed markup is repaired by libxml2's HTML
            parser in recovery mode, as browsers do.

    Returns:
        A :class:`PageLinks`. Attribute values are entity-decoded but otherwise raw
        (not stripped, not resolved, not normalised). An attribute written without a
        value (``<a href>``) yields ``""``. Empty input, binary garbage or a document
        the parser cannot make anything of yields an empty ``PageLinks()``.

    Raises:
        Nothing: parser errors are swallowed and give an empty result.
    """
    return links_of(parse(text))


def links_of(root: ET._Element | None) -> PageLinks:
    """:func:`extract` on a parsed document (``None``: an empty ``PageLinks()``); reads
    the tree, never changes it."""
    if root is None:
        return _EMPTY
    title: str | None = None
    seen_title = False
    base_href: str | None = None
    canonical: str | None = None
    refresh_seen = False
    hrefs: list[str] = []
    try:
        for el in root.iter(*_WANTED):
            tag = el.tag
            attr = LINK_ATTRIBUTES.get(tag)  # type: ignore[arg-type]  # iter(*_WANTED): a str tag
            if attr is not None:
                value = el.get(attr)
                if value is not None:
                    hrefs.append(value)
            elif tag == "title":
                if not seen_title:
                    seen_title = True
                    title = _ASCII_WS.sub(" ", "".join(el.itertext())).strip(" ") or None
            elif tag == "meta":
                if not refresh_seen and (el.get("http-equiv") or "").strip().lower() == "refresh":
                    target = refresh_url(el.get("content") or "")
                    if target is not None:
                        refresh_seen = True
                        hrefs.append(target)
            elif tag == "link":
                if (
                    canonical is None
                    and el.get("href") is not None
                    and "canonical" in (el.get("rel") or "").lower().split()
                ):
                    canonical = el.get("href")
            elif base_href is None:  # tag == "base"
                base_href = el.get("href")
    except Exception:  # pragma: no cover - defensive; iteration over a parsed tree
        return _EMPTY
    return PageLinks(title=title, base_href=base_href, hrefs=tuple(hrefs), canonical=canonical)


_REFRESH_WS = "\t\n\x0c\r "


def refresh_url(content: str) -> str | None:
    """The URL of a ``<meta http-equiv=refresh content=...>``, raw, or ``None``.

    Follows the HTML standard's "shared declarative refresh steps": a time (digits,
    then digits and dots), then ``;`` or ``,`` or whitespace, then optionally
    ``url=`` (case-insensitive, spaces allowed around ``=``), then the URL, in quotes
    or not (a quoted one ends at its closing quote). ``"5"`` (a reload of the same
    page), ``"5; url="`` and contents not starting with a time give ``None``.
    """
    n, i = len(content), 0
    while i < n and content[i] in _REFRESH_WS:
        i += 1
    start = i
    while i < n and content[i].isascii() and content[i].isdigit():
        i += 1
    if i == start and not (i < n and content[i] == "."):
        return None
    while i < n and (content[i] == "." or (content[i].isascii() and content[i].isdigit())):
        i += 1
    if i == n or content[i] not in ";," + _REFRESH_WS:
        return None
    while i < n and content[i] in _REFRESH_WS:
        i += 1
    if i < n and content[i] in ";,":
        i += 1
    while i < n and content[i] in _REFRESH_WS:
        i += 1
    if i == n:
        return None
    url_start = i
    if content[i] in "uU":
        i += 1
        if i < n and content[i] in "rR" and i + 1 < n and content[i + 1] in "lL":
            i += 2
            while i < n and content[i] in _REFRESH_WS:
                i += 1
            if i < n and content[i] == "=":
                i += 1
                while i < n and content[i] in _REFRESH_WS:
                    i += 1
            else:
                i = url_start  # "url" not followed by "=": it is the URL itself
                return content[i:] or None
        else:
            return content[url_start:] or None
    quote = content[i] if i < n and content[i] in "'\"" else ""
    if quote:
        i += 1
    url = content[i:]
    if quote and quote in url:
        url = url[: url.index(quote)]
    return url or None


def effective_base(page_url: str, page: PageLinks) -> str:
    """Return the URL that relative links on the page are resolved against.

    Args:
        page_url: the absolute URL the document was fetched from (after redirects).
        page: the result of :func:`extract` for that document.

    Returns:
        ``urlnorm.request_url(page.base_href, page_url)`` when the document has a
        ``<base href>`` and it normalises to an http(s) URL (a relative base is itself
        resolved against the document URL, HTML standard "frozen base URL");
        otherwise ``page_url`` unchanged.

    Raises:
        Nothing beyond what ``urlnorm.normalize`` raises (it returns ``None`` for
        unusable input).
    """
    if page.base_href is not None:
        base = urlnorm.request_url(page.base_href, page_url)
        if base is not None:
            return base
    return page_url


def link_targets(
    page_url: str, page: PageLinks, request_url: Callable[[str, str], str | None] = urlnorm.request_url
) -> list[tuple[str, str]]:
    """Resolve a page's link targets into (key, request URL) pairs.

    Args:
        page_url: the absolute URL the document was fetched from, as requested.
        page: the result of :func:`extract` for that document.
        request_url: :func:`crawler.web.urlnorm.request_url`, or a function that gives
            the same values (a fetcher's :class:`crawler.web.urlnorm.RequestUrlMemo`).

    Returns:
        ``[(key, request_url)]`` sorted by key, one pair per distinct key: ``key`` is
        ``urlnorm.normalize(href, base)`` (the visited-table key), ``request_url`` is
        ``urlnorm.request_url(href, base)`` (the same URL with the query in the order
        written; for a key found under several spellings, the first in the document).
        ``base`` is :func:`effective_base`. Hrefs that are not http(s) (``mailto:``,
        ``tel:``, ``javascript:``, ``data:``, ``ftp:``) or do not parse are dropped.
    """
    base = effective_base(page_url, page)
    targets: dict[str, str] = {}
    for href in dict.fromkeys(page.hrefs):  # 39% of python3.11-doc hrefs repeat within their page
        sent = request_url(href, base)
        if sent is not None:
            targets.setdefault(urlnorm.key_of(sent), sent)
    return sorted(targets.items())


def resolve_links(page_url: str, page: PageLinks) -> list[str]:
    """Resolve and canonicalise a page's link targets.

    Returns:
        the sorted distinct keys of :func:`link_targets` (canonical absolute http(s)
        URLs, ``urlnorm.normalize`` of each href against :func:`effective_base`).
    """
    return [key for key, _ in link_targets(page_url, page)]
