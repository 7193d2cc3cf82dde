"""Node-level selection: inside a region of a page, the blocks that hold the text an
extractor selected stay with the structure of that text, and the blocks it left out go.

An extractor (trafilatura) decides which text of a page is its main content, and
rewrites it on the way: that rewrite loses code blocks, tables and headings
(:mod:`crawler.content.main`). So the page's own HTML is kept and only the extractor's
decision is read back, block by block:

1. :func:`selected_weights`: each text piece of the page (an element's text or tail,
   whitespace collapsed, 2 characters or more) found in the extractor's text adds its
   length to the element that holds it and to every ancestor up to the region.
2. :func:`keep_selected` walks the region from the top. A **block** (:data:`BLOCKS`)
   holding selected text stays and is looked into, unless it is a list, a definition
   list or a table (judged whole: an item is part of its list). Inline elements are
   never judged. A block with none of it goes, unless it is kept by one of these rules,
   each for content extractors are known to leave out:

   * it comes before the text's start (below) and is a heading, a box of sentences or
     a post (below), or holds no text, media or code (``code``, ``kbd``, ``samp``...),
     or :data:`MIN_LEAD_WORDS` words or more under half link text: the title,
     standfirst and lead image an extractor leaves out of the text's start, the posts
     of a thread before the one it took. Another container there is looked into (not a
     list, a table or a quotation). The rules below hold for its blocks too, but a
     list of :data:`MENU_LINKS` link text is a menu there and goes, and its headings
     are not judged. So a one-word kicker, a short byline or date line ("By Ann Lee",
     "March 4, 2024"), a reading time, a photo credit or a "Print" link there goes,
     unless a rule below keeps it (a ``p`` of four words);
   * it holds no text (an image, an embed, a spacer);
   * it is or holds code or a table (``pre``, ``table``), or the next block after it is
     one: the sentence or caption that introduces the code;
   * both blocks beside it are kept for their selected text, code or table, and under
     half of its text is links: a sentence inside the text, not a "Further links" box;
   * it is a ``p`` of :data:`MIN_SENTENCE_WORDS` words or more (a character of Chinese,
     Japanese or Thai counts as a word), under half of them link text: a sentence; or
     boxes of such sentences, each perhaps opened by a ``p`` label, with no heading or
     list inside (a note, "Changed in version 3.2: ...", docutils' footnotes); or prose
     of :data:`MIN_PROSE_CHARS` characters or more, under a fifth link text (a lead
     paragraph in a ``div``);
   * it is a ``p`` that opens its container, before a block kept for its selected text,
     code or table: a box's label ("Note", "See also");
   * it repeats the tag and class of a selected block that holds
     :data:`POST_SHARE` of the selected text, with under half of its text in links:
     one post of several (an answer beside the question, a reply of a thread), not a
     box of teasers in the same layout ``div.row``;
   * it is a ``figure`` (a container with a figure inside is looked into, and the figure
     stays): HTML 4.4.12, "self-contained content ... referenced as a single unit from
     the main flow";
   * it is a list (``ul``, ``ol``, ``dl``) or a ``blockquote``: a "Further reading"
     list or an index's list of guides, which extractors leave out as links (related
     links sit in a wrapper, judged whole), a quotation;
   * it is a heading (``h1``-``h6``, or a wrapper holding only one) whose section, the
     blocks after it up to the next heading, keeps text, or whose next heading is a
     subsection's and stays; a heading with nothing after it in its container (a title
     in its ``header``) opens what follows the container.

   The text's start is the first block holding :data:`MIN_START_CHARS` of selected
   text: a piece is selected wherever it occurs in the extractor's text, so a label
   before the title ("Art", found in "Arts") does not start it.

   When what would go after the start holds :data:`MAX_DROPPED_SHARE` or more of the
   region's text, nothing goes: the extractor then took a part of the text for the
   whole (one post of a thread whose posts are the page's text). Nothing goes either
   when no block starts the text (its pieces are short lines, or found by chance).

Measured on the extraction dev set and the Debian documentation sites in
docs/performance.md ("Main content"). Raises nothing; changes the region in place.
"""

from __future__ import annotations

import re

import lxml.html

from crawler.content.document import collapsed_text, drop

__all__ = [
    "BLOCKS",
    "MAX_DROPPED_SHARE",
    "MIN_PROSE_CHARS",
    "MIN_SENTENCE_WORDS",
    "MENU_LINKS",
    "MIN_LEAD_WORDS",
    "MIN_START_CHARS",
    "POST_SHARE",
    "keep_selected",
    "selected_weights",
]

#: The elements judged (HTML's flow content that groups or sections text). ``span``,
#: ``a``, ``em``... are phrasing content, part of the block around them.
BLOCKS = frozenset(
    (
        "div",
        "section",
        "article",
        "aside",
        "header",
        "footer",
        "main",
        "nav",
        "form",
        "details",
        "blockquote",
        "figure",
        "p",
        "ul",
        "ol",
        "li",
        "dl",
        "dd",
        "dt",
        "table",
        *(f"h{n}" for n in range(1, 7)),
    )
)
#: Blocks judged whole: a list's items and a table's cells are parts of it.
_WHOLE = frozenset(("ul", "ol", "dl", "table"))
#: Blocks judged whole before the text's start: a quotation too.
_LEAVES = _WHOLE | {"blockquote"}
_HEADINGS = frozenset(f"h{n}" for n in range(1, 7))
_LISTS = frozenset(("ul", "ol", "dl"))
_CODE_OR_TABLE = ("pre", "table")
_MEDIA = ("img", "picture", "video", "audio", "iframe", "object", "embed", "svg")
_CODE = ("code", "kbd", "samp", "tt", "var")
#: Characters of the scripts written without spaces between words (Unicode blocks:
#: Thai, Lao, Myanmar, Khmer, Hiragana, Katakana, CJK Extension A, CJK Unified
#: Ideographs, CJK Compatibility Ideographs).
_UNSPACED = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
#: A ``p`` of at least this many words (under half link text) is a sentence and stays.
MIN_SENTENCE_WORDS = 4
#: A block of at least this many characters of text (under a fifth link text) stays.
MIN_PROSE_CHARS = 200
#: Characters of selected text a block needs to be the text's first (a label before
#: the title, "Art" or "Storage", is found in the text too).
MIN_START_CHARS = 20
#: A block before the text's start with at least this many words (under half link
#: text) is its lead and stays (a subtitle: "Council ends years of hearings"); a
#: shorter one is a kicker, a byline or a label ("Politics", "5 min read").
MIN_LEAD_WORDS = 5
#: Share of link text at or above which a list before the text's start is a menu (a
#: list of linked ingredients, "200 g <a>flour</a>", is not).
MENU_LINKS = 0.8
#: Share of the selected text a block must hold for its tag and class to mark a post.
POST_SHARE = 0.1
#: Share of the region's text at or above which nothing unselected goes.
MAX_DROPPED_SHARE = 0.5
_POSTS = frozenset(("div", "article", "section", "li"))


def selected_weights(region: lxml.html.HtmlElement, extracted: str) -> dict[lxml.html.HtmlElement, int]:
    """For each element of ``region`` (``region`` included) the characters of its text
    pieces found in ``extracted`` (the extractor's text, whitespace collapsed); elements
    without any are absent. A comment's tail counts for its parent."""
    weight: dict[lxml.html.HtmlElement, int] = {}
    elements = list(region.iter())  # held: the same proxy object stands for an element
    for element in elements:
        if isinstance(element.tag, str):
            piece = " ".join((element.text or "").split())
            if len(piece) >= 2 and piece in extracted:
                weight[element] = weight.get(element, 0) + len(piece)
        if element is not region and element.tail:  # a comment's tail is its parent's text too
            piece = " ".join(element.tail.split())
            owner = element.getparent()
            if len(piece) >= 2 and piece in extracted and owner is not None:
                weight[owner] = weight.get(owner, 0) + len(piece)
    for element in reversed(elements):  # children before their parents
        selected = weight.get(element, 0)
        parent = element.getparent() if selected and element is not region else None
        if parent is not None:
            weight[parent] = weight.get(parent, 0) + selected
    return weight


def keep_selected(region: lxml.html.HtmlElement, weight: dict[lxml.html.HtmlElement, int]) -> None:
    """Drop the blocks of ``region`` that hold none of the selected text and no rule of
    the module docstring keeps, in place. ``weight``: :func:`selected_weights` of
    ``region`` or of an element holding it."""
    total = weight.get(region, 0)
    if not total:
        return
    posts = {
        (element.tag, element.get("class"))
        for element, selected in weight.items()
        if element is not region and element.tag in _POSTS and element.get("class") and selected >= POST_SHARE * total
    }
    doomed: list[lxml.html.HtmlElement] = []
    before: list[lxml.html.HtmlElement] = []  # doomed before the text's start
    boxes: dict = {}  # _box_of_sentences of the containers looked into there
    headings: list[lxml.html.HtmlElement] = []  # judged once the blocks after them are
    started = False
    stack = [iter(region)]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
            continue
        if not isinstance(child.tag, str):
            continue
        if weight.get(child, 0):
            if child.tag not in _WHOLE and _holds_blocks(child):
                stack.append(iter(child))
            elif weight[child] >= MIN_START_CHARS:
                started = True
            continue
        if child.tag not in BLOCKS or child.tag == "figure":
            continue
        if not started:  # the title, standfirst and lead image stay
            if _is_heading(child) or _box_of_sentences(child, boxes) or _post(child, posts):
                continue  # a post of a thread before the one the extractor took: whole
            if child.tag not in _LEAVES and _holds_blocks(child):
                stack.append(iter(child))
                continue
            text, links = collapsed_text(child), _link_length(child)
            if not _leads(child, text, links) and not _kept(child, weight, posts, text, links, menus=True):
                before.append(child)
            continue
        if _is_heading(child):
            headings.append(child)
        elif _kept(child, weight, posts):
            continue
        elif child.tag not in _WHOLE and next(child.iter("figure"), None) is not None:
            stack.append(iter(child))  # the figure stays, the rest is judged
        else:
            doomed.append(child)
    gone = set(doomed)
    for heading in reversed(headings):  # a subsection's heading is decided first
        if not _opens_kept(heading, region, gone):
            gone.add(heading)
            doomed.append(heading)
    length = len(collapsed_text(region))
    if not started or sum(len(collapsed_text(element)) for element in doomed) >= MAX_DROPPED_SHARE * length:
        return  # no text's start: the extractor's text is not in this region's blocks
    for element in before + doomed:
        drop(element)


def _kept(
    block: lxml.html.HtmlElement,
    weight: dict,
    posts: set,
    text: str | None = None,
    links: int | None = None,
    menus: bool = False,
) -> bool:
    """Whether an unselected ``block`` stays by a rule of the module docstring;
    ``text`` and ``links``: its collapsed text and link length, if the caller has them;
    ``menus``: a list of :data:`MENU_LINKS` link text does not (before the text's start)."""
    if block.tag in _LISTS and not menus or block.tag == "blockquote":
        return True
    text = collapsed_text(block) if text is None else text
    if block.tag in _LISTS:
        links = _link_length(block) if links is None else links
        return links < MENU_LINKS * len(text)
    if not text:
        return True
    if block.tag == "p" and _previous_element(block) is None and _kept_for_itself(_next_element(block), weight):
        return True
    if _holds_code_or_table(block) or _holds_code_or_table(_next_element(block)):
        return True
    links = _link_length(block) if links is None else links
    if (
        links < 0.5 * len(text)
        and _kept_for_itself(_previous_element(block), weight)
        and _kept_for_itself(_next_element(block), weight)
    ):
        return True
    if len(text) - links >= MIN_PROSE_CHARS and links < 0.2 * len(text):
        return True
    if _sentence(block, text, links):
        return True
    if _box_of_sentences(block):
        return True
    return _post(block, posts, text, links)


def _post(block: lxml.html.HtmlElement, posts: set, text: str | None = None, links: int | None = None) -> bool:
    """Whether ``block`` repeats the tag and class of a post (``posts``), under half of
    its text in links (not a teaser box in the story's layout ``div``)."""
    if not block.get("class") or (block.tag, block.get("class")) not in posts:
        return False
    text = collapsed_text(block) if text is None else text
    links = _link_length(block) if links is None else links
    return links < 0.5 * len(text)


def _leads(block: lxml.html.HtmlElement, text: str, links: int) -> bool:
    """Whether ``block`` (its collapsed ``text``, ``links`` characters of it link text),
    before the text's start, is its lead: no text, media or code, or
    :data:`MIN_LEAD_WORDS` words under half link text."""
    if not text or next(block.iter(*_MEDIA, *_CODE), None) is not None:
        return True
    return _words(text) >= MIN_LEAD_WORDS and links < 0.5 * len(text)


def _holds_blocks(element: lxml.html.HtmlElement) -> bool:
    """Whether a child of ``element`` is a block (:data:`BLOCKS`): a container to look into."""
    return any(isinstance(child.tag, str) and child.tag in BLOCKS for child in element)


def _box_of_sentences(block: lxml.html.HtmlElement, boxes: dict | None = None) -> bool:
    """Whether ``block``'s blocks are sentences (:func:`_sentence`) and boxes of them,
    each box perhaps opened by a ``p`` label: a note ("Changed in version 3.2: ..."),
    docutils' footnotes. A heading or a list inside is a teaser's or a menu's.

    ``boxes``: what was found for each container of an earlier call's subtree (filled
    here), so that asking it of nested containers one by one reads each element once."""
    boxes = {} if boxes is None else boxes
    stack: list[tuple] = [(block, None)]
    while stack:  # children before their parent: (no disqualifier inside, a sentence found)
        element, children = stack.pop()
        if element in boxes:
            continue
        if children is None:  # first visit: its boxes inside are judged first
            children = [child for child in element if isinstance(child.tag, str) and child.tag in BLOCKS]
            if len(children) > 1 and children[0].tag == "p":
                children = children[1:]  # the box's label
            stack.append((element, children))
            stack.extend((c, None) for c in children if c.tag != "p" and c.tag not in _HEADINGS and c.tag not in _WHOLE)
            continue
        fits, found = True, False
        for child in children:
            if child.tag == "p":
                fits, found = fits and _sentence(child), True
            elif child.tag in _HEADINGS or child.tag in _WHOLE:
                fits = False
            else:
                fits, found = fits and boxes[child][0], found or boxes[child][1]
            if not fits:
                break
        boxes[element] = (fits, found)
    return boxes[block][0] and boxes[block][1]


def _sentence(block: lxml.html.HtmlElement, text: str | None = None, links: int | None = None) -> bool:
    """Whether ``block`` is a ``p`` of :data:`MIN_SENTENCE_WORDS` words or more, under
    half of its text in links."""
    if block.tag != "p":
        return False
    text = collapsed_text(block) if text is None else text
    links = _link_length(block) if links is None else links
    return _words(text) >= MIN_SENTENCE_WORDS and links < 0.5 * len(text)


def _words(text: str) -> int:
    """Words in ``text``: its runs between spaces, each character of a script written
    without spaces (Han, kana, Thai, Lao, Khmer, Myanmar) counted as one, as word
    processors count them."""
    return len(text.split()) + len(_UNSPACED.findall(text))


def _link_length(block: lxml.html.HtmlElement) -> int:
    return sum(len(collapsed_text(a)) for a in block.iter("a"))


def _heading_of(block: lxml.html.HtmlElement) -> lxml.html.HtmlElement | None:
    """The heading ``block`` is, or the one a wrapper holds as its only content (a site
    builder's ``<div class="header"><h3>...</h3></div>``), when it shows text."""
    if block.tag not in _HEADINGS:
        children = [child for child in block if isinstance(child.tag, str)]
        if len(children) != 1 or (block.text or "").strip() or (children[0].tail or "").strip():
            return None
        block = children[0]
        if block.tag not in _HEADINGS:
            return None
    return block if _shows_text(block) else None


def _is_heading(block: lxml.html.HtmlElement) -> bool:
    return _heading_of(block) is not None


def _opens_kept(heading: lxml.html.HtmlElement, region: lxml.html.HtmlElement, gone: set) -> bool:
    """Whether a block with text or media after ``heading``, before the next heading,
    stays, or that next heading is a subsection's and stays: ``heading``'s siblings
    after it, then, past the end of its container (a title in its ``header``), those of
    the container, up to ``region``. Named boilerplate is gone by then (prune runs
    first), so a "Share this" heading closing a post does not reach a comment box."""
    rank = _rank(heading)
    node = heading
    while True:
        for sibling in node.itersiblings():
            if not isinstance(sibling.tag, str):
                continue
            if _is_heading(sibling):  # a subsection's stays: so does this
                return _rank(sibling) > rank and sibling not in gone
            if sibling not in gone and (_shows_text(sibling) or next(sibling.iter(*_MEDIA), None) is not None):
                return True
        parent = node.getparent()
        if parent is None or parent is region:
            return False
        node = parent


def _rank(heading: lxml.html.HtmlElement) -> int:
    """A heading's level (``h2``: 2), or that of the heading a wrapper holds."""
    found = _heading_of(heading)
    return int(str((heading if found is None else found).tag)[1])


def _shows_text(element: lxml.html.HtmlElement) -> bool:
    """Whether ``element`` holds text (stops at the first: a section's whole text is
    not read for it)."""
    return any(text.strip() for text in element.itertext())


def _holds_code_or_table(element: lxml.html.HtmlElement | None) -> bool:
    return element is not None and (
        element.tag in _CODE_OR_TABLE or next(element.iter(*_CODE_OR_TABLE), None) is not None
    )


def _kept_for_itself(element: lxml.html.HtmlElement | None, weight: dict) -> bool:
    return element is not None and (weight.get(element, 0) > 0 or _holds_code_or_table(element))


def _previous_element(element: lxml.html.HtmlElement) -> lxml.html.HtmlElement | None:
    return next((s for s in element.itersiblings(preceding=True) if isinstance(s.tag, str)), None)


def _next_element(element: lxml.html.HtmlElement) -> lxml.html.HtmlElement | None:
    return next((s for s in element.itersiblings() if isinstance(s.tag, str)), None)
