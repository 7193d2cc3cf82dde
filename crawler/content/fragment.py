"""The HTML a converter is given: a fragment of the page tidied of what has no text
to convert, and of markup that no CommonMark document can say.

:func:`prepare` changes a fragment of a parsed page (:mod:`crawler.content.document`) in
place, before it is serialized for the converter; both converters get the same fragment.
The steps, each a rule a reader of the Markdown would ask for:

0. **Controls that are not the text go**: the permalinks of headings and definitions,
   "Edit on GitHub", "View source" and "Skip to content" links (by where they lead and
   what they say: :data:`_CONTROLS`), and copy buttons.
1. **Embedded and interactive elements go** with their content: ``svg`` (an icon's
   drawing: html-to-markdown writes it as a ``data:`` image, kilobytes of base64),
   ``iframe``, ``object``, ``embed``, ``audio``, ``video``, ``canvas`` (their fallback
   text is for browsers that cannot play them), ``select``, ``textarea`` and ``input``
   (form controls: an option list is not prose; a checkbox that opens a list item
   stays, a task list's ``[x]``, and so does a ``disabled`` one that opens a table cell,
   a comparison table's mark: html-to-markdown wrote ``[ ]`` for any that opens a cell,
   a filter form's box too), and ``noscript`` and ``template`` (HTML standard 4.12: content for
   browsers without scripting, and inert content). Text around them stays. Content
   hidden by markup stays: a closed tab panel or a collapsed answer is text a reader
   opens. The ``hidden`` and ``style`` attributes go (HTML standard 6.1 and CSS
   ``display: none``, ``visibility: hidden``, ``font-size: 0``: html-to-markdown reads
   ``style`` only to drop what it hides, html2text not at all). Every ``span`` is
   unwrapped, its text and children kept: it carries styles and scripts, no markup
   either converter writes, and html-to-markdown wrote the whitespace between two of
   them as itself (a line break between Sphinx's ``<span class="pre">`` words in a
   ``code`` became a hard line break splitting the code span, a nbsp kept as such or
   not by where the spans stood); nearly half the elements of python3.11-doc's main
   content are ``span``, which the steps below and the converter then do not walk.
   The obsolete ``basefont`` and ``bgsound`` go too (the HTML standard's parser pops
   them as soon as they open, 13.2.6.4.7, "in body": they hold nothing and show
   nothing): html-to-markdown read one as open to the end of its parent, so one in a
   ``pre`` took the page after it into the code block.
2. **Links that go nowhere are unwrapped**: an ``a`` without ``href`` or with a
   ``javascript:`` one (WHATWG URL: a script, not a resource) keeps its text and loses
   the link; one that shows neither text nor an image with ``alt`` text goes, a space of
   its text kept (html-to-markdown would write its ``aria-label``, ``title`` or URL
   instead: a share button's "Share on Facebook"). An image whose ``src`` is a
   ``data:`` URL (an inline placeholder or icon, kilobytes of base64 in the Markdown) is
   replaced by its ``alt`` text.
3. **A link, a block or an emphasis in ``pre`` keeps only its text**, and so does an
   emphasis in a code element (``code``, ``kbd``, ``samp``, ``tt``): a fenced code block
   holds no link, a ``div`` there (Sphinx's viewcode blocks) made html-to-markdown add a
   line break, and html2text wrote an emphasis's asterisks into the code
   (`` `a**c**d` ``); the code stays byte for byte.
4. **A layout table becomes blocks**: a table with a list, a definition list, a code
   block, a quotation, a heading or a table in a cell (a pipe table's row is one line:
   no converter can put them there), or a one-row table without a header cell (``th``)
   one of whose cells holds two or more paragraphs with text (``p`` or ``div``: a page
   laid out in columns, such as python3.11-doc's index), has its rows and cells made
   ``div`` elements, so its content is written in order instead of as a broken table
   (html-to-markdown wrote such a table of links as one list item; it still does so with
   a table of several rows, which is kept as a table: most of those are data). Which
   tables of text are layout is this rule's to say, so their ``border`` attribute goes
   (it only draws, HTML standard 16.3.9): html-to-markdown 3.21 writes a table whose
   ``border`` is ``0`` and one of whose cells spans columns as a list, a row an item,
   and a spreadsheet or a calendar saved as HTML has both. A table most of whose cells
   hold no text (spacers and pictures laid out around a few words), or one with a cell
   spanning rows (html-to-markdown misplaces the cells below it), keeps it, and
   html-to-markdown its own rule. In a table that stays one, a thematic break (``hr``)
   in a cell becomes a space (it was written as the text ``---``).
5. **Emphasis a CommonMark document cannot say is unwrapped**: ``b``, ``strong``,
   ``em`` and ``i`` around block content (paragraphs, lists, headings, or two line
   breaks in a row with content on both sides, which the converters write as a blank
   line: a delimiter run cannot span paragraphs), those without text (html2text writes
   their delimiters alone), and those whose delimiters would not be left- and
   right-flanking (CommonMark 0.31, 6.2: ``Montauk<b>.</b>`` would give
   ``Montauk**.**``, shown with its asterisks, and ``<b><a href=u>x</a></b>Y`` gave
   ``**[x](u)**Y``: a link, code span or image at an edge inside is read as the markup
   written there), the characters next to them read as a
   reader sees them: past elements that show nothing, out of ``span``-like elements,
   unwrapped links and outer emphasis, a link as its brackets, a code span as its
   backtick, a block as a line break. The text is kept; only the emphasis goes.
   The line breaks that close an emphasis move outside it (html2text wrote
   ``**a.\n**``); one deeper inside, or one that opens it, unwraps it.
   The whitespace at the ends of the emphasis that stays is moved outside it
   (html2text strips it: ``a<b> bold</b>`` gave ``a**bold**``).
   A ``figcaption`` becomes a ``div``: html-to-markdown writes a caption in emphasis,
   which its line breaks and inner emphasis break; so does a ``caption`` outside a
   ``table``.
6. **Blocks and words stay apart where html-to-markdown runs them together**: a phrasing
   element it writes inline (:data:`_INLINE_ONLY`) and that holds a block is unwrapped,
   outside ``pre`` (``<label><p>a</p></label><label><p>b</p></label>`` gave ``ab``;
   ``<code><pre>`` gave broken code spans for a fenced block), and so is a link holding
   a ``pre`` (a link's text cannot hold a code block); a ``figure`` becomes a ``div``
   (the converter glued the figure's text to its image), and, like a caption, before
   the blocks are read, outside ``pre``; a ``ruby`` whose annotations all have ``rp``
   fallback parentheses is unwrapped with its parts (:func:`_rubies`); the line breaks
   that end a link move after it, a link holding a block gets a line break where
   text touches it, one holding only a heading goes inside the heading, and a list
   showing nothing inside one goes (:func:`_link_apart`); two tables in a list item
   get a line break between them (:func:`_table_apart`), and so do two quotations in a
   row (html-to-markdown ran them into one paragraph, ``> b\n> c``); a link's or an
   image's ``title`` and ``alt`` are put on one line (:func:`_on_one_line`); an
   ``article``, ``section``, ``aside``,
   ``header``, ``footer``, ``main`` or ``form`` inside the fragment becomes a ``div``
   (html-to-markdown wrote a list item that opens with one of the first six after a
   space as an empty item and a paragraph after it, ``1.\n\n   text``, and a form's
   blocks in a list item outside the list, so that a list nested in them became
   indented code); an image with ``alt`` text gets a space
   between it and a letter or digit touching it, outside code, unless that text is one
   character (:func:`_image_apart`: its text stands for a picture, not for part of a
   word; a drop cap's ``T`` is the word's). Which elements hold a block,
   and which are in a ``pre``, is found in one pass each (:func:`_holding`,
   :func:`_in_pre`).

Raises nothing; the fragment's text, apart from what steps 0 to 2 drop and the spaces
and line breaks of step 6, is unchanged
(a link or block inside ``pre`` is unwrapped whatever else it is, so code keeps every
character).
Linear in the fragment: the edits are applied at the end, one rebuild per parent.
"""

from __future__ import annotations

import copy
import itertools
import re
import unicodedata
from collections.abc import Iterator

import lxml.etree
import lxml.html

from crawler.content.document import text_of

__all__ = ["prepare"]

#: Step 0: controls inside the content that are not its text: a heading's permalink
#: (Sphinx and MkDocs write ``<a class="headerlink">¶</a>``), "Edit on GitHub", "Skip to
#: content". Each is a control only where its link goes where such a control goes (a
#: link named "View source" in prose, to an article, is content).
_CONTROLS = (
    (
        re.compile(r"(?i)edit (this page|on github|on gitlab|on bitbucket)"),
        re.compile(r"/edit/|/-/edit/|/blob/|/_edit"),
    ),
    (re.compile(r"(?i)(view|show) (page |this page's )?source"), re.compile(r"_sources/|/blob/|\.(rst|txt|md)$")),
    (re.compile(r"(?i)skip to (main )?content"), re.compile(r"^#")),
)
#: Where any of those links goes (one search of a link's ``href`` before the others).
_CONTROL_HREF = re.compile("|".join(where.pattern for _name, where in _CONTROLS))
_PERMALINK_TEXT = ("¶", "§", "#", "🔗")
#: Class tokens of copy buttons (sphinx-copybutton, MkDocs Material, common themes).
_COPY_CLASSES = frozenset(("copybtn", "copy-button", "copy-btn", "btn-copy", "md-clipboard", "clipboard-copy"))
_COPY_TEXT = ("copy", "copy to clipboard", "copy code", "copied!")
#: Step 1: dropped with their content.
DROPPED = (
    *("svg", "iframe", "object", "embed", "audio", "video", "canvas"),
    *("select", "textarea", "noscript", "template"),
)
_EMPHASIS = ("b", "strong", "em", "i")
#: Step 6: phrasing elements html-to-markdown writes inline, as their content alone, as
#: emphasis, strikethrough or a code span, whatever they hold (HTML standard 3.2.5.2.5:
#: they hold phrasing content only; a page that puts a block in one gets its blocks run
#: together, ``<label><p>a</p></label><label><p>b</p></label>`` as ``ab``).
_INLINE_ONLY = ("abbr", "mark", "label", "dfn", "var", "s", "del", "strike", "code", "kbd", "samp", "tt")
_HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))
#: Of those, the ones written as markup (emphasis, strikethrough, a code span): around
#: blocks that hold no block, they move into each of them instead (:func:`_into_blocks`).
_WRITES_MARKUP = frozenset(("dfn", "var", "s", "del", "strike", "code", "kbd", "samp", "tt"))
#: The most descendants of a link step 6 reads (:func:`_link_apart`): past them, or past
#: a link inside it, a link is left as it is, so the work stays linear in the page.
LINK_WALK = 64
#: Step 6: the parts of a ``ruby`` whose every annotation has ``rp`` fallback parentheses beside it,
#: unwrapped so that it keeps its text in document order (its base, then the parentheses
#: around its annotation: what a browser without ruby shows); html-to-markdown wrote
#: ``base(annotation)``, dropping the page's own, often full-width, parentheses. Any other
#: ruby stays the converter's ``base(annotation)`` (:func:`_rubies`).
_RUBY = ("rb", "rt", "rp", "rtc")
#: Step 6: sectioning elements and ``form``, written as a ``div`` is.
_AS_DIV = ("article", "section", "aside", "header", "footer", "main", "form")
#: How many elements up a task list's checkbox may sit in its list item, and how many
#: inline elements around an image step 6 looks through.
_BOX_WALK = 8
#: What a pipe table's cell cannot hold (a row is one line): a table with one of these
#: in a cell is for layout.
_CELL_BLOCKS = ("ul", "ol", "dl", "pre", "blockquote", "table", "h1", "h2", "h3", "h4", "h5", "h6")
#: Inline elements whose edges are not where an emphasis inside them meets other
#: markup: those the converter writes as their content alone, and emphasis (a
#: delimiter run at its edge joins the outer one, ``***``, whose neighbours count).
#: No ``span``: step 1 unwraps them all before step 5 reads this.
_TRANSPARENT = frozenset(("font", "small", "big", "abbr", "label", "time", "mark", "bdi", "bdo", "data", *_EMPHASIS))
#: Elements the converter writes as markup of their own, text or not (an image's
#: ``![]()``, a line break): next to an emphasis they are not a word.
_SHOWN_EMPTY = ("img", "br", "input", "hr")
#: The inline elements an image's text is read through, to the words beside it.
#: (lxml's parser puts a picture's ``img`` inside the ``source`` before it.)
_AROUND_IMAGES = frozenset(
    ("a", "picture", "source", "sup", "sub", "u", "s", "del", "ins", "strike", "cite", "dfn", "var", *_TRANSPARENT)
)
#: ... and the elements beside an image whose text is read, never changed.
_BESIDE_IMAGES = _AROUND_IMAGES | frozenset(("code", "kbd", "samp", "tt"))
_DROPPED_TAGS = frozenset(DROPPED)
#: What :func:`_flow` yields for an image or a form control: content, not text.
_OBJECT = "\ufffc"
#: An emphasis holding more line breaks than this is unwrapped without reading them.
MAX_BREAKS = 32
#: Elements written as code spans.
_CODE_SPANS = frozenset(("code", "kbd", "samp", "tt"))
_CODE_TAGS = _CODE_SPANS | {"pre"}
#: Block content an emphasis delimiter run cannot span (CommonMark: inlines live inside
#: one paragraph or heading).
_BLOCKS = (
    *("p", "div", "ul", "ol", "li", "dl", "dt", "dd", "table", "pre", "blockquote", "figure"),
    *("h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "hr", "header", "footer"),
)
_BLOCK_TAGS = frozenset(_BLOCKS)
#: A run of whitespace holding a line break, in an attribute value.
_LINE_BREAKS = re.compile(r"[ \t\f]*[\r\n][ \t\r\n\f]*")
#: Elements the HTML parser closes as it opens them that html-to-markdown 3.21 reads as open.
_VOID_UNREAD = ("basefont", "bgsound")
#: Lists, and (below) their tags with the item's: a link holding only empty lists holds
#: no block once they go.
_LISTS = ("ul", "ol")
_LIST_TAGS = frozenset((*_LISTS, "li"))
#: What step 3 unwraps inside ``pre``.
_IN_PRE = ("a", *_BLOCKS, *_EMPHASIS, "caption", "figcaption")  # captions: written in emphasis


def prepare(fragment: lxml.html.HtmlElement) -> None:
    """Tidy ``fragment`` in place for conversion (the module docstring's steps)."""
    edits: dict[lxml.html.HtmlElement, str | None] = {}  # element -> text in its place; None: unwrap
    lxml.etree.strip_attributes(fragment, "hidden", "style")  # in C: an XPath took 5x longer
    lxml.etree.strip_tags(fragment, "span", *_VOID_UNREAD)  # in C too; the fragment itself stays
    for section in list(fragment.iter(*_AS_DIV)):  # step 6
        if section is not fragment:
            section.tag = "div"
    for element in fragment.iter(*DROPPED, "input"):
        if element.tag != "input" or not _task_box(element):
            edits[element] = ""
    for image in fragment.iter("img"):
        _on_one_line(image, "title")
        _on_one_line(image, "alt")
        if (image.get("src") or "").lstrip()[:5].lower() == "data:":
            edits[image] = image.get("alt") or ""
        elif _names_a_picture(image) and next(image.iterancestors(*_CODE_TAGS), None) is None:
            _image_apart(image)  # step 6
    for button in fragment.iter("button"):
        classes = (button.get("class") or "").lower().split()
        if _COPY_CLASSES.intersection(classes) or text_of(button).strip().lower() in _COPY_TEXT:
            edits[button] = ""
    holding: list[lxml.html.HtmlElement] = []  # links with children: step 6 looks at them
    for link in fragment.iter("a"):  # a Sphinx page's most common element: the cheap tests first
        if len(link):
            holding.append(link)
        _on_one_line(link, "title")
        href = link.get("href")
        class_names = link.get("class") or ""
        if href is None:  # unwrapped, unless a permalink
            edits[link] = "" if "headerlink" in class_names and _is_control(link, "", class_names, False) else None
            continue
        leads_to_control = _may_lead_to_control(href) and _CONTROL_HREF.search(href) is not None
        if (leads_to_control or href[:1] == "#" or "headerlink" in class_names) and _is_control(
            link, href, class_names, leads_to_control
        ):
            edits[link] = ""
        elif ":" in href and _unlinked(link):
            edits[link] = None
        elif not (link.text or "").strip() and _empty(link):
            edits[link] = " " if text_of(link) else ""  # its space stays
    for code in fragment.iter("pre", *_CODE_SPANS):  # None: unwrapped
        inside = _IN_PRE if code.tag == "pre" else _EMPHASIS
        edits.update(dict.fromkeys(inner for inner in code.iter(*inside) if inner is not code))
    captions = list(fragment.iter("figcaption", "figure", "caption"))  # steps 5 and 6: before blocks are read
    inline = [element for element in fragment.iter(*_INLINE_ONLY) if len(element)]  # step 6
    rubies = list(fragment.iter("ruby"))
    in_pre = _in_pre(fragment) if captions or inline or rubies else set()
    for element in captions:
        if element in in_pre or (element.tag == "caption" and _in_table(element)):
            continue
        if element.tag != "figure" or next(element.iter("blockquote"), None) is None:
            element.tag = "div"  # a figure holding a quotation stays: a div after a quotation joins the two
    holders = _holding(fragment, _BLOCKS, _BLOCK_TAGS) if inline else set()
    for element in inline:
        if element in holders and element not in edits and element not in in_pre:
            if element.tag in _WRITES_MARKUP:
                _into_blocks(element)  # its strikethrough or code span stays, block by block, if it can
            edits[element] = None
    if rubies:
        _rubies(fragment, rubies, in_pre, edits)
    for link in holding:
        if link not in edits:
            _link_apart(link, edits)
    kept: list[lxml.html.HtmlElement] = []  # tables that stay tables
    quotes = []  # quotations a quotation follows
    for table in fragment.iter("table", "blockquote"):  # one walk for both
        if table.tag == "blockquote":
            after = table.getnext()
            if after is not None and after.tag == "blockquote" and _blank(table.tail):
                quotes.append(table)
            continue
        if any(block is not table for block in table.iter(*_CELL_BLOCKS)) or _columns(table):
            _flatten(table)
        else:
            if table.get("border") is not None and _data_grid(table):
                del table.attrib["border"]  # a table of data: not a list (step 4)
            edits.update(dict.fromkeys(table.iter("hr"), " "))  # a cell's line cannot hold one
            kept.append(table)
    in_item: dict[lxml.html.HtmlElement, bool] = {}
    for table in kept:
        _table_apart(table, in_item)
    for quote in quotes:
        _line_break_after(quote)  # html-to-markdown ran two quotations into one paragraph
    for element in list(fragment.iter(*_EMPHASIS)):  # line breaks move out of them
        if element in edits:  # in code, unwrapped already
            continue
        elif _holds_block(element) or not _breaks_outside(element) or not _flanking(element, edits):
            edits[element] = None
        else:
            _whitespace_outside(element)
    edits.pop(fragment, None)
    _apply(edits)


#: Endings of an href :data:`_CONTROL_HREF` reads as a source file (``$`` also matches
#: before a final line feed).
_SOURCE_ENDINGS = (".rst", ".txt", ".md", ".rst\n", ".txt\n", ".md\n")


def _on_one_line(element: lxml.html.HtmlElement, name: str) -> None:
    """Step 6 for a link's or an image's ``title`` or ``alt`` attribute: each run of
    whitespace holding a line break becomes one space. The converters write the value
    into the Markdown as it is, and a line of it can open a block that ends the
    paragraph and breaks the link (CommonMark 4.6: a line ``</p>`` opens an HTML block;
    a page's lightbox title held its caption's markup as text, one tag a line)."""
    value = element.get(name)
    if value is not None and ("\n" in value or "\r" in value):
        element.set(name, _LINE_BREAKS.sub(" ", value).strip())


def _task_box(box: lxml.html.HtmlElement) -> bool:
    """True if ``box`` is a checkbox that shows a state: one that opens a list item (GFM
    5.3, a task list item's ``[ ]`` or ``[x]``), or a ``disabled`` one (no form's
    control: a comparison table's mark) that opens a table cell, where html-to-markdown
    writes it too. Opens: no text and no element that shows something before it, through
    the elements that hold it (a ``p``, or a ``label`` as MkDocs writes it), none code."""
    if (box.get("type") or "").lower() != "checkbox":
        return False
    opened = ("li", "td", "th") if box.get("disabled") is not None else ("li",)
    element = box
    for _level in range(_BOX_WALK):
        parent = element.getparent()
        previous = element.getprevious()
        while previous is not None and _blank(previous.tail) and _shows_nothing(previous):
            previous = previous.getprevious()  # a comment
        if parent is None or previous is not None or not _blank(parent.text) or parent.tag in _CODE_TAGS:
            return False
        if parent.tag in opened:
            return True
        element = parent
    return False


def _image_apart(image: lxml.html.HtmlElement) -> None:
    """A space between ``image`` (one with ``alt`` text) and a letter, a digit or
    another such image that touches it, before or after, through the inline elements
    that end or open around it (``<a><img alt="Nissin"></a>Absatzplanung``) and past
    what shows nothing (:func:`_shows_nothing`): the text is the
    image's stand-in, never part of a word (``<img alt="Header icon">Beijing`` gave
    ``Header iconBeijing`` under html2text, ``x![rating](s.png)y`` under
    html-to-markdown)."""
    node = image
    for _level in range(_BOX_WALK):  # after it
        following = node.getnext()
        while not node.tail and following is not None and _shows_nothing(following):
            node, following = following, following.getnext()
        if node.tail:
            if node.tail[0].isalnum():
                node.tail = " " + node.tail
            break
        if following is not None:
            if _opens_with_word(following):
                node.tail = " "
            break
        holder = node.getparent()
        if holder is None or holder.tag not in _AROUND_IMAGES:
            break
        node = holder
    node = image
    for _level in range(_BOX_WALK):  # before it
        previous = node.getprevious()
        while previous is not None and not previous.tail and _shows_nothing(previous):
            previous = previous.getprevious()
        if previous is not None:
            if previous.tail:
                if previous.tail[-1].isalnum():
                    previous.tail += " "
            elif previous.tag in _BESIDE_IMAGES and text_of(previous)[-1:].isalnum():
                previous.tail = " "
            break
        parent = node.getparent()
        if parent is None:
            break
        if parent.text:
            if parent.text[-1].isalnum():
                parent.text += " "
            break
        if parent.tag not in _AROUND_IMAGES:
            break
        node = parent


def _names_a_picture(image: lxml.html.HtmlElement) -> bool:
    """True if ``image``'s ``alt`` text is more than one character: one character stands
    for a letter or a sign of the text (a drop cap's ``T``, an address's ``@``, a glyph
    missing from the font), which is part of the word beside it."""
    return len((image.get("alt") or "").strip()) > 1


def _shows_nothing(element: lxml.html.HtmlElement) -> bool:
    """A comment, an element step 1 drops, or an empty inline element (an icon font's
    ``<i class="fa ...">``, a picture's ``source``)."""
    if not isinstance(element.tag, str) or element.tag in _DROPPED_TAGS:
        return True
    return element.tag in _AROUND_IMAGES and not len(element) and not element.text


def _opens_with_word(element: lxml.html.HtmlElement) -> bool:
    """True if ``element``, an inline one, opens with a letter, a digit or an image
    with ``alt`` text."""
    for _level in range(_BOX_WALK):
        if element.tag == "img":
            return _names_a_picture(element)
        if element.tag not in _BESIDE_IMAGES:
            return False
        if element.text:
            return element.text[0].isalnum()
        if not len(element):
            return False
        element = element[0]
    return False


def _may_lead_to_control(href: str) -> bool:
    """Whether ``href`` holds what every branch of :data:`_CONTROL_HREF` needs: a few
    substring tests, cheaper than the pattern's search at every position."""
    return "edit" in href or "blob/" in href or "_sources/" in href or href.endswith(_SOURCE_ENDINGS) or href[:1] == "#"


def _is_control(link: lxml.html.HtmlElement, href: str, classes: str, leads_to_control: bool) -> bool:
    """A permalink or an "Edit"/"View source"/"Skip to content" link (step 0): its
    ``href`` and ``classes`` (its class attribute) are read first, its text (dearer) only
    where they are a control's; ``leads_to_control``: ``href`` matches
    :data:`_CONTROL_HREF`."""
    tokens = classes.lower().split()
    if "headerlink" in tokens:
        return True
    if href.startswith("#") and ("permalink" in (link.get("title") or "").lower() or "anchor" in classes.lower()):
        if text_of(link).strip() in _PERMALINK_TEXT:
            return True
    if not leads_to_control:
        return False
    text = text_of(link).strip()
    return any(where.search(href) and name.fullmatch(text) for name, where in _CONTROLS)


def _apply(edits: dict[lxml.html.HtmlElement, str | None]) -> None:
    """Put in place of each element of ``edits`` its text (``None``: its own text and
    children), keeping its tail, in time that grows with the children of each parent
    touched, once: lxml's ``drop_tag`` looks each element's position up, and text
    appended to one neighbour element after element is copied again each time, so
    thousands of siblings took seconds."""
    parents = dict.fromkeys(
        parent for element in edits if (parent := element.getparent()) is not None and parent not in edits
    )
    for parent in parents:
        kept: list[lxml.html.HtmlElement] = []
        texts: list[list[str]] = [[parent.text or ""]]  # the text before the first kept child, after each
        stack = [(iter(list(parent)), "")]  # children still to place, and the tail after them
        while stack:
            children, tail_after = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                texts[-1].append(tail_after)
            elif child not in edits:
                kept.append(child)
                texts.append([child.tail or ""])
            elif (replacement := edits[child]) is None:
                texts[-1].append(child.text or "")
                stack.append((iter(list(child)), child.tail or ""))
            else:
                texts[-1].append(replacement + (child.tail or ""))
        parent.text = "".join(texts[0]) or None
        for child, text in zip(kept, texts[1:]):
            child.tail = "".join(text) or None
        parent[:] = kept


def _columns(table: lxml.html.HtmlElement) -> bool:
    """Whether ``table`` lays out columns of text: one row, no ``th``, and a cell with
    two or more ``p``/``div`` children that hold text. A table of several rows is taken
    for data even then (a product sheet, a schedule, an infobox: a review found them
    flattened by the same test without the one-row condition, some by empty ``div``s)."""
    if next(table.iter("th"), None) is not None or len(table.xpath(_ROWS)) != 1:
        return False
    return any(
        sum(child.tag in _PARAGRAPHS and bool(text_of(child).strip()) for child in cell) >= 2
        for cell in table.iter("td")
    )


_ROWS = "./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr"


_PARAGRAPHS = frozenset(("p", "div"))


def _flatten(table: lxml.html.HtmlElement) -> None:
    """Make a layout table a run of ``div`` blocks: its rows, its cells, its sections."""
    for row in table.xpath(_ROWS):
        for cell in row:
            if cell.tag in ("td", "th"):
                cell.tag = "div"
        row.tag = "div"
    for part in table:
        if part.tag in ("thead", "tbody", "tfoot", "caption"):
            part.tag = "div"
    table.tag = "div"


def _data_grid(table: lxml.html.HtmlElement) -> bool:
    """Whether ``table`` is data html-to-markdown can write as a pipe table: at least half
    its cells hold text (a spreadsheet, a calendar, not a grid of spacers and pictures
    around a few words), and none spans rows (3.21 shifts the cells of the rows a
    ``rowspan`` reaches into, and a reader then drops a row's last cells; its list keeps
    every word)."""
    cells = list(table.iter("td", "th"))
    if any((cell.get("rowspan") or "1").strip() not in ("", "1") for cell in cells):
        return False
    return bool(cells) and 2 * sum(bool(text_of(cell).strip()) for cell in cells) >= len(cells)


def _empty(link: lxml.html.HtmlElement) -> bool:
    """A link that shows nothing a reader can read: no text, no image with ``alt`` text
    (the converter would write its ``aria-label``, ``title`` or URL in its place), the
    text and images of the elements step 1 drops not counted (a link holding one of them
    and more than :data:`LINK_WALK` elements counts as shown, not copied to be read)."""
    if not len(link):
        return True
    shown = link
    if next(link.iter(*DROPPED), None) is not None:  # an icon's svg holds a title, a
        if next(itertools.islice(link.iterdescendants(), LINK_WALK, None), None) is not None:
            return False  # too much to be an icon: not copied (links nested in links)
        shown = copy.deepcopy(link)  # noscript the image a script would show
        for element in list(shown.iter(*DROPPED)):
            element.drop_tree()
    if any((img.get("alt") or "").strip() for img in shown.iter("img")):
        return False
    return not text_of(shown).strip()


def _whitespace_outside(element: lxml.html.HtmlElement) -> None:
    """Move the whitespace at the ends of an emphasis's text outside it, from however
    deep inside it stands (``a<b><span> bold</span></b>`` is ``a <b><span>bold</span></b>``):
    html2text strips it, gluing the words, or writes ``*class *``, which is no emphasis."""
    first = element
    while not first.text and len(first) and isinstance(first[0].tag, str):
        first = first[0]
    if first.text and first.text[:1].isspace():
        stripped = first.text.lstrip()
        space, first.text = first.text[: len(first.text) - len(stripped)], stripped
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + space
        elif (parent := element.getparent()) is not None:
            parent.text = (parent.text or "") + space
    holder, attribute = element, "text"  # where the element's last text stands
    while len(holder):
        last = holder[-1]
        if last.tail:  # after a comment too: "Price: <!-- -->42" ends in "42"
            holder, attribute = last, "tail"
            break
        if not isinstance(last.tag, str):
            break
        holder, attribute = last, "text"
    end = getattr(holder, attribute) or ""
    if end[-1:].isspace():
        kept = end.rstrip()
        setattr(holder, attribute, kept)
        element.tail = end[len(kept) :] + (element.tail or "")


def _holds_block(element: lxml.html.HtmlElement) -> bool:
    return len(element) > 0 and next(element.iter(*_BLOCKS), None) is not None


def _in_pre(fragment: lxml.html.HtmlElement) -> set[lxml.html.HtmlElement]:
    """The elements inside a ``pre`` of ``fragment`` (each ``pre`` walked once)."""
    inside: set[lxml.html.HtmlElement] = set()
    for pre in fragment.iter("pre"):
        if pre not in inside:
            inside.update(element for element in pre.iter() if element is not pre)
    return inside


def _holding(
    fragment: lxml.html.HtmlElement, tags: tuple[str, ...], stop: frozenset[str] = frozenset()
) -> set[lxml.html.HtmlElement]:
    """The elements that hold an element named in ``tags`` with no element named in
    ``stop`` between them: one walk up from each, to the first of ``stop`` or to where an
    earlier walk passed, so each element is passed once however deep the nesting (a test
    per element of its subtree was quadratic). With ``stop=_BLOCK_TAGS`` and the blocks:
    the elements that are not blocks and hold one (an inline element holding a block
    holds one with no block between them)."""
    seen: set[lxml.html.HtmlElement] = set()
    for found in fragment.iter(*tags):
        ancestor = found.getparent()
        while ancestor is not None and ancestor.tag not in stop and ancestor not in seen:
            seen.add(ancestor)
            ancestor = ancestor.getparent()
    return seen


def _rubies(
    fragment: lxml.html.HtmlElement,
    rubies: list[lxml.html.HtmlElement],
    in_pre: set[lxml.html.HtmlElement],
    edits: dict[lxml.html.HtmlElement, str | None],
) -> None:
    """Step 6 for rubies: one whose every annotation (``rt``) has an ``rp`` beside it
    (:func:`_parenthesized`), with no ruby inside it and outside ``pre``, is unwrapped with its parts, the
    line breaks and indentation between them gone (ruby layout shows none: a
    pretty-printed ruby would otherwise read ``漢字 （ かんじ ）``)."""
    nesting = _holding(fragment, ("ruby",))
    for ruby in [ruby for ruby in rubies if ruby not in nesting and ruby not in in_pre]:
        annotations = list(ruby.iter("rt"))
        if not annotations or not all(_parenthesized(annotation) for annotation in annotations):
            continue
        ruby.text = _trim_breaks(ruby.text)
        for part in ruby.iter(*_RUBY):
            part.text, part.tail = _trim_breaks(part.text), _trim_breaks(part.tail)
        lxml.etree.strip_tags(ruby, *_RUBY)
        edits[ruby] = None


def _parenthesized(annotation: lxml.html.HtmlElement) -> bool:
    """Whether the ruby annotation ``annotation`` (an ``rt``) has an ``rp`` right before
    and right after it, nothing but whitespace between (HTML standard 4.5.11: ``rp``
    holds the parentheses shown around an annotation where ruby is not rendered; one on
    a side only would leave a parenthesis open in the text)."""
    before, after = annotation.getprevious(), annotation.getnext()
    return (
        before is not None
        and before.tag == "rp"
        and _blank(before.tail)
        and after is not None
        and after.tag == "rp"
        and _blank(annotation.tail)
    )


def _trim_breaks(text: str | None) -> str | None:
    """``text`` without the whitespace at either end that holds a line break (a
    pretty-printed ruby's indentation; a space between two words stays)."""
    if not text:
        return text
    start, end = len(text) - len(text.lstrip()), len(text.rstrip())
    if "\n" in text[:start] or "\r" in text[:start]:
        text, end = text[start:], end - start
    if "\n" in text[end:] or "\r" in text[end:]:
        text = text[:end]
    return text or None


def _link_apart(link: lxml.html.HtmlElement, edits: dict[lxml.html.HtmlElement, str | None]) -> None:
    """Step 6 for a link that has children: the line breaks that end its content move
    after it (html-to-markdown dropped them and glued the next word to the link:
    ``<a href=u>u<br></a>Wer`` gave ``<u>Wer``); one holding a ``pre`` is unwrapped (a
    link's text cannot hold a code block); a thematic break (``hr``) in one becomes a
    space (it was written as the text ``---``); one holding another block gets a line break
    where text or an inline element touches it on either side, outside a heading (a
    reader sees the block's lines apart, and the converter writes the link inline:
    ``speichern<a><p>Welcher</p></a>`` gave ``speichern[Welcher](...)``; a heading is one
    line); a list in one that shows no text and no image goes (html-to-markdown wrote its
    empty items as the text ``- -``); one holding nothing but a heading goes inside the
    heading (:func:`_heading_outside`). Blocks are looked for among the first
    :data:`LINK_WALK` descendants only, and not in a link that holds a link."""
    _breaks_after(link, keep_whitespace=False)
    blocks: set[str] = set()
    rules = []
    lists = []
    for count, element in enumerate(link.iterdescendants()):
        if count == LINK_WALK or (element.tag == "a" and edits.get(element) != ""):
            return  # a link that goes (an icon's, step 2) is not a link in this one
        if element.tag in _BLOCK_TAGS:
            blocks.add(element.tag)
            if element.tag == "hr":
                rules.append(element)
            elif element.tag in _LISTS:
                lists.append(element)
    empty = [items for items in lists if _shows_no_item(items, edits)]
    edits.update(dict.fromkeys(empty, ""))  # the converter wrote its items as the text "- -"
    if "pre" in blocks:
        edits[link] = None
        return
    edits.update(dict.fromkeys(rules, " "))  # a link's text cannot hold one: it was the text ---
    if empty and len(empty) == len(lists) and blocks <= _LIST_TAGS:
        return
    if len(link) == 1 and link[0].tag in _HEADINGS and _blank(link.text) and _blank(link[0].tail):
        _heading_outside(link)
        return
    if not blocks or any(isinstance(a.tag, str) and a.tag in _HEADINGS for a in link.iterancestors()):
        return
    before, after, parent = link.getprevious(), link.getnext(), link.getparent()
    text_before = (parent.text if parent is not None else None) if before is None else before.tail
    if not text_before and before is not None and _inline(before):
        text_before = text_of(before)
    if text_before and not text_before[-1].isspace():
        link.addprevious(link.makeelement("br"))
    text_after = link.tail or (text_of(after) if after is not None and _inline(after) else None)
    if text_after and not text_after[0].isspace():
        _line_break_after(link)


def _table_apart(table: lxml.html.HtmlElement, in_item: dict[lxml.html.HtmlElement, bool]) -> None:
    """Step 6 for a table that stays one: inside a list item, a line break goes after
    it when the next thing in the text is another table, past whitespace, comments and
    the edges of blocks (:data:`_BOX_WALK` levels each way). html-to-markdown wrote no
    blank line between two tables in a list item, so the second one's header and
    delimiter rows became rows of the first, ``| --- |`` written as cells. ``in_item``
    remembers which elements are inside a list item, so the tables of a deep page are
    not each followed up to the root."""
    element, after = table, None
    parent: lxml.html.HtmlElement | None
    for _level in range(_BOX_WALK):  # out of the blocks it closes
        if not _blank(element.tail):
            return
        after = element.getnext()
        while after is not None and not isinstance(after.tag, str) and _blank(after.tail):
            after = after.getnext()  # a comment
        if after is not None:
            break
        parent = element.getparent()
        if parent is None or parent.tag == "li":
            return
        element = parent
    for _level in range(_BOX_WALK):  # into the blocks it opens
        if after is None or not isinstance(after.tag, str):
            return
        if after.tag == "table":
            if _in_item(table, in_item):
                _line_break_after(table)
            return
        if after.tag not in _BLOCK_TAGS or not _blank(after.text) or not len(after):
            return
        after = after[0]


def _in_item(element: lxml.html.HtmlElement, known: dict[lxml.html.HtmlElement, bool]) -> bool:
    """Whether ``element`` is inside an ``li``; each ancestor's answer is kept in ``known``."""
    chain = []
    node = element.getparent()
    while node is not None and node not in known and node.tag != "li":
        chain.append(node)
        node = node.getparent()
    answer = node is not None and (node.tag == "li" or known[node])
    known.update(dict.fromkeys(chain, answer))
    return answer


def _line_break_after(element: lxml.html.HtmlElement) -> None:
    """Put a ``br`` right after ``element``, before its tail."""
    line_break = element.makeelement("br")
    line_break.tail, element.tail = element.tail, None
    element.addnext(line_break)


def _shows_no_item(items: lxml.html.HtmlElement, edits: dict[lxml.html.HtmlElement, str | None]) -> bool:
    """Whether the list ``items`` shows no text and no image but in links that go."""
    for image in items.iter("img"):
        if all(edits.get(link) != "" for link in image.iterancestors("a")):
            return False
    return not text_of(items).strip()


def _heading_outside(link: lxml.html.HtmlElement) -> None:
    """Make ``link``, which holds a heading and only whitespace beside it, the heading,
    and the heading the link: ``<a href=u><h3>T</h3></a>`` becomes ``<h3><a
    href=u>T</a></h3>``, which says the same. html-to-markdown wrote such a link after
    text in a list item (a teaser: a date, then the linked title) inline, the heading's
    ``###`` as text in the line: ``- 03.02.2022 ### [T](u)``."""
    heading = link[0]
    link_attributes, heading_attributes = dict(link.attrib), dict(heading.attrib)
    link.attrib.clear()
    link.attrib.update(heading_attributes)
    heading.attrib.clear()
    heading.attrib.update(link_attributes)
    link.tag, heading.tag = heading.tag, "a"


def _into_blocks(element: lxml.html.HtmlElement) -> None:
    """Move ``element`` (one of :data:`_WRITES_MARKUP`) into each of its children, where
    it holds nothing but blocks that hold no block (``<del><div>$99</div></del>`` becomes
    ``<div><del>$99</del></div>``: the strikethrough stays, and so does the block's
    line); anything else is left for the caller to unwrap. The element itself is left
    empty of text, to be unwrapped."""
    children = list(element)
    if not _blank(element.text) or not all(
        isinstance(child.tag, str) and child.tag in _BLOCK_TAGS and child.tag != "pre" and _blank(child.tail)
        for child in children
    ):
        return
    if any(
        isinstance(inner.tag, str) and inner.tag in _BLOCK_TAGS
        for child in children
        for inner in child.iterdescendants()
    ):
        return
    for child in children:
        inside = element.makeelement(element.tag, dict(element.attrib))
        inside.text, child.text = child.text, None
        inside.extend(list(child))
        child.append(inside)


def _inline(element: lxml.html.HtmlElement | None) -> bool:
    """Whether ``element`` is an element a converter writes inline (not a block, not a
    line break, not a comment)."""
    return (
        element is not None and isinstance(element.tag, str) and element.tag not in _BLOCK_TAGS and element.tag != "br"
    )


def _in_table(caption: lxml.html.HtmlElement) -> bool:
    """Whether ``caption`` is a table's (HTML standard 4.9.2); one elsewhere is a parse
    error that lxml keeps as an element, which html-to-markdown wrote in emphasis."""
    parent = caption.getparent()
    return parent is not None and parent.tag == "table"


def _breaks_outside(element: lxml.html.HtmlElement) -> bool:
    """Whether ``element``'s line breaks let it stay emphasis, its closing ones moved out
    of it. ``False`` where two breaks in a row stand between content (the converters
    write them as a blank line, which ends a paragraph), where a break opens the content
    (moved before it, it would leave a list item or heading empty and its text outside)
    or closes it from deeper inside, and where it holds more than :data:`MAX_BREAKS`
    (unread: nested unclosed tags would make every walk cross the rest of the page). The
    closing breaks that are its own children with only whitespace around them go right
    after it (html2text writes a break inside the delimiters, ``**a.\n**word``, which
    closes nothing)."""
    if next(element.iter("br"), None) is None:  # most have none: cheaper than counting
        return True
    breaks_held = int(element.xpath("count(.//br)"))
    if breaks_held > MAX_BREAKS:
        return False
    pieces = [piece for piece in _flow(element) if piece is None or not _blank(piece)]
    content_before = breaks = 0
    for piece in pieces:
        if piece is None:  # a line break
            breaks += 1
        else:
            if content_before and breaks >= 2:
                return False
            content_before, breaks = 1, 0
    moved = _breaks_after(element, keep_whitespace=True)
    if moved:
        del pieces[len(pieces) - moved :]  # they were its last pieces
    return not pieces or (pieces[0] is not None and pieces[-1] is not None)


def _breaks_after(element: lxml.html.HtmlElement, keep_whitespace: bool) -> int:
    """Move the line breaks that end ``element``'s content (only whitespace after each)
    right after it, in order, its tail after them; how many moved. ``keep_whitespace``:
    the whitespace after each break stays (else it goes)."""
    trailing = []
    while len(element) > 0 and element[-1].tag == "br" and _blank(element[-1].tail):
        trailing.append(element[-1])
        element.remove(element[-1])
    if trailing:
        tail, element.tail = element.tail, None
        for line_break in trailing:  # the last break first: each goes right after the element
            if not keep_whitespace:
                line_break.tail = None
            element.addnext(line_break)
        trailing[0].tail = (trailing[0].tail or "") + (tail or "") or None
    return len(trailing)


def _blank(text: str | None) -> bool:
    """Nothing but whitespace, a no-break space included (html2text writes a line of one
    as a blank line)."""
    return not text or not text.strip()


def _flow(element: lxml.html.HtmlElement) -> Iterator[str | None]:
    """The text of ``element`` in document order, ``None`` for each ``br``, and
    :data:`_OBJECT` for an image or a form control (a walk without recursion: lxml parses
    deeper nesting than Python's stack holds)."""
    for event, node in lxml.etree.iterwalk(element, events=("start", "end", "comment", "pi")):
        if event == "start":
            yield None if node.tag == "br" else _OBJECT if node.tag in _SHOWN_EMPTY else node.text or ""
        elif node is not element:  # the end of an element, a comment, a processing instruction
            yield node.tail or ""


def _flanking(element: lxml.html.HtmlElement, edits: dict[lxml.html.HtmlElement, str | None]) -> bool:
    """Whether the converter's ``*``/``**`` around ``element`` would open and close
    emphasis around text: a delimiter next to punctuation inside must have whitespace or
    punctuation (or nothing) on its outer side (CommonMark 6.2, left- and right-flanking
    delimiter runs; the converter moves the content's outer whitespace outside, and
    :func:`_breaks_outside` its line breaks). ``edits``: what :func:`prepare` has decided
    so far (a link that goes is not written as one)."""
    raw = text_of(element)
    text = raw.strip()
    if not text:  # says nothing: html2text writes its delimiters alone ("****")
        return False
    first, last = text[0], text[-1]
    if len(element):  # a link, a code span or an image at an edge is read as its markup
        first, last = _inner_edge(element, False, edits) or first, _inner_edge(element, True, edits) or last
    if _punctuation(first) and not raw[0].isspace() and _word(_char_before(element, edits)):
        return False
    return not (_punctuation(last) and not raw[-1].isspace() and _word(_char_after(element, edits)))


def _inner_edge(
    element: lxml.html.HtmlElement, at_end: bool, edits: dict[lxml.html.HtmlElement, str | None]
) -> str | None:
    """The markup html-to-markdown writes at the start (or end) of ``element``'s
    content, when that content opens (or closes) with a link, a code span or an image
    that shows something: ``[`` or ``)``, a backtick, ``!`` or ``)``; through emphasis,
    other elements written as their content (:data:`_TRANSPARENT`) and links step 2
    unwraps, :data:`_BOX_WALK` levels. ``None`` when it opens (or closes) with text, or
    with anything else (a link or image that goes or becomes text, an empty code
    element: the converter writes no markup for them). html2text writes an image as its
    ``alt`` text and ``samp`` as plain text, so there it may see emphasis it could have
    kept go; its text stays."""
    node = element
    for _level in range(_BOX_WALK):
        if not len(node):
            return None
        child = node[-1] if at_end else node[0]
        if (child.tail if at_end else node.text) or not isinstance(child.tag, str):
            return None
        if child in edits:
            if edits[child] is not None:
                return None  # it goes, or becomes text
        elif child.tag in _CODE_SPANS:
            return "`" if text_of(child) else None
        elif child.tag == "img":
            return ")" if at_end else "!"
        elif child.tag == "a" and not _unlinked(child):
            return (")" if at_end else "[") if text_of(child).strip() else None
        elif child.tag not in _TRANSPARENT:
            return None  # written as markup of its own
        node = child  # an element written as its content, or unwrapped
    return None


def _punctuation(char: str) -> bool:
    """CommonMark 0.31's Unicode punctuation: general category P or S."""
    return unicodedata.category(char)[0] in "PS"


def _word(char: str) -> bool:
    """Neither whitespace, punctuation nor the edge of the text."""
    return bool(char) and not char.isspace() and not _punctuation(char)


def _char_before(element: lxml.html.HtmlElement, edits: dict[lxml.html.HtmlElement, str | None]) -> str:
    """The character the reader sees right before ``element``: past elements that show
    nothing (an empty ``<strong></strong>``) and out of elements written without markup
    (:data:`_TRANSPARENT`); ``""`` at the edge of a block."""
    node = element
    while True:
        previous = node.getprevious()
        while previous is not None:
            if previous.tail:
                return previous.tail[-1]
            shown = _shown(previous, edits)
            if shown is not None:
                return shown[-1]
            previous = previous.getprevious()
        parent = node.getparent()
        if parent is None:
            return ""
        if parent.text:
            return parent.text[-1]
        if not _transparent(parent):
            return ""
        node = parent


def _char_after(element: lxml.html.HtmlElement, edits: dict[lxml.html.HtmlElement, str | None]) -> str:
    """The character the reader sees right after ``element`` (as :func:`_char_before`)."""
    node = element
    while True:
        if node.tail:
            return node.tail[0]
        following = node.getnext()
        while following is not None:
            shown = _shown(following, edits)
            if shown is not None:
                return shown[0]
            if following.tail:
                return following.tail[0]
            following = following.getnext()
        parent = node.getparent()
        if parent is None or not _transparent(parent):
            return ""
        node = parent


def _shown(node: lxml.html.HtmlElement, edits: dict[lxml.html.HtmlElement, str | None]) -> str | None:
    """What a sibling shows next to an emphasis, ``None`` if nothing: the markup its
    text is written in (a link's ``[``...``)``, a code span's backticks, and for an
    element written as its content, the markup at its edges, :func:`_inner_edge`), its
    text, or for an element that the converter writes as markup of its own without text
    (an image, a line break, a form control, a rule), a stand-in that is not a word's
    character; for a block, a line break."""
    if node.tag in _BLOCK_TAGS:
        return "\n"
    text = _text(node)
    if text:
        if node.tag == "a" and not _unlinked(node):
            return "[)"
        if node.tag in _CODE_SPANS:
            return "`"
        if len(node) and _transparent(node):
            return (_inner_edge(node, False, edits) or text[0]) + (_inner_edge(node, True, edits) or text[-1])
        return text
    if isinstance(node.tag, str) and (node.tag in _SHOWN_EMPTY or next(node.iter(*_SHOWN_EMPTY), None) is not None):
        return " "
    return None


def _transparent(element: lxml.html.HtmlElement) -> bool:
    """Whether ``element`` is written as its content alone, or is emphasis
    (:data:`_TRANSPARENT`), or a link that step 2 unwraps."""
    return element.tag in _TRANSPARENT or (element.tag == "a" and _unlinked(element))


def _unlinked(link: lxml.html.HtmlElement) -> bool:
    """A link step 2 unwraps: no ``href``, or a ``javascript:`` one."""
    href = link.get("href")
    return href is None or href.strip().lower().startswith("javascript:")


def _text(node: lxml.html.HtmlElement) -> str:
    """The text an element shows; none for a comment or processing instruction."""
    return text_of(node) if isinstance(node.tag, str) else ""
