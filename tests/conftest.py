"""Fixtures shared by more than one test module (helpers that are not fixtures live in
``tests.helpers``; no test module imports another)."""

from __future__ import annotations

import pytest

from tests.helpers.crawlutil import read_records
from tests.helpers.generatedsite import DEADLINE_S, GeneratedSite, markdown_by_path, start


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted crawl of :class:`GeneratedSite`: path -> Markdown. Module scope:
    each module that compares a resumed crawl with it (test_resume, test_shards) crawls
    it once."""
    out = tmp_path_factory.mktemp("reference") / "out"
    with GeneratedSite(delay_s=0.0) as site:
        proc = start(site, out, "--quiet")
        proc.communicate(timeout=DEADLINE_S)
        assert proc.returncode == 0
        return markdown_by_path(read_records(str(out)), site)
