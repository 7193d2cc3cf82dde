"""Tests for crawler.web.urlnorm: one table per transform, end-to-end tables, the
conformance cases C01-C06, C08-C12 (resolution part) and hypothesis properties."""

from __future__ import annotations

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.web import urlnorm
from crawler.web.urlnorm import (
    DEFAULT_PORTS,
    PATH_SAFE,
    PIPELINE,
    QUERY_SAFE,
    SCHEMES_KEPT,
    Parts,
    clean_reference,
    fingerprint,
    is_session_item,
    normalize,
    normalize_authority,
    normalize_host,
    normalize_path,
    normalize_percent_encoding,
    normalize_port,
    normalize_query,
    normalize_scheme,
    normalize_userinfo,
    remove_dot_segments,
    resolve,
    sort_query,
    split_reference,
    strip_path_session_ids,
    strip_query_session_ids,
    unsplit,
)
from tests.helpers.conformance import load_cases  # noqa: E402


def test_constants():
    assert SCHEMES_KEPT == ("http", "https")
    assert DEFAULT_PORTS == {"http": 80, "https": 443}
    assert isinstance(PIPELINE, tuple) and all(callable(step) for step in PIPELINE)


# ---------------------------------------------------------------- per transform


@pytest.mark.parametrize(
    "href, expected",
    [
        ("  /a  ", "/a"),
        ("\n\t    /feeds/atom.xml\n\t  ", "/feeds/atom.xml"),
        ("\x00\x1f /a\x01", "/a"),
        ("/a\tb\r\nc", "/abc"),
        ("ja\tva\nscript:x", "javascript:x"),
        ("http:\\\\h\\a\\b?q=\\#f\\", "http://h/a/b?q=\\#f\\"),
        ("\\\\h\\p", "//h/p"),
        ("/a b/", "/a b/"),  # inner spaces stay (percent-encoded later)
        ("", ""),
        ("   ", ""),
    ],
)
def test_clean_reference(href, expected):
    assert clean_reference(href) == expected


@pytest.mark.parametrize(
    "ref, expected",
    [
        ("http://a/b?#", Parts("http", "a", "/b", "", "")),
        ("http://a/b", Parts("http", "a", "/b", None, None)),
        ("?", Parts(None, None, "", "", None)),
        ("", Parts(None, None, "", None, None)),
        ("//h", Parts(None, "h", "", None, None)),
        ("a b:c", Parts(None, None, "a b:c", None, None)),  # invalid scheme -> relative
        ("1x:y?q", Parts(None, None, "1x:y", "q", None)),
        ("mailto:x@y", Parts("mailto", None, "x@y", None, None)),
    ],
)
def test_split_reference(ref, expected):
    assert split_reference(ref) == expected


@pytest.mark.parametrize(
    "parts, expected",
    [
        (Parts("http", "a", "/b", "", ""), "http://a/b?#"),
        (Parts("http", "a", "/b", None, None), "http://a/b"),
        (Parts(None, None, "x", None, "f"), "x#f"),
    ],
)
def test_unsplit(parts, expected):
    assert unsplit(parts) == expected


@pytest.mark.parametrize(
    "path, expected",
    [
        # RFC 3986 §5.2.4 examples
        ("/a/b/c/./../../g", "/a/g"),
        ("mid/content=5/../6", "mid/6"),
        ("/../x", "/x"),
        ("/../../x/", "/x/"),
        ("/a/..", "/"),
        ("/a/.", "/a/"),
        ("/a/b/..", "/a/"),
        ("/.", "/"),
        ("/", "/"),
        ("", ""),
        ("/a/.b/..c/...", "/a/.b/..c/..."),
        ("/a//../b", "/a/b"),
        ("/a/..//b", "//b"),
        ("../a", "a"),
        ("./a", "a"),
        (".", ""),
        ("..", ""),
    ],
)
def test_remove_dot_segments(path, expected):
    assert remove_dot_segments(path) == expected


RFC_BASE = "http://a/b/c/d;p?q"


@pytest.mark.parametrize(
    "ref, expected",
    [
        # RFC 3986 §5.4.1 normal examples
        ("g:h", "g:h"),
        ("g", "http://a/b/c/g"),
        ("./g", "http://a/b/c/g"),
        ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"),
        ("//g", "http://g"),
        ("?y", "http://a/b/c/d;p?y"),
        ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q#s"),
        ("g#s", "http://a/b/c/g#s"),
        ("g?y#s", "http://a/b/c/g?y#s"),
        (";x", "http://a/b/c/;x"),
        ("g;x", "http://a/b/c/g;x"),
        ("", "http://a/b/c/d;p?q"),
        (".", "http://a/b/c/"),
        ("./", "http://a/b/c/"),
        ("..", "http://a/b/"),
        ("../", "http://a/b/"),
        ("../g", "http://a/b/g"),
        ("../..", "http://a/"),
        ("../../", "http://a/"),
        ("../../g", "http://a/g"),
        # §5.4.2 abnormal examples
        ("../../../g", "http://a/g"),
        ("../../../../g", "http://a/g"),
        ("/./g", "http://a/g"),
        ("/../g", "http://a/g"),
        ("g.", "http://a/b/c/g."),
        (".g", "http://a/b/c/.g"),
        ("g..", "http://a/b/c/g.."),
        ("..g", "http://a/b/c/..g"),
        ("./../g", "http://a/b/g"),
        ("./g/.", "http://a/b/c/g/"),
        ("g/./h", "http://a/b/c/g/h"),
        ("g/../h", "http://a/b/c/h"),
        ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
        ("g;x=1/../y", "http://a/b/c/y"),
        ("g?y/./x", "http://a/b/c/g?y/./x"),
        ("g#s/../x", "http://a/b/c/g#s/../x"),
        ("http:g", "http://a/b/c/g"),  # non-strict parser (as browsers)
        # empty query vs absent query (urljoin gets this wrong)
        ("?", "http://a/b/c/d;p?"),
        # WHATWG special-scheme slashes
        ("///h/p", "http://h/p"),
        ("https:h/p", "https://h/p"),
        ("http:///h/p", "http://h/p"),
    ],
)
def test_resolve_rfc3986_examples(ref, expected):
    assert resolve(ref, RFC_BASE) == expected


@pytest.mark.parametrize(
    "ref, base, expected",
    [
        ("x", None, None),
        ("//h/p", None, None),
        ("http://h/p", None, "http://h/p"),
        ("x", "/relative/base", None),
        ("x", "http://h", "http://h/x"),
        ("?a", "http://h", "http://h?a"),
        ("#f", "http://h/p?q#old", "http://h/p?q#f"),
        ("", "http://h/p?q#old", "http://h/p?q"),
    ],
)
def test_resolve_edge_cases(ref, base, expected):
    assert resolve(ref, base) == expected


@pytest.mark.parametrize(
    "text, safe, expected",
    [
        ("/%7e%7Eann/", PATH_SAFE, "/~~ann/"),
        ("/a%2fb%2Fc", PATH_SAFE, "/a%2Fb%2Fc"),
        ("/issue%2342%25%3f", PATH_SAFE, "/issue%2342%25%3F"),
        ("/%41%5a%30%2D%2e%5F", PATH_SAFE, "/AZ0-._"),
        ("/a b", PATH_SAFE, "/a%20b"),
        ('/"<>\\^`{|}[]', PATH_SAFE, "/%22%3C%3E%5C%5E%60%7B%7C%7D%5B%5D"),
        ("/é", PATH_SAFE, "/%C3%A9"),
        ("/50%", PATH_SAFE, "/50%25"),
        ("/%zz%4", PATH_SAFE, "/%25zz%254"),
        ("/a:b@c!$&'()*+,;=", PATH_SAFE, "/a:b@c!$&'()*+,;="),
        ("/a?b", PATH_SAFE, "/a%3Fb"),
        ("a?b/c", QUERY_SAFE, "a?b/c"),
        ("\ud800", PATH_SAFE, "%ED%A0%80"),  # lone surrogate: no exception
    ],
)
def test_normalize_percent_encoding(text, safe, expected):
    assert normalize_percent_encoding(text, safe) == expected


@pytest.mark.parametrize(
    "scheme, expected",
    [
        ("http", "http"),
        ("HTTPS", "https"),
        ("HtTp", "http"),
        ("ftp", None),
        ("mailto", None),
        ("javascript", None),
        ("tel", None),
        ("data", None),
        ("file", None),
        (None, None),
        ("", None),
    ],
)
def test_normalize_scheme(scheme, expected):
    assert normalize_scheme(scheme) == expected


@pytest.mark.parametrize(
    "host, expected",
    [
        ("Example.COM", "example.com"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("BÜCHER.example", "xn--bcher-kva.example"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("ｅｘａｍｐｌｅ.com", "example.com"),
        ("My_Host.example", "my_host.example"),  # idna rejects '_': kept lowercased
        ("example.com.", "example.com."),
        ("127.0.0.1", "127.0.0.1"),
        ("[2001:DB8::1]", "[2001:db8::1]"),
        ("[::FFFF:1.2.3.4]", "[::ffff:102:304]"),
        ("[not-ipv6]", None),
        ("ex%41mple.com", "example.com"),
        ("a%2Fb", None),
        ("a b", None),
        ("a<b", None),
        ("", None),
        ("x.com／a", None),  # non-ASCII rejected by IDNA
        ("\ud800.com", None),
    ],
)
def test_normalize_host(host, expected):
    assert normalize_host(host) == expected


@pytest.mark.parametrize(
    "port, scheme, expected",
    [
        ("80", "http", ""),
        ("443", "https", ""),
        ("80", "https", "80"),
        ("443", "http", "443"),
        ("", "http", ""),
        (None, "http", ""),
        ("8080", "http", "8080"),
        ("0080", "http", ""),
        ("08080", "https", "8080"),
        ("65535", "http", "65535"),
        ("65536", "http", None),
        ("x", "http", None),
        ("-1", "http", None),
        ("８０", "http", None),
        ("1 ", "http", None),
    ],
)
def test_normalize_port(port, scheme, expected):
    assert normalize_port(port, scheme) == expected


@pytest.mark.parametrize(
    "userinfo, expected",
    [
        ("ANN:PassWord", "ANN:PassWord"),
        ("", None),
        (None, None),
        ("a%3a%7e", "a%3A~"),
        ("us er", "us%20er"),
        ("a@b", "a%40b"),
    ],
)
def test_normalize_userinfo(userinfo, expected):
    assert normalize_userinfo(userinfo) == expected


@pytest.mark.parametrize(
    "authority, scheme, expected",
    [
        ("ANN:PassWord@Example.com", "https", "ANN:PassWord@example.com"),
        ("bücher.example:8080", "http", "xn--bcher-kva.example:8080"),
        ("h:80", "http", "h"),
        ("h:", "http", "h"),
        ("h:80", "https", "h:80"),
        ("[::1]:8080", "http", "[::1]:8080"),
        ("[::1]", "http", "[::1]"),
        ("[::1]x", "http", None),
        ("[::1", "http", None),
        ("h:1:2", "http", None),
        ("", "http", None),
        ("user@", "http", None),
        (":80", "http", None),
        ("@h", "http", "h"),
        ("a@b@h", "http", "a%40b@h"),
        (None, "http", None),
    ],
)
def test_normalize_authority(authority, scheme, expected):
    assert normalize_authority(authority, scheme) == expected


@pytest.mark.parametrize(
    "path, expected",
    [
        ("", "/"),
        ("/", "/"),
        ("/docs", "/docs"),
        ("/docs/", "/docs/"),
        ("/Docs/Page", "/Docs/Page"),
        ("/%7Eann/", "/~ann/"),
        ("/a%2fb", "/a%2Fb"),
        ("/%2e%2E/x", "/x"),
        ("/a/%2E/b", "/a/b"),
        ("/pdf/Course Information.pdf", "/pdf/Course%20Information.pdf"),
        ("/guide/contents.html", "/guide/contents.html"),
    ],
)
def test_normalize_path(path, expected):
    assert normalize_path(path) == expected


@pytest.mark.parametrize(
    "query, expected",
    [
        ("b=2&a=1", "a=1&b=2"),
        ("z=9&a=2&a=1", "a=2&a=1&z=9"),
        ("2172", "2172"),
        ("flag=&x=1", "flag=&x=1"),
        ("x=1&flag=", "flag=&x=1"),
        ("", ""),
        ("a=1+2&b", "a=1+2&b"),
        ("b=1&a=x=y", "a=x=y&b=1"),
        ("a&a=1&a=", "a&a=1&a="),
    ],
)
def test_sort_query(query, expected):
    assert sort_query(query) == expected


@pytest.mark.parametrize(
    "query, expected",
    [
        (None, None),
        ("", ""),
        ("2172", "2172"),
        ("b=%7e&a=%2f", "a=%2F&b=~"),
        ("q=a b&p=/?x", "p=/?x&q=a%20b"),
        ("a=%26&b=%3D", "a=%26&b=%3D"),  # encoded delimiters stay encoded
        ("q=é|\\", "q=%C3%A9%7C%5C"),
        ("a=1+1", "a=1+1"),
    ],
)
def test_normalize_query(query, expected):
    assert normalize_query(query) == expected


def test_fingerprint():
    url = "https://example.com/"
    assert fingerprint(url) == xxhash.xxh3_64_intdigest(url.encode("utf-8"))
    assert 0 <= fingerprint(url) < 2**64
    assert fingerprint(normalize("https://EXAMPLE.com:443")) == fingerprint(url)
    assert fingerprint("https://example.com/a") != fingerprint(url)


# ---------------------------------------------------------------- session ids

# Heritrix StripSessionIDs (its test's examples): 32 letters and digits (24 letters for
# ASP), any case; here any value of the first three names, a sid of 16 or more.
HERITRIX_JSESSION = "jsessionid=999A9EF028317A82AC83F0FDFE59385A"
HERITRIX_PHPSESSION = "PHPSESSID=9682993c8daa2c5497996114facdc805"
HERITRIX_SID = "sid=9682993c8daa2c5497996114facdc805"
HERITRIX_ASP = "ASPSESSIONIDAQBSDSRT=EOHBLBDDPFCLHKPGGKLILNAM"


@pytest.mark.parametrize(
    "item, expected",
    [
        (HERITRIX_JSESSION, True),
        (HERITRIX_PHPSESSION, True),
        (HERITRIX_SID, True),
        (HERITRIX_ASP, True),
        ("JSESSIONID=abc", True),
        ("jSessionId=", True),
        ("phpsessid=x.y-z", True),
        ("aspsessionidqwertyui=ABC", True),
        ("sid=0123456789abcdef", True),
        ("SID=ABCDEFGHIJKLMNOP", True),
        ("sid=1234567890123456", True),
        ("sid=5", False),
        ("sid=0123456789abcde", False),  # 15 characters
        ("sid=news-2024-elections", False),
        ("sid=", False),
        ("sid", False),
        ("jsessionid", False),  # a bare name, no value
        ("aspsessionidqwerty=ABC", False),  # 6 letters, not 8
        ("xsid=9682993c8daa2c5497996114facdc805", False),  # names are matched whole
        ("session=abc", False),
        ("id=9682993c8daa2c5497996114facdc805", False),
        ("q=jsessionid=abc", False),
    ],
)
def test_is_session_item(item, expected):
    assert is_session_item(item) is expected


@pytest.mark.parametrize(
    "path, expected",
    [
        ("/a;jsessionid=F00/b;x=1", "/a/b;x=1"),
        ("/p;x=1;JSESSIONID=a;y=2", "/p;x=1;y=2"),
        ("/shop/cart.jsp;jsessionid=" + "A" * 32, "/shop/cart.jsp"),
        ("/;jsessionid=abc", "/"),
        (";jsessionid=abc", "/"),
        ("/d/;jsessionid=abc", "/d/"),
        ("/a;jsessionid=1/b;jsessionid=2/", "/a/b/"),
        ("/p;" + HERITRIX_PHPSESSION + ";" + HERITRIX_ASP, "/p"),
        ("/a/.;jsessionid=x/b", "/a/b"),  # a dot segment exposed is removed
        ("/a/b/..;jsessionid=x/c", "/a/c"),
        ("/p;sid=5", "/p;sid=5"),
        ("/jsessionid=abc/p", "/jsessionid=abc/p"),  # a segment's name is not a parameter
        ("/p;jsessionid", "/p;jsessionid"),
        ("/p;x=1", "/p;x=1"),
        ("/plain/path", "/plain/path"),
        ("", ""),
    ],
)
def test_strip_path_session_ids(path, expected):
    assert strip_path_session_ids(path) == expected
    assert strip_path_session_ids(expected) == expected


@pytest.mark.parametrize(
    "query, expected",
    [
        ("a=1&PHPSESSID=x&b=2", "a=1&b=2"),
        ("PHPSESSID=x&b=2", "b=2"),
        ("b=2&" + HERITRIX_JSESSION, "b=2"),
        (HERITRIX_SID, None),  # a query of session ids only is absent
        (HERITRIX_ASP + "&" + HERITRIX_JSESSION, None),
        ("a=1;jsessionid=2;b=3", "a=1;b=3"),  # ';' separates items too (HTML 4 B.2.2)
        ("a=1;jsessionid=2&b=3", "a=1&b=3"),
        ("&jsessionid=x", ""),
        ("sid=5", "sid=5"),
        ("story=7&sid=12", "story=7&sid=12"),
        ("q=jsessionid=abc", "q=jsessionid=abc"),
        ("", ""),
        (None, None),
    ],
)
def test_strip_query_session_ids(query, expected):
    assert strip_query_session_ids(query) == expected
    assert strip_query_session_ids(expected) == expected


@pytest.mark.parametrize(
    "href, base, sent, key",
    [
        ("/page;jsessionid=0A1B2C?x=1", "http://h/", "http://h/page?x=1", "http://h/page?x=1"),
        ("page;JSESSIONID=ZZ#top", "http://h/d/", "http://h/d/page", "http://h/d/page"),
        ("/p?sid=9682993c8daa2c5497996114facdc805", "http://h/", "http://h/p", "http://h/p"),
        ("/p?z=1&PHPSESSID=abc&a=2", "http://h/", "http://h/p?z=1&a=2", "http://h/p?a=2&z=1"),
        ("/p?" + HERITRIX_ASP + "&k=v", "http://h/", "http://h/p?k=v", "http://h/p?k=v"),
        ("/p;%6Asessionid=1?%50HPSESSID=2", "http://h/", "http://h/p", "http://h/p"),  # escapes first
        ("/story?sid=5", "http://h/", "http://h/story?sid=5", "http://h/story?sid=5"),
        ("/p?", "http://h/", "http://h/p?", "http://h/p?"),
    ],
)
def test_session_ids_removed_from_key_and_request(href, base, sent, key):
    assert urlnorm.request_url(href, base) == sent
    assert normalize(href, base) == key
    assert urlnorm.key_of(sent) == key


def test_a_fresh_session_id_per_response_is_one_url():
    hrefs = [f"/docs/page.html;jsessionid={i:032X}" for i in range(50)]
    hrefs += [f"/docs/page.html?PHPSESSID={i:032x}" for i in range(50)]
    hrefs += [f"/docs/page.html?sid={i:032x}" for i in range(50)]
    assert {normalize(h, "http://h/") for h in hrefs} == {"http://h/docs/page.html"}


# ---------------------------------------------------------------- end to end


@pytest.mark.parametrize(
    "url, base, expected",
    [
        ("HTTP://Example.COM", None, "http://example.com/"),
        ("http://example.com/a#frag", None, "http://example.com/a"),
        ("http://example.com/p?", None, "http://example.com/p?"),
        ("http://example.com/p?#x", None, "http://example.com/p?"),
        ("http://h:65536/", None, None),
        ("http://h:abc/", None, None),
        ("http:///", None, None),
        ("http://", None, None),
        ("http://user@/", None, None),
        ("relative/path", None, None),
        ("//host/path", None, None),
        ("file:///etc/passwd", None, None),
        ("ftp://h/", None, None),
        ("not a url at all", None, None),
        ("", None, None),
        ("http://h/a/./b/../c", None, "http://h/a/c"),
        ("http://h/?b=2&a=1#f", None, "http://h/?a=1&b=2"),
        ("https://[2001:DB8::1]:443/x", None, "https://[2001:db8::1]/x"),
        ("http:\\\\Example.com\\a\\b", None, "http://example.com/a/b"),
        ("http://h/a\\b?x=\\", None, "http://h/a/b?x=%5C"),
        ("x", "https://h/dir/page", "https://h/dir/x"),
        ("HTTP:x", "http://h/dir/page", "http://h/dir/x"),
        ("https:x.org/p", "http://h/dir/page", "https://x.org/p"),
        ("x", "ftp://h/dir/", None),
        ("x", "  https://h/d/\n", "https://h/d/x"),
        ("../../../../x", "https://h/a/", "https://h/x"),
        ("//h2", "http://h/", "http://h2/"),
        ("http://a_b.example/", None, "http://a_b.example/"),
        ("http://bücher.example/", None, "http://xn--bcher-kva.example/"),
        ("http://b\u00fccher\u3002example/", None, "http://xn--bcher-kva.example/"),
        ("http://\ud800/", None, None),
    ],
)
def test_normalize_table(url, base, expected):
    assert normalize(url, base) == expected


@pytest.mark.parametrize("url, base", [(None, None), (42, None), (b"http://h/", None), ("x", 42), ("x", b"http://h/")])
def test_normalize_non_str_input_returns_none(url, base):
    assert normalize(url, base) is None


# ---------------------------------------------------------------- conformance cases


def test_conformance_file_has_the_cases_tested_here():
    cases = {c["id"]: c["category"] for c in load_cases()}
    for cid in ("C01", "C02", "C03", "C04", "C05", "C06"):
        assert cases[cid] == "url-normalization"
    for cid in ("C08", "C09", "C10", "C11"):
        assert cases[cid] == "link-resolution"
    assert cases["C12"] == "link-filtering"


def test_C01_reserved_escapes_kept_and_idempotent():
    a = normalize("https://example.com/docs/issue%2342/summary?id=7#intro")
    b = normalize("http://example.com/shop/discount-50%25")
    assert a == "https://example.com/docs/issue%2342/summary?id=7"
    assert b == "http://example.com/shop/discount-50%25"
    assert normalize(a) == a
    assert normalize(b) == b


def test_C02_unreserved_escapes_case_and_userinfo():
    assert normalize("https://example.org/~ann/notes/") == "https://example.org/~ann/notes/"
    assert normalize("https://example.org/%7Eann/notes/") == "https://example.org/~ann/notes/"
    assert normalize("http://example.com/a%2fb") == "http://example.com/a%2Fb"
    assert normalize("http://example.com/a%2Fb") == "http://example.com/a%2Fb"
    assert normalize("http://example.com/a%2Fb") != normalize("http://example.com/a/b")
    first = normalize("HTTP://Example.COM/Docs/Page")
    assert first == normalize("http://example.com/Docs/Page") == "http://example.com/Docs/Page"
    assert first != normalize("http://example.com/docs/page")
    assert normalize("https://ANN:PassWord@Example.com/") == "https://ANN:PassWord@example.com/"


def test_C03_idna_host_only_not_port():
    assert normalize("http://bücher.example:8080/") == "http://xn--bcher-kva.example:8080/"
    assert normalize("http://BÜCHER.example:80/katalog") == "http://xn--bcher-kva.example/katalog"
    assert normalize("http://bücher.example/") == normalize("http://xn--bcher-kva.example/")


def test_C04_default_port_depends_on_scheme():
    assert normalize("http://example.com:80/a") == normalize("http://example.com/a")
    assert normalize("https://example.com:443/a") == normalize("https://example.com/a")
    assert normalize("https://example.com:80/a") == "https://example.com:80/a"
    assert normalize("https://example.com:80/a") != normalize("https://example.com/a")
    assert normalize("http://example.com:/a") == normalize("http://example.com/a")
    assert normalize("http://example.com:8080/a") == "http://example.com:8080/a"
    assert normalize("http://example.com:8080/a") != normalize("http://example.com/a")


def test_C05_trailing_slash_significant_root_path_added():
    seed = "https://example.com"
    assert normalize(seed) == normalize("https://example.com/", seed) == "https://example.com/"
    assert fingerprint(normalize(seed)) == fingerprint(normalize("https://example.com/"))
    assert normalize("/guide/contents.html", seed) == "https://example.com/guide/contents.html"
    assert normalize("/docs", seed) == "https://example.com/docs"
    assert normalize("/docs/", seed) == "https://example.com/docs/"


def test_C06_bare_query_item_kept():
    assert normalize("http://example.com/title.cgi?2172") == "http://example.com/title.cgi?2172"
    assert normalize("http://example.com/title.cgi?2172") != normalize("http://example.com/title.cgi?2173")
    assert normalize("http://example.com/s?b=2&a=1") == "http://example.com/s?a=1&b=2"
    assert normalize("http://example.com/s?a=1&b=2") == "http://example.com/s?a=1&b=2"
    assert normalize("http://example.com/s?flag=&x=1") != normalize("http://example.com/s?x=1")
    assert normalize("http://example.com/s?flag=&x=1") == "http://example.com/s?flag=&x=1"
    assert normalize("http://example.com/s?z=9&a=2&a=1") == "http://example.com/s?a=2&a=1&z=9"


def test_C08_whitespace_around_href_stripped():
    href = "\n\t    /feeds/atom.xml\n\t  "
    assert normalize(href, "http://example.com/blog/") == "http://example.com/feeds/atom.xml"


def test_C09_relative_base_resolution():
    # (a) absolute base
    base = normalize("https://example.com/", "https://example.com/service/123/Title")
    assert normalize("page.php", base) == "https://example.com/page.php"
    assert normalize("css/site.css", base) == "https://example.com/css/site.css"
    # (b) base '/forum/' is resolved against the document URL first
    base = resolve("/forum/", "https://example.com/forum/index.php/msg/77/")
    assert base == "https://example.com/forum/"
    assert normalize("index.php/fa/9/0/", base) == "https://example.com/forum/index.php/fa/9/0/"
    # (c) base 'myself.html'; never glued as 'myself.htmlmyself.html'
    base = resolve("myself.html", "http://example.com/dir/myself.html")
    assert base == "http://example.com/dir/myself.html"
    assert normalize("?param=value", base) == "http://example.com/dir/myself.html?param=value"
    # (d) resolution part only: the selected base '/first/' against the document URL
    base = normalize("/first/", "https://example.com/p/q")
    assert normalize("x", base) == "https://example.com/first/x"


def test_C10_relative_to_page_not_directory_or_root():
    assert (
        normalize("./P0201.xlsx", "http://example.com/gov/spaq/t193.shtml") == "http://example.com/gov/spaq/P0201.xlsx"
    )
    assert (
        normalize("blog/index.html", "https://example.com/English/index.html")
        == "https://example.com/English/blog/index.html"
    )
    assert (
        normalize("pdf/Course Information.pdf", "https://example.com/curriculum.php")
        == "https://example.com/pdf/Course%20Information.pdf"
    )
    page = "https://example.com/a/b/c/d.html"
    assert normalize("../../x.html", page) == "https://example.com/a/x.html"
    assert normalize("../../../../x.html", page) == "https://example.com/x.html"


def test_C11_protocol_relative_takes_page_scheme():
    href = "//cdn.example.org/lib/app.js"
    assert normalize(href, "https://www.example.com/news/") == "https://cdn.example.org/lib/app.js"
    assert normalize(href, "http://www.example.com/news/") == "http://cdn.example.org/lib/app.js"
    home = normalize("https://www.example.com/")
    assert normalize("//WWW.example.com", "https://www.example.com/news/") == home
    assert home == "https://www.example.com/"


def test_C12_non_http_schemes_discarded_and_empty_query_kept():
    page = "https://example.com/contact/?lang=en"
    for href in (
        "tel:+15550100",
        "mailto:info@example.com",
        "javascript:void(0)",
        "data:text/html,hi",
        "ftp://files.example.com/x",
    ):
        assert normalize(href, page) is None, href
    for href in ("#top", "", "   "):
        assert normalize(href, page) == "https://example.com/contact/?lang=en", repr(href)
    assert normalize("?", page) == "https://example.com/contact/?"
    assert normalize("HTTPS://EXAMPLE.COM/about", page) == "https://example.com/about"


# ---------------------------------------------------------------- request form


@pytest.mark.parametrize(
    "href, base, sent, key",
    [
        ("s?b=2&a=1", "http://h/", "http://h/s?b=2&a=1", "http://h/s?a=1&b=2"),
        ("HTTP://H:80/x/../s?z=%7e&a#f", None, "http://h/s?z=~&a", "http://h/s?a&z=~"),
        ("/p?", "http://h/", "http://h/p?", "http://h/p?"),
        ("mailto:x@y", "http://h/", None, None),
    ],
)
def test_request_url_keeps_query_order_only(href, base, sent, key):
    assert urlnorm.request_url(href, base) == sent
    assert normalize(href, base) == key


def test_remembered_request_urls_are_the_request_urls_and_the_memo_is_bounded():
    memo = urlnorm.RequestUrlMemo(max_entries=3)
    asked = [
        ("../b/c.html#x", "http://H/a/d.html"),
        ("/b/c.html#y", "http://H/z"),  # the same resolved URL, another fragment: remembered
        ("c.html?b=2&a=1", "http://h/b/"),
        ("/p;jsessionid=0A1B2C", "http://h/"),
        ("mailto:x@y", "http://h/"),  # refused: remembered as None
        ("mailto:x@y", "http://h/"),
        ("//", "http://h/"),
    ]
    sizes = []
    for href, base in asked:
        assert memo(href, base) == urlnorm.request_url(href, base), href
        sizes.append(len(memo))
    assert sizes == [1, 1, 2, 3, 1, 1, 2]  # the fourth resolved URL found it full: started over


# ---------------------------------------------------------------- properties

PROPS = settings(max_examples=500, deadline=None)
MEMO = urlnorm.RequestUrlMemo(max_entries=64)  # shared by the property tests: hits and misses
URLISH = st.text(
    alphabet=st.sampled_from(list("aAzZ09-._~:/?#[]@!$&'()*+,;=% \t\n\\\"<>^`{|}é\u00fc\u3002\x00\x7fH.T.P")),
    max_size=40,
)
URL_REGEX = st.from_regex(
    r"\A(([hH][tT][tT][pP][sS]?|ftp|mailto|x):)?(//([A-Za-z0-9_.:@\[\]%\u00fc-]*))?"
    r"([A-Za-z0-9/.%~ \\+-]*)(\?[A-Za-z0-9=&%+. ]*)?(#[^\n]*)?\Z"
)
BASES = st.sampled_from(
    [
        None,
        "http://h/a/b?q",
        "http://h/a/c#z",  # the directory of the one above: the memo's href level hits
        "http://h/a/",
        "HTTP://h/a/b?r",
        "https://Ex.com:443/d/",
        "http://h",
        "ftp://h/x",
        "/rel",
        "https://bücher.example/a/./b/../c?x#y",
    ]
)


def _check(url, base):
    out = normalize(url, base)
    if out is not None:
        assert out.isascii()
        assert out.startswith(("http://", "https://"))
        assert "#" not in out
        assert normalize(out) == out
        assert normalize(out, base) == out
        assert isinstance(fingerprint(out), int)
    request = urlnorm.request_url(url, base)
    assert (request is None) == (out is None)
    # the memo's answer, computed or remembered, is the same
    assert MEMO(url, base) == MEMO(url, base) == request
    assert MEMO(url + "#other", base) == urlnorm.request_url(url + "#other", base)
    if request is not None:  # the request form keys to the same URL and is stable
        assert normalize(request) == out == urlnorm.key_of(request)
        assert urlnorm.request_url(request) == request


@PROPS
@given(st.text(), st.one_of(st.none(), st.text()))
def test_property_any_text_never_raises_and_idempotent(url, base):
    _check(url, base)


@PROPS
@given(URLISH, BASES)
def test_property_urlish_alphabet(url, base):
    _check(url, base)
    _check("http://" + url, base)
    _check("https://h/" + url, base)


@PROPS
@given(URL_REGEX, BASES)
def test_property_regex_urls(url, base):
    _check(url, base)


@PROPS
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=20), BASES)
def test_property_idempotent_with_base(href, base):
    _check(href, base)
    _check("//" + href, base)


SESSION_ITEMS = st.sampled_from(
    [
        HERITRIX_JSESSION,
        HERITRIX_PHPSESSION,
        HERITRIX_SID,
        HERITRIX_ASP,
        "JSESSIONID=",
        "sid=5",
        "sid=x" * 4,
        "%6Asessionid=1",
        "jsessionid",
    ]
)


@PROPS
@given(st.lists(st.tuples(URLISH, SESSION_ITEMS, st.sampled_from(";&?/")), max_size=4), BASES)
def test_property_session_ids_anywhere(pieces, base):
    url = "".join(text + sep + item for text, item, sep in pieces)
    _check(url, base)
    _check("http://h/" + url, base)
    out = normalize("http://h/p;" + url, base)
    if out is not None:  # nothing left to strip
        parts = split_reference(out)
        assert strip_path_session_ids(parts.path) == parts.path
        assert strip_query_session_ids(parts.query) == parts.query


def test_module_has_no_mutable_globals():
    for name, value in vars(urlnorm).items():
        if not name.startswith("__"):
            assert not isinstance(value, (list, set, bytearray)), name
            if isinstance(value, dict):
                assert name == "DEFAULT_PORTS", name


# ------------------------------------------------- fast paths against the plain rules


def _reference_remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4 as written (buffer loop), the rule the fast path must keep."""
    out = ""
    while path:
        if path.startswith("../"):
            path = path[3:]
        elif path.startswith("./"):
            path = path[2:]
        elif path.startswith("/./"):
            path = path[2:]
        elif path == "/.":
            path = "/"
        elif path.startswith("/../"):
            path = path[3:]
            out = out[: out.rfind("/")] if "/" in out else ""
        elif path == "/..":
            path = "/"
            out = out[: out.rfind("/")] if "/" in out else ""
        elif path in (".", ".."):
            path = ""
        else:
            cut = path.find("/", 1)
            cut = len(path) if cut == -1 else cut
            out, path = out + path[:cut], path[cut:]
    return out


def _reference_percent_encoding(text: str, safe) -> str:
    """RFC 3986 §6.2.2.1-2 character by character, with no shortcut."""
    out, i = [], 0
    while i < len(text):
        esc = text[i : i + 3]
        if len(esc) == 3 and esc[0] == "%" and all(c in "0123456789abcdefABCDEF" for c in esc[1:]):
            ch = chr(int(esc[1:], 16))
            out.append(ch if ch in urlnorm._UNRESERVED else esc.upper())
            i += 3
            continue
        ch = text[i]
        out.append(ch if ch in safe else "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
        i += 1
    return "".join(out)


@PROPS
@given(st.text(alphabet="/.ab%2E"))
def test_property_remove_dot_segments_matches_rfc_loop(path):
    assert remove_dot_segments(path) == _reference_remove_dot_segments(path)


@PROPS
@given(st.one_of(URLISH, st.text()))
def test_property_percent_encoding_matches_plain_rule(text):
    for safe in (PATH_SAFE, QUERY_SAFE):
        assert normalize_percent_encoding(text, safe) == _reference_percent_encoding(text, safe)


def test_a_base_is_parsed_once_per_page_not_once_per_link():
    urlnorm._base_parts.cache_clear()
    for href in ("a.html", "b.html#x", "../c.html", "?q=1"):
        urlnorm.normalize(href, "http://h/dir/page.html")
    info = urlnorm._base_parts.cache_info()
    assert (info.misses, info.hits) == (1, 3)
