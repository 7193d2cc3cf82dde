"""The one-process contender: requests.Session + BeautifulSoup + html2text + a Python set.

Usage: python bench/contenders/plain_loop.py SEED OUT.jsonl

Breadth-first from SEED, same host only, fragments dropped, every HTML page converted
with html2text (no hard wrap) and written as one JSON line.
"""

import collections
import json
import sys
import urllib.parse

import html2text
import requests
from bs4 import BeautifulSoup


def main() -> int:
    seed, out = sys.argv[1], sys.argv[2]
    host = urllib.parse.urlsplit(seed).netloc
    session = requests.Session()
    seen, todo = {seed}, collections.deque([seed])
    with open(out, "w", encoding="utf-8") as f:
        while todo:
            url = todo.popleft()
            response = session.get(url, timeout=30)
            if response.status_code >= 400 or "html" not in response.headers.get("Content-Type", ""):
                continue
            response.encoding = response.apparent_encoding if response.encoding is None else response.encoding
            soup = BeautifulSoup(response.text, "lxml")
            converter = html2text.HTML2Text(baseurl=url)
            converter.body_width = 0
            title = soup.title.get_text() if soup.title else None
            f.write(
                json.dumps(
                    {"url": url, "title": title, "markdown": converter.handle(response.text)}, ensure_ascii=False
                )
                + "\n"
            )
            for a in soup.find_all("a", href=True):
                link = urllib.parse.urljoin(url, a["href"]).split("#")[0]
                if urllib.parse.urlsplit(link).netloc == host and link not in seen:
                    seen.add(link)
                    todo.append(link)
    return 0


if __name__ == "__main__":
    sys.exit(main())
