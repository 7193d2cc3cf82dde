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

__all__ = ["decode_html", "is_html", "HTML_MEDIA_TYPES"]

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
