"""Map mode's rules for sizing a URL without downloading it. Pure.

A map (``python -m crawler map``) must find exactly the HTML pages a crawl would write,
so every URL that may be HTML is fetched with ``GET`` and decided by
:func:`crawler.web.decode.is_html_response`, as a crawl does. Only a URL whose path ends in
a file extension of :data:`NON_HTML_EXTENSIONS` (``.pdf``, ``.zip``, ``.png``,
``.tar.gz`` ...) is asked with ``HEAD`` first (RFC 9110 §9.3.2): a 2xx answer with a
``Content-Type`` that is not HTML is the URL's outcome (non-HTML, sized by its
``Content-Length``) and its body is never downloaded. Any other answer (405 or 501: the
server does not allow HEAD; an error, a redirect, a 4xx or 5xx, an HTML or missing
``Content-Type``) falls back to the ``GET`` a crawl would send, so the outcome is the
crawl's.

A ``GET`` in map mode reads the body only when it may be HTML (:func:`body_needed`):
the other bodies are never needed to decide, so the connection is closed after the
headers.
"""

from __future__ import annotations

from crawler.web.decode import is_html

#: Extensions (lowercase, without the dot) of the last path segment that mark a URL as
#: probably not HTML: documents, archives, images, audio, video, fonts, binaries, data,
#: source code.
#: ``.tar.gz`` and the like end in ``.gz``, so the last extension decides.
NON_HTML_EXTENSIONS = frozenset(
    """
    pdf ps eps djvu epub mobi doc docx odt rtf xls xlsx ods csv tsv ppt pptx odp
    zip gz tgz bz2 tbz xz txz zst lz lzma 7z rar tar jar war whl egg deb rpm apk dmg iso img
    exe msi bin so dll
    png jpg jpeg gif webp avif svg ico bmp tif tiff heic
    mp3 m4a ogg oga opus wav flac aac mp4 m4v webm mkv avi mov mpg mpeg wmv
    woff woff2 ttf otf eot
    css js mjs json xml rss atom txt md rst
    py c h cc cpp hpp java rb go rs sh bat ps1 diff patch
""".split()
)


def probably_not_html(url: str) -> bool:
    """True if the last path segment of ``url`` ends in an extension of
    :data:`NON_HTML_EXTENSIONS` (case-insensitive; query and fragment ignored).

    ``http://h/f.pdf`` and ``http://h/a.tar.gz?x=1`` are probably not HTML;
    ``http://h/page``, ``http://h/page.html`` and ``http://h/dir.pdf/`` may be.
    """
    path = url.split("#", 1)[0].split("?", 1)[0]
    scheme, sep, rest = path.partition("://")
    if sep:
        path = rest.partition("/")[2]  # drop the authority: a host name has dots too
    name = path.rpartition("/")[2]
    stem, dot, extension = name.rpartition(".")
    return bool(dot and stem and extension.lower() in NON_HTML_EXTENSIONS)


def body_needed(content_type: str | None) -> bool:
    """Whether a map must read a GET's body to decide the outcome as a crawl does:
    yes for an HTML media type (the body may still be binary) and for a missing or
    empty one (the body is sniffed); no for any other type."""
    media_type = (content_type or "").split(";", 1)[0].strip()
    return not media_type or is_html(content_type)


def head_decides(status: int, content_type: str | None, location: str | None) -> bool:
    """Whether a HEAD answer is the URL's outcome: a 2xx, not a redirect, with a
    ``Content-Type`` that is not HTML. Otherwise the map sends the GET a crawl sends."""
    return 200 <= status < 300 and location is None and not body_needed(content_type)
