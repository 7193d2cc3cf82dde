"""Sitemaps: the URL lists a site publishes for crawlers (sitemaps.org protocol 0.9,
https://www.sitemaps.org/protocol.html).

Pure: the caller fetches the candidates of :func:`sitemap_candidates` and hands each
body to :func:`parse_sitemap`, which never raises. Three shapes are read:

* ``<urlset>``: page URLs, one ``<url><loc>`` each;
* ``<sitemapindex>``: URLs of further sitemaps, one ``<sitemap><loc>`` each (the caller
  fetches them, and does not follow an index found through an index: the protocol
  forbids nesting);
* a plain-text sitemap (the protocol's "Text file"): one absolute URL per line, read
  when the body does not start with ``<`` (after a UTF-8 BOM and whitespace); it gives
  kind ``urlset``.

Either may be gzip-compressed (``.xml.gz``): a body starting with the gzip magic
``1f 8b`` is decompressed whatever its Content-Type said.

Limits (the protocol's: "no more than 50,000 URLs and must be no larger than 50MB
(52,428,800 bytes)", uncompressed): a body, or a decompressed body, over
:data:`SITEMAP_MAX_BYTES` is ``invalid``. Decompression stops as soon as the output
passes the limit, in chunks of :data:`_CHUNK_BYTES`, so a gzip bomb costs at most that
much memory and time (60 MB of zeros, 58 KiB compressed, is rejected after decoding
50 MiB). Entries after the first :data:`SITEMAP_MAX_URLS` are ignored, and ``error``
says so.

XML is parsed with lxml and nothing outside the body is ever read: no network, no
external DTD loaded, no entity substituted, no huge-tree mode (libxml2's default limits
on depth and text size stay). A document that declares entities (``<!ENTITY``: the
billion-laughs and external-entity attacks; no sitemap needs one) is ``invalid``; a
``<loc>`` holding a reference to an undeclared entity is dropped (its value is
unknown). Elements must be in the sitemaps.org namespace or in none; elements of other
namespaces (image, video, news, xhtml extensions) are ignored, so an ``<image:loc>`` is
never taken for a page.

Minor errors are recovered from (lxml ``recover=True``): what could be read is kept
and ``error`` names the first error. The commonest one, a bare ``&`` in a query, is
repaired before parsing (:func:`escape_bare_ampersands`) and counted in ``error``. A
document cut inside a ``<loc>`` loses that ``<loc>`` (its URL may be cut short). A
text sitemap cut mid-line cannot be told from one without a final newline, so fetch
sitemaps with a byte cap of at least :data:`SITEMAP_MAX_BYTES`.

Each ``<loc>`` (stripped) or text line becomes a URL in request form
(:func:`crawler.web.urlnorm.request_url`: normalized, the query as written); a relative
``<loc>`` is resolved against the sitemap's URL (the protocol wants absolute URLs; we
are lenient), a text line must be absolute (a line of prose must not become a URL),
and anything that does not normalize to http(s) is dropped. URLs are de-duplicated,
document order kept. Whether they are in the crawl's scope (the protocol only admits
URLs of the sitemap's own host) is the caller's decision.
"""

from __future__ import annotations

import dataclasses
import re
import zlib
from collections.abc import Iterable
from typing import Final, Literal, cast

from lxml import etree

from crawler.web.urlnorm import request_url

__all__ = [
    "SITEMAP_MAX_BYTES",
    "SITEMAP_MAX_URLS",
    "SITEMAP_NAMESPACE",
    "Sitemap",
    "escape_bare_ampersands",
    "gunzip_capped",
    "parse_sitemap",
    "sitemap_candidates",
]

#: Largest sitemap read, in bytes, after decompression (sitemaps.org: 52,428,800).
SITEMAP_MAX_BYTES = 50 * 1024 * 1024
#: Most entries (``<url>``, ``<sitemap>`` or text lines) read from one sitemap.
SITEMAP_MAX_URLS = 50_000
#: The protocol's XML namespace; elements in no namespace are accepted too.
SITEMAP_NAMESPACE = "http://www.sitemaps.org/schemas/sitemap/0.9"
#: The first two bytes of every gzip member (RFC 1952 §2.3.1).
GZIP_MAGIC = b"\x1f\x8b"
#: Bytes decompressed per step: the overshoot past the limit is at most this.
_CHUNK_BYTES = 1024 * 1024

URLSET: Final = "urlset"
SITEMAPINDEX: Final = "sitemapindex"
INVALID: Final = "invalid"
_ENTRY = {URLSET: "url", SITEMAPINDEX: "sitemap"}
_UTF8_BOM = b"\xef\xbb\xbf"
_WHITESPACE = b" \t\r\n"
# An '&' that starts no entity or character reference (XML 1.0 §4.1, ASCII names).
_BARE_AMPERSAND = re.compile(rb"&(?![A-Za-z_:][-A-Za-z0-9_.:]*;|#[0-9]+;|#x[0-9A-Fa-f]+;)")
_CDATA_START, _CDATA_END = b"<![CDATA[", b"]]>"

#: What a sitemap document is.
SitemapKind = Literal["urlset", "sitemapindex", "invalid"]


@dataclasses.dataclass(frozen=True, slots=True)
class Sitemap:
    """What one sitemap document lists.

    Attributes:
        kind: ``'urlset'`` (page URLs; a text sitemap too), ``'sitemapindex'`` (URLs of
            sitemaps) or ``'invalid'`` (nothing could be read; ``urls`` is empty).
        urls: absolute http(s) URLs in request form, de-duplicated, document order.
        error: ``None`` when the document was read whole and clean; else why it is
            invalid, or what was lost (recovered XML errors, entries over the limit),
            several reasons joined with ``'; '``.
    """

    kind: SitemapKind
    urls: tuple[str, ...] = ()
    error: str | None = None


def gunzip_capped(data: bytes, limit: int) -> bytes:
    """Decompress gzip ``data`` (one or more members, RFC 1952), at most ``limit`` bytes.

    Decompresses :data:`_CHUNK_BYTES` at a time and stops once the output passes
    ``limit``. Bytes after the last member that are not another member (padding) are
    ignored.

    Raises:
        ValueError: the output would exceed ``limit`` bytes, the data is corrupt, or it
            ends inside a member. The message is the reason, for :attr:`Sitemap.error`.
    """
    out = bytearray()
    while data.startswith(GZIP_MAGIC):
        stream = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip header and trailer
        pending = data
        while not stream.eof:
            try:
                chunk = stream.decompress(pending, min(_CHUNK_BYTES, limit + 1 - len(out)))
            except zlib.error as exc:
                raise ValueError(f"bad gzip data: {exc}") from None
            out += chunk
            if len(out) > limit:
                raise ValueError(f"gzip data decompresses to more than {limit} bytes")
            if not chunk and stream.unconsumed_tail == pending:
                raise ValueError("gzip data truncated")
            pending = stream.unconsumed_tail
        data = stream.unused_data
    return bytes(out)


def parse_sitemap(body: bytes, base_url: str) -> Sitemap:
    """Read a sitemap document (see the module docstring).

    Args:
        body: the response body as received (gzip-compressed or not).
        base_url: the URL the sitemap was fetched from (after redirects); relative
            ``<loc>`` values are resolved against it.

    Returns:
        A :class:`Sitemap`; ``kind='invalid'`` with the reason in ``error`` for an
        empty, oversized, corrupt, entity-declaring, non-sitemap or non-XML-and-no-URLs
        body. Never raises.
    """
    if body.startswith(GZIP_MAGIC):
        try:
            body = gunzip_capped(body, SITEMAP_MAX_BYTES)
        except ValueError as exc:
            return Sitemap(INVALID, (), str(exc))
    elif len(body) > SITEMAP_MAX_BYTES:
        return Sitemap(INVALID, (), f"larger than {SITEMAP_MAX_BYTES} bytes")
    data = body.removeprefix(_UTF8_BOM).lstrip(_WHITESPACE)
    if not data:
        return Sitemap(INVALID, (), "empty document")
    if data.startswith(b"<"):
        return _parse_xml(data, base_url)
    return _parse_text(data)


def _xml_parser() -> etree.XMLParser:
    """A parser that reads nothing but the document (built per call: lxml parsers
    must not be shared between threads)."""
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        recover=True,
        remove_comments=True,
        remove_pis=True,
    )


def _loc_text(loc: etree._Element | None) -> str | None:
    """The stripped text of a ``<loc>``; ``None`` if absent, or if it holds anything
    but text (an unexpanded entity reference, a stray element): the value is unknown."""
    if loc is None or len(loc):
        return None
    return (loc.text or "").strip() or None


def _last_element(root: etree._Element) -> etree._Element:
    """The element a document cut in its middle ends in (the last one in document
    order): if it is a ``<loc>``, its text may be a URL cut short."""
    while len(root):
        root = root[-1]
    return root


def escape_bare_ampersands(data: bytes) -> tuple[bytes, int]:
    """``(data with every bare '&' written '&amp;', how many)``.

    The commonest sitemap error is a query written unescaped (``?a=1&b=2``); libxml2's
    recovery would drop the ``&b`` and give ``?a=1=2``. An ``&`` that starts an entity
    or character reference (``&amp;``, ``&#38;``, ``&x;``) is kept, and so is the
    content of CDATA sections, where ``&`` is literal."""
    if b"&" not in data:
        return data, 0
    parts, count, start = [], 0, 0
    while start < len(data):  # linear: each CDATA section is searched for once
        cdata = data.find(_CDATA_START, start)
        text = data[start:] if cdata < 0 else data[start:cdata]
        fixed, n = _BARE_AMPERSAND.subn(b"&amp;", text)
        parts.append(fixed)
        count += n
        if cdata < 0:
            break
        end = data.find(_CDATA_END, cdata + len(_CDATA_START))
        start = len(data) if end < 0 else end + len(_CDATA_END)
        parts.append(data[cdata:start])  # an unterminated section runs to the end
    return b"".join(parts), count


def _parse_xml(data: bytes, base_url: str) -> Sitemap:
    """``<urlset>`` or ``<sitemapindex>`` in the sitemaps.org namespace or none. A
    document that ends in the middle of a ``<loc>`` (cut by a byte limit: it does not
    end with ``>``) loses that ``<loc>``: its URL may be cut short."""
    data, bare = escape_bare_ampersands(data)
    parser = _xml_parser()
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:  # recover=True still gives up on some input
        return Sitemap(INVALID, (), f"not XML: {exc}")
    errors = [e for e in parser.error_log if e.level >= etree.ErrorLevels.ERROR]
    if root is None:
        first = errors[0].message if errors else "no root element"
        return Sitemap(INVALID, (), f"not XML: {first}")
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is not None and next(dtd.iterentities(), None) is not None:
        return Sitemap(INVALID, (), "declares XML entities (<!ENTITY>): not read")
    qname = etree.QName(root)
    if qname.localname not in _ENTRY:
        return Sitemap(INVALID, (), f"root element <{qname.localname}> is not <urlset> or <sitemapindex>")
    if qname.namespace not in (None, SITEMAP_NAMESPACE):
        return Sitemap(
            INVALID, (), f"root element <{qname.localname}> in namespace {qname.namespace!r}, not {SITEMAP_NAMESPACE!r}"
        )
    prefix = "" if qname.namespace is None else "{" + qname.namespace + "}"
    entry_tag, loc_tag = prefix + _ENTRY[qname.localname], prefix + "loc"
    cut = None if data.rstrip(_WHITESPACE).endswith(b">") else _last_element(root)
    urls: dict[str, None] = {}
    notes = []
    for count, entry in enumerate(root.iterchildren(entry_tag)):
        if count == SITEMAP_MAX_URLS:
            notes.append(_truncated())
            break
        element = entry.find(loc_tag)
        loc = None if element is cut else _loc_text(element)
        url = request_url(loc, base_url) if loc else None
        if url:
            urls[url] = None
    if errors:
        first = errors[0]
        notes.insert(0, f"malformed XML, recovered: {first.message.strip()} (line {first.line})")
    if bare:
        notes.insert(0, f"{bare} bare '&' read as '&amp;'")
    # the root is <urlset> or <sitemapindex>: checked against _ENTRY above
    return Sitemap(cast(SitemapKind, qname.localname), tuple(urls), "; ".join(notes) or None)


def _parse_text(data: bytes) -> Sitemap:
    """A text sitemap: UTF-8 (bad bytes replaced), one absolute URL per line; blank
    lines skipped, other lines that are not absolute http(s) URLs dropped."""
    urls: dict[str, None] = {}
    notes = []
    lines = (line.strip() for line in data.decode("utf-8", errors="replace").splitlines())
    for count, line in enumerate(line for line in lines if line):
        if count == SITEMAP_MAX_URLS:
            notes.append(_truncated())
            break
        url = request_url(line)
        if url:
            urls[url] = None
    if not urls:
        return Sitemap(INVALID, (), "neither XML nor lines of absolute http(s) URLs")
    return Sitemap(URLSET, tuple(urls), "; ".join(notes) or None)


def _truncated() -> str:
    return f"more than {SITEMAP_MAX_URLS} entries: the rest ignored"


def sitemap_candidates(origin: str, robots_sitemaps: Iterable[str]) -> tuple[str, ...]:
    """The sitemaps to fetch for an origin: the robots.txt ``Sitemap:`` URLs
    (:attr:`crawler.web.robots.RobotsRules.sitemaps`), else ``origin + '/sitemap.xml'``
    (the protocol's conventional location).

    Each URL is put in request form (:func:`crawler.web.urlnorm.request_url`); values that
    are not absolute http(s) URLs are dropped; duplicates are removed, order kept.
    ``('https://h', [])`` -> ``('https://h/sitemap.xml',)``.
    """
    listed = (request_url(url) for url in robots_sitemaps)
    return tuple(dict.fromkeys(url for url in listed if url)) or (origin + "/sitemap.xml",)
