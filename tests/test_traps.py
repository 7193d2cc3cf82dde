"""Crawler-trap guards: crawler.traps tables and a property against the Heritrix and Nutch
rules they must cover."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.traps import (REPEATED_PATH_SEGMENT, TOO_MANY_PATH_SEGMENTS, has_repeated_segments,
                           path_segments, trap_reason)

REPEATED, TOO_MANY = REPEATED_PATH_SEGMENT, TOO_MANY_PATH_SEGMENTS
DEEP_20 = "/" + "/".join(str(i) for i in range(1, 21))  # 20 segments: allowed
DEEP_21 = DEEP_20 + "/21"


def test_reasons_are_distinct():
    assert REPEATED == "repeated path segment" and TOO_MANY == "too many path segments"


@pytest.mark.parametrize("url, expected", [
    ("http://h/", [""]),
    ("http://h/a/b/", ["a", "b", ""]),
    ("http://h/a/b?x=/c/d", ["a", "b"]),  # the query is not the path
    ("http://h/a%2Fb;p=1/c", ["a%2Fb;p=1", "c"]),  # %2F is not a separator
    ("http://h", []),
])
def test_path_segments(url, expected):
    assert path_segments(url) == expected


@pytest.mark.parametrize("url, expected", [
    # Heritrix PathologicalPathDecideRule, maxRepetitions 2: a run repeated 3 times in a row
    ("http://h/", None),
    ("http://h/a/a/b", None),
    ("http://h/docs/docs/", None),
    ("http://h/docs/docs/intro.html", None),
    ("http://h/docs/docs/docs/", REPEATED),
    ("http://h/a/a/a", REPEATED),  # the last segment counts too (Heritrix needs a '/')
    ("http://h/x/a/a/a/y", REPEATED),
    ("http://h/a/b/a/b/", None),
    ("http://h/a/b/a/b/a/b/", REPEATED),  # a run of two segments
    ("http://h/a/b/c/a/b/c/a/b/c", REPEATED),  # of three
    ("http://h/a/b/c/a/b/c/a/b/d", None),
    ("http://h/a////b", REPEATED),  # three empty segments in a row
    ("http://h/a//b", None),
    # Nutch's (/[^/]+)/[^/]+\1/[^/]+\1/: one segment at every other position 3 times
    ("http://h/a/x/a/y/a/", REPEATED),
    ("http://h/a/x/a/y/a", REPEATED),
    ("http://h/a/x/a/y/b/", None),
    ("http://h/a/x/a/", None),
    ("http://h/en/docs/en/api/", None),
    ("http://h/a//b//c/", None),  # empty segments are not Nutch's [^/]+
    # neither
    ("http://h/a%2Fa%2Fa%2F", None),  # one segment
    ("http://h/p?x=a/a/a/", None),  # the query is not the path
    ("http://h/A/a/A", None),  # case-sensitive, as paths are
    # TooManyPathSegmentsDecideRule, maxPathDepth 20: more than 20 '/' in the path
    ("http://h" + DEEP_20, None),
    ("http://h" + DEEP_21, TOO_MANY),
    ("http://h" + DEEP_20 + "/", TOO_MANY),  # 21 segments, the last empty
    ("http://h" + "/a" * 21, TOO_MANY),  # both apply: the count is checked first
])
def test_trap_reason_defaults(url, expected):
    assert trap_reason(url) == expected
    assert trap_reason(url, 2, 20) == expected


@pytest.mark.parametrize("url, repeats, segments, expected", [
    ("http://h/a/a", 1, 20, REPEATED),
    ("http://h/a/b", 1, 20, None),
    ("http://h/a/x/a", 1, 20, REPEATED),
    ("http://h/a/a/a", 3, 20, None),
    ("http://h/a/a/a/a", 3, 20, REPEATED),
    ("http://h/a/x/a/y/a", 3, 20, None),
    ("http://h/a/x/a/y/a/z/a", 3, 20, REPEATED),
    ("http://h/a/a/a/a", None, 20, None),  # None: unlimited
    ("http://h" + DEEP_21, 2, None, None),
    ("http://h" + "/x" * 500, None, None, None),
    ("http://h/a/b/c", 2, 3, None),
    ("http://h/a/b/c/", 2, 3, TOO_MANY),
    ("http://h/a", 2, 1, None),
    ("http://h/a/", 2, 1, TOO_MANY),
])
def test_trap_reason_limits(url, repeats, segments, expected):
    assert trap_reason(url, repeats, segments) == expected


@pytest.mark.parametrize("segments, repeats, expected", [
    ([], 2, False), ([""], 2, False), (["a"] * 3, 2, True), (["a", "b"] * 3, 2, True),
    (["a", "b"] * 3, 3, False), (["a", "b"] * 4, 3, True), (["x", "a", "y", "a", "z", "a"], 2, True),
])
def test_has_repeated_segments(segments, repeats, expected):
    assert has_repeated_segments(segments, repeats) is expected


HERITRIX_PATHOLOGICAL = re.compile(r".*?/(.*?/)\1{2,}.*")  # maxRepetitions 2
NUTCH_REPEATS = re.compile(r"(/[^/]+)/[^/]+\1/[^/]+\1/")  # regex-urlfilter.txt


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "", "ab"]), max_size=12),
       st.booleans())
def test_property_catches_every_path_heritrix_and_nutch_reject(segments, slash):
    path = "/" + "/".join(segments) + ("/" if slash else "")
    url = "http://h" + path
    reason = trap_reason(url)
    if HERITRIX_PATHOLOGICAL.fullmatch(path) or NUTCH_REPEATS.search(path):
        assert reason is not None, path
    if path.count("/") > 20:  # TooManyPathSegmentsDecideRule counts '/' in the path
        assert reason == TOO_MANY, path
