"""Tests for crawler.web.decode: HTML-standard encoding precedence and HTML media types."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.web.decode import decode_html, is_html

# --- conformance C19: transport charset vs <meta charset> --------------------------------

C19_TEXT = '<meta charset="utf-8"><p>Ünïcødé — café</p>'


def test_c19a_no_charset_in_header_meta_prescan_gives_utf8():
    text, enc = decode_html(C19_TEXT.encode("utf-8"), "text/html")
    assert text == C19_TEXT
    assert "Ünïcødé — café" in text
    assert enc == "utf-8"


def test_c19b_transport_charset_beats_meta():
    body = b'<meta charset="utf-8"><p>caf' + b"\xe9" + b"</p>"
    text, enc = decode_html(body, "text/html; charset=windows-1252")
    assert text == '<meta charset="utf-8"><p>café</p>'
    assert enc == "cp1252"


def test_c19c_no_content_type_header_utf8():
    text, enc = decode_html(C19_TEXT.encode("utf-8"), None)
    assert text == C19_TEXT
    assert enc == "utf-8"


# --- conformance C20: BOM beats the transport charset -----------------------------------


def test_c20_utf8_bom_beats_header():
    body = b"\xef\xbb\xbf" + "<!DOCTYPE html><p>Привет</p>".encode()
    text, enc = decode_html(body, "text/html; charset=windows-1251")
    assert text == "<!DOCTYPE html><p>Привет</p>"
    assert not text.startswith("\ufeff")
    assert "п»ї" not in text
    assert enc == "utf-8"


def test_utf16_bom_beats_header_and_is_stripped():
    body = "\ufeff<p>Grüße</p>".encode("utf-16-le")
    text, enc = decode_html(body, "text/html; charset=utf-8")
    assert text == "<p>Grüße</p>"
    assert enc == "utf-16-le"


# --- further precedence details ---------------------------------------------------------


def test_no_declaration_defaults_to_utf8():
    text, enc = decode_html("<p>naïve</p>".encode(), "text/html")
    assert text == "<p>naïve</p>"
    assert enc == "utf-8"


def test_http_equiv_meta_prescan():
    body = (
        b'<html><head><meta http-equiv="Content-Type" content="text/html; charset=koi8-r">'
        b"</head><body>\xf0\xd2\xc9\xd7\xc5\xd4</body></html>"
    )
    text, enc = decode_html(body, None)
    assert "Привет" in text
    assert enc == "koi8-r"


def test_header_charset_case_and_quotes_ignored():
    text, _ = decode_html(b"caf\xe9", 'TEXT/HTML; Charset="ISO-8859-1"')
    assert text == "café"


def test_latin1_label_decodes_as_windows1252():
    # WHATWG Encoding: the label iso-8859-1 means windows-1252 (0x93 is a curly quote).
    text, enc = decode_html(b"\x93hi\x94", "text/html; charset=iso-8859-1")
    assert text == "\u201chi\u201d"
    assert enc == "cp1252"


def test_unknown_header_label_falls_back_to_meta():
    body = '<meta charset="utf-8"><p>é</p>'.encode()
    text, enc = decode_html(body, "text/html; charset=no-such-charset")
    assert text == '<meta charset="utf-8"><p>é</p>'
    assert enc == "utf-8"


def test_invalid_bytes_become_replacement_characters():
    text, enc = decode_html(b"ok \xff\xfe\xc3 end", "text/html; charset=utf-8")
    assert text.startswith("ok ")
    assert text.endswith(" end")
    assert "\ufffd" in text
    assert enc == "utf-8"


def test_empty_body():
    assert decode_html(b"", None) == ("", "utf-8")


@settings(max_examples=300, deadline=None)
@given(
    body=st.binary(max_size=300),
    content_type=st.one_of(
        st.none(),
        st.sampled_from(
            [
                "text/html",
                "text/html; charset=utf-8",
                "text/html; charset=windows-1251",
                "text/html; charset=shift_jis",
                "text/html; charset=utf-16",
                "text/html; charset=gb18030",
                "text/html; charset=bogus",
                "",
            ]
        ),
        st.text(max_size=40),
    ),
)
def test_never_raises(body, content_type):
    text, enc = decode_html(body, content_type)
    assert isinstance(text, str)
    assert isinstance(enc, str) and enc


# --- is_html ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        "text/html",
        "text/html; charset=utf-8",
        "TEXT/HTML",
        "  Text/Html ;charset=ISO-8859-1",
        "application/xhtml+xml",
        "Application/XHTML+XML; charset=utf-8",
        None,
        "",
    ],
)
def test_is_html_true(content_type):
    assert is_html(content_type) is True


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/pdf",
        "image/png",
        "application/json; charset=utf-8",
        "text/htmlx",
        "application/xml",
        "text/css",
    ],
)
def test_is_html_false(content_type):
    assert is_html(content_type) is False


# ------------------------------------------- sniffing (WHATWG MIME Sniffing 7.1, 3)

from crawler.web.decode import is_html_response, looks_binary, sniffs_as_html  # noqa: E402


@pytest.mark.parametrize(
    "body, expected",
    [
        (b"<!DOCTYPE html><title>x</title>", True),
        (b"\n\t <html lang=en>", True),
        (b"\xef\xbb\xbf<!doctype HTML>", True),
        (b"<p>para", True),
        (b"<!-- comment -->", True),
        (b"<B>bold</B>", True),
        (b"<a href=x>", True),
        (b"<aside>", False),  # '<a' not followed by a space or '>'
        (b"<?xml version='1.0'?>", False),
        (b"%PDF-1.7", False),
        (b"plain words", False),
        (b"", False),
    ],
)
def test_sniffs_as_html(body, expected):
    assert sniffs_as_html(body) is expected


@pytest.mark.parametrize(
    "body, content_type, expected",
    [
        (bytes(range(256)), "text/html", True),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "text/html", True),
        (b"<html>\x1b[0m</html>", "text/html", False),  # ESC is not a binary data byte
        (b"<html>\tok\r\n\x0c</html>", "text/html", False),
        ("<html>é</html>".encode("utf-16"), "text/html", False),  # BOM: NULs are text
        ("<html>é</html>".encode("utf-16-le"), "text/html; charset=UTF-16LE", False),
        (b"x" * 1445 + b"\x00", "text/html", False),  # past the resource header
    ],
)
def test_looks_binary(body, content_type, expected):
    assert looks_binary(body, content_type) is expected


@pytest.mark.parametrize(
    "content_type, body, expected",
    [
        (None, b"<!doctype html><p>x", True),
        ("", b"<html>", True),
        (None, b"just text", False),
        (None, b"", False),
        ("text/html", b"", True),  # an empty page is still a page
        ("text/html; charset=utf-8", b"<p>x", True),
        ("text/html", bytes(range(256)) * 4, False),  # binary served as text/html
        ("application/pdf", b"<html>", False),
        ("text/plain", b"<html>", False),  # a declared type is not second-guessed
    ],
)
def test_is_html_response(content_type, body, expected):
    assert is_html_response(content_type, body) is expected
