"""Tests for crawler.web.sitemaps: urlset, index, text, gzip (and gzip bombs), namespaces,
malformed XML, entity attacks, the 50,000-entry and 50 MiB limits, relative locs and
the candidate list."""

from __future__ import annotations

import dataclasses
import gzip
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.web.sitemaps import (
    GZIP_MAGIC,
    SITEMAP_MAX_BYTES,
    SITEMAP_MAX_URLS,
    SITEMAP_NAMESPACE,
    Sitemap,
    escape_bare_ampersands,
    gunzip_capped,
    parse_sitemap,
    sitemap_candidates,
)

BASE = "https://example.com/maps/sitemap.xml"
NS = f'xmlns="{SITEMAP_NAMESPACE}"'

#: The sitemaps.org protocol page's sample, abridged (one <url> per optional field).
URLSET = f"""<?xml version="1.0" encoding="UTF-8"?>
<urlset {NS}>
   <url>
      <loc>http://www.example.com/</loc>
      <lastmod>2005-01-01</lastmod>
      <changefreq>monthly</changefreq>
      <priority>0.8</priority>
   </url>
   <url>
      <loc>http://www.example.com/catalog?item=12&amp;desc=vacation_hawaii</loc>
      <changefreq>weekly</changefreq>
   </url>
   <url>
      <loc>http://www.example.com/catalog?item=73&amp;desc=vacation_new_zealand</loc>
      <lastmod>2004-12-23</lastmod>
   </url>
   <url>
      <loc>
         http://www.example.com/catalog?item=83&amp;desc=vacation_usa
      </loc>
   </url>
</urlset>
""".encode()
URLSET_URLS = (
    "http://www.example.com/",
    "http://www.example.com/catalog?item=12&desc=vacation_hawaii",
    "http://www.example.com/catalog?item=73&desc=vacation_new_zealand",
    "http://www.example.com/catalog?item=83&desc=vacation_usa",
)

INDEX = f"""<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex {NS}>
   <sitemap>
      <loc>http://www.example.com/sitemap1.xml.gz</loc>
      <lastmod>2004-10-01T18:23:17+00:00</lastmod>
   </sitemap>
   <sitemap>
      <loc>http://www.example.com/sitemap2.xml.gz</loc>
   </sitemap>
</sitemapindex>
""".encode()


def urlset(*locs: str, ns: str = NS) -> bytes:
    entries = "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
    return f"<urlset {ns}>{entries}</urlset>".encode()


def test_constants():
    assert SITEMAP_MAX_BYTES == 52_428_800
    assert SITEMAP_MAX_URLS == 50_000
    assert SITEMAP_NAMESPACE == "http://www.sitemaps.org/schemas/sitemap/0.9"
    assert GZIP_MAGIC == b"\x1f\x8b"


def test_sitemap_is_a_small_frozen_value():
    s = Sitemap("urlset", ("https://h/",))
    assert (s.kind, s.urls, s.error) == ("urlset", ("https://h/",), None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.kind = "invalid"  # type: ignore[misc]
    assert Sitemap("invalid") == Sitemap("invalid", (), None)


# ---------------------------------------------------------------- XML shapes


def test_urlset():
    assert parse_sitemap(URLSET, BASE) == Sitemap("urlset", URLSET_URLS, None)


def test_sitemapindex():
    assert parse_sitemap(INDEX, BASE) == Sitemap(
        "sitemapindex", ("http://www.example.com/sitemap1.xml.gz", "http://www.example.com/sitemap2.xml.gz"), None
    )


def test_namespace_less():
    body = URLSET.replace(NS.encode(), b"")
    assert b"xmlns" not in body
    assert parse_sitemap(body, BASE) == Sitemap("urlset", URLSET_URLS, None)
    body = INDEX.replace(NS.encode(), b"")
    assert parse_sitemap(body, BASE).kind == "sitemapindex"


@pytest.mark.parametrize(
    "namespace",
    [
        "http://www.google.com/schemas/sitemap/0.84",
        "https://www.sitemaps.org/schemas/sitemap/0.9",
        "http://www.example.com/mine",
    ],
)
def test_other_namespace_is_invalid(namespace):
    result = parse_sitemap(urlset("https://h/a", ns=f'xmlns="{namespace}"'), BASE)
    assert result == Sitemap(
        "invalid", (), f"root element <urlset> in namespace {namespace!r}, not {SITEMAP_NAMESPACE!r}"
    )


def test_extension_namespaces_are_ignored():
    body = f"""<urlset {NS}
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
      <url>
        <loc>https://example.com/page</loc>
        <image:image><image:loc>https://example.com/photo.jpg</image:loc></image:image>
        <xhtml:link rel="alternate" hreflang="de" href="https://example.com/de/page"/>
      </url>
      <url><image:loc>https://example.com/only-image.jpg</image:loc></url>
      <image:url><image:loc>https://example.com/foreign-entry</image:loc></image:url>
      <loc>https://example.com/loc-outside-url</loc>
    </urlset>""".encode()
    assert parse_sitemap(body, BASE) == Sitemap("urlset", ("https://example.com/page",), None)


def test_index_reads_only_sitemap_entries_and_urlset_only_url_entries():
    mixed = (
        f"<sitemapindex {NS}><url><loc>https://h/page</loc></url>"
        f"<sitemap><loc>https://h/s.xml</loc></sitemap></sitemapindex>"
    ).encode()
    assert parse_sitemap(mixed, BASE) == Sitemap("sitemapindex", ("https://h/s.xml",), None)
    mixed = (
        f"<urlset {NS}><sitemap><loc>https://h/s.xml</loc></sitemap><url><loc>https://h/page</loc></url></urlset>"
    ).encode()
    assert parse_sitemap(mixed, BASE) == Sitemap("urlset", ("https://h/page",), None)


def test_empty_urlset_is_valid_and_empty():
    assert parse_sitemap(f"<urlset {NS}/>".encode(), BASE) == Sitemap("urlset", (), None)


@pytest.mark.parametrize("prefix", [b"", b"\xef\xbb\xbf", b"\n\n  ", b"\xef\xbb\xbf \r\n"])
def test_bom_and_leading_whitespace_before_the_xml_declaration(prefix):
    assert parse_sitemap(prefix + URLSET, BASE) == Sitemap("urlset", URLSET_URLS, None)


def test_declared_encoding_is_honoured():
    body = (
        '<?xml version="1.0" encoding="ISO-8859-1"?>'
        f'<urlset {NS}><url><loc>https://example.com/caf\u00e9</loc></url></urlset>'
    ).encode("latin-1")
    assert parse_sitemap(body, BASE).urls == ("https://example.com/caf%C3%A9",)


def test_cdata_comments_and_processing_instructions():
    body = (
        f"<urlset {NS}><!-- generated --><url><loc><![CDATA[https://h/a?x=1&y=2]]></loc></url>"
        "<url><loc>https://h/b<!-- c --></loc></url><?pi x?></urlset>"
    ).encode()
    assert parse_sitemap(body, BASE) == Sitemap("urlset", ("https://h/a?x=1&y=2", "https://h/b"), None)


# ---------------------------------------------------------------- locs


def test_relative_locs_are_resolved_against_the_sitemap_url():
    body = urlset(
        "page.html",
        "/root.html",
        "../up.html",
        "?q=1",
        "//cdn.example.net/x",
        "sub/dir/",
        "https://Other.example.org:443/abs#frag",
    )
    assert parse_sitemap(body, BASE).urls == (
        "https://example.com/maps/page.html",
        "https://example.com/root.html",
        "https://example.com/up.html",
        "https://example.com/maps/sitemap.xml?q=1",
        "https://cdn.example.net/x",
        "https://example.com/maps/sub/dir/",
        "https://other.example.org/abs",
    )


def test_locs_that_do_not_normalize_are_dropped():
    body = urlset(
        "mailto:a@example.com",
        "javascript:void(0)",
        "ftp://example.com/f",
        "http://exa mple.com/",
        "http://h:99999/",
        "",
        "   ",
        "https://example.com/ok",
    )
    assert parse_sitemap(body, BASE) == Sitemap("urlset", ("https://example.com/ok",), None)


def test_relative_locs_without_a_usable_base_are_dropped():
    body = urlset("page.html", "https://example.com/abs")
    assert parse_sitemap(body, "not a url").urls == ("https://example.com/abs",)


def test_urls_are_in_request_form_and_deduplicated_in_order():
    body = urlset(
        "https://EXAMPLE.com:443/b?z=1&amp;a=2",
        "https://example.com/a",
        "https://example.com/b?z=1&amp;a=2#x",
        "https://example.com/%7Eann",
        "https://example.com/~ann",
        "https://example.com/b?a=2&amp;z=1",
    )
    assert parse_sitemap(body, BASE).urls == (
        "https://example.com/b?z=1&a=2",
        "https://example.com/a",
        "https://example.com/~ann",
        "https://example.com/b?a=2&z=1",
    )  # the query as written: a different request


def test_entry_without_loc_or_with_two_locs():
    body = (
        f"<urlset {NS}><url><lastmod>2020-01-01</lastmod></url>"
        "<url><loc>https://h/first</loc><loc>https://h/second</loc></url></urlset>"
    ).encode()
    assert parse_sitemap(body, BASE) == Sitemap("urlset", ("https://h/first",), None)


# ---------------------------------------------------------------- plain text


def test_plain_text_sitemap():
    body = (
        b"\xef\xbb\xbfhttps://example.com/a\r\n\r\n   https://example.com/b  \n"
        b"http://example.com/c?x=1#f\nhttps://example.com/a\n"
    )
    assert parse_sitemap(body, BASE) == Sitemap(
        "urlset", ("https://example.com/a", "https://example.com/b", "http://example.com/c?x=1"), None
    )


def test_plain_text_keeps_only_absolute_http_urls():
    body = b"https://example.com/a\nrelative/page.html\n/root\nmailto:x@y\nsome words here\n"
    assert parse_sitemap(body, BASE) == Sitemap("urlset", ("https://example.com/a",), None)


@pytest.mark.parametrize("body", [b"Not Found", b"page.html\n/x\n", b"\x00\x01\x02\xff", b"{\"urls\": []}"])
def test_text_without_urls_is_invalid(body):
    assert parse_sitemap(body, BASE) == Sitemap("invalid", (), "neither XML nor lines of absolute http(s) URLs")


@pytest.mark.parametrize("body", [b"", b"   \n\t ", b"\xef\xbb\xbf", b"\xef\xbb\xbf\n"])
def test_empty_document(body):
    assert parse_sitemap(body, BASE) == Sitemap("invalid", (), "empty document")


# ---------------------------------------------------------------- malformed XML


def test_malformed_xml_is_recovered_and_says_so():
    body = (
        f"<urlset {NS}><url><loc>https://h/a</loc></url>"
        "<url><loc>https://h/b?x=1&y=2</loc></url>"  # a bare '&'
        "<url><loc>https://h/c</loc></urll>"  # mismatched end tag
        "<url><loc>https://h/d</loc></url></urlset>"
    ).encode()
    assert parse_sitemap(body, BASE) == Sitemap(
        "urlset",
        ("https://h/a", "https://h/b?x=1&y=2", "https://h/c", "https://h/d"),
        "1 bare '&' read as '&amp;'; malformed XML, recovered: Opening and ending tag "
        "mismatch: url line 1 and urll (line 1)",
    )


def test_bare_ampersands_are_repaired_not_dropped():
    """Without the repair libxml2 recovers '?x=1&y=2' as '?x=1=2' (a wrong URL)."""
    body = urlset(
        "https://h/s?a=1&b=2&c",
        "https://h/t?a=1&amp;b=2",
        "https://h/u?q=&#38;x",
        "<![CDATA[https://h/v?a=1&b=2]]>",
        "https://h/w?copy=1&copy=2",
    )
    assert parse_sitemap(body, BASE) == Sitemap(
        "urlset",
        (
            "https://h/s?a=1&b=2&c",
            "https://h/t?a=1&b=2",
            "https://h/u?q=&x",
            "https://h/v?a=1&b=2",
            "https://h/w?copy=1&copy=2",
        ),
        "3 bare '&' read as '&amp;'",
    )


@pytest.mark.parametrize(
    "data, expected, count",
    [
        (b"<a>no ampersand</a>", b"<a>no ampersand</a>", 0),
        (b"?a=1&b=2", b"?a=1&amp;b=2", 1),
        (b"&amp;&lt;&#38;&#x26;&name;&ns:n-1.x;", b"&amp;&lt;&#38;&#x26;&name;&ns:n-1.x;", 0),
        (b"&& &; &#; &#x; &#xZ; &1;", b"&amp;&amp; &amp;; &amp;#; &amp;#x; &amp;#xZ; &amp;1;", 7),
        (b"<![CDATA[a&b]]>&<![CDATA[&]]>", b"<![CDATA[a&b]]>&amp;<![CDATA[&]]>", 1),
        (b"tail&", b"tail&amp;", 1),
    ],
)
def test_escape_bare_ampersands(data, expected, count):
    assert escape_bare_ampersands(data) == (expected, count)


def test_escape_bare_ampersands_is_linear():
    """Unterminated CDATA starts and long '&name' runs do not make it quadratic."""
    for data in (
        b"<![CDATA[" * 500_000 + b"&",
        b"&" + b"a" * 5_000_000,
        b"&a" * 1_000_000,
        b"]]>&<![CDATA[&" * 200_000,
    ):
        start = time.process_time()
        escape_bare_ampersands(data)
        assert time.process_time() - start < 1.0
    assert escape_bare_ampersands(b"&x<![CDATA[&") == (b"&amp;x<![CDATA[&", 1)


def test_document_cut_after_a_loc_keeps_it():
    body = f"<urlset {NS}><url><loc>https://h/a</loc></url><url><loc>https://h/b</loc>".encode()
    result = parse_sitemap(body, BASE)
    assert (result.kind, result.urls) == ("urlset", ("https://h/a", "https://h/b"))
    assert result.error == ("malformed XML, recovered: Premature end of data in tag url line 1 (line 1)")


@pytest.mark.parametrize("tail", ["https://h/bl", "https://h/blog</lo", "https://h/blog</"])
def test_document_cut_inside_a_loc_drops_it(tail):
    body = f"<urlset {NS}><url><loc>https://h/a</loc></url><url><loc>{tail}".encode()
    result = parse_sitemap(body, BASE)
    assert (result.kind, result.urls) == ("urlset", ("https://h/a",))
    assert result.error.startswith("malformed XML, recovered: ")


@pytest.mark.parametrize(
    "body, error",
    [
        (b"<<<>>>", "not XML: StartTag: invalid element name"),
        (b"<", "not XML: StartTag: invalid element name"),
        (b"<html><body><a href='/x'>x</a></body></html>", "root element <html> is not <urlset> or <sitemapindex>"),
        (b"<!DOCTYPE html><html><p>x<br></html>", "root element <html> is not <urlset> or <sitemapindex>"),
        (
            b'<?xml version="1.0"?><rss version="2.0"><channel/></rss>',
            "root element <rss> is not <urlset> or <sitemapindex>",
        ),
        (b"<url><loc>https://h/a</loc></url>", "root element <url> is not <urlset> or <sitemapindex>"),
    ],
)
def test_not_a_sitemap_is_invalid(body, error):
    assert parse_sitemap(body, BASE) == Sitemap("invalid", (), error)


# ---------------------------------------------------------------- entity attacks


def billion_laughs(levels: int = 9) -> str:
    entities = ['<!ENTITY lol0 "lol">'] + [f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, levels + 1)]
    return f'<?xml version="1.0"?>\n<!DOCTYPE urlset [\n{chr(10).join(entities)}\n]>\n'


def test_billion_laughs_is_not_expanded():
    body = (
        billion_laughs() + f"<urlset {NS}><url><loc>https://h/&lol9;</loc></url>"
        "<url><loc>https://h/ok</loc></url></urlset>"
    ).encode()
    start = time.process_time()
    result = parse_sitemap(body, BASE)
    assert time.process_time() - start < 1.0
    assert result == Sitemap("invalid", (), "declares XML entities (<!ENTITY>): not read")


def test_harmless_entity_declaration_is_refused_too():
    body = (
        '<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY host "example.com">]>'
        f"<urlset {NS}><url><loc>https://&host;/a</loc></url></urlset>"
    ).encode()
    assert parse_sitemap(body, BASE) == Sitemap("invalid", (), "declares XML entities (<!ENTITY>): not read")


def test_external_entities_and_dtds_are_never_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    dtd = tmp_path / "evil.dtd"
    dtd.write_text('<!ENTITY ext "https://h/TOPSECRET-DTD">')
    xxe = (
        f'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>'
        f"<urlset {NS}><url><loc>https://h/&xxe;</loc></url></urlset>"
    ).encode()
    assert parse_sitemap(xxe, BASE) == Sitemap("invalid", (), "declares XML entities (<!ENTITY>): not read")
    external = (
        f'<?xml version="1.0"?><!DOCTYPE urlset SYSTEM "{dtd.as_uri()}">'
        f"<urlset {NS}><url><loc>&ext;</loc></url><url><loc>https://h/b</loc></url>"
        "</urlset>"
    ).encode()
    # the DTD is not loaded, so libxml2 cannot call '&ext;' undefined: no error, and
    # the <loc> holding the unexpanded reference is dropped
    assert parse_sitemap(external, BASE) == Sitemap("urlset", ("https://h/b",), None)
    parameter = (
        f'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY % p SYSTEM "{dtd.as_uri()}">'
        f" %p;]><urlset {NS}><url><loc>&ext;</loc></url></urlset>"
    ).encode()
    assert parse_sitemap(parameter, BASE) == Sitemap("invalid", (), "declares XML entities (<!ENTITY>): not read")


# ---------------------------------------------------------------- gzip


def test_gzip_is_detected_by_magic_bytes():
    assert parse_sitemap(gzip.compress(URLSET), BASE) == Sitemap("urlset", URLSET_URLS, None)
    assert parse_sitemap(gzip.compress(INDEX), BASE).kind == "sitemapindex"
    assert parse_sitemap(gzip.compress(b"https://h/a\nhttps://h/b\n"), BASE) == Sitemap(
        "urlset", ("https://h/a", "https://h/b"), None
    )


def test_gzip_members_are_concatenated_and_padding_ignored():
    half = len(URLSET) // 2
    body = gzip.compress(URLSET[:half]) + gzip.compress(URLSET[half:]) + b"\x00" * 512
    assert parse_sitemap(body, BASE) == Sitemap("urlset", URLSET_URLS, None)


@pytest.mark.parametrize(
    "cut, error",
    [
        (-4, "gzip data truncated"),  # trailer cut
        (30, "gzip data truncated"),  # deflate stream cut
        (2, "gzip data truncated"),  # only the magic
    ],
)
def test_truncated_gzip_is_invalid(cut, error):
    body = gzip.compress(URLSET)[:cut]
    assert parse_sitemap(body, BASE) == Sitemap("invalid", (), error)


def test_corrupt_gzip_is_invalid():
    assert parse_sitemap(b"\x1f\x8b not gzip at all", BASE) == Sitemap(
        "invalid", (), "bad gzip data: Error -3 while decompressing data: unknown compression method"
    )
    body = bytearray(gzip.compress(URLSET))
    body[-8] ^= 0xFF  # CRC-32 of the trailer
    assert parse_sitemap(bytes(body), BASE) == Sitemap(
        "invalid", (), "bad gzip data: Error -3 while decompressing data: incorrect data check"
    )


def test_gzip_bomb_is_rejected_quickly():
    bomb = gzip.compress(b"\x00" * 60_000_000, compresslevel=9)
    assert len(bomb) < 100_000
    start = time.process_time()
    result = parse_sitemap(bomb, BASE)
    elapsed = time.process_time() - start
    assert result == Sitemap("invalid", (), "gzip data decompresses to more than 52428800 bytes")
    assert elapsed < 2.0, elapsed


def test_gzip_bomb_split_into_members_is_rejected():
    member = gzip.compress(b"\x00" * 10_000_000, compresslevel=9)
    result = parse_sitemap(member * 6, BASE)
    assert result == Sitemap("invalid", (), "gzip data decompresses to more than 52428800 bytes")


def test_gunzip_capped_limit_is_inclusive():
    data = gzip.compress(b"x" * 1000)
    assert gunzip_capped(data, 1000) == b"x" * 1000
    with pytest.raises(ValueError, match="^gzip data decompresses to more than 999 bytes$"):
        gunzip_capped(data, 999)
    assert gunzip_capped(b"", 10) == b""
    assert gunzip_capped(b"not gzip", 10) == b""


def _padded_to_the_limit() -> bytes:
    """A valid urlset of exactly SITEMAP_MAX_BYTES: one URL and 1 MiB comments."""
    head, tail = f"<urlset {NS}><url><loc>https://h/a</loc></url>".encode(), b"</urlset>"
    room = SITEMAP_MAX_BYTES - len(head) - len(tail)
    comment = b"<!--" + b"x" * (2**20 - 7) + b"-->"
    filler = comment * (room // len(comment))
    filler += b"<!--" + b"x" * (room - len(filler) - 7) + b"-->"
    return head + filler + tail


def test_uncompressed_body_over_the_limit_is_invalid():
    body = _padded_to_the_limit()
    assert len(body) == SITEMAP_MAX_BYTES
    assert parse_sitemap(body, BASE) == Sitemap("urlset", ("https://h/a",), None)
    assert parse_sitemap(body + b" ", BASE) == Sitemap("invalid", (), "larger than 52428800 bytes")


def test_gzip_body_decompressing_to_the_limit_is_read():
    body = gzip.compress(_padded_to_the_limit(), compresslevel=1)
    assert parse_sitemap(body, BASE) == Sitemap("urlset", ("https://h/a",), None)


def test_huge_text_nodes_stay_limited():
    """huge_tree is off: libxml2 refuses a text node over 10 MB (recovered, noted)."""
    body = f"<urlset {NS}><url><loc>https://h/a</loc></url>".encode() + b" " * 12_000_000
    result = parse_sitemap(body + b"</urlset>", BASE)
    assert (result.kind, result.urls) == ("urlset", ("https://h/a",))
    assert result.error == (
        "malformed XML, recovered: Resource limit exceeded: Text node too long, try XML_PARSE_HUGE (line 1)"
    )


# ---------------------------------------------------------------- 50,000 entries


def test_more_than_50000_entries_are_truncated():
    locs = [f"https://example.com/p{i}" for i in range(SITEMAP_MAX_URLS + 5)]
    result = parse_sitemap(urlset(*locs), BASE)
    assert result.kind == "urlset"
    assert result.urls == tuple(locs[:SITEMAP_MAX_URLS])
    assert result.error == "more than 50000 entries: the rest ignored"
    exactly = parse_sitemap(urlset(*locs[:SITEMAP_MAX_URLS]), BASE)
    assert (len(exactly.urls), exactly.error) == (SITEMAP_MAX_URLS, None)


def test_more_than_50000_lines_are_truncated():
    lines = [f"https://example.com/p{i}" for i in range(SITEMAP_MAX_URLS + 1)]
    result = parse_sitemap("\n".join(lines).encode(), BASE)
    assert result == Sitemap("urlset", tuple(lines[:SITEMAP_MAX_URLS]), "more than 50000 entries: the rest ignored")


def test_entries_count_even_when_their_loc_is_dropped():
    locs = ["mailto:x@y"] * SITEMAP_MAX_URLS + ["https://h/late"]
    assert parse_sitemap(urlset(*locs), BASE) == Sitemap("urlset", (), "more than 50000 entries: the rest ignored")


def test_recovered_and_truncated_notes_are_joined():
    locs = [f"https://h/p{i}" for i in range(SITEMAP_MAX_URLS + 1)]
    body = urlset(*locs)[: -len("</urlset>")]
    result = parse_sitemap(body, BASE)
    assert len(result.urls) == SITEMAP_MAX_URLS
    assert result.error == (
        "malformed XML, recovered: Premature end of data in tag urlset line 1 "
        "(line 1); more than 50000 entries: the rest ignored"
    )


# ---------------------------------------------------------------- never raises


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.text(max_size=200).map(lambda t: (f"<urlset {NS}><url><loc>" + t).encode()),
        st.binary(max_size=200).map(lambda b: GZIP_MAGIC + b),
    )
)
def test_property_never_raises(body):
    result = parse_sitemap(body, BASE)
    assert result.kind in ("urlset", "sitemapindex", "invalid")
    assert all(url.startswith(("http://", "https://")) for url in result.urls)
    assert (result.kind == "invalid") <= (result.urls == () and result.error is not None)


# ---------------------------------------------------------------- candidates


@pytest.mark.parametrize(
    "listed, expected",
    [
        ((), ("https://example.com/sitemap.xml",)),
        (
            ["https://example.com/s1.xml", "https://cdn.example.net/s2.xml.gz"],
            ("https://example.com/s1.xml", "https://cdn.example.net/s2.xml.gz"),
        ),
        (
            [
                "https://example.com/b.xml",
                "https://EXAMPLE.com:443/b.xml#x",
                "https://example.com/a.xml",
                "https://example.com/b.xml",
            ],
            ("https://example.com/b.xml", "https://example.com/a.xml"),
        ),
        (["/relative.xml", "ftp://example.com/s.xml", ""], ("https://example.com/sitemap.xml",)),
        (["/relative.xml", "http://example.com/s.xml?b=1&a=2"], ("http://example.com/s.xml?b=1&a=2",)),
        (iter(["https://example.com/gen.xml"]), ("https://example.com/gen.xml",)),
    ],
)
def test_sitemap_candidates(listed, expected):
    assert sitemap_candidates("https://example.com", listed) == expected


def test_sitemap_candidates_from_robots_rules():
    from crawler.web.robots import RobotsRules, origin_of

    rules = RobotsRules.from_response(
        200, b"User-agent: *\nDisallow:\nSitemap: http://h:8000/a.xml\nSitemap: http://h:8000/a.xml\n"
    )
    assert sitemap_candidates(origin_of("http://h:8000/x"), rules.sitemaps) == ("http://h:8000/a.xml",)
    assert sitemap_candidates(origin_of("http://h:8000/x"), RobotsRules.allow_all().sitemaps) == (
        "http://h:8000/sitemap.xml",
    )
