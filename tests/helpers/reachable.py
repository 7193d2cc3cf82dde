"""Independent reference: which HTML files of a folder are reachable from a start file.

Uses only the standard library (html.parser, urllib.parse), none of the crawler's code, so a
test can compare the crawl against it.
"""

from __future__ import annotations

import html.parser
import os
import posixpath
import urllib.parse


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []
        self.base: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "base" and self.base is None and attrs.get("href"):
            self.base = attrs["href"]
        elif tag in ("a", "area") and attrs.get("href") is not None:
            self.hrefs.append(attrs["href"])
        elif tag in ("frame", "iframe") and attrs.get("src") is not None:
            self.hrefs.append(attrs["src"])


def reachable_html_pages(root: str, start: str) -> set[str]:
    """Relative paths of the ``.html`` files under ``root`` reachable from ``start`` by
    same-site links (fragments and queries ignored; a folder means its index.html)."""
    origin = "http://site.invalid/"
    seen: set[str] = set()
    todo = [start]
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        parser = _Links()
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            parser.feed(f.read())
        page_url = urllib.parse.urljoin(origin, rel)
        base = urllib.parse.urljoin(page_url, parser.base) if parser.base else page_url
        for href in parser.hrefs:
            url = urllib.parse.urljoin(base, href.strip())
            parts = urllib.parse.urlsplit(url)
            if parts.scheme != "http" or parts.netloc != "site.invalid":
                continue
            path = posixpath.normpath(urllib.parse.unquote(parts.path)).lstrip("/")
            if url.split("#")[0].split("?")[0].endswith("/"):
                path = posixpath.join(path, "index.html")
            full = os.path.join(root, path)
            if path.endswith(".html") and os.path.isfile(full):
                todo.append(path)
    return seen
