"""SimHash near-duplicate detection measured on real documentation Markdown.

Usage:
    .venv/bin/python bench/neardup.py [--root /usr/share/doc/python3.11/html] [--rounds 3]
    (results also in bench/results/neardup.json)

Converts every ``.html`` page under ``--root`` to Markdown as the fetcher does
(``_sources``, ``_static`` and ``_images`` left out), then, for each feature choice
(words per shingle 1..4, link targets stripped or kept):

- false positives: pairs of distinct pages (different Markdown) whose fingerprints are
  within 3 bits (brute force over every pair);
- recall: for every page, three edited copies (a different timestamp line, a changed
  footer and navigation line, a cookie banner on top): how many stay within 3 bits;

and, for the crawler's choice, the CPU per page of :func:`crawler.content.neardup.simhash` in
pure Python against a numpy version (best of ``--rounds``), and the memory of a
:class:`crawler.content.neardup.NearDuplicateIndex` per entry (tracemalloc, 100,000 entries).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import time
import tracemalloc

from crawler.content import neardup
from crawler.content.markdown import to_markdown
from crawler.web.decode import decode_html

K = neardup.DEFAULT_MAX_DISTANCE
BASE = "http://127.0.0.1:8000/"


def load_markdown(root: str) -> dict[str, str]:
    """Relative path -> Markdown of every HTML page under ``root``."""
    pages = {}
    for folder, _dirs, files in os.walk(root, followlinks=True):
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(folder, name), root)
            if not name.endswith(".html") or rel.startswith(("_sources", "_static", "_images")):
                continue
            with open(os.path.join(folder, name), "rb") as f:
                text, _ = decode_html(f.read(), "text/html")
            pages[rel] = to_markdown(text, BASE + rel)
    return dict(sorted(pages.items()))


def edits(markdown: str) -> dict[str, tuple[str, str]]:
    """Pairs of versions of one page that a user calls the same page."""
    stamp = "Page generated on {} by the site builder."
    footer_a = "\n\n© 2001-2023 Example Foundation. [Contact](http://h/contact) | [Privacy](http://h/privacy)\n"
    footer_b = (
        "\n\n© 2001-2024 Example Foundation, all rights reserved. [Imprint](http://h/imprint) | "
        "[Privacy policy](http://h/privacy-policy) | [Jobs](http://h/jobs)\n"
    )
    nav_a = "[Home](http://h/) | [Docs](http://h/docs/) | [Blog](http://h/blog/)\n\n"
    nav_b = "[Home](http://h/) | [Docs](http://h/docs/) | [News](http://h/news/) | [Shop](http://h/shop/)\n\n"
    banner = (
        "We use cookies to give you the best experience on our website. By continuing to browse "
        "you agree to our cookie policy. [Accept all](http://h/cookies?accept=1) "
        "[Settings](http://h/cookies)\n\n"
    )
    return {
        "timestamp": (
            markdown + "\n\n" + stamp.format("2024-01-05 10:22:31 UTC"),
            markdown + "\n\n" + stamp.format("2025-11-30 08:05:59 UTC"),
        ),
        "footer_and_nav": (nav_a + markdown + footer_a, nav_b + markdown + footer_b),
        "cookie_banner": (markdown, banner + markdown),
    }


def fingerprint(text: str, words: int, strip_links: bool) -> int:
    return neardup.simhash_of_features(neardup.features(text, words, strip_links))


def simhash_numpy(text: str) -> int:
    """The same fingerprint as :func:`crawler.content.neardup.simhash`, counted with numpy."""
    import numpy as np
    import xxhash

    items = neardup.features(text)
    if not items:
        return 0
    digests = np.frombuffer(b"".join(xxhash.xxh3_64_digest(i) for i in items), dtype=np.uint8)
    bits = np.unpackbits(digests.reshape(-1, 8), axis=1, bitorder="big")  # MSB of byte 0 first
    ones = bits.sum(axis=0)
    chosen = np.packbits(2 * ones > len(items))
    return int.from_bytes(chosen.tobytes(), "big")


def best_ms(fn, items, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for item in items:
            fn(item)
        best = min(best, time.process_time() - started)
    return round(best * 1000 / len(items), 3)


def quality(pages: dict[str, str], words: int, strip_links: bool) -> dict:
    distinct = {}
    for rel, markdown in pages.items():
        distinct.setdefault(markdown, rel)  # identical Markdown: an exact duplicate, not counted
    names = list(distinct.values())
    prints = {rel: fingerprint(pages[rel], words, strip_links) for rel in names}
    close = [
        (a, b, neardup.hamming(prints[a], prints[b]))
        for a, b in itertools.combinations(names, 2)
        if neardup.hamming(prints[a], prints[b]) <= K
    ]
    recall = {}
    for kind in ("timestamp", "footer_and_nav", "cookie_banner"):
        kept = 0
        for rel in names:
            a, b = edits(pages[rel])[kind]
            kept += neardup.hamming(fingerprint(a, words, strip_links), fingerprint(b, words, strip_links)) <= K
        recall[kind] = kept
    return {
        "shingle_words": words,
        "strip_links": strip_links,
        "distinct_pages": len(names),
        "false_pairs": len(close),
        "false_pairs_list": sorted(close)[:20],
        "edited_pairs_kept": recall,
    }


def index_bytes_per_entry(count: int = 100_000) -> float:
    rng = random.Random(1)
    values = [(rng.getrandbits(64), rng.getrandbits(64)) for _ in range(count)]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    index = neardup.NearDuplicateIndex()
    for fp, ref in values:
        index.add(fp, ref)
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return round(used / count, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/usr/share/doc/python3.11/html")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--words", default="1,2,3,4", help="shingle sizes to compare")
    args = parser.parse_args()
    pages = load_markdown(args.root)
    if not pages:
        print(f"neardup: no .html files under {args.root}", file=sys.stderr)
        return 2
    results = {"root": args.root, "pages": len(pages), "k": K, "choices": []}
    for words in (int(w) for w in args.words.split(",")):
        for strip in (True, False):
            row = quality(pages, words, strip)
            results["choices"].append(row)
            print(
                f"shingle {words} words, links {'stripped' if strip else 'kept'}: "
                f"{row['false_pairs']} distinct pairs within {K} bits of {row['distinct_pages']} pages; "
                f"edited copies kept {row['edited_pairs_kept']}"
            )
    texts = list(pages.values())
    assert all(simhash_numpy(t) == neardup.simhash(t) for t in texts), "numpy and pure Python differ"
    results["ms_per_page_pure"] = best_ms(neardup.simhash, texts, args.rounds)
    results["ms_per_page_numpy"] = best_ms(simhash_numpy, texts, args.rounds)
    results["ms_per_page_features_only"] = best_ms(neardup.features, texts, args.rounds)
    results["index_bytes_per_entry_100k"] = index_bytes_per_entry()
    print(
        f"simhash per page: pure Python {results['ms_per_page_pure']} ms, numpy "
        f"{results['ms_per_page_numpy']} ms (features alone {results['ms_per_page_features_only']} ms); "
        f"index: {results['index_bytes_per_entry_100k']} bytes per entry at 100,000 entries"
    )
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "results", "neardup.json"), "w") as f:
        json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
