"""The mirror tree: one ``.md`` file per page under ``OUT/site/<host>/<path>``.

:func:`mirror_path` maps one URL to a relative file path, purely; :func:`plan` resolves
the collisions no per-URL function can avoid; :func:`write_mirror` writes the tree from
the crawl's records at the end of a crawl.

Rules of :func:`mirror_path` (URL parts as in RFC 3986 section 3; file-name rules from
Microsoft's "Naming Files, Paths, and Namespaces", which are stricter than Linux's and
macOS's, so a name valid on Windows is valid on all three):

1. the host (already lower-case, IDNA A-label) is the first folder; a port is appended
   with ``_`` (``127.0.0.1_8080``); the scheme is left out (http and https of one host
   are one site);
2. each path segment becomes one folder, the last one the file: an empty last segment
   (``/``, ``/dir/``) is ``index.md``; a name ending in ``.html``, ``.htm``, ``.xhtml``
   or ``.shtml`` (any case) has that extension replaced by ``.md``; any other name gets
   ``.md`` appended (``/a.php`` -> ``a.php.md``, ``/a`` -> ``a.md``);
3. a query (even empty) adds ``-<names>-<8 hex>`` before ``.md``: the parameter names in
   the URL's (sorted) order joined by ``-`` (cut to 60 bytes) and the first 8 hex digits
   of the xxh3-64 of the whole query, so distinct queries never share a name
   (``/search?q=x`` -> ``search-q-<8 hex>.md``; ``/?`` -> ``index-<8 hex>.md``);
4. percent-encoding, injectively: escapes of non-ASCII UTF-8 characters and of the
   characters a URL never holds literally (space, ``^``, backquote, ``{``, ``}``) are
   decoded (``caf%C3%A9`` -> ``café``); every other escape stays ``%XX`` except
   ``%25``, ``%2A`` and ``%3A``, written ``%2525``, ``%252A`` and ``%253A``, because a
   literal ``*`` or ``:`` (valid in a URL, not in a Windows name) is written ``%2A`` /
   ``%3A``; control characters (C0, DEL, C1) and format characters stay escaped;
5. Windows names: no trailing dot or space (the last one is written ``%2E`` / ``%20``),
   no reserved device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9 and COM/LPT with a
   superscript digit, any case, also followed by an extension: its last letter is
   written ``%XX``); an empty segment (``//``) is ``%5F``. The escapes used here
   (``%2E``, ``%4E``...) are of characters that rule 4 never leaves escaped, so no two
   segments give one name;
6. a component longer than :data:`MAX_COMPONENT_BYTES` UTF-8 bytes is cut (at a
   character boundary, never inside an escape) and ends in ``-<8 hex>`` of the whole
   component.

What stays possible: two URLs giving one path (``/a`` and ``/a.html``, ``/`` and
``/index.html``, http and https), one path spelled in two cases or Unicode forms
(case-insensitive, normalization-insensitive file systems: macOS, Windows), and a file
named as another URL's folder (``/a.md`` vs ``/a.md/``). :func:`plan` gives the later
URL (in sorted order) a ``-<8 hex>`` suffix.
"""

from __future__ import annotations

import os
import re
import tempfile
import unicodedata
from collections.abc import Iterable

import xxhash

from crawler.output import shards
from crawler.web.urlnorm import PATH_SAFE, normalize_percent_encoding, split_reference

#: Longest file or folder name written, in UTF-8 bytes (Windows and macOS allow 255
#: UTF-16 units / bytes; the margin leaves room for a collision suffix).
MAX_COMPONENT_BYTES = 200
#: Longest parameter-name part of a name with a query, in bytes.
MAX_QUERY_NAMES_BYTES = 60
#: Extensions replaced by ``.md``.
HTML_EXTENSIONS = (".html", ".htm", ".xhtml", ".shtml")
#: Folder of the mirror in the output folder, and its index (url -> file).
SITE_DIR = "site"
INDEX_FILE = "index.tsv"

_RESERVED = re.compile(r"(CON|PRN|AUX|NUL|COM[0-9¹²³]|LPT[0-9¹²³])([ .].*)?", re.I | re.S)
_ESCAPE_OR_CHAR = re.compile(r"%[0-9A-F]{2}|.", re.S)
_ASCII_DECODED = frozenset(" ^`{}")  # never literal in a normalized URL (not pchar)
_LITERAL_ESCAPED = {"*": "%2A", ":": "%3A"}  # pchar, but not allowed in a Windows name
_ESCAPE_ESCAPED = {"%25": "%2525", "%2A": "%252A", "%3A": "%253A"}
_WINDOWS_FORBIDDEN = frozenset('<>:"/\\|?*')


def _hex8(text: str) -> str:
    return xxhash.xxh3_64_hexdigest(text.encode("utf-8"))[:8]


def _printable(char: str) -> bool:
    return unicodedata.category(char) not in ("Cc", "Cf", "Cs", "Co", "Cn")


def _decode_segment(segment: str) -> str:
    """Rule 4: a normalized path segment to a file-name string (see the docstring)."""
    out: list[str] = []
    pending = bytearray()  # escaped bytes of a possible UTF-8 character

    def flush() -> None:
        text = pending.decode("utf-8", errors="surrogateescape")
        for char in text:
            if "\udc80" <= char <= "\udcff" or not _printable(char) or ord(char) < 0x80:
                for byte in char.encode("utf-8", errors="surrogateescape"):
                    escape = f"%{byte:02X}"
                    if chr(byte) in _ASCII_DECODED:
                        out.append(chr(byte))
                    else:
                        out.append(_ESCAPE_ESCAPED.get(escape, escape))
            else:
                out.append(char)
        pending.clear()

    for token in _ESCAPE_OR_CHAR.findall(segment):
        if len(token) == 3:
            pending.append(int(token[1:], 16))
            continue
        flush()
        out.append(_LITERAL_ESCAPED.get(token, token))
    flush()
    return "".join(out)


def _cut(name: str, limit: int, whole: str) -> str:
    """``name`` cut to ``limit`` UTF-8 bytes with ``-<8 hex of whole>``, when longer."""
    if len(name.encode("utf-8")) <= limit:
        return name
    keep = limit - 9
    cut = name.encode("utf-8")[:keep].decode("utf-8", errors="ignore")
    if "%" in cut[-2:]:  # never end inside an escape
        cut = cut[: cut.rindex("%")]
    return f"{cut}-{_hex8(whole)}"


def _windows_safe(name: str) -> str:
    """Rule 5 on one name (the empty segment is handled by the caller)."""
    if name.endswith("."):
        name = name[:-1] + "%2E"
    elif name.endswith(" "):
        name = name[:-1] + "%20"
    match = _RESERVED.fullmatch(name)
    if match:
        stem = match.group(1)
        name = stem[:-1] + "".join(f"%{b:02X}" for b in stem[-1].encode("utf-8")) + name[len(stem) :]
    return name


def _component(segment: str) -> str:
    """One folder name from one path segment (rules 4 to 6)."""
    if segment == "":
        return "%5F"
    return _windows_safe(_cut(_decode_segment(segment), MAX_COMPONENT_BYTES, segment))


def _file_name(segment: str, query: str | None) -> str:
    """The file name from the last path segment and the query (rules 2 to 6)."""
    decoded = _decode_segment(segment) if segment else "index"
    stem = decoded
    for extension in HTML_EXTENSIONS:
        if decoded.lower().endswith(extension) and len(decoded) > len(extension):
            stem = decoded[: -len(extension)]
            break
    if query is not None:
        names = [item.partition("=")[0] for item in query.split("&") if item]
        names_part = "-".join(
            _decode_segment(normalize_percent_encoding(n, PATH_SAFE - {"/"})) for n in names
        )  # a query may hold "/" and "?" literally
        names_part = _cut(names_part, MAX_QUERY_NAMES_BYTES, query)
        stem = f"{stem}-{names_part}-{_hex8(query)}" if names_part else f"{stem}-{_hex8(query)}"
    stem = _cut(stem, MAX_COMPONENT_BYTES - 3, f"{segment}?{query}")
    return _windows_safe(stem + ".md")


def mirror_path(url: str) -> str:
    """The mirror file of ``url`` (a normalized absolute http(s) URL, as in a record's
    ``url``), relative to ``OUT/site``, with ``/`` separators: ``<host>[_<port>]/<path>``
    (rules in the module docstring).

    Raises:
        ValueError: ``url`` has no host.
    """
    parts = split_reference(url)
    if not parts.authority:
        raise ValueError(f"not an absolute URL with a host: {url!r}")
    host = parts.authority.rpartition("@")[2]
    host, colon, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    if not colon or not port.isdigit():
        host, port = parts.authority.rpartition("@")[2], ""
    site = _component(normalize_percent_encoding(host, PATH_SAFE)) + (f"_{port}" if port else "")
    segments = normalize_percent_encoding(parts.path or "/", PATH_SAFE).split("/")[1:]
    folders = [_component(segment) for segment in segments[:-1]]
    return "/".join([site, *folders, _file_name(segments[-1], parts.query)])


def fold(path: str) -> str:
    """The form under which a case- and normalization-insensitive file system (macOS
    APFS/HFS+, Windows NTFS) sees ``path``: NFC of the case fold."""
    return unicodedata.normalize("NFC", path.casefold())


def _with_suffix(path: str, url: str, attempt: int) -> str:
    """``path`` with ``-<8 hex>`` of ``url`` (and ``attempt``) before ``.md``."""
    folder, _, name = path.rpartition("/")
    stem = name[:-3]
    suffix = _hex8(url if attempt == 0 else f"{url}#{attempt}")
    stem = _cut(stem, MAX_COMPONENT_BYTES - 12, stem)
    return f"{folder}/{stem}-{suffix}.md"


def plan(urls: Iterable[str]) -> dict[str, str]:
    """Files for ``urls`` (normalized URLs) such that no two are one file on Linux,
    macOS or Windows and no file is another's folder.

    URLs are taken in sorted order; each gets :func:`mirror_path` unless that path (as
    :func:`fold` sees it) is taken or is a folder of some other file; then it gets a
    ``-<8 hex of the URL>`` suffix before ``.md`` (again with the attempt number in the
    hash, should that be taken too). Deterministic.

    Returns:
        URL -> relative path, for every distinct URL.
    """
    paths = {url: mirror_path(url) for url in sorted(set(urls))}
    folders = {fold(path[:i]) for path in paths.values() for i, c in enumerate(path) if c == "/"}
    taken: set[str] = set()
    planned: dict[str, str] = {}
    for url, path in paths.items():
        candidate, attempt = path, 0
        while fold(candidate) in taken or fold(candidate) in folders:
            candidate = _with_suffix(path, url, attempt)
            attempt += 1
        taken.add(fold(candidate))
        planned[url] = candidate
    return planned


def _umask() -> int:
    """The process's umask (read by setting it and back: call from one thread)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_atomic(path: str, data: bytes, mode: int) -> None:
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".part-")
    try:
        os.fchmod(fd, mode)  # mkstemp makes 0600; a mirror is for reading
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def remove_mirror(out_dir: str) -> int:
    """Delete the mirror written by :func:`write_mirror` in ``out_dir``: the files its
    ``site/index.tsv`` lists, the index itself, then the folders left empty. Files not
    listed there are kept. Returns the files removed."""
    site = os.path.join(out_dir, SITE_DIR)
    index = os.path.join(site, INDEX_FILE)
    if not os.path.isfile(index):
        return 0
    removed = 0
    folders: set[str] = set()
    with open(index, encoding="utf-8") as f:
        next(f, None)  # header
        files = {line.rstrip("\n").split("\t")[1] for line in f if "\t" in line}
    for relative in sorted(files):
        if relative.startswith("/") or ".." in relative.split("/"):
            continue  # not ours
        path = os.path.join(site, *relative.split("/"))
        if os.path.isfile(path):
            os.remove(path)
            removed += 1
        parts = relative.split("/")
        folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
    os.remove(index)
    for relative in sorted(folders, key=lambda f: -f.count("/")):
        try:
            os.rmdir(os.path.join(site, *relative.split("/")))
        except OSError:  # not empty (or gone): not ours to remove
            pass
    try:
        os.rmdir(site)
    except OSError:
        pass
    return removed


def write_mirror(out_dir: str) -> int:
    """Write ``out_dir/site``: one file per record with Markdown (its exact bytes,
    UTF-8), named by :func:`plan`, and ``site/index.tsv`` (header ``url  file``, sorted
    by URL), where an exact duplicate (``duplicate_of``) is listed with its first
    copy's file. A mirror already there (a resumed crawl) is removed first
    (:func:`remove_mirror`). Each file is written to a temporary name and renamed.

    The records are read twice (:func:`crawler.output.shards.iter_records`): the names first,
    then the contents, so no Markdown is held in memory.

    Returns:
        the number of ``.md`` files written.
    """
    remove_mirror(out_dir)
    mode = 0o666 & ~_umask()  # the files' mode, as open() would give them
    with_markdown: set[str] = set()
    duplicates: dict[str, str] = {}
    for record in shards.iter_records(out_dir):
        if record.get("markdown") is not None and not record.get("error"):
            with_markdown.add(record["url"])
        elif record.get("duplicate_of"):
            duplicates[record["url"]] = record["duplicate_of"]
    files = plan(with_markdown)
    site = os.path.join(out_dir, SITE_DIR)
    written = 0
    for record in shards.iter_records(out_dir):
        relative = files.get(record["url"]) if record.get("markdown") is not None else None
        if relative is not None and not record.get("error"):
            _write_atomic(os.path.join(site, *relative.split("/")), record["markdown"].encode("utf-8"), mode)
            written += 1
    rows = dict(files)
    rows.update((url, files[first]) for url, first in duplicates.items() if first in files)
    lines = ["url\tfile\n"] + [f"{url}\t{rows[url]}\n" for url in sorted(rows)]
    _write_atomic(os.path.join(site, INDEX_FILE), "".join(lines).encode("utf-8"), mode)
    return written
