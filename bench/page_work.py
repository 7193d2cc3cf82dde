"""Per-page CPU of the page work alone (no fetch), in one process, over a folder of HTML.

Usage:
    .venv/bin/python bench/page_work.py [--root /usr/share/doc/python3.11/html] [--rounds 2]
    (BENCH_QUICK=1: one round; results also in bench/results/page_work.json)

Reads every ``.html`` file under ``--root`` into memory first, then times (process CPU,
best of ``--rounds``) each step the fetcher runs on a page: decode, the one parse (lxml), the links read from
the tree, link resolution and normalization (with a fetcher's memo, empty at each round's
start), main-content selection and Markdown on the tree (the default converter; the
other one and the whole page's Markdown, ``--keep-boilerplate``, are timed for comparison
and left out of the total), the SimHash of the Markdown, JSON. The total is all of it run
page by page, in the fetcher's order (``PageProcessor._page``), the figure the limit is
computed from; the steps run apart, each over every page, sum to a little more (each
step's input is built ahead, and 530 trees held at once miss the caches). If
beautifulsoup4 is installed (``pip install -e '.[bench]'``), it also times the same link
extraction with a full BeautifulSoup tree and with a SoupStrainer, and checks that all
three find the same links.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from crawler.content.convert import CONVERTERS, DEFAULT_CONVERTER
from crawler.content.document import parse
from crawler.content.links import LINK_ATTRIBUTES, effective_base, extract, link_targets, links_of
from crawler.content.neardup import simhash
from crawler.engine.worker import page_markdown
from crawler.web.decode import decode_html
from crawler.web.urlnorm import RequestUrlMemo

TAGS = tuple(LINK_ATTRIBUTES)


def soup_links(text: str, strainer=None) -> tuple:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(text, "lxml", parse_only=strainer)
    return tuple(
        el.get(LINK_ATTRIBUTES[el.name])
        for el in soup.find_all(list(TAGS))
        if el.get(LINK_ATTRIBUTES[el.name]) is not None
    )


def best_ms_per_page(fn, items, rounds: int, clock=time.process_time) -> float:
    """Best of ``rounds``: ms of ``clock`` (process CPU by default) per item. ``items``
    may be a function making them, called before each round outside the clock (a step
    that changes its input gets fresh input)."""
    best = float("inf")
    for _ in range(rounds):
        batch = items() if callable(items) else items
        started = clock()
        for item in batch:
            fn(item)
        best = min(best, clock() - started)
    return best * 1000 / len(batch)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/usr/share/doc/python3.11/html")
    parser.add_argument("--rounds", type=int, default=1 if os.environ.get("BENCH_QUICK") else 2)
    args = parser.parse_args()
    files = sorted(
        os.path.join(d, f) for d, _, fs in os.walk(args.root, followlinks=True) for f in fs if f.endswith(".html")
    )
    if not files:
        print(f"page_work: no .html files under {args.root}", file=sys.stderr)
        return 2
    bodies = []
    for path in files:
        with open(path, "rb") as f:
            bodies.append(("http://127.0.0.1/" + os.path.relpath(path, args.root), f.read()))
    texts = [(url, decode_html(body, "text/html")[0]) for url, body in bodies]
    pages = [(url, text, extract(text)) for url, text in texts]
    markdowns = [page_markdown(text, effective_base(url, page))[0].markdown for url, text, page in pages]
    memo = [RequestUrlMemo()]  # a fetcher keeps one; each round starts with an empty one

    def fresh_memo():
        memo[0] = RequestUrlMemo()
        return pages

    def fresh_trees():  # the main-content step changes the tree it is given
        return [(url, text, page, parse(text)) for url, text, page in pages]

    steps = {
        "decode": (lambda item: decode_html(item[1], "text/html"), bodies),
        "parse (lxml, once a page)": (lambda item: parse(item[1]), texts),
        "links from the tree": (lambda item: links_of(item[3]), fresh_trees),
        "resolve + normalize": (lambda item: link_targets(item[0], item[2], memo[0]), fresh_memo),
        f"main content + markdown ({DEFAULT_CONVERTER})": (
            lambda item: page_markdown(item[1], effective_base(item[0], item[2]), root=item[3]),
            fresh_trees,
        ),
        "simhash (near duplicates)": (simhash, markdowns),
        "json record": (lambda markdown: json.dumps({"markdown": markdown}, ensure_ascii=False), markdowns),
    }
    rows = {}
    for name, (fn, items) in steps.items():
        rows[name] = best_ms_per_page(fn, items, args.rounds)
    apart = rows["(sum of the steps run apart)"] = sum(rows.values())

    def whole(item):  # PageProcessor._page's page work, in its order, one page at a time
        url, body = item
        text = decode_html(body, "text/html")[0]
        root = parse(text)
        page = links_of(root)
        base = effective_base(url, page)
        markdown = page_markdown(text, base, root=root)[0].markdown
        link_targets(url, page, memo[0])
        simhash(markdown)
        json.dumps({"markdown": markdown}, ensure_ascii=False)

    def fresh_memo_bodies():
        memo[0] = RequestUrlMemo()
        return bodies

    total = rows["page work, page by page (as a fetcher)"] = best_ms_per_page(whole, fresh_memo_bodies, args.rounds)
    for converter in CONVERTERS:
        if converter != DEFAULT_CONVERTER:
            rows[f"(compare) main content + markdown ({converter})"] = best_ms_per_page(
                lambda item, name=converter: page_markdown(
                    item[1], effective_base(item[0], item[2]), converter=name, root=item[3]
                ),
                fresh_trees,
                args.rounds,
            )
    rows[f"(compare) markdown of the whole page ({DEFAULT_CONVERTER}, --keep-boilerplate)"] = best_ms_per_page(
        lambda item: page_markdown(item[1], effective_base(item[0], item[2]), keep_boilerplate=True, root=item[3]),
        fresh_trees,
        args.rounds,
    )
    try:
        from bs4 import SoupStrainer
    except ImportError:
        SoupStrainer = None
    if SoupStrainer is not None:
        strainer = SoupStrainer(list(TAGS))
        same = all(soup_links(t) == extract(t).hrefs == soup_links(t, strainer) for _, t in texts)
        rows["(compare) BeautifulSoup full tree"] = best_ms_per_page(lambda i: soup_links(i[1]), texts, args.rounds)
        rows["(compare) BeautifulSoup + SoupStrainer"] = best_ms_per_page(
            lambda i: soup_links(i[1], strainer), texts, args.rounds
        )
        rows["(compare) same links from all three"] = float(same)
    print(f"{len(files)} pages under {args.root}, best of {args.rounds}, ms of CPU per page")
    for name, value in rows.items():
        print(f"  {name:<42} {value:8.2f}")
    print(f"  {'total page work (page by page)':<42} {total:8.2f}  (steps apart: {apart:.2f})")
    cores = len(os.sched_getaffinity(0))
    print(f"  limit on {cores} cores: {cores} / {total:.2f} ms = {1000 * cores / total:.1f} pages/s")
    results = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "page_work.json"), "w") as f:
        json.dump(
            {
                "root": args.root,
                "pages": len(files),
                "rounds": args.rounds,
                "ms_per_page": {k: round(v, 3) for k, v in rows.items()},
                "total_ms_per_page": round(total, 3),
                "cores": cores,
                "limit_pages_per_s": round(1000 * cores / total, 1),
            },
            f,
            indent=1,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
