"""Seed files (crawler/seeds.py): line tables in, request-form URLs or one-line errors out."""

from __future__ import annotations

import io

import pytest

from crawler.errors import ConfigError
from crawler.seeds import combine, parse_seed_lines, read_seed_file

NEED = "need an absolute http:// or https:// URL"
PORT = "its port must be a number from 0 to 65535"


@pytest.mark.parametrize(
    "lines, expected",
    [
        ([], []),
        (["", "   ", "\t\n"], []),
        (["# a comment", "   # indented comment", "#http://a.example/"], []),
        (["http://a.example/\n", "https://b.example/x\r\n"], ["http://a.example/", "https://b.example/x"]),
        (["  http://a.example/  "], ["http://a.example/"]),
        (["http://a.example/ # the manual"], ["http://a.example/"]),
        (["http://a.example/\t# tab before the comment"], ["http://a.example/"]),
        (["http://a.example/#top"], ["http://a.example/"]),  # a fragment, not a comment
        (["http://a.example/#top # and a comment"], ["http://a.example/"]),
        (["HTTP://A.Example:80/a/./b/../c"], ["http://a.example/a/c"]),  # request form
        (["http://a.example/p?b=2&a=1"], ["http://a.example/p?b=2&a=1"]),  # query as written
        (["http://a.example/", "http://a.example/"], ["http://a.example/", "http://a.example/"]),
        (["http://a.example/caf\u00e9"], ["http://a.example/caf%C3%A9"]),
    ],
)
def test_parse_seed_lines(lines, expected):
    assert parse_seed_lines(lines, "sites.txt") == expected


@pytest.mark.parametrize(
    "lines, message",
    [
        (["http://a.example/", "", "ftp://x"], f"sites.txt line 3: invalid seed URL 'ftp://x': {NEED}"),
        (["a.example/docs"], f"sites.txt line 1: invalid seed URL 'a.example/docs': {NEED}"),
        (["/relative"], f"sites.txt line 1: invalid seed URL '/relative': {NEED}"),
        (["http://127.0.0.1:99999/"], f"sites.txt line 1: invalid seed URL 'http://127.0.0.1:99999/': {PORT}"),
        (["https://a.example:8x/"], f"sites.txt line 1: invalid seed URL 'https://a.example:8x/': {PORT}"),
        (["ftp://a.example:99999/"], f"sites.txt line 1: invalid seed URL 'ftp://a.example:99999/': {NEED}"),
        (
            ["# ok", "http://a.example/ http://b.example/"],
            "sites.txt line 2: one URL per line, found 'http://a.example/ http://b.example/'",
        ),
        (
            ["http://a.example/ trailing words"],
            "sites.txt line 1: one URL per line, found 'http://a.example/ trailing words'",
        ),
    ],
)
def test_bad_lines_name_the_file_and_line(lines, message):
    with pytest.raises(ConfigError) as caught:
        parse_seed_lines(lines, "sites.txt")
    assert str(caught.value) == message


def test_read_seed_file_strict_utf8_with_bom(tmp_path):
    path = tmp_path / "sites.txt"
    path.write_bytes(b"\xef\xbb\xbfhttp://a.example/\r\n# c\r\nhttp://b.example/\r\n")
    assert read_seed_file(str(path)) == ["http://a.example/", "http://b.example/"]
    path.write_bytes(b"http://a.example/\n# caf\xe9\n")  # Latin-1, even in a comment
    with pytest.raises(ConfigError) as caught:
        read_seed_file(str(path))
    assert str(caught.value) == f"{path} line 2: not UTF-8 text (byte 0xe9 at column 6)"


@pytest.mark.parametrize("content", [b"", b"\n\n# only comments\n"])
def test_a_seed_file_without_urls_is_an_error(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as caught:
        read_seed_file(str(path))
    assert str(caught.value) == f"{path}: no seed URL in it (only blank lines and comments)"


def test_unreadable_seed_file(tmp_path):
    with pytest.raises(ConfigError) as caught:
        read_seed_file(str(tmp_path / "missing.txt"))
    assert str(caught.value) == f"cannot read seed file {tmp_path / 'missing.txt'}: No such file or directory"
    with pytest.raises(ConfigError, match="Is a directory"):
        read_seed_file(str(tmp_path))


def test_dash_reads_the_given_stdin():
    stdin = io.BytesIO(b"http://a.example/\nnot a url\n")
    with pytest.raises(ConfigError) as caught:
        read_seed_file("-", stdin)
    assert str(caught.value) == f"stdin line 2: invalid seed URL 'not a url': {NEED}"
    assert read_seed_file("-", io.BytesIO(b"http://a.example/")) == ["http://a.example/"]


def test_combine_puts_positional_first_and_keeps_first_of_duplicates():
    assert combine(
        ["http://b.example/", "http://a.example/"], ["http://a.example/", "http://c.example/", "http://b.example/"]
    ) == ("http://b.example/", "http://a.example/", "http://c.example/")


def test_ten_thousand_seed_lines_parse_quickly():
    import time

    lines = [f"https://site{i}.example/docs/index.html  # site {i}\n" for i in range(10_000)]
    started = time.process_time()
    seeds = parse_seed_lines(lines, "sites.txt")
    assert len(combine([], seeds)) == 10_000
    assert time.process_time() - started < 5.0  # about 0.3 s here; generous for a loaded machine
