"""URL normalization: one canonical absolute http(s) string per resource.

Pure (no I/O, no mutable module state), idempotent, and total on ``str``: bad input
gives ``None``, never an exception. :func:`normalize` is the entry point; every
transform is a small public function citing its standard. Sources: RFC 3986 (URI
syntax, §5 reference resolution, §6 normalization) and the WHATWG URL Standard
(https://url.spec.whatwg.org/) where browsers deviate from RFC 3986; session ids are
removed as by Heritrix's ``StripSessionIDs`` canonicalization rule (a crawler-trap guard).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Callable
from typing import NamedTuple
from urllib.parse import unquote

import idna
import xxhash

SCHEMES_KEPT = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}

_C0_AND_SPACE = "".join(chr(i) for i in range(0x21))
_TAB_NEWLINE = re.compile("[\t\n\r]")
# RFC 3986 Appendix B; groups 2 scheme, 4 authority, 5 path, 7 query, 9 fragment.
_SPLIT = re.compile(r"^(([^:/?#]+):)?(//([^/?#]*))?([^?#]*)(\?([^#]*))?(#(.*))?$", re.S)
_SPLIT_RELATIVE = re.compile(r"^()()(//([^/?#]*))?([^?#]*)(\?([^#]*))?(#(.*))?$", re.S)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_PORT = re.compile(r"[0-9]*")
_ESCAPE_OR_CHAR = re.compile(r"%[0-9A-Fa-f]{2}|.", re.S)
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SUB_DELIMS = frozenset("!$&'()*+,;=")
USERINFO_SAFE = _UNRESERVED | _SUB_DELIMS | {":"}
PATH_SAFE = USERINFO_SAFE | {"@", "/"}  # pchar / "/"  (RFC 3986 §3.3)
QUERY_SAFE = PATH_SAFE | {"?"}  # pchar / "/" / "?"  (RFC 3986 §3.4)
# WHATWG "forbidden domain code point" (C0, space, DEL and these delimiters).
_FORBIDDEN_HOST = frozenset(_C0_AND_SPACE + "\x7f#%/:<>?@[\\]^|")
#: A path parameter or query item that is a session id (see :func:`is_session_item`):
#: ``jsessionid``, ``phpsessid`` or ``aspsessionid`` + 8 letters with any value, or
#: ``sid`` with a value of at least 16 ASCII letters and digits. Names in any case.
_SESSION_ITEM = re.compile(r"(?:jsessionid|phpsessid|aspsessionid[a-z]{8})=.*|sid=[0-9a-z]{16,}", re.I | re.S)
_QUERY_SEPARATOR = re.compile("([&;])")


class Parts(NamedTuple):
    """The five RFC 3986 components; ``None`` means absent, ``''`` means present but empty."""

    scheme: str | None
    authority: str | None
    path: str
    query: str | None
    fragment: str | None


def split_reference(ref: str) -> Parts:
    """Split a URI reference with the RFC 3986 Appendix B regex.

    Unlike ``urllib.parse.urlsplit`` an absent query (``None``) differs from an empty
    one (``''``). A "scheme" that is not ``ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )``
    (RFC 3986 §3.1) is not a scheme: the reference is then relative (as in WHATWG).
    """
    m = _SPLIT.match(ref)
    assert m is not None  # every group is optional: the regex matches any string
    scheme = m.group(2)
    if scheme is not None and not _SCHEME.fullmatch(scheme):
        m = _SPLIT_RELATIVE.match(ref)
        assert m is not None  # every group is optional: the regex matches any string
        scheme = None
    return Parts(scheme, m.group(4), m.group(5), m.group(7), m.group(9))


def unsplit(parts: Parts) -> str:
    """Recompose components into a URI string (RFC 3986 §5.3)."""
    scheme, authority, path, query, fragment = parts
    return "".join(
        (
            "" if scheme is None else scheme + ":",
            "" if authority is None else "//" + authority,
            path,
            "" if query is None else "?" + query,
            "" if fragment is None else "#" + fragment,
        )
    )


def clean_reference(href: str) -> str:
    """Step 1: clean an href as found in a page (WHATWG URL parsing, basic URL parser).

    Strips leading/trailing C0 controls and spaces, removes every ASCII tab, CR and LF,
    and turns backslashes before the query/fragment into '/' (WHATWG treats ``\\`` as
    ``/`` for special schemes). Returns the cleaned reference string.
    """
    href = _TAB_NEWLINE.sub("", href.strip(_C0_AND_SPACE))
    m = re.search(r"[?#]", href)
    cut = m.start() if m else len(href)
    return href[:cut].replace("\\", "/") + href[cut:]


def remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4 remove_dot_segments, linear time; surplus '..' stops at the root.

    ``'/a/b/c/./../../g'`` -> ``'/a/g'``; ``'/../x'`` -> ``'/x'``; ``'/a/..'`` -> ``'/'``.
    """
    if "/." not in path and not path.startswith("."):
        return path  # no segment starts with '.': nothing to remove (most paths)
    out: list[str] = []
    i, n = 0, len(path)
    while i < n:
        if path.startswith("../", i):
            i += 3
        elif path.startswith("./", i) or path.startswith("/./", i):
            i += 2
        elif path.startswith("/../", i):
            i += 3
            del out[-1:]
        elif i + 2 == n and path.startswith("/.", i):
            out.append("/")
            break
        elif i + 3 == n and path.startswith("/..", i):
            out[-1:] = ["/"]
            break
        elif n - i <= 2 and path.startswith("." * (n - i), i):
            break  # a final "." or ".."
        else:
            j = path.find("/", i + 1) % (n + 1)  # -1 (no more '/') -> n
            out.append(path[i:j])
            i = j
    return "".join(out)


def _special_slashes(ref: str, base: Parts | None) -> str:
    """WHATWG leniency for http(s): any run of slashes introduces the authority.

    ``http:host/p`` and ``http:///host/p`` (no base of that scheme) mean
    ``http://host/p``; ``http:p`` with an http base is relative (RFC 3986 §5.2.2
    non-strict parser); ``///host/p`` against an http(s) base means ``//host/p``.
    """
    m = _SPLIT.match(ref)
    scheme = m.group(2) if m else None
    if scheme is not None and _SCHEME.fullmatch(scheme) and scheme.lower() in SCHEMES_KEPT:
        rest = ref[len(scheme) + 1 :]
        if base is not None and base.scheme == scheme.lower() and not rest.startswith("//"):
            return rest
        return scheme + "://" + rest.lstrip("/")
    if scheme is None and ref.startswith("//") and base is not None and base.scheme in SCHEMES_KEPT:
        return "//" + ref.lstrip("/")
    return ref


@functools.lru_cache(maxsize=64)
def _base_parts(base: str) -> Parts | None:
    """The components of an absolute base URL (scheme lowercased), or ``None``.
    Cached: every link on a page is resolved against the same base."""
    b = _resolve_parts(clean_reference(base), None)
    return None if b is None or b.scheme is None else b._replace(scheme=b.scheme.lower())


def _resolve_parts(ref: str, base: str | None) -> Parts | None:
    """RFC 3986 §5.2.2 on components; ``None`` if ``ref`` is relative and no base."""
    b = None if base is None else _base_parts(base)
    r = split_reference(_special_slashes(ref, b))
    if r.scheme is not None:
        return r._replace(path=remove_dot_segments(r.path))
    if b is None:
        return None
    if r.authority is not None:
        return Parts(b.scheme, r.authority, remove_dot_segments(r.path), r.query, r.fragment)
    if r.path == "":
        path, query = b.path, (b.query if r.query is None else r.query)
    elif r.path.startswith("/"):
        path, query = remove_dot_segments(r.path), r.query
    else:
        merged = "/" + r.path if b.authority is not None and b.path == "" else b.path[: b.path.rfind("/") + 1] + r.path
        path, query = remove_dot_segments(merged), r.query
    return Parts(b.scheme, b.authority, path, query, r.fragment)


def resolve(ref: str, base: str | None) -> str | None:
    """Step 2: resolve ``ref`` against absolute ``base`` (RFC 3986 §5.2.2 and §5.2.4).

    ``'?'`` gives the base path with an empty query and ``''``/``'#f'`` the base
    document (``urljoin`` gets both wrong); ``'//h/p'`` takes the base's scheme.
    ``base`` is itself resolved without a base first. Returns the target URI string,
    or ``None`` if ``ref`` is relative and there is no usable base.
    """
    parts = _resolve_parts(ref, base)
    return None if parts is None else unsplit(parts)


def normalize_percent_encoding(text: str, safe: frozenset[str]) -> str:
    """RFC 3986 §6.2.2.1-2: canonical percent-encoding of one component.

    Escape hex is uppercased; escapes of unreserved characters are decoded (``%7E`` ->
    ``~``, but ``%2F``, ``%23``, ``%25`` stay); every character not in ``safe`` is
    percent-encoded as UTF-8 (a '%' not starting an escape becomes ``%25``).
    """
    if safe.issuperset(text):
        return text  # every character safe, so no '%' either: already canonical
    out = []
    for tok in _ESCAPE_OR_CHAR.findall(text):
        if len(tok) == 3:
            ch = chr(int(tok[1:], 16))
            out.append(ch if ch in _UNRESERVED else tok.upper())
        elif tok in safe:
            out.append(tok)
        else:
            out.extend(f"%{b:02X}" for b in tok.encode("utf-8", "surrogatepass"))
    return "".join(out)


def normalize_scheme(scheme: str | None) -> str | None:
    """Step 3: lowercase the scheme (RFC 3986 §6.2.2.1); ``None`` unless http/https."""
    scheme = (scheme or "").lower()
    return scheme if scheme in SCHEMES_KEPT else None


def normalize_host(host: str) -> str | None:
    """Step 4: canonical host (RFC 3986 §3.2.2, §6.2.2.1; WHATWG host parser; UTS #46).

    IPv6 literals are validated and written compressed, lowercase. Other hosts are
    percent-decoded, lowercased and IDNA-encoded (``idna.encode(host, uts46=True)``);
    an ASCII host that IDNA rejects (e.g. ``a_b.com``) is kept lowercased, a non-ASCII
    one gives ``None``. Empty or forbidden characters give ``None``.
    """
    if host.startswith("[") and host.endswith("]"):
        try:  # "%" would be a zone identifier: the WHATWG IPv6 parser has none
            return None if "%" in host else "[" + ipaddress.IPv6Address(host[1:-1]).compressed + "]"
        except ValueError:
            return None
    try:
        host = unquote(host, errors="strict") if "%" in host else host
    except UnicodeDecodeError:
        return None
    if not host or _FORBIDDEN_HOST.intersection(host):
        return None
    if host.isascii():
        # For an ASCII host, idna.encode(uts46=True) returns the lowercased host or
        # rejects it, and a rejected ASCII host is kept lowercased: the result is the
        # lowercased host either way (checked on 200,000 random ASCII hosts), so the
        # costly IDNA call is skipped (docs/performance.md).
        return host.lower()
    try:
        encoded = idna.encode(host, uts46=True).decode("ascii")
    except (UnicodeError, ValueError):
        return None
    return None if not encoded or _FORBIDDEN_HOST.intersection(encoded) else encoded


def normalize_port(port: str | None, scheme: str) -> str | None:
    """Step 5: canonical port (RFC 3986 §3.2.3, §6.2.3; WHATWG port state).

    Returns ``''`` when the port is to be omitted (absent, empty, or the scheme's
    default from :data:`DEFAULT_PORTS`), the decimal port otherwise (``'08080'`` ->
    ``'8080'``), or ``None`` if it is not digits or exceeds 65535.
    """
    if not port:
        return ""
    if not _PORT.fullmatch(port) or int(port) > 65535:
        return None
    return "" if int(port) == DEFAULT_PORTS.get(scheme) else str(int(port))


def normalize_userinfo(userinfo: str | None) -> str | None:
    """Userinfo keeps its case (RFC 3986 §6.2.2.1: only scheme and host are case-
    insensitive); only its percent-encoding is normalized. ``''`` becomes ``None``."""
    return normalize_percent_encoding(userinfo, USERINFO_SAFE) if userinfo else None


def normalize_authority(authority: str | None, scheme: str) -> str | None:
    """Steps 4-5 on ``[userinfo@]host[:port]`` (RFC 3986 §3.2); ``None`` if invalid."""
    if authority is None:
        return None
    userinfo: str | None
    host: str | None
    port: str | None
    userinfo, _, hostport = authority.rpartition("@")
    if hostport.startswith("["):
        end = hostport.find("]") + 1
        host, rest = hostport[:end], hostport[end:]
        if not end or (rest and not rest.startswith(":")):
            return None
        port = rest[1:] if rest else None
    else:
        host, _, port = hostport.partition(":")
    host, port = normalize_host(host), normalize_port(port, scheme)
    if host is None or port is None:
        return None
    userinfo = normalize_userinfo(userinfo)
    return ("" if userinfo is None else userinfo + "@") + host + (port and ":" + port)


def normalize_path(path: str) -> str:
    """Step 6: canonical path (RFC 3986 §6.2.2.1-3, §6.2.3).

    Percent-encoding normalization with :data:`PATH_SAFE`, then dot segments removed
    again (``%2E`` decodes to '.'); empty becomes ``'/'``. Case and trailing slash kept.
    """
    return remove_dot_segments(normalize_percent_encoding(path, PATH_SAFE)) or "/"


def sort_query(query: str) -> str:
    """Stable sort of '&'-separated items by key (text before the first '=').

    Repeated keys keep their value order; bare items (``2172``), empty values
    (``flag=``) and '+' are kept as written. Not ``parse_qsl`` (it drops bare items).
    """
    return "&".join(sorted(query.split("&"), key=lambda item: item.partition("=")[0]))


def normalize_query(query: str | None) -> str | None:
    """Step 7: percent-encoding normalization (:data:`QUERY_SAFE`, RFC 3986 §3.4,
    §6.2.2) then :func:`sort_query`. Absent stays ``None``; empty stays ``''``."""
    return None if query is None else sort_query(normalize_percent_encoding(query, QUERY_SAFE))


def _may_hold_session_id(text: str) -> bool:
    """Cheap pre-check (80 ns, a regex search takes 400): every session-id name of
    :data:`_SESSION_ITEM` contains ``sid`` or ``sessionid`` in some case."""
    lower = text.lower()
    return "sid" in lower or "sessionid" in lower


def is_session_item(item: str) -> bool:
    """Whether ``name=value`` (a path parameter or a query item, percent-encoding
    already normalized) carries a session id, by the rule of :data:`_SESSION_ITEM`.

    The names are those of Heritrix's ``StripSessionIDs`` canonicalization rule
    (jsessionid, PHPSESSID, ASPSESSIONIDxxxxxxxx, sid), which strips only a value of
    exactly 32 letters and digits (24 letters for ASP). Here any value of the first
    three is a session id, and a ``sid`` value of 16 or more letters and digits is:
    ``sid=5`` or ``sid=news-2024`` (a story id, a slug) stays, a hex or base-62 token
    (or a number of 16 digits) goes. Names are matched whole: Heritrix's unanchored regex also cuts
    ``xsid=<32 chars>``; this does not.
    """
    return _SESSION_ITEM.fullmatch(item) is not None


def strip_path_session_ids(path: str) -> str:
    """Remove every session-id path parameter (``;jsessionid=...``, any case, in any
    segment: RFC 3986 §3.3 leaves ``;`` parameters to the server, and Java servlet URL
    rewriting puts the session there) and then the dot segments this may expose.

    ``'/a;jsessionid=F00/b;x=1'`` -> ``'/a/b;x=1'``; ``'/p;x=1;JSESSIONID=a;y=2'`` ->
    ``'/p;x=1;y=2'``. A segment's name (before its first ``;``) is never removed. A
    path without a session id is returned as it is (the same object).
    """
    if ";" not in path or not _may_hold_session_id(path):
        return path
    segments = []
    for segment in path.split("/"):
        name, *params = segment.split(";")
        segments.append(";".join([name] + [q for q in params if not is_session_item(q)]))
    stripped = "/".join(segments)
    return path if stripped == path else remove_dot_segments(stripped) or "/"


def strip_query_session_ids(query: str | None) -> str | None:
    """Remove every session-id item from a query (items split at ``&`` and ``;``, as
    HTML 4's B.2.2 and many servers do); the separators of the items kept are kept.

    ``'a=1&PHPSESSID=x&b=2'`` -> ``'a=1&b=2'``; a query that held only session ids
    becomes absent (``None``), so ``/p?sid=<token>`` is ``/p``; ``''`` stays ``''``.
    A query without a session id is returned as it is (the same object).
    """
    if not query or not _may_hold_session_id(query):
        return query
    tokens = _QUERY_SEPARATOR.split(query)  # item, separator, item, ...
    items, separators = tokens[0::2], [""] + tokens[1::2]
    kept = [(sep, item) for sep, item in zip(separators, items) if not is_session_item(item)]
    if len(kept) == len(items):
        return query
    if not kept:
        return None
    return kept[0][1] + "".join(sep + item for sep, item in kept[1:])


def _step_scheme(p: Parts) -> Parts | None:
    scheme = normalize_scheme(p.scheme)
    return None if scheme is None else p._replace(scheme=scheme)


def _step_authority(p: Parts) -> Parts | None:
    authority = normalize_authority(p.authority, p.scheme or "")
    return None if authority is None else p._replace(authority=authority)


def _step_path(p: Parts) -> Parts:
    return p._replace(path=normalize_path(p.path))


def _step_query_encoding(p: Parts) -> Parts:
    query = None if p.query is None else normalize_percent_encoding(p.query, QUERY_SAFE)
    return p._replace(query=query)


def _step_session_ids(p: Parts) -> Parts:
    """Step 8: session ids removed from path parameters and query
    (:func:`strip_path_session_ids`, :func:`strip_query_session_ids`)."""
    path, query = strip_path_session_ids(p.path), strip_query_session_ids(p.query)
    if path is p.path and query is p.query:
        return p  # the usual case: no session id (and no _replace, a microsecond)
    return p._replace(path=path, query=query)


def _step_query_order(p: Parts) -> Parts:
    return p._replace(query=None if p.query is None else sort_query(p.query))


def _step_fragment(p: Parts) -> Parts:
    """Step 9: the fragment is client-side only (RFC 3986 §3.5): removed."""
    return p._replace(fragment=None)


#: Steps 3-9 of :func:`request_url`: everything but reordering the query. Session ids
#: go after the percent-encoding steps (``%6Asessionid`` is ``jsessionid``).
REQUEST_PIPELINE: tuple[Callable[[Parts], Parts | None], ...] = (
    _step_scheme,
    _step_authority,
    _step_path,
    _step_query_encoding,
    _step_session_ids,
    _step_fragment,
)
#: Steps 3-9 of :func:`normalize`, applied in order to the resolved components (the
#: query sort of step 7 last).
PIPELINE: tuple[Callable[[Parts], Parts | None], ...] = REQUEST_PIPELINE + (_step_query_order,)


def _run(pipeline: tuple[Callable[[Parts], Parts | None], ...], url: str, base: str | None) -> str | None:
    if not isinstance(url, str) or not isinstance(base, (str, type(None))):
        return None
    return _finish(pipeline, _resolve_parts(clean_reference(url), base))


def _finish(pipeline: tuple[Callable[[Parts], Parts | None], ...], parts: Parts | None) -> str | None:
    """Steps 3-9 (``pipeline``) on resolved components, recomposed; ``None`` if one refuses."""
    for step in pipeline:
        if parts is None:
            return None
        parts = step(parts)
    return None if parts is None else unsplit(parts)


class RequestUrlMemo:
    """:func:`request_url` of an href on a page, the same value, remembered: call it as
    ``memo(url, base)``.

    Two levels, both exact:

    * an href that is a path, an absolute path or an http(s) URL (no other scheme, no
      leading query or fragment, no space or control at either end) is looked up as
      written up to its fragment, with the part of the base its resolution reads (RFC 3986 5.2.2-5.2.3: scheme,
      authority and the base path up to its last ``/``), so the same ``../index.html``
      on every page of a folder runs no step at all;
    * otherwise steps 1-2 (clean-up and resolution) run, and steps 3-9 once per resolved
      URL, whatever its fragment (only step 9 reads the fragment, and it drops it).

    A site's pages link to the same pages (its navigation, its index), so most of a
    page's links were resolved on an earlier page. A fetcher process keeps one.
    Thread-safe (one dict operation at a time).

    Args:
        max_entries: resolved URLs (and, apart, hrefs) remembered at most; each level
            starts over when full (32,768 entries: a few MiB).
    """

    def __init__(self, max_entries: int = 32_768) -> None:
        self.max_entries = max_entries
        self._sent: dict[tuple[str | None, str | None, str, str | None], str | None] = {}
        self._by_href: dict[tuple[str, tuple[str | None, str | None, str]], str | None] = {}

    def __len__(self) -> int:
        return len(self._sent)

    def __call__(self, url: str, base: str | None = None) -> str | None:
        if not isinstance(url, str) or not isinstance(base, (str, type(None))):
            return None
        href = url.partition("#")[0]  # the request URL has no fragment
        directory = _directory(href, base)
        if directory is not None:
            try:
                return self._by_href[href, directory]
            except KeyError:
                pass
        sent = self._resolved(url, base)
        if directory is not None:
            if len(self._by_href) >= self.max_entries:
                self._by_href.clear()
            self._by_href[href, directory] = sent
        return sent

    def _resolved(self, url: str, base: str | None) -> str | None:
        parts = _resolve_parts(clean_reference(url), base)
        if parts is None:
            return None
        key = (parts.scheme, parts.authority, parts.path, parts.query)
        try:
            return self._sent[key]
        except KeyError:
            pass
        sent = _finish(REQUEST_PIPELINE, parts)
        if len(self._sent) >= self.max_entries:
            self._sent.clear()
        self._sent[key] = sent
        return sent


#: An href with no scheme: its first segment holds no ``:`` (RFC 3986 4.2).
_NO_SCHEME = re.compile(r"[^:/?#]*(?:[/?#]|\Z)")


def _directory(url: str, base: str | None) -> tuple[str | None, str | None, str] | None:
    """What of ``base`` the resolution of ``url`` reads, if that is no more than its
    scheme, authority and path up to the last ``/``: ``url`` is a path or an absolute
    path (no leading ``?`` or ``#``, which read the whole base path or query, and no
    character step 1 strips at either end), or an http(s) URL. Else ``None``."""
    if base is None or not url or url[0] in "#?" or url[0] <= " " or url[-1] <= " ":
        return None
    if _NO_SCHEME.match(url) is None and not url.startswith(("http://", "https://")):
        return None  # another scheme, or WHATWG's "http:?q", relative to the whole base
    b = _base_parts(base)
    if b is None:
        return None
    return (b.scheme, b.authority, b.path[: b.path.rfind("/") + 1])


def normalize(url: str, base: str | None = None) -> str | None:
    """Canonical absolute http(s) URL for href ``url`` found on page ``base``, or None.

    1. :func:`clean_reference`: strip C0/space, drop tab/CR/LF, ``\\`` -> ``/``.
    2. :func:`resolve`: RFC 3986 §5.2 resolution against ``base`` (dot segments removed).
    3. :func:`normalize_scheme`: lowercase; anything but http/https -> None.
    4. :func:`normalize_host`: lowercase + IDNA (UTS #46); userinfo kept as written.
    5. :func:`normalize_port`: default port and empty port dropped; invalid -> None.
    6. :func:`normalize_path`: percent-encoding normalized; empty -> '/'.
    7. :func:`normalize_query`: percent-encoding normalized, items stably sorted by key.
    8. :func:`strip_path_session_ids`, :func:`strip_query_session_ids`: session ids
       removed (``;jsessionid=``, ``PHPSESSID``, ``ASPSESSIONIDxxxxxxxx``, a token
       ``sid``: :func:`is_session_item`), as Heritrix's ``StripSessionIDs`` rule does,
       so one page linked with a fresh session id per response is one URL.
    9. fragment removed.

    Steps 3-9 are :data:`PIPELINE`. Never raises; ``normalize(normalize(x)) == normalize(x)``.
    This is the visited-table key; the URL to *request* is :func:`request_url`.
    """
    return _run(PIPELINE, url, base)


def request_url(url: str, base: str | None = None) -> str | None:
    """The URL to send for href ``url`` on page ``base``: :func:`normalize` without
    reordering the query (steps 1-6, 8 and 9, and step 7's percent-encoding only).

    Steps 3-7 and 9 give a URL that is the same resource by RFC 3986 §6.2.2-6.2.3;
    the order of query parameters is only *usually* irrelevant, so the crawler keys
    its visited table by :func:`normalize` but requests the query as written (a
    server that redirects to its own parameter order must not look like a loop).
    Session ids (step 8) are removed from the request too, as Heritrix does: the
    link's id is another client's or a stale one (a session that needs one sets a
    cookie, which the fetcher keeps for the redirect chain, :mod:`crawler.web.cookies`).
    ``normalize(request_url(x, b)) == normalize(x, b)``; never raises.
    """
    return _run(REQUEST_PIPELINE, url, base)


def key_of(sent: str) -> str:
    """The :func:`normalize` form of a :func:`request_url` result: its query sorted.

    Cheap (no re-parsing): ``key_of(request_url(x, b)) == normalize(x, b)``.
    """
    path, mark, query = sent.partition("?")
    return path + mark + sort_query(query) if mark else sent


def fingerprint(url: str) -> int:
    """64-bit visited-table key of a normalized URL: ``xxh3_64`` of its UTF-8 bytes.

    Returns an int in ``[0, 2**64)``; equal URLs give equal keys. Call it on the
    output of :func:`normalize` (always ASCII), never on a raw href.
    """
    return xxhash.xxh3_64_intdigest(url.encode("utf-8", "surrogatepass"))


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of an absolute normalized http(s) URL.

    The key of robots.txt and politeness state (RFC 9309 §2.3: rules apply to "the
    host, protocol, and port number where the file is hosted"): ``http`` and ``https``
    of one host are two origins, and so are two ports. Userinfo is dropped. Expects
    :func:`crawler.web.urlnorm.normalize` output (lowercase scheme and host, default port
    removed), e.g. ``'https://example.com:8443/a?b'`` -> ``'https://example.com:8443'``.

    Raises:
        ValueError: ``url`` has no scheme or no authority (not an absolute URL).
    """
    scheme, sep, rest = url.partition("://")
    if sep and scheme in ("http", "https"):  # the usual case, without the full split
        authority = rest.split("/", 1)[0]
        if authority and "?" not in authority and "#" not in authority:
            return scheme + "://" + authority.rpartition("@")[2]
    return _origin_by_split(url)


def _origin_by_split(url: str) -> str:
    """:func:`origin_of` through the RFC 3986 split (the general case; the fast path
    above gives the same answer where it applies, at a sixth of the cost)."""
    parts = split_reference(url)
    if not parts.scheme or not parts.authority:
        raise ValueError(f"not an absolute URL: {url!r}")
    return parts.scheme + "://" + parts.authority.rpartition("@")[2]
