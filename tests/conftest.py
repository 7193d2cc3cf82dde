"""Fixtures shared by more than one test module (helpers that are not fixtures live in
``tests.helpers``; no test module imports another)."""

from __future__ import annotations

import functools

import pytest

from tests.helpers.crawlutil import read_records, run_crawl
from tests.helpers.generatedsite import DEADLINE_S, GeneratedSite, markdown_by_path, start
from tests.helpers.siteserver import SiteServer


@pytest.fixture
def site_server():
    """Start a :class:`SiteServer` on 127.0.0.1: ``site_server(routes=None, root=None)``
    returns it running; every server started is stopped when the test ends (its
    ``hits`` stay readable)."""
    servers: list[SiteServer] = []

    def started(routes=None, root: str | None = None) -> SiteServer:
        server = SiteServer(routes, root).__enter__()
        servers.append(server)
        return server

    yield started
    for server in servers:
        server.__exit__(None, None, None)


@pytest.fixture
def crawl_into(tmp_path):
    """Run a crawl in this process into ``tmp_path/out``: ``crawl_into(seed, **settings)``
    returns ``(summary, records by URL)`` (:func:`tests.helpers.crawlutil.run_crawl`;
    a second call resumes in the same folder)."""
    return functools.partial(run_crawl, tmp_path)


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
