"""Every conformance case of the categories this version covers is pinned by a test.

A case counts as covered when its id (``C08``...) appears in a test module other than
this one; the test modules assert the case's expected values.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import load_cases

#: Categories handled by the core crawl engine (robots.txt and the HTTP politeness and
#: robustness cases beyond C17/C23 belong to the politeness work).
COVERED_CATEGORIES = {"url-normalization", "link-resolution", "link-filtering",
                      "http-encoding", "markdown"}
#: Cases of other categories already pinned here.
COVERED_EXTRA = {"C17", "C23"}

TEST_SOURCES = "\n".join(p.read_text("utf-8") for p in Path(__file__).parent.glob("test_*.py")
                         if p.name != Path(__file__).name)


@pytest.mark.parametrize("case", [c for c in load_cases()
                                  if c["category"] in COVERED_CATEGORIES or c["id"] in COVERED_EXTRA],
                         ids=lambda c: c["id"])
def test_case_is_pinned_by_a_test(case):
    assert case["id"] in TEST_SOURCES, f"{case['id']} ({case['category']}) has no test"
