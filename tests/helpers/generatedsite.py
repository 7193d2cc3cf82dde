"""A generated site of :data:`PAGES` pages and the crawler command run against it as a
subprocess, for the tests that kill or stop a crawl part-way and resume it."""

from __future__ import annotations

import os
import subprocess
import threading
import time

from tests.helpers.crawlutil import crawl_command
from tests.helpers.siteserver import Route, SiteServer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = 120
DEADLINE_S = 120


class GeneratedSite(SiteServer):
    """/0 .. /PAGES-1, each linking to the next five; every answer after ``delay_s``;
    ``reached`` is set once ``wanted`` pages were requested."""

    def __init__(self, delay_s: float = 0.02, wanted: int = 10**9) -> None:
        super().__init__(
            {
                f"/{i}": Route(
                    f"<html><head><title>Page {i}</title></head><body><h1>Page {i}</h1><p>Text of {i}.</p>"
                    + "".join(f'<a href="/{j}">{j}</a> ' for j in range(i + 1, min(i + 6, PAGES)))
                    + "</body></html>"
                )
                for i in range(PAGES)
            }
        )
        self.delay_s, self.wanted = delay_s, wanted
        self.reached = threading.Event()

    def lookup(self, target):
        if sum(n for path, n in self.hits.items() if path != "/robots.txt") >= self.wanted:
            self.reached.set()
        time.sleep(self.delay_s)
        return super().lookup(target)


def start(site: SiteServer, out, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        crawl_command(site.url("/0"), out, "--progress-interval", "0.2", *args),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def markdown_by_path(records: dict, site: SiteServer) -> dict[str, str]:
    """Path -> Markdown, with the server's address taken out of the links."""
    base = site.url("")
    return {url[len(base) :]: r["markdown"].replace(base, "") for url, r in records.items()}
