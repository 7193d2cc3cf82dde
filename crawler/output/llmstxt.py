"""``llms.txt`` and ``llms-full.txt`` of a crawl (llmstxt.org), from its current corpus.

:func:`write_llms_txt` reads the records of the current corpus
(:class:`crawler.output.current.CurrentCorpus`)
and the site tree (``tree.txt``) of a crawl folder and writes two UTF-8 files, each
line ending in ``\\n``.

Listed pages. A record is listed when it has no ``error`` and has Markdown (a string,
empty included) or ``duplicate_of``: HTML pages and their exact duplicates. Failures,
redirects and non-HTML are not listed; a page under one of them in the tree takes its
place (each listed page hangs from its nearest listed ancestor). A page's *title* is its
``title`` with runs of whitespace made one space, or when that is empty its URL's path
(with ``?query``), or for a path ``/`` its host (``host:port``).

Order. The *tree order* is ``tree.txt``'s (breadth-first from the seeds, children by
URL, printed depth-first), then listed URLs that are not in it, by URL, as more roots.
The first line of ``tree.txt`` is *the seed* (the first one, even if it redirected or
failed); without ``tree.txt``, the first listed URL.

Sections. Duplicates aside, the listed pages form a forest (a root: a listed page with
no listed ancestor). For each root in tree order: a section named by the root's title
with the root and those of its children that have no children, then for each child that
has children a section named by its title with the child and all its descendants, all
in tree order (the list is flat); but the roots after the first that have no children
are gathered in a section ``Other pages``, after the others. Last, when there are duplicates, a section
``Optional`` lists them in tree order: llmstxt.org gives ``Optional`` the meaning "can be
skipped for a shorter context", which a copy of a page listed elsewhere can always be.
Names are compared case-insensitively; a name already used (``Optional`` counts as used
by every other section) gets `` (2)``, `` (3)``... appended.

``llms.txt``::

    # {title of the first root, or of the seed when nothing is listed}

    > {first sentence of the first root; if it has none: Pages crawled from <{seed}>.}

    {N} pages crawled from <{seed}>[ ({S} sites)][, fetched on {D} | fetched from {D1} to {D2}].
    Sections follow the site tree: a page, then the pages below it.[ Optional lists pages
    whose content repeats another page's.] llms-full.txt holds the Markdown of every page
    listed here.            <- one line; N counts duplicates ("1 page"), S the distinct
                               scheme://host:port of the pages (shown when more than one),
                               D the first 10 characters of the pages' fetched_at (UTC)

    ## {section name}

    - [{title}]({url}): {note}      <- ": {note}" left out when the note is empty
    ...

with one blank line between blocks. The *note* is the page's first sentence (below); a
duplicate's is ``Same content as <{URL of duplicate_of}>.``. The line follows the
reference parser's pattern ``-\\s*\\[([^\\]]+)\\]\\(([^)]+)\\)(?::\\s*(.*))?`` and
CommonMark alike: in the link text ``\\`` is doubled and ``[``, ``]`` become ``(``, ``)``
(a backslash-escaped bracket is CommonMark but stops the reference pattern, which admits
no ``]`` in a name); in the URL (the ``<...>`` of notes, the blockquote and the
details too) ASCII control characters, space, ``(``, ``)``, ``<`` and ``>`` are
percent-encoded. Titles and notes hold no line break. The H1 and section names are
the titles as they are.

First sentence (:func:`first_sentence`). The Markdown's blocks are read in order
skipping fenced and indented code, headings (ATX and setext), thematic breaks, tables
(lines starting with ``|``), HTML blocks (lines starting with a tag) and blocks whose
text is only links, images and punctuation (navigation). The text of the first
paragraph with a letter or digit is taken, or when no paragraph has one, of the first
list item or blockquote. Only the first 100,000 characters of the Markdown are read,
and of a block its first 2,000 (cut at a space); a link's text, a code span or an
emphasis longer than 300 characters, or a link's URL longer than 2,000, stays as
written. Inline Markdown becomes text: images dropped, links and autolinks (URI and
e-mail) their text, code spans their content, emphasis and strike-through markers,
inline HTML tags and backslashes of escapes removed, entities decoded, whitespace made
one space. The sentence ends at the first ``.``, ``!`` or ``?`` (with any closing quotes
or brackets after it) followed by whitespace or the end, unless the next word starts
with a lowercase letter (``e.g. this``, ``etc. and``), or the dot ends a single capital
letter (an initial: ``J. Smith``) or one of ``e.g. i.e. cf. vs. viz. approx. a.k.a.
Mr. Mrs. Ms. Dr. Prof. Sr. Jr. St. No. Fig.`` (any case); without an end, the whole
text. A sentence longer than 200 characters keeps its first 199, back to their last
space when that is at index 100 or later, less trailing spaces, ``,;:`` and dashes,
and gets ``…``: a note is at most 200 characters. No text: an empty note.

``llms-full.txt``::

    # {the same H1}

    > {the same blockquote}

    <doc title="{title}" url="{url}">
    {the page's Markdown, trailing whitespace removed}
    </doc>

    <doc ...>
    ...

one ``<doc>`` per listed page in tree order, duplicates included, a blank line between
two; the file ends with the last ``</doc>`` and its ``\\n`` (after the blockquote when
nothing is listed). The attribute values escape ``&``, ``<``, ``>`` and ``"`` as XML
does. A line of Markdown that starts with ``<doc`` or ``</doc`` followed by a non-word
character or its end gets a ``\\`` in front (CommonMark shows the same text, but in
code, where the backslash shows), so the lines ``<doc ...>`` and ``</doc>`` delimit
the pages unambiguously. A duplicate's
content is the one line ``Same content as <{URL}>.``, the URL being its
``duplicate_of``, whose Markdown is under that URL's ``<doc>`` when it is listed.
Empty Markdown: no line between the tags.

Memory and files. The records are read once: each listed page's title, note,
``duplicate_of`` and Markdown go to a SQLite file in ``to_dir`` (``.llms-txt.sqlite``,
deleted at the end); memory holds the listed URLs in tree order (the strings, which the
section lists share) and the distinct origins. Both files are written to a temporary
name in ``to_dir`` and renamed into place once both are complete.
"""

from __future__ import annotations

import contextlib
import html
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from urllib.parse import urlsplit

from crawler.errors import ConfigError
from crawler.output.current import CurrentCorpus

LLMS_FILE = "llms.txt"
FULL_FILE = "llms-full.txt"
TREE_FILE = "tree.txt"
#: The working file, removed at the end.
_WORK = ".llms-txt.sqlite"
#: The most characters of a note.
MAX_NOTE = 200
#: The most characters of a page's Markdown read for its note.
_SCAN_CHARS = 100_000
#: The most characters of a Markdown block read for a note (cut at a space).
_BLOCK_CHARS = 2000
#: Section names that are not a page's title.
OPTIONAL, OTHER_PAGES = "Optional", "Other pages"
#: Dotted words after which a "." does not end a sentence (lowercase, with the dot).
ABBREVIATIONS = frozenset("e.g. i.e. cf. vs. viz. approx. a.k.a. mr. mrs. ms. dr. prof. sr. jr. st. no. fig.".split())


# -- notes -------------------------------------------------------------------------------

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_SETEXT = re.compile(r" {0,3}(?:=+|-+)[ \t]*$")
_BREAK = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_TABLE = re.compile(r" {0,3}\|")
_HTML_BLOCK = re.compile(r" {0,3}</?[A-Za-z!?]")
_ITEM = re.compile(r" {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]+|$)")
_QUOTE = re.compile(r" {0,3}>[ \t]?")

#: A backslash escape or a code span, whichever starts first (no escapes in code).
# Spans are bounded (300 characters of text, 2000 of a link's URL), so an opener without
# its closer costs a bounded scan, not one to the block's end.
_ESCAPE_OR_CODE = re.compile(r"\\([!-/:-@\[-`{-~])|(`+)(.{1,300}?)(?<!`)\2(?!`)")
_IMAGE = re.compile(r"!\[[^\]]{0,300}\](?:\([^)]{0,2000}\)|\[[^\]]{0,300}\])")
_LINK = re.compile(r"\[([^\]]{0,300})\](?:\([^)]{0,2000}\)|\[[^\]]{0,300}\])")
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*|[^<>\s@]+@[^<>\s@]+)>")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
# (a character the pattern needs, the pattern); each opener's lookbehind comes after it,
# so that re scans for the marker instead of trying the lookbehind at every position
_EMPHASIS = (
    ("*", re.compile(r"(\*\*)(?=\S)(.{1,300}?)(?<=\S)\*\*")),
    ("_", re.compile(r"(__)(?=\S)(.{1,300}?)(?<=\S)__")),
    ("~", re.compile(r"(~~)(?=\S)(.{1,300}?)(?<=\S)~~")),
    ("*", re.compile(r"(\*)(?<!\*\*)(?=[^\s*])(.{1,300}?)(?<=[^\s*])\*(?!\*)")),
    ("_", re.compile(r"(_)(?<![\w_]_)(?=[^\s_])(.{1,300}?)(?<=[^\s_])_(?![\w_])")),
)
_SLOT = re.compile("\x00(\\d+)\x00")
_END = re.compile(r"[.!?]+[\"'’”)\]]*(?=\s|$)")
_OPENERS = "([{\"'‘“"


def _inline_text(source: str) -> str:
    """The plain text of one block's inline Markdown (see the module docstring)."""
    kept: list[str] = []

    def keep(text: str) -> str:  # shielded from the rules below until the end
        kept.append(text)
        return f"\x00{len(kept) - 1}\x00"

    text = source.replace("\x00", "")
    if "\\" in text or "`" in text:
        text = _ESCAPE_OR_CODE.sub(lambda m: keep(m[1] or m[3].strip() or m[3]), text)
    text = _IMAGE.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _AUTOLINK.sub(lambda m: keep(m[1]), text)
    text = _TAG.sub("", text)
    for marker, pattern in _EMPHASIS:
        previous = None
        while marker in text and previous != text:  # nested: ***a*** and **a *b* c**
            previous, text = text, pattern.sub(r"\2", text)
    text = html.unescape(text)
    if kept:
        text = _SLOT.sub(lambda m: kept[int(m[1])], text)
    return " ".join(text.split())


def _is_navigation(source: str) -> bool:
    """Whether a block's inline Markdown is only links, images and punctuation."""
    rest = _AUTOLINK.sub("", _LINK.sub("", _IMAGE.sub("", source)))
    return re.search(r"\w", _TAG.sub("", rest)) is None


def _cut(text: str) -> str:
    """The first sentence of ``text``, at most :data:`MAX_NOTE` characters."""
    sentence = text
    for match in _END.finditer(text):
        after = text[match.end() :].lstrip()
        if after[:1].islower():
            continue
        if match[0] == ".":
            word = text[: match.start()].rsplit(None, 1)[-1].lstrip(_OPENERS) if match.start() else ""
            if word.lower() + "." in ABBREVIATIONS or (len(word) == 1 and word.isupper()):
                continue
        sentence = text[: match.end()]
        break
    if len(sentence) <= MAX_NOTE:
        return sentence
    head = sentence[: MAX_NOTE - 1]
    space = head.rfind(" ")
    if space >= 100:
        head = head[:space]
    return head.rstrip(" ,;:-–—") + "…"


def first_sentence(markdown: str) -> str:
    """The note of a page: the first sentence of its Markdown's prose, as plain text on
    one line of at most :data:`MAX_NOTE` characters, or ``""`` (rules in the module
    docstring). Stops reading at the first paragraph with text."""
    fallback: str | None = None
    block: list[str] = []
    kind = ""
    fence = ""
    size = 0  # of the paragraph in block

    def finish() -> str | None:
        nonlocal block
        source, block = " ".join(block), []
        if len(source) > _BLOCK_CHARS:  # the note is in the start; the rules are slow on much more
            space = source.rfind(" ", 0, _BLOCK_CHARS)
            source = source[: space if space > 0 else _BLOCK_CHARS]
        if not source or _is_navigation(source):
            return None
        text = _inline_text(source)
        return text if re.search(r"\w", text) else None

    for line in markdown[:_SCAN_CHARS].splitlines():
        if fence:
            if line.lstrip(" ").startswith(fence) and not line.strip().strip(fence[0]):
                fence = ""
            continue
        opened = _FENCE.match(line)
        starts = None
        if opened:
            fence = opened[1]
        elif not line.strip():
            pass
        elif block and kind == "p" and _SETEXT.match(line):
            block = []  # the paragraph was a heading
            continue
        elif _ATX.match(line) or _BREAK.match(line) or _TABLE.match(line) or _HTML_BLOCK.match(line):
            pass
        elif not block and (line.startswith("    ") or line.startswith("\t")):
            continue  # indented code
        elif item := _ITEM.match(line):
            starts = ("item", line[item.end() :])
        elif quote := _QUOTE.match(line):
            rest = line[quote.end() :]
            while quote := _QUOTE.match(rest):  # nested quotes
                rest = rest[quote.end() :]
            if block and kind == "quote":
                block.append(rest)
                continue
            starts = ("quote", rest)
        else:
            if not block:
                kind, size = "p", 0
            block.append(line)  # a paragraph line, or a lazy continuation of an item
            size += len(line) + 1
            if kind == "p" and size > _BLOCK_CHARS:  # what follows of it is not read
                text = finish()
                if text is not None:
                    return _cut(text)
            continue
        text = finish()
        if text is not None:
            if kind == "p":
                return _cut(text)
            fallback = fallback or text
        if starts is not None:
            kind, first = starts
            block = [first]
    text = finish()
    if text is not None and kind == "p":
        return _cut(text)
    return _cut(fallback or text or "")


# -- names and links ---------------------------------------------------------------------

_URL_UNSAFE = re.compile(r"[\x00-\x20()<>\x7f]")


def one_line(text: str | None) -> str:
    """``text`` with runs of whitespace made one space, stripped ("" for None)."""
    return " ".join((text or "").split())


def fallback_title(url: str) -> str:
    """The title of a page without one: its URL's path (and ``?query``), or for ``/``
    its host."""
    parts = urlsplit(url)
    path = parts.path or "/"
    if parts.query:
        return f"{path}?{parts.query}"
    return (parts.netloc or url) if path == "/" else path


def page_title(url: str, title: str | None) -> str:
    """The title a listed page goes by (module docstring)."""
    return one_line(title) or fallback_title(url)


def link_text(title: str) -> str:
    """``title`` as the text of a Markdown link both CommonMark and the reference
    parser read back: ``\\`` doubled, ``[``/``]`` made ``(``/``)``."""
    return title.replace("\\", "\\\\").replace("[", "(").replace("]", ")")


def link_url(url: str) -> str:
    """``url`` with control characters, space, parentheses and angle brackets
    percent-encoded: a link destination and an autolink as it is."""
    return _URL_UNSAFE.sub(lambda m: f"%{ord(m[0]):02X}", url)


def _attribute(value: str) -> str:
    return html.escape(value, quote=True).replace("&#x27;", "'")


def _duplicate_note(original: str) -> str:
    return f"Same content as <{link_url(original)}>."


_DOC_LINE = re.compile(r"^(?=</?doc(?!\w))", re.MULTILINE)


# -- the files ---------------------------------------------------------------------------


def is_listed(record: dict) -> bool:
    """Whether a record is a listed page: no error, and Markdown or ``duplicate_of``."""
    return not record.get("error") and (isinstance(record.get("markdown"), str) or bool(record.get("duplicate_of")))


def read_tree(path: str) -> Iterator[tuple[int, str]]:
    """``(depth, url)`` of each line of a ``tree.txt`` (none if the file is missing)."""
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        return
    with f:
        for line in f:
            url = line.strip()
            if url:
                yield (len(line) - len(line.lstrip(" "))) // 2, url


def listed_order(
    tree: Iterable[tuple[int, str]], kind_of: Callable[[str], bool | None]
) -> list[tuple[int | None, str]]:
    """The listed URLs of ``tree`` in tree order, each with its depth in the forest of
    listed pages that are not duplicates, or None for a duplicate.

    Args:
        tree: ``(depth, url)`` lines of ``tree.txt``, in order.
        kind_of: URL -> whether the listed page is a duplicate, None if not listed.
    """
    order: list[tuple[int | None, str]] = []
    seen: set[str] = set()
    above: list[int] = []  # per depth of the current path: listed non-duplicates on it, itself included
    for depth, url in tree:
        del above[depth:]
        count = above[-1] if above else 0
        duplicate = kind_of(url) if url not in seen else None
        if duplicate is None:
            above.append(count)
            continue
        seen.add(url)
        if duplicate:
            order.append((None, url))
            above.append(count)
        else:
            order.append((count, url))
            above.append(count + 1)
    return order


def sections(order: list[tuple[int | None, str]], title_of: Callable[[str], str]) -> list[tuple[str, list[str]]]:
    """``[(name, urls)]`` of ``llms.txt`` from :func:`listed_order`'s list (module
    docstring); ``title_of`` gives a listed URL's title."""
    forest = [(depth, url) for depth, url in order if depth is not None]
    found: list[tuple[str, list[str]]] = []
    others: list[str] = []
    i = 0
    while i < len(forest):
        root = forest[i][1]
        end = i + 1
        while end < len(forest) and (forest[end][0] or 0) > 0:
            end += 1
        if end == i + 1 and found:
            others.append(root)
            i = end
            continue
        home, branches = [root], []
        k = i + 1
        while k < end:
            stop = k + 1
            while stop < end and (forest[stop][0] or 0) > 1:
                stop += 1
            if stop == k + 1:
                home.append(forest[k][1])
            else:
                branches.append([url for _, url in forest[k:stop]])
            k = stop
        found.append((title_of(root), home))
        found += [(title_of(branch[0]), branch) for branch in branches]
        i = end
    if others:
        found.append((OTHER_PAGES, others))
    used = {OPTIONAL.casefold()}
    named = []
    for name, urls in found:
        unique, n = name, 2
        while unique.casefold() in used:
            unique, n = f"{name} ({n})", n + 1
        used.add(unique.casefold())
        named.append((unique, urls))
    duplicates = [url for depth, url in order if depth is None]
    if duplicates:
        named.append((OPTIONAL, duplicates))
    return named


class _Store:
    """The SQLite file of the listed pages: ``url -> title, note, duplicate_of,
    markdown``."""

    def __init__(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)  # a killed run's
        self.path = path
        self.conn = sqlite3.connect(path)
        self.conn.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
            "CREATE TABLE pages (url TEXT PRIMARY KEY, title TEXT, note TEXT, duplicate_of TEXT, markdown TEXT);"
        )

    def add(self, url: str, title: str, note: str, duplicate_of: str | None, markdown: str | None) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO pages VALUES (?, ?, ?, ?, ?)", (url, title, note, duplicate_of, markdown)
        )

    def duplicate(self, url: str) -> bool | None:
        """Whether the listed page ``url`` is a duplicate; None if it is not listed."""
        row = self.conn.execute("SELECT duplicate_of IS NOT NULL FROM pages WHERE url = ?", (url,)).fetchone()
        return None if row is None else bool(row[0])

    def page(self, url: str) -> tuple[str, str, str | None, str | None]:
        """``(title, note, duplicate_of, markdown)`` of a listed page."""
        row = self.conn.execute(
            "SELECT title, note, duplicate_of, markdown FROM pages WHERE url = ?", (url,)
        ).fetchone()
        return row[0], row[1], row[2], row[3]

    def title(self, url: str) -> str:
        return self.page(url)[0]

    def urls(self) -> Iterator[str]:
        for (url,) in self.conn.execute("SELECT url FROM pages ORDER BY url"):
            yield url

    def close(self) -> None:
        self.conn.close()
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.path)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def write_llms_txt(out_dir: str, to_dir: str, records: Iterable[dict] | None = None) -> dict:
    """Write ``to_dir/llms.txt`` and ``to_dir/llms-full.txt`` for the crawl in ``out_dir``
    (format in the module docstring). ``records`` are the current corpus's records (by
    default :class:`crawler.output.current.CurrentCorpus` of ``out_dir``); the tree is
    ``out_dir/tree.txt``.

    Returns ``{"pages": listed pages (duplicates included), "duplicates": of them,
    "sections": H2 sections of llms.txt, "sites": origins of the listed pages}``.

    Raises:
        ConfigError: nothing to name the files by: no listed page and no ``tree.txt``.
        OSError, ValueError: a file cannot be read or written.
    """
    os.makedirs(to_dir, exist_ok=True)
    store = _Store(os.path.join(to_dir, _WORK))
    temporaries = [os.path.join(to_dir, f".{name}.tmp") for name in (LLMS_FILE, FULL_FILE)]
    try:
        origins: set[str] = set()
        dates: list[str] = []
        for record in CurrentCorpus(out_dir, to_dir) if records is None else records:
            if not is_listed(record):
                continue
            url = record["url"]
            duplicate_of = record.get("duplicate_of") or None
            markdown = None if duplicate_of else record["markdown"]
            note = "" if markdown is None else first_sentence(markdown)
            store.add(url, page_title(url, record.get("title")), note, duplicate_of, markdown)
            parts = urlsplit(url)
            origins.add(f"{parts.scheme}://{parts.netloc}")
            day = (record.get("fetched_at") or "")[:10]
            if day:
                dates = [min(dates[0], day), max(dates[1], day)] if dates else [day, day]
        store.conn.commit()
        tree_path = os.path.join(out_dir, TREE_FILE)
        seed = next((url for _, url in read_tree(tree_path)), None)
        order = listed_order(read_tree(tree_path), store.duplicate)
        placed = {url for _, url in order}
        for url in store.urls():
            if url not in placed:
                order.append((None if store.duplicate(url) else 0, url))
        del placed
        if seed is None:
            if not order:
                raise ConfigError(f"{out_dir} has no listed page and no {TREE_FILE}")
            seed = order[0][1]
        first_root = next((url for depth, url in order if depth is not None), None)
        if first_root is None:
            title, summary = fallback_title(seed), ""
        else:
            title, summary, _, _ = store.page(first_root)
        summary = summary or f"Pages crawled from <{link_url(seed)}>."
        head = f"# {title}\n\n> {summary}\n\n"
        listed = len(order)
        duplicates = sum(1 for depth, _ in order if depth is None)
        found = sections(order, store.title)
        details = f"{_plural(listed, 'page')} crawled from <{link_url(seed)}>"
        if len(origins) > 1:
            details += f" ({len(origins)} sites)"
        if dates:
            low, high = dates
            details += f", fetched on {low}" if low == high else f", fetched from {low} to {high}"
        details += ". Sections follow the site tree: a page, then the pages below it."
        if duplicates:
            details += " Optional lists pages whose content repeats another page's."
        details += " llms-full.txt holds the Markdown of every page listed here.\n"
        with open(temporaries[0], "w", encoding="utf-8", newline="\n") as f:
            f.write(head + details)
            for name, urls in found:
                f.write(f"\n## {name}\n\n")
                for url in urls:
                    page, note, duplicate_of, _ = store.page(url)
                    if duplicate_of:
                        note = _duplicate_note(duplicate_of)
                    tail = f": {note}" if note else ""
                    f.write(f"- [{link_text(page)}]({link_url(url)}){tail}\n")
        with open(temporaries[1], "w", encoding="utf-8", newline="\n") as f:
            f.write(head)
            for n, (_, url) in enumerate(order):
                page, _, duplicate_of, markdown = store.page(url)
                if duplicate_of:
                    content = _duplicate_note(duplicate_of) + "\n"
                else:
                    content = _DOC_LINE.sub("\\\\", (markdown or "").rstrip())
                    content = content + "\n" if content else ""
                gap = "\n" if n else ""
                f.write(f'{gap}<doc title="{_attribute(page)}" url="{_attribute(url)}">\n{content}</doc>\n')
        for temporary, name in zip(temporaries, (LLMS_FILE, FULL_FILE)):
            os.replace(temporary, os.path.join(to_dir, name))
        return {"pages": listed, "duplicates": duplicates, "sections": len(found), "sites": len(origins)}
    finally:
        store.close()
        for temporary in temporaries:
            with contextlib.suppress(FileNotFoundError):
                os.remove(temporary)
