"""Markdown fidelity of each converter: does the Markdown render back to the page?

For every page of each corpus: the crawler's main content (the HTML fragment a crawl
converts: :func:`crawler.content.main.main_content`, else the whole page, tidied the same
way: :func:`crawler.content.main.whole_page`), converted by
each converter (:mod:`crawler.content.convert`), rendered back to HTML by markdown-it-py
(CommonMark, pipe tables and strikethrough) and compared with the fragment
(:mod:`tests.helpers.fidelity`): the words in order, headings, lists, table rows and
cells, ``<pre>`` blocks byte for byte, inline code, link texts and targets.

Corpora: the Debian documentation packages installed under /usr/share/doc
(python3.11-doc, python-flask-doc, python-django-doc...) and the extraction dev set
(``../shared/datasets/extraction-dev/pages.tar.xz``, unpacked into ``.cache/``).

Prints, per corpus and converter: pages, the share whose text round-trips exactly, the
structures kept, the mean words lost or added, CPU ms per conversion, and the worst
pages; writes ``bench/results/fidelity.json``.

    .venv/bin/python bench/fidelity.py [--limit N] [--corpus NAME ...]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from crawler.content.convert import CONVERTERS, convert  # noqa: E402
from crawler.content.main import main_content, whole_page  # noqa: E402
from crawler.web.decode import decode_html  # noqa: E402
from tests.helpers.fidelity import compare  # noqa: E402

DOCS = {
    "python3.11-doc": "/usr/share/doc/python3.11/html",
    "flask-doc": "/usr/share/doc/python-flask-doc/html",
    "django-doc": "/usr/share/doc/python-django-doc/html",
}
DEV_SET = os.path.join(ROOT, "..", "shared", "datasets", "extraction-dev", "pages.tar.xz")
CACHE = os.path.join(ROOT, ".cache", "extraction-dev")
STRUCTURES = ("headings", "lists", "tables", "pre", "code", "links")


def corpus_pages(name: str, limit: int | None) -> list[tuple[str, str]]:
    """``(base URL, path)`` of the corpus's HTML pages, sorted, at most ``limit``."""
    if name == "extraction-dev":
        pages_dir = os.path.join(CACHE, "pages")
        if not os.path.isdir(pages_dir):
            os.makedirs(CACHE, exist_ok=True)
            with tarfile.open(DEV_SET) as archive:
                archive.extractall(CACHE, filter="data")
        paths = sorted(glob.glob(os.path.join(pages_dir, "*.html")))
        return [(f"http://dev.test/{os.path.basename(p)}", p) for p in paths[:limit]]
    root = DOCS[name]
    paths = sorted(glob.glob(os.path.join(root, "**", "*.html"), recursive=True))
    return [(f"http://docs.test/{os.path.relpath(p, root)}", p) for p in paths[:limit]]


def measure(name: str, limit: int | None) -> dict:
    pages = corpus_pages(name, limit)
    results: dict = {}
    fragments = []
    for base, path in pages:
        with open(path, "rb") as f:
            text, _ = decode_html(f.read(), "text/html")
        fragments.append((base, path, main_content(text) or whole_page(text)))  # as a fetcher converts it
    for converter in CONVERTERS:
        exact = failed = 0
        kept = {s: [0, 0] for s in STRUCTURES}
        diffs = []
        cpu = 0.0
        for base, path, html in fragments:
            started = time.process_time()
            try:
                markdown = convert(html, base, converter).markdown
            except Exception as exc:  # both converters failed: counted, never fatal here
                failed += 1
                diffs.append((10**9, os.path.basename(path), f"{type(exc).__name__}: {exc}"[:80]))
                continue
            cpu += time.process_time() - started
            fidelity = compare(html, markdown, base)
            exact += fidelity.text_exact
            for structure, (k, n) in fidelity.kept().items():
                kept[structure][0] += k
                kept[structure][1] += n
            diffs.append((fidelity.word_diff(), os.path.relpath(path, DOCS.get(name, CACHE)), ""))
        diffs.sort(reverse=True)
        converted = len(fragments) - failed
        results[converter] = {
            "pages": len(fragments),
            "failed": failed,
            "text_exact": exact,
            "text_exact_share": round(exact / max(1, converted), 4),
            "kept": {s: {"kept": k, "total": n} for s, (k, n) in kept.items()},
            "mean_word_diff": round(sum(d for d, _, _ in diffs if d < 10**9) / max(1, converted), 2),
            "cpu_ms_per_page": round(1000 * cpu / max(1, converted), 2),
            "worst": [{"page": p, "word_diff": d, "error": e} for d, p, e in diffs[:5] if d > 0],
        }
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", nargs="+", default=[*DOCS, "extraction-dev"])
    parser.add_argument("--limit", type=int, default=None, help="pages per corpus")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "fidelity.json"))
    args = parser.parse_args()
    report: dict = {"corpora": {}}
    for name in args.corpus:
        if name in DOCS and not os.path.isdir(DOCS[name]):
            print(f"{name}: {DOCS[name]} not installed, skipped")
            continue
        report["corpora"][name] = results = measure(name, args.limit)
        for converter, r in results.items():
            kept = ", ".join(f"{s} {v['kept']}/{v['total']}" for s, v in r["kept"].items())
            print(
                f"{name:15s} {converter:17s} {r['pages']:4d} pages, text exact {r['text_exact_share']:.1%}"
                f" ({r['text_exact']}), failed {r['failed']}, words +/- {r['mean_word_diff']:.1f} a page,"
                f" {r['cpu_ms_per_page']:.1f} ms; kept: {kept}"
            )
            for worst in r["worst"]:
                print(f"    {worst['word_diff']:6d}  {worst['page']} {worst['error']}")
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    print(f"saved {os.path.relpath(args.out, ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
