"""Every conformance case of the categories this version covers is pinned by a test.

A case counts as covered when its id (``C08``...) appears in a test module other than
this one; the test modules assert the case's expected values.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.conformance import load_cases

#: Every category of the file is handled now (the politeness work added robots.txt,
#: http-redirect and http-robustness).
COVERED_CATEGORIES = {
    "url-normalization",
    "link-resolution",
    "link-filtering",
    "http-encoding",
    "markdown",
    "robots.txt",
    "http-redirect",
    "http-robustness",
}
#: Cases of other categories pinned here.
COVERED_EXTRA: set[str] = set()

TEST_SOURCES = "\n".join(
    p.read_text("utf-8") for p in Path(__file__).parent.glob("test_*.py") if p.name != Path(__file__).name
)


@pytest.mark.parametrize(
    "case",
    [c for c in load_cases() if c["category"] in COVERED_CATEGORIES or c["id"] in COVERED_EXTRA],
    ids=lambda c: c["id"],
)
def test_case_is_pinned_by_a_test(case):
    assert case["id"] in TEST_SOURCES, f"{case['id']} ({case['category']}) has no test"
