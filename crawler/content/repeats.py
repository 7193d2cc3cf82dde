"""Boilerplate across a site: text blocks that repeat on most of a site's pages.

An extractor sees one page; a crawler sees the site. A footer line, a "subscribe" box
or a cookie notice that no class names is still the same text on page after page.
:class:`SiteBlocks` counts, per site, on how many pages each short text block appears
(its fingerprint: xxh3-64 of its whitespace-collapsed text), and :func:`drop_repeated`
removes from a page's content the blocks seen on more than :data:`SHARE` of the site's
pages, once at least :data:`MIN_PAGES` of them were seen. Before that, a page keeps its
blocks: a site's first pages are converted whole.

Each fetcher process keeps one :class:`SiteBlocks` and counts the pages it converts:
the dispatcher hands a site's pages to the fetchers regardless of their content, so
each fetcher's pages are a sample of the site, and the share is estimated from it with
no message between processes. A site's counts are learned from its first
:data:`LEARN_PAGES` pages (in that fetcher), then frozen to the set of repeated
fingerprints. Memory is bounded: blocks longer than :data:`MAX_BLOCK_CHARS` are not
counted (boilerplate is short; a page's paragraphs would fill the table), at most
:data:`MAX_BLOCKS_PER_SITE` fingerprints are counted per site, at most
:data:`MAX_LEARNING_SITES` sites learn at once (the least recently seen one is
dropped and learns again when it comes back), and at most :data:`MAX_SITES` frozen
sets of at most :data:`MAX_REPEATED` fingerprints are kept (a site repeating more has
none): tens of MiB per fetcher at the worst. The counts are not stored: a resumed
crawl learns again.

Used only where the content is not a ``main`` landmark the page declared (a block
repeated inside ``main`` is the author's and stays: :mod:`crawler.content.main`).
"""

from __future__ import annotations

import collections
import threading

import lxml.html
import xxhash

from crawler.content.document import collapsed_text, drop

__all__ = ["SiteBlocks", "drop_repeated", "SHARE", "MIN_PAGES", "LEARN_PAGES"]

#: A block on more than this share of a site's pages seen is boilerplate.
SHARE = 0.5
#: Pages of a site seen (by this fetcher) before any block of it is dropped.
MIN_PAGES = 10
#: Pages of a site whose blocks are counted; then the repeated set is frozen.
LEARN_PAGES = 50
#: Longest block counted, in characters of collapsed text.
MAX_BLOCK_CHARS = 400
#: Fingerprints counted per site at most; later new ones are not counted.
MAX_BLOCKS_PER_SITE = 1024
#: Sites learning at once at most (least recently seen dropped first): a batch crawl
#: serves its sites in turn, so this many sites must learn side by side.
MAX_LEARNING_SITES = 512
#: Frozen sites kept at most (least recently seen dropped first).
MAX_SITES = 2048
#: Repeated fingerprints kept per frozen site at most (a site's boilerplate is a few
#: blocks; a site whose pages repeat more is not learned from).
MAX_REPEATED = 256
#: The elements that are text blocks: the innermost of these that hold text.
BLOCKS = frozenset(("p", "div", "blockquote", "figcaption", "address", "section", "aside", "header", "footer"))
#: What makes a block more than its text: a block holding one is never repeated.
_MEDIA = ("img", "picture", "video", "audio", "iframe", "object", "embed", "svg", "canvas")
#: Words a repeated block has at least to go beside blocks of the page's own: shorter
#: ones are labels ("Weight", "Price per unit").
LABEL_WORDS = 4
#: Share of a page's text at or above which its repeated blocks all stay.
MAX_PAGE_SHARE = 0.5
#: Never a repeated block, nor anything inside: code, tables, lists and headings are
#: the text's structure however often they repeat (every recipe's "Ingredients" and
#: "1 tsp salt", every API page's "Parameters").
_KEPT = frozenset(("pre", "code", "table", "ul", "ol", "dl", "h1", "h2", "h3", "h4", "h5", "h6"))


class _Learning:
    __slots__ = ("pages", "counts")

    def __init__(self) -> None:
        self.pages = 0
        self.counts: collections.Counter[int] = collections.Counter()


class SiteBlocks:
    """Per-site counts of the pages each short text block appears on (the module
    docstring). Thread-safe: the threads of a fetcher share one.

    :meth:`observe` is the only call: it counts a page's blocks and answers which of
    the site's blocks are repeated.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._learning: collections.OrderedDict[str, _Learning] = collections.OrderedDict()
        self._frozen: collections.OrderedDict[str, frozenset[int]] = collections.OrderedDict()

    def observe(self, site: str, fingerprints: set[int]) -> frozenset[int]:
        """Count one page of ``site`` holding the blocks ``fingerprints`` (each once)
        and return the site's repeated blocks: empty while fewer than
        :data:`MIN_PAGES` pages were seen."""
        with self._lock:
            frozen = self._frozen.get(site)
            if frozen is not None:
                self._frozen.move_to_end(site)
                return frozen
            learning = self._learning.pop(site, None) or _Learning()
            self._learning[site] = learning  # the most recently seen last
            if len(self._learning) > MAX_LEARNING_SITES:
                self._learning.popitem(last=False)
            learning.pages += 1
            counts = learning.counts
            for fingerprint in fingerprints:
                if fingerprint in counts or len(counts) < MAX_BLOCKS_PER_SITE:
                    counts[fingerprint] += 1
            repeated = self._repeated(learning)
            if len(repeated) > MAX_REPEATED:
                repeated = frozenset()
            if learning.pages >= LEARN_PAGES:
                del self._learning[site]
                self._frozen[site] = repeated
                if len(self._frozen) > MAX_SITES:
                    self._frozen.popitem(last=False)
            return repeated

    @staticmethod
    def _repeated(learning: _Learning) -> frozenset[int]:
        if learning.pages < MIN_PAGES:
            return frozenset()
        bar = SHARE * learning.pages
        return frozenset(fingerprint for fingerprint, count in learning.counts.items() if count > bar)


def drop_repeated(region: lxml.html.HtmlElement, site: str, blocks: SiteBlocks) -> int:
    """Count ``region``'s text blocks as one page of ``site`` in ``blocks``, then drop
    from it those repeated on the site's pages; returns how many were dropped.

    A text block is an innermost element of :data:`BLOCKS` with text and no image or
    other media (its text alone does not say what it shows), outside code, tables, lists
    and headings, at most :data:`MAX_BLOCK_CHARS` characters of collapsed text. A
    repeated label (fewer than :data:`LABEL_WORDS` words) goes only when every text block
    beside it (same parent) is repeated too: "Weight" beside its page's own value is the
    text's. Nothing goes when what would go is :data:`MAX_PAGE_SHARE` or more of the
    region's text: such a page repeats the site (a listing under another query, a near
    copy), its text is not boilerplate.
    """
    found: list[tuple[lxml.html.HtmlElement, int, str]] = []  # (block, fingerprint, text)
    for element in _text_blocks(region):
        if next(element.iter(*_MEDIA), None) is not None:
            continue
        text = collapsed_text(element)
        if text and len(text) <= MAX_BLOCK_CHARS:
            found.append((element, xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass")), text))
    repeated = blocks.observe(site, {fingerprint for _, fingerprint, _ in found})
    if not repeated:
        return 0
    beside: dict[lxml.html.HtmlElement | None, list[int]] = {}
    for element, fingerprint, _ in found:
        beside.setdefault(element.getparent(), []).append(fingerprint)
    doomed = [
        (element, len(text))
        for element, fingerprint, text in found
        if fingerprint in repeated
        and (text.count(" ") >= LABEL_WORDS or repeated.issuperset(beside[element.getparent()]))
    ]
    total = len(collapsed_text(region))
    if sum(length for _, length in doomed) >= MAX_PAGE_SHARE * total:
        return 0
    for element, _ in doomed:
        drop(element)
    return len(doomed)


def _text_blocks(region: lxml.html.HtmlElement) -> list[lxml.html.HtmlElement]:
    """The innermost :data:`BLOCKS` elements of ``region`` (none inside code, tables,
    lists or headings, none holding one), in one walk down and one back up."""
    order: list[tuple[lxml.html.HtmlElement, int]] = []  # each element after its parent
    stack = [(region, -1)]
    while stack:
        element, parent = stack.pop()
        order.append((element, parent))
        if element.tag not in _KEPT or element is region:
            stack.extend((child, len(order) - 1) for child in element if isinstance(child.tag, str))
    holds = [False] * len(order)  # holds a block, code or a table
    innermost = []
    for index in range(len(order) - 1, 0, -1):  # children before their parents
        element, parent = order[index]
        if element.tag in BLOCKS and not holds[index]:
            innermost.append(element)
        if element.tag in BLOCKS or element.tag in _KEPT or holds[index]:
            holds[parent] = True
    return innermost
