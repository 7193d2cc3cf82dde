"""Seed URLs from the command line and from a seed file (``--seeds FILE``).

A seed file is UTF-8 text (a leading BOM is allowed), one URL per line:

* blank lines are ignored;
* a line whose first non-blank character is ``#`` is a comment;
* whitespace followed by ``#`` starts a comment that runs to the end of the line
  (``https://docs.example.org/  # the manual``), as in pip's requirements files; a ``#``
  right after URL characters is the URL's fragment, which the seed drops anyway
  (``https://example.org/#top`` is ``https://example.org/``);
* anything else must be one absolute ``http://`` or ``https://`` URL (no spaces inside:
  a space in a URL is written ``%20``).

:func:`parse_seed_lines` is pure (lines in, request-form URLs out); :func:`read_seed_file`
reads a path, or standard input for ``-``. Every error is a one-line
:class:`crawler.errors.ConfigError` naming the file and line:
``sites.txt line 7: invalid seed URL 'ftp://x': need an absolute http:// or https:// URL``.
"""

from __future__ import annotations

import re
import sys
import urllib.parse
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from crawler.errors import ConfigError
from crawler.web.urlnorm import request_url

#: The ``--seeds`` value that means standard input.
STDIN = "-"
#: The name standard input has in error messages.
STDIN_NAME = "stdin"

# Whitespace, then '#', then the rest of the line: a trailing comment.
_TRAILING_COMMENT = re.compile(r"\s#.*")


def seed_url(raw: str) -> str:
    """The request form (:func:`crawler.web.urlnorm.request_url`) of one seed URL.

    Raises:
        ConfigError: ``raw`` is not an absolute http(s) URL.
    """
    url = request_url(raw)
    if url is None:
        raise ConfigError(_invalid(raw))
    return url


def _invalid(raw: str) -> str:
    return f"invalid seed URL {raw!r}: {_why(raw)}"


def _why(raw: str) -> str:
    """What is wrong with ``raw``, a URL :func:`request_url` refused: its port, when it
    is an http(s) URL with a host and a port that is no number from 0 to 65535 (WHATWG
    URL, port state), else that it is no absolute http(s) URL."""
    try:
        parts = urllib.parse.urlsplit(raw.strip())
        if parts.scheme.lower() in ("http", "https") and parts.hostname:
            parts.port  # noqa: B018  # ValueError for a port out of range or not a number
    except ValueError:
        return "its port must be a number from 0 to 65535"
    return "need an absolute http:// or https:// URL"


def parse_seed_lines(lines: Iterable[str], source: str) -> list[str]:
    """The seed URLs of the lines of a seed file (see the module docstring), in request
    form, in file order, duplicates included (:func:`combine` drops them).

    Args:
        lines: the file's lines (line endings may be kept).
        source: the file's name for error messages.

    Raises:
        ConfigError: ``'<source> line <n>: ...'`` for the first line that is not one
            valid URL.
    """
    seeds = []
    for number, line in enumerate(lines, 1):
        text = _TRAILING_COMMENT.sub("", line).strip()
        if not text or text.startswith("#"):
            continue
        first, *rest = text.split()
        url = request_url(first)
        if url is None:
            raise ConfigError(f"{source} line {number}: {_invalid(text)}")
        if rest:  # a space inside a URL is written %20: a second URL, or stray words
            raise ConfigError(f"{source} line {number}: one URL per line, found {text!r}")
        seeds.append(url)
    return seeds


def _decoded(stream: BinaryIO, source: str) -> Iterator[str]:
    """The lines of a binary stream as text, strictly UTF-8 (a BOM on the first line
    removed).

    Raises:
        ConfigError: a line is not UTF-8 (named with its line number).
    """
    for number, raw in enumerate(stream, 1):
        if number == 1:
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"{source} line {number}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
            ) from None


def read_seed_file(path: str, stdin: BinaryIO | None = None) -> list[str]:
    """The seed URLs of the seed file ``path`` (``-``: ``stdin``, by default the
    process's standard input), parsed by :func:`parse_seed_lines`.

    Raises:
        ConfigError: the file cannot be read, is not UTF-8, has a bad line, or holds
            no URL at all (an empty list is more likely a broken pipeline than a wish).
    """
    source = STDIN_NAME if path == STDIN else path
    try:
        if path == STDIN:
            seeds = parse_seed_lines(_decoded(stdin or sys.stdin.buffer, source), source)
        else:
            with open(path, "rb") as f:
                seeds = parse_seed_lines(_decoded(f, source), source)
    except OSError as exc:
        raise ConfigError(f"cannot read seed file {source}: {exc.strerror or exc}") from None
    if not seeds:
        raise ConfigError(f"{source}: no seed URL in it (only blank lines and comments)")
    return seeds


def combine(positional: Iterable[str], from_file: Iterable[str]) -> tuple[str, ...]:
    """The crawl's seeds: the positional ones first, then the file's, each already in
    request form, duplicates dropped (the first kept)."""
    return tuple(dict.fromkeys([*positional, *from_file]))
