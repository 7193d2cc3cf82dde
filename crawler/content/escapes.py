"""Text that a CommonMark reader would take for markup, escaped around a converter.

The converters escape some of it themselves (html-to-markdown: ``*``, ``_``, a ``#`` or
``1.`` that opens a line, a ``]`` in a link's text), not all of it. :func:`mark` replaces,
in the text of the serialized HTML (not in its tags, not in code), each character that
needs a backslash by a stand-in, a Unicode noncharacter (never in interchanged text)
that the converter copies as it is; :func:`unmark` turns the stand-ins in its Markdown
into backslash escapes (CommonMark 0.31, 2.4: any ASCII punctuation may be
backslash-escaped).

What is marked (:data:`HTML_TO_MARKDOWN`):

* a backtick: it opens a code span; also in an ``alt`` attribute outside code, which
  the converters copy into an image's text or the text as it is (a backtick in an
  image's ``alt`` and the next one, here in its ``title``, made one code span of the
  Markdown between them, the link gone; a link's title is read as part of the link,
  before a code span could open), and so is an ``&`` there that opens a character
  reference (an ``alt`` of ``Soy502)&amp;nbsp;`` was written ``&nbsp;``, a no-break
  space to a reader);
* an underscore at either end of a word (``__init__`` is bold text otherwise); one
  inside a word (``import_name``) is left bare, as CommonMark never reads it as
  emphasis (6.2: ``_`` opens or closes emphasis only at a word's edge);
* a ``]`` that a ``(``, ``[`` or ``:`` follows, tags between them aside: an inline link,
  a reference, a link definition (``[foo]: /url`` turns the line into nothing);
* a ``<`` that a letter, ``/``, ``!`` or ``?`` follows: raw HTML or an autolink;
* an ``&`` that begins a character reference (``&copy;`` would become ``©``);
* a ``!`` that a tag follows, escaped where the converter writes a link's ``[`` right
  after it (``Wow!<a href=x>more</a>`` would be ``Wow![more](x)``: an image, CommonMark
  6.4, the ``!`` and the link gone);
* a ``~`` that another follows: ``~~`` opens or closes a strikethrough (GFM 6.5, which
  the Markdown's tables and ``~~`` already assume);
* the end of a link's text where html-to-markdown would write the link as an autolink
  that CommonMark does not read as one: it writes ``<text>`` when the text is the
  ``href``, or the address of a ``mailto:`` one, valid or not (3.21:
  ``<a href="mailto:x[at]y.de">x[at]y.de</a>`` became the text ``<x[at]y.de>``, the link
  gone; CommonMark 6.5 reads ``<...>`` as a link only around an absolute URI without
  spaces or ``<``/``>``, or an e-mail address). Its stand-in makes the text differ, so
  the link is written ``[text](href)``, and :func:`unmark` drops it;
* the ``.`` or ``)`` of a number that opens an element's text (``19. Oktober``
  after a tag can start a line, and an ordered list);
* a ``-``, ``+``, ``#``, ``>`` or ``~~~`` that opens an element's text: a list item, a
  thematic break, a heading, a block quote, a code fence. html-to-markdown escapes
  these itself, but not in the text of a ``dt`` or ``dd`` whose ``dl`` is inside a
  ``div`` (3.21: python3.11-doc's ``py_compile`` option ``-`` became an empty list
  item).

Such a block marker, and a number's ``.`` or ``)``, gets its backslash only where it
opens a line of the Markdown (after indentation and container markers: ``>``, a
bullet, a list item's number) and what follows it makes it markup (CommonMark 4.1-4.3,
5.1, 5.2), or, for ``#``, where it would close a heading: in a table cell, inside a line
or before a letter (``-x``) it is text as it is, so ``[1. Intro](...)`` keeps no
backslash.

For html2text (:data:`HTML2TEXT`), which escapes none of these and no bracket in a
link's text, every ``[`` and ``]`` (an escaped ``]`` beside a bare ``[`` would unbalance
a link's text: ``[[1\\]](url)``), and any ``#``, ``>`` or ``~`` that opens an element's
text, too.

Outside code, a line break inside text becomes a space: the converters keep the
source's line breaks, and a line that then begins with ``1. `` or ``- `` is a list. The
whitespace between two tags keeps its line break (html-to-markdown put an image after a
table on the table's last row when it was a space).

The HTML must be lxml's serialization (:mod:`crawler.content.main`): there ``<`` and
``>`` stand only for tags, as text and attribute values hold them as references. The
work is linear in the HTML: code elements cut off (each to the end tag that closes it,
past nested ones of its name), one split at the tags, one pass of the pattern over the
text alone.
"""

from __future__ import annotations

import bisect
import re
from html import unescape

__all__ = ["HTML2TEXT", "HTML_TO_MARKDOWN", "mark", "unmark"]

#: Stands for a tag in the text that the patterns read (a noncharacter).
_TAG_MARK = "\ufdd6"
#: Stands for a code element there.
_CODE_MARK = "\ufdda"
#: The stand-ins of the escaped characters (as the serialized HTML writes them).
_MARKS = {
    "`": "\ufdd0",
    "[": "\ufddb",
    "]": "\ufdd1",
    "&lt;": "\ufdd2",
    "&amp;": "\ufdd3",
    ".": "\ufdd4",
    ")": "\ufdd5",
    "#": "\ufdd7",
    "&gt;": "\ufdd8",
    "~": "\ufdd9",
    "_": "\ufddc",
    "-": "\ufdde",
    "+": "\ufddf",
    "!": "\ufde0",
}
#: Stands for a kept line break while the others become spaces.
_KEPT_BREAK = "\ufddd"
#: Ends the text of a link that must not be written as an autolink; dropped by :func:`unmark`.
_NOT_AUTOLINK = "\ufde1"
_ALL_MARKS = (*_MARKS.values(), _TAG_MARK, _CODE_MARK, _KEPT_BREAK, _NOT_AUTOLINK)
_CHARS = {stand_in: unescape(char) for char, stand_in in _MARKS.items()}

#: Each branch opens with a literal character, none in a group or class: then ``re``
#: scans for those characters alone and tries the branches only there (3x faster over
#: a python3.11-doc page than with the number's group first).
_COMMON = (
    r"`|_(?:(?<![^\W_]_)|(?![^\W_]))|&lt;(?=[A-Za-z/!?])|&amp;(?=#?[A-Za-z0-9]+;)"
    r"|\ufdd6(?P<number>\s*\d{1,9})[.)](?=[\s\ufdd6]|$)|~(?=~)|!(?=\ufdd6)"
)
#: A bullet or a thematic break's ``-`` (what follows it in the Markdown decides, :func:`unmark`).
_BULLET = r"[-+](?=-*(?:[\s\ufdd6]|$))"
#: What html-to-markdown leaves bare (the module docstring's list). The markers that
#: open a block (CommonMark 4.1 thematic break, 4.2 ATX heading, 4.5 fenced code, 5.1
#: block quote, 5.2 list item) are its own escapes, except in the text of a ``dt`` or
#: ``dd`` whose ``dl`` is inside a ``div`` (html-to-markdown 3.21), so they are marked
#: wherever they open an element's text.
HTML_TO_MARKDOWN = re.compile(
    r"\](?=\ufdd6*[(\[:])|\ufdd6(?P<opening>\s*)(?:"
    + _BULLET
    + r"|#(?=#{0,5}(?:[\s\ufdd6]|$))|&gt;|~(?=~~))|"
    + _COMMON
)
#: What html2text leaves bare. Not ``-`` or ``+``: it escapes a bullet itself.
HTML2TEXT = re.compile(r"\[|\]|\ufdd6(?P<opening>\s*)(?:#|&gt;|~)|" + _COMMON)

#: The elements whose text is code, or no text: left as they are. A name is whole
#: (``<code-example>`` is not ``code``).
_CODE_NAMES = ("pre", "code", "kbd", "samp", "tt", "script", "style", "textarea", "xmp")
#: A code element's start tag, and the rest of the element where it holds no tag (the
#: ``simple`` group: most of them once ``span`` is gone, see
#: :mod:`crawler.content.fragment`), so one search finds where it ends.
_CODE_START = re.compile(r"(?i)<(" + "|".join(_CODE_NAMES) + r")(?=[\s/>])(?P<simple>[^>]*>[^<]*</\1(?=[\s/>])[^>]*>)?")
#: Per name, its start and end tags, to find where an element ends past others nested
#: in it (Sphinx writes a key combination as <kbd> inside <kbd>).
_CODE_TAGS = {name: re.compile(r"(?i)<(/?)" + name + r"(?=[\s/>])") for name in _CODE_NAMES}
_TAG = re.compile(r"(<[^>]*>)")
#: The whitespace between two tags that holds a line break: kept as a line break.
_BETWEEN_TAGS = re.compile(r"\ufdd6[ \t\r\n]*[\r\n][ \t\r\n]*(?=\ufdd6)")
#: A stand-in in the Markdown.
_MARKED = re.compile("[" + "".join(_MARKS.values()) + _NOT_AUTOLINK + "]")
#: An ``href`` value that could make html-to-markdown write an autolink that CommonMark
#: does not read as one, as lxml serializes it (it percent-encodes whitespace and
#: controls in a URL attribute, and writes ``<`` and ``>`` as references): a
#: ``mailto:`` URL, one whose scheme is one letter (``C:/docs/a.pdf``), or one holding
#: ``<`` or ``>``. The runs are possessive, so an ordinary ``href`` costs one scan of
#: its value.
_SUSPECT_HREF = re.compile(
    r"""href=(?:"(?:mailto:|[A-Za-z]:|[^"&]*+(?:&(?![lg]t;)[^"&]*+)*+&)"""
    r"""|'(?:mailto:|[A-Za-z]:|[^'&]*+(?:&(?![lg]t;)[^'&]*+)*+&))"""
)
#: A link's start tag, with its ``href`` (quoted as lxml quotes it; not a ``data-href``),
#: and its text, up to its end tag and at most 2,048 characters (a longer text is no
#: URL an autolink would hold, and a link holding links is not read to its end again
#: for each).
_LINK = re.compile(
    r"""<a\s[^>]*?(?<![\w-])href=(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)')[^>]*>(?P<text>.{0,2048}?)(?=</a\s*>)""",
    re.IGNORECASE | re.DOTALL,
)
#: An ``alt`` attribute holding a backtick or a character reference's text, as lxml
#: writes it (a ``data-alt`` too: no converter writes it, so its stand-ins are never seen).
_ALT_MARKUP = re.compile(
    r'alt=(?:"[^"`&]*+(?:&(?!#?[A-Za-z0-9]+;)[^"`&]*+)*+[`&][^"]*+"'
    r"|'[^'`&]*+(?:&(?!#?[A-Za-z0-9]+;)[^'`&]*+)*+[`&][^']*+')"
)
#: In an ``alt`` value as lxml writes it: a backtick, and an ``&`` (``&amp;``) that opens
#: a character reference of the page's text (``&amp;nbsp;``, shown as ``&nbsp;``).
_IN_ALT = re.compile(r"`|&amp;(?=#?[A-Za-z0-9]+;)")
#: What CommonMark 0.31, 6.5 reads between ``<`` and ``>`` as a link: an absolute URI
#: (a scheme of 2-32 characters, then no space, control, ``<`` or ``>``) or an e-mail
#: address (the HTML standard's "valid e-mail address").
_URI_AUTOLINK = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\x00-\x20<>]*")
_EMAIL_AUTOLINK = re.compile(
    r"[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~\-]+@[a-zA-Z0-9](?:[a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])?"
    r"(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])?)*"
)
#: The stand-ins of block markers: escaped only where they open a line of the Markdown
#: and what follows makes them markup (in a table cell, after a word or a link's ``[``,
#: or before a letter, they are text as they are).
#: Each maps to what must follow it for the marker to open a block (CommonMark 4.1 a
#: thematic break or 4.3 a setext underline of ``-``, 4.2 an ATX heading, 5.1 a block
#: quote, 5.2 a list item).
_SPACE_OR_END = re.compile(r"[ \t]|$", re.MULTILINE)
_AT_LINE_START = {
    _MARKS["-"]: re.compile(r"[ \t]|$|[- \t]*$", re.MULTILINE),
    _MARKS["+"]: _SPACE_OR_END,
    _MARKS["#"]: re.compile(r"#{0,5}(?:[ \t]|$)", re.MULTILINE),
    _MARKS["&gt;"]: re.compile(""),
    _MARKS["."]: _SPACE_OR_END,
    _MARKS[")"]: _SPACE_OR_END,
}
#: The stand-in of a ``!`` that a tag follows: ``Wow!<a href=...>`` would be written
#: ``Wow![link](...)``, an image (CommonMark 6.4), the ``!`` and the link gone.
_BANG = _MARKS["!"]
#: The stand-ins that follow an ordered list item's number.
_AFTER_NUMBER = frozenset(_MARKS[char] for char in (".", ")"))
#: What may open a line before a block marker that is the text's: indentation, block
#: quote markers and list markers (each way to split a run of them is one match, so a
#: line deep in block quotes costs no backtracking).
_CONTAINERS = re.compile(r"(?:[ \t]*(?:>|[-+*](?=[ \t])|\d{1,9}[.)](?=[ \t])))*[ \t]*")
#: An ATX heading's opening sequence, after the line's container markers.
_ATX_OPENING = re.compile(r"#{1,6}[ \t]")
#: What a heading's closing sequence is made of.
_CLOSING = frozenset(" \t#")


def mark(html: str, escapable: re.Pattern[str] = HTML_TO_MARKDOWN) -> tuple[str, bool]:
    """``html`` with the characters ``escapable`` matches in its text replaced by
    stand-ins, and whether any was.

    Left as it is (``False``): HTML that holds a stand-in already.
    """
    if any(stand_in in html for stand_in in _ALL_MARKS):
        return html, False
    pieces = _split_code(html)  # text, code element, text, ...
    parts = _TAG.split(_CODE_MARK.join(pieces[0::2]))  # text, tag, text, ...
    text = _BETWEEN_TAGS.sub(_TAG_MARK + _KEPT_BREAK, _TAG_MARK.join(parts[0::2]))
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace(_KEPT_BREAK, "\n")
    text, count = escapable.subn(_stand_in, text)
    parts[0::2] = text.split(_TAG_MARK)
    outside_code = "".join(parts)  # its text's backticks are stand-ins now: any left is in a tag
    if _ALT_MARKUP.search(outside_code):  # one scan for "alt=": 0.05 ms of a 54 KB page
        outside_code, marked = _ALT_MARKUP.subn(_alt_marked, outside_code)
        count += marked
    pieces[0::2] = outside_code.split(_CODE_MARK)
    html = "".join(pieces)
    if escapable is HTML_TO_MARKDOWN and _SUSPECT_HREF.search(html):
        html, guarded = _no_invalid_autolinks(html)
        count += guarded
    return html, count > 0


def _alt_marked(match: re.Match[str]) -> str:
    return _IN_ALT.sub(lambda found: _MARKS[found.group()], match.group())


def _no_invalid_autolinks(html: str) -> tuple[str, int]:
    """``html`` with :data:`_NOT_AUTOLINK` ending the text of each link that
    html-to-markdown would write as ``<...>`` where CommonMark would not read that as a
    link, and how many."""
    pieces: list[str] = []
    position = scanned = 0
    for suspect in _SUSPECT_HREF.finditer(html):
        start = html.rfind("<", max(position, scanned), suspect.start())  # each stretch read once
        scanned = suspect.start()
        link = _LINK.match(html, start) if start >= 0 else None  # -1: the tag read before
        if link is None or not _writes_invalid_autolink(link):
            continue
        pieces += (html[position : link.end()], _NOT_AUTOLINK)
        position = link.end()
    pieces.append(html[position:])
    return "".join(pieces), len(pieces) // 2


def _writes_invalid_autolink(link: re.Match[str]) -> bool:
    """True if html-to-markdown would write ``link`` as ``<...>`` (its text is the href,
    or a ``mailto:`` href's address, whitespace collapsed) and CommonMark would not read
    that as a link."""
    href = unescape(link.group("dq") if link.group("dq") is not None else link.group("sq"))
    text = " ".join(unescape(_TAG.sub("", link.group("text"))).split())
    if text == href:
        return not _URI_AUTOLINK.fullmatch(href)
    return href.startswith("mailto:") and text == href[7:] and not _EMAIL_AUTOLINK.fullmatch(text)


def _split_code(html: str) -> list[str]:
    """``html`` cut into text, code element, text, ..., text: each code element from its
    start tag to the end tag that closes it, counting those of its name nested inside
    (one left open runs to the end)."""
    pieces: list[str] = []
    position = 0
    while (start := _CODE_START.search(html, position)) is not None:
        end = start.end() if start.group("simple") is not None else _element_end(html, start)
        pieces += (html[position : start.start()], html[start.start() : end])
        position = end
    pieces.append(html[position:])
    return pieces


def _element_end(html: str, start: re.Match[str]) -> int:
    """Where the code element ``start`` opens ends in ``html``: past the end tag that
    closes it, counting those of its name nested inside (the end of ``html`` if none)."""
    depth = 0
    for tag in _CODE_TAGS[start.group(1).lower()].finditer(html, start.start()):
        depth += -1 if tag.group(1) else 1
        if depth == 0:
            closing = html.find(">", tag.end())
            return len(html) if closing < 0 else closing + 1
    return len(html)


def unmark(markdown: str) -> str:
    """The converter's ``markdown`` with each stand-in as its backslash escape, or, for a
    block marker (:data:`_AT_LINE_START`) that does not open its line, as the character.

    A backslash of the page's text right before a marked character must not escape it:
    where the backslashes before a stand-in are an odd run, the last one is bare (a
    converter leaves it so, the stand-in not being punctuation to it), and one more is
    added.
    """
    lines = _Lines(markdown)
    return _MARKED.sub(lambda match: _escape(match, lines), markdown)


def _as_char(match: re.Match[str]) -> str:
    """The character a stand-in stands for (one for one, so positions hold)."""
    return _CHARS.get(match.group(), " ")


def _stand_in(match: re.Match[str]) -> str:
    """The stand-in of the matched character, after the tag and number before it."""
    text, groups = match.group(), match.groupdict()
    lead = groups["number"] if groups["number"] is not None else groups.get("opening")
    lead = "" if lead is None else _TAG_MARK + lead
    return lead + _MARKS[text[len(lead) :]]


def _escape(match: re.Match[str], lines: _Lines) -> str:
    start, markdown = match.start(), match.string
    run = start
    while run and markdown[run - 1] == "\\":
        run -= 1
    extra = "\\" if (start - run) % 2 else ""  # the bare backslash before it, escaped
    stand_in = match.group()
    if stand_in == _NOT_AUTOLINK:
        return extra
    if stand_in == _BANG:  # an image's opening only where the converter's link follows
        return extra + ("\\!" if markdown.startswith("[", start + 1) else "!")
    rest = _AT_LINE_START.get(stand_in)
    if rest is not None and not (rest.match(lines.plain, start + 1) and lines.opens(start, stand_in in _AFTER_NUMBER)):
        if stand_in != _MARKS["#"] or not lines.closes_heading(start):
            return extra + _CHARS[stand_in]
    return extra + "\\" + _CHARS[stand_in]


class _Lines:
    """The lines of a converter's ``markdown`` as a CommonMark reader splits them, read
    in :attr:`plain` (the stand-ins as their characters, so markers split across
    elements, ``<b>-</b><b>-</b>``, read as one run), each line's bounds, container
    markers and heading tail found once (so a page of one long line with many markers,
    or deep in block quotes, costs linear time)."""

    def __init__(self, markdown: str) -> None:
        self.markdown = markdown
        self._plain: str | None = None
        self._starts: list[int] | None = None
        self._containers: dict[int, int] = {}  # line start -> end of its container markers
        self._tails: dict[int, int | None] = {}  # line start -> start of a heading's closing run

    @property
    def plain(self) -> str:
        """``markdown`` with each stand-in as the character it stands for."""
        if self._plain is None:
            self._plain = _MARKED.sub(_as_char, self.markdown)  # str.translate: a dict look-up a character
        return self._plain

    def _bounds(self, at: int) -> tuple[int, int]:
        """(start, end) of the line of ``at``."""
        if self._starts is None:
            self._starts = [0, *(m.end() for m in re.finditer("\n", self.markdown))]
        index = bisect.bisect_right(self._starts, at) - 1
        end = self._starts[index + 1] - 1 if index + 1 < len(self._starts) else len(self.markdown)
        return self._starts[index], end

    def _container_end(self, line: int) -> int:
        if line not in self._containers:
            found = _CONTAINERS.match(self.plain, line)
            self._containers[line] = found.end() if found else line
        return self._containers[line]

    def opens(self, at: int, after_number: bool) -> bool:
        """True if only container markers (CommonMark 5.1, 5.2: ``>``, a bullet, an
        ordered list's number) and spaces come before ``at`` on its line; past the
        digits of the number for a ``.`` or ``)``."""
        line, _end = self._bounds(at)
        end = at
        if after_number:
            while end > line and self.markdown[end - 1].isdigit():
                end -= 1
        return end <= self._container_end(line)

    def closes_heading(self, at: int) -> bool:
        """True if the ``#`` at ``at`` would be read as an ATX heading's closing
        sequence (CommonMark 4.2): its line is a heading (after container markers) and
        only ``#`` and spaces follow it."""
        line, end = self._bounds(at)
        if line not in self._tails:
            tail = None
            if _ATX_OPENING.match(self.plain, self._container_end(line)):
                tail = end
                while tail > line and self.plain[tail - 1] in _CLOSING:
                    tail -= 1
            self._tails[line] = tail
        tail = self._tails[line]
        return tail is not None and at >= tail
