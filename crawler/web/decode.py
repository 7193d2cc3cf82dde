"""Turn an HTTP response body into text, and decide whether a response is HTML.

Character decoding is delegated to :func:`w3lib.encoding.html_to_unicode`, which
follows the order of the HTML standard's encoding sniffing algorithm
(https://html.spec.whatwg.org/multipage/parsing.html#encoding-sniffing-algorithm):

1. a byte-order mark (UTF-8, UTF-16 LE/BE, UTF-32) wins over everything and is
   stripped from the text;
2. then the transport-layer charset, i.e. the ``charset`` parameter of the HTTP
   ``Content-Type`` header (RFC 9110 section 8.3);
3. then the ``<meta charset>`` / ``<meta http-equiv="Content-Type">`` prescan
   (and an ``<?xml encoding?>`` declaration) near the start of the body;
4. otherwise UTF-8.

Labels are mapped the WHATWG Encoding standard way (``iso-8859-1`` and
``us-ascii`` decode as windows-1252, for instance). Unknown labels are ignored and
the next step is tried. Undecodable bytes become U+FFFD; nothing here raises on
bad input. (``requests``' ``response.text`` is *not* used: for ``text/html``
without a charset it assumes ISO-8859-1 and ignores ``<meta charset>``.)
"""

from __future__ import annotations

import codecs

from w3lib.encoding import html_to_unicode

__all__ = ["decode_html", "is_html", "is_html_response", "sniffs_as_html", "looks_binary", "HTML_MEDIA_TYPES"]

#: Media types treated as HTML documents (compared lower-cased, parameters removed).
HTML_MEDIA_TYPES = frozenset({"text/html", "application/xhtml+xml"})


def decode_html(body: bytes, content_type: str | None) -> tuple[str, str]:
    """Decode an HTML response body to text.

    Args:
        body: the raw (already content-decoded, i.e. un-gzipped) response body bytes.
        content_type: the value of the HTTP ``Content-Type`` header, e.g.
            ``"text/html; charset=windows-1252"``, or ``None`` when the header was absent.

    Returns:
        ``(text, encoding)``: the decoded document as ``str`` (never starting with a
        BOM / U+FEFF that came from the byte-order mark) and the Python codec name
        used, canonicalised with :func:`codecs.lookup` (e.g. ``"utf-8"``, ``"cp1252"``,
        ``"utf-16-le"``).

    Precedence follows the HTML standard's encoding sniffing algorithm: BOM, then the
    HTTP charset, then the ``<meta>`` prescan, then UTF-8 (see the module docstring).

    Raises:
        Nothing for any byte string: invalid byte sequences are replaced with U+FFFD.
        (A ``TypeError`` only if ``body`` is not bytes-like.)
    """
    body = bytes(body)
    encoding, text = html_to_unicode(content_type, body)
    try:
        name = codecs.lookup(encoding).name
    except LookupError:  # pragma: no cover - w3lib only returns codecs it could use
        name = encoding
    return text, name


def is_html(content_type: str | None) -> bool:
    """Tell whether a response with this ``Content-Type`` should be parsed as HTML.

    Args:
        content_type: the HTTP ``Content-Type`` header value or ``None``.

    Returns:
        ``True`` for ``text/html`` and ``application/xhtml+xml`` (the media type is
        compared case-insensitively and parameters such as ``; charset=...`` are
        ignored, RFC 9110 section 8.3.1), and also ``True`` when the header is
        missing or empty: RFC 9110 section 8.3 lets the recipient sniff then, and
        this project's policy is simply to let the fetcher try the body as HTML.
        ``False`` for any other media type (``application/pdf``, ``text/plain``, ...).

    Raises:
        Nothing.
    """
    if content_type is None:
        return True
    media_type = content_type.split(";", 1)[0].strip().lower()
    if not media_type:
        return True
    return media_type in HTML_MEDIA_TYPES


# WHATWG MIME Sniffing, section 7.1 "identifying a resource with an unknown MIME type":
# the HTML patterns, each followed by a tag-terminating byte (space or '>'), after
# leading whitespace bytes; compared ASCII case-insensitively.
_HTML_SNIFF_PATTERNS = tuple(
    p.encode("ascii")
    for p in (
        "<!doctype html",
        "<html",
        "<head",
        "<script",
        "<iframe",
        "<h1",
        "<div",
        "<font",
        "<table",
        "<a",
        "<style",
        "<title",
        "<b",
        "<body",
        "<br",
        "<p",
        "<!--",
    )
)
_SNIFF_WHITESPACE = b"\t\n\x0c\r "
#: WHATWG MIME Sniffing "binary data byte": C0 controls other than TAB, LF, FF, CR, ESC.
_BINARY_BYTES = frozenset(set(range(0x09)) | {0x0B} | set(range(0x0E, 0x1B)) | set(range(0x1C, 0x20)))
#: Bytes of the body the sniffing rules look at ("resource header", 1445 bytes).
SNIFF_BYTES = 1445
_WIDE_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def sniffs_as_html(body: bytes) -> bool:
    """True if the body starts (after whitespace, and a UTF-8 BOM) with one of the
    HTML patterns of WHATWG MIME Sniffing section 7.1 (``<!DOCTYPE HTML``, ``<html``,
    ``<head``, ``<p``, ``<!--``... then a space or ``>``)."""
    head = bytes(body[:SNIFF_BYTES])
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8) :]
    head = head.lstrip(_SNIFF_WHITESPACE).lower()
    for pattern in _HTML_SNIFF_PATTERNS:
        if head.startswith(pattern) and head[len(pattern) : len(pattern) + 1] in (b" ", b">"):
            return True
    return False


def looks_binary(body: bytes, content_type: str | None = None) -> bool:
    """True if the first 1445 bytes hold a "binary data byte" (WHATWG MIME Sniffing
    section 3: 0x00-0x08, 0x0B, 0x0E-0x1A, 0x1C-0x1F), unless the body is UTF-16 or
    UTF-32 (a BOM, or such a ``charset`` in ``content_type``), where NULs are text."""
    head = bytes(body[:SNIFF_BYTES])
    if head.startswith(_WIDE_BOMS):
        return False
    if (
        content_type
        and "charset=utf-16" in content_type.lower().replace(" ", "")
        or content_type
        and "charset=utf-32" in content_type.lower().replace(" ", "")
    ):
        return False
    return not _BINARY_BYTES.isdisjoint(head)


def is_html_response(content_type: str | None, body: bytes) -> bool:
    """Whether a response is to be parsed as HTML, by its header and its first bytes.

    * A ``Content-Type`` header with a media type: :func:`is_html` decides, but a body
      declared HTML that holds binary bytes (:func:`looks_binary`: an image or archive
      served as ``text/html``) is not HTML: converting it would put garbage in the
      corpus.
    * No ``Content-Type`` (or an empty one): the body is sniffed
      (:func:`sniffs_as_html`, WHATWG MIME Sniffing section 7.1; RFC 9110 section 8.3
      lets a recipient sniff when the type is missing).

    An empty body declared HTML is HTML (an empty page); an empty body without a type
    is not.
    """
    media_type = (content_type or "").split(";", 1)[0].strip()
    if not media_type:
        return sniffs_as_html(body)
    return is_html(content_type) and not looks_binary(body, content_type)
