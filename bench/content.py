"""Extra CPU per page of main-content selection (crawler/content/main.py), over a folder of HTML.

Usage:
    .venv/bin/python bench/content.py [--root /usr/share/doc/python3.11/html] [--rounds 2]
    .venv/bin/python bench/content.py --compare [--root DIR]   # the extractor comparison
    .venv/bin/python bench/content.py --sizes   # selection time of one big page, by size
    .venv/bin/python bench/content.py --devset [--limit N]   # precision/recall on the dev set
    .venv/bin/python bench/content.py --repeats [--root DIR]   # lines repeated across a site
    (BENCH_QUICK=1: one round; results also in bench/results/content.json)

Reads every ``.html`` file under ``--root`` into memory, then times (process CPU, best of
``--rounds``) the selection (:func:`crawler.content.main.main_content`), html2text on what it
selects and html2text on the whole page; prints the net extra CPU per page (selection +
Markdown of the selection - Markdown of the whole page) and the share of Markdown
characters removed.

``--compare`` measures each candidate against the Sphinx main element (``role=main``) of
every page: share of its words found (multiset), of its ``p``/``pre``/``h1-h6``/``dt``/
``td``/``th`` blocks found verbatim (whitespace collapsed, pilcrows ignored), the same on
link-dense pages (link text over half the main element's text), the share of words outside
the main element that survive (nav), the Markdown code blocks, tables, headings and links
kept, and CPU ms per page of the selection (results in bench/results/content_compare.json).
The reference Markdown is the main element's, tidied as the crawler tidies any
fragment before conversion (:func:`crawler.content.fragment.prepare`: a layout table,
one holding a list or a quotation in a cell, is written as blocks), so the counts
measure what the selection keeps, not the tidying.

``--devset`` scores main content on the extraction dev set
(``../shared/datasets/extraction-dev/``, unpacked into ``.cache/``): for each page, each of its
``with`` snippets found in the output is a true positive, each missing one a false
negative, each of its ``without`` snippets found a false positive; precision, recall and
F1 over the totals. Snippets and output are compared with runs of whitespace as one
space, after Markdown link targets (``](...)`` -> ``]``), ``**``/``__`` and backslash
escapes are removed from the output. Contenders, in one process, one page at a time:
the crawler's Markdown as a crawl writes it (``page_markdown``), trafilatura 2.x
``extract(output_format="markdown", include_links, include_tables,
include_formatting)``, and html2text on the whole page; with the median and mean thread
CPU per page, and those of the crawler's selection alone (``main_content``, no Markdown)
(results in bench/results/content_devset.json).

``--repeats`` converts every page of ``--root`` with its ``role="main"`` attribute
deleted (so no page has a landmark), in path order as one fetcher would, twice: without
and with the site's repeated text blocks dropped (:mod:`crawler.content.repeats`, one
``SiteBlocks`` for the site), and counts the Markdown lines (stripped, non-empty) that
appear on more than half of the pages, and the pages' Markdown characters
(results in bench/results/content_repeats.json).

``--sizes`` times the selection of one page without a landmark, made of ``<div><p>``
paragraphs, at 0.3, 1 and 2 MB of HTML: below ``crawler.content.main.MAX_EXTRACT_CHARS`` the
extractor runs, above it not.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import time

import lxml.html

from crawler.content.fragment import prepare
from crawler.content.main import main_content
from crawler.content.markdown import to_markdown
from crawler.web.decode import decode_html

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from page_work import best_ms_per_page  # noqa: E402

WORD = re.compile(r"\w+")
BLOCKS = ("p", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "th", "td")
ROLE_MAIN = re.compile(r'\srole="main"')


def load(root: str) -> list[tuple[str, str]]:
    pages = []
    for folder, _, files in os.walk(root, followlinks=True):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    pages.append(
                        ("http://127.0.0.1/" + os.path.relpath(path, root), decode_html(f.read(), "text/html")[0])
                    )
    return sorted(pages)


def _readability(html, url):
    import readability

    return readability.Document(html, url=url).summary(html_partial=True)


def _trafilatura(html, url):
    import trafilatura

    return trafilatura.extract(
        html,
        output_format="html",
        include_links=True,
        include_tables=True,
        include_formatting=True,
        include_comments=False,
        favor_recall=True,
        deduplicate=False,
    )


CANDIDATES = {
    "readability-lxml": _readability,
    "trafilatura": _trafilatura,
    "crawler.content.main": lambda html, url: main_content(html),
    "trafilatura, role=main removed": lambda html, url: _trafilatura(ROLE_MAIN.sub("", html), url),
    "crawler.content.main, role=main removed": lambda html, url: main_content(ROLE_MAIN.sub("", html)),
}


def _norm(text: str) -> str:
    return " ".join(text.replace("\u00b6", " ").split())


def _text(html: str | None) -> str:
    if not html:
        return ""
    root = lxml.html.document_fromstring(html)
    for bad in root.xpath("//script|//style|//head"):
        bad.drop_tree()
    return root.text_content()


def _md_counts(md: str) -> dict:
    lines = md.split("\n")
    return {
        "code": sum(x.lstrip().startswith("```") for x in lines) // 2,
        "table": sum(x.startswith("| ---") for x in lines),
        "heading": sum(bool(re.match(r"#+ ", x)) for x in lines),
        "link": md.count("]("),
    }


def _prepared(element: lxml.html.HtmlElement) -> str:
    """The HTML of ``element`` as the crawler converts a fragment (tidied, in place)."""
    prepare(element)
    return lxml.html.tostring(element, encoding="unicode", method="html")


def compare(pages) -> dict:
    refs = []
    for url, html in pages:
        main = lxml.html.document_fromstring(html).xpath("//*[@role='main']")[0]
        text = main.text_content()
        links = sum(len(a.text_content()) for a in main.iter("a"))
        refs.append(
            {
                "words": collections.Counter(WORD.findall(text)),
                "blocks": [b for b in (_norm(e.text_content()) for e in main.iter(*BLOCKS)) if b],
                "chrome": collections.Counter(WORD.findall(_text(html))) - collections.Counter(WORD.findall(text)),
                "dense": links > 0.5 * max(1, len(_norm(text))),
                "md": _md_counts(to_markdown(_prepared(main), url)),
            }
        )
    results = {}
    for name, fn in CANDIDATES.items():
        cpu, agg = 0.0, collections.Counter()
        for (url, html), ref in zip(pages, refs):
            started = time.process_time()
            out = fn(html, url)
            cpu += time.process_time() - started
            out = out or html  # nothing selected: the whole page
            text = _text(out)
            words = collections.Counter(WORD.findall(text))
            prefix = "dense " if ref["dense"] else ""
            agg[prefix + "words"] += sum(ref["words"].values())
            agg[prefix + "words found"] += sum((words & ref["words"]).values())
            flat = _norm(text)
            agg[prefix + "blocks"] += len(ref["blocks"])
            agg[prefix + "blocks found"] += sum(b in flat for b in ref["blocks"])
            agg["chrome"] += sum(ref["chrome"].values())
            agg["chrome kept"] += sum(((words - ref["words"]) & ref["chrome"]).values())
            md = _md_counts(to_markdown(out, url))
            for key, n in ref["md"].items():
                agg["md " + key] += n
                agg["md kept " + key] += min(n, md[key])
        row = {
            "words": agg["words found"] / max(1, agg["words"]),
            "blocks": agg["blocks found"] / max(1, agg["blocks"]),
            "link-dense words": agg["dense words found"] / max(1, agg["dense words"]),
            "link-dense blocks": agg["dense blocks found"] / max(1, agg["dense blocks"]),
            "nav kept": agg["chrome kept"] / max(1, agg["chrome"]),
            **{key: f"{agg['md kept ' + key]}/{agg['md ' + key]}" for key in ("code", "table", "heading", "link")},
            "ms": cpu * 1000 / len(pages),
        }
        results[name] = row
        print(
            f"  {name:<36} " + " ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()),
            flush=True,
        )
    return {"link_dense_pages": sum(r["dense"] for r in refs), "candidates": results}


def sizes() -> int:
    """Print the CPU seconds of :func:`main_content` on one synthetic page per size."""
    para = "<div><p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do %d.</p></div>\n"
    for target in (300_000, 990_000, 2_000_000):
        parts, size = [], 0
        while size < target:
            parts.append(para % len(parts))
            size += len(parts[-1])
        html = "<html><body>" + "".join(parts) + "</body></html>"
        started = time.process_time()
        main_content(html)
        print(f"  {len(html):>9,} characters of HTML: {time.process_time() - started:6.2f} s")
    return 0


_LINK_TARGET = re.compile(r"\]\((?:[^()\s]|\([^()]*\))*(?:\s+\"[^\"]*\")?\)")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _snippet_text(markdown: str) -> str:
    """The output as the dev-set metric reads it (the module docstring)."""
    text = _ESCAPE.sub(r"\1", _LINK_TARGET.sub("]", markdown).replace("**", "").replace("__", ""))
    return " ".join(text.split())


def _crawler_markdown(html: str, url: str) -> str:
    from crawler.engine.worker import page_markdown

    return page_markdown(html, url)[0].markdown


def _trafilatura_markdown(html: str, url: str) -> str:
    import trafilatura

    return (
        trafilatura.extract(
            html,
            url=url,
            output_format="markdown",
            include_links=True,
            include_tables=True,
            include_formatting=True,
        )
        or ""
    )


def _html2text_whole(html: str, url: str) -> str:
    from crawler.engine.worker import page_markdown

    return page_markdown(html, url, keep_boilerplate=True, converter="html2text")[0].markdown


def devset(limit: int | None) -> int:
    from fidelity import CACHE, corpus_pages  # unpacks the dev set on first use

    corpus_pages("extraction-dev", 1)
    with open(os.path.join(CACHE, "truth.json"), encoding="utf-8") as f:
        truth = json.load(f)
    pages = []
    for url, case in sorted(truth.items())[:limit]:
        with open(os.path.join(CACHE, "pages", case["file"]), "rb") as f:
            pages.append((url, decode_html(f.read(), "text/html")[0], case))
    contenders = {
        "crawler (main content, html-to-markdown)": _crawler_markdown,
        "trafilatura markdown": _trafilatura_markdown,
        "html2text, whole page": _html2text_whole,
    }
    out: dict = {"pages": len(pages), "contenders": {}}
    print(f"{len(pages)} dev-set pages: precision, recall, F1; thread CPU ms per page")
    for name, convert in contenders.items():
        found = missed = wrong = 0
        times = []
        for url, html, case in pages:
            started = time.thread_time()
            text = _snippet_text(convert(html, url))
            times.append((time.thread_time() - started) * 1000)
            hits = sum(" ".join(s.split()) in text for s in case["with"])
            found, missed = found + hits, missed + len(case["with"]) - hits
            wrong += sum(" ".join(s.split()) in text for s in case["without"])
        precision = found / (found + wrong) if found + wrong else 0.0
        recall = found / (found + missed) if found + missed else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        times.sort()
        median, mean = times[len(times) // 2], sum(times) / len(times)
        print(f"  {name:<42} P {precision:.3f}  R {recall:.3f}  F1 {f1:.3f}  median {median:6.1f}  mean {mean:6.1f}")
        out["contenders"][name] = {
            "precision": round(precision, 4),
            "recall": round(recall, 4),
            "f1": round(f1, 4),
            "true_positives": found,
            "false_negatives": missed,
            "false_positives": wrong,
            "median_ms": round(median, 2),
            "mean_ms": round(mean, 2),
        }
    times = []
    for _url, html, _case in pages:  # the selection alone, without the Markdown
        started = time.thread_time()
        main_content(html)
        times.append((time.thread_time() - started) * 1000)
    times.sort()
    out["selection_ms"] = {"median": round(times[len(times) // 2], 2), "mean": round(sum(times) / len(times), 2)}
    print(
        f"  {'selection alone (crawler.content.main)':<42} {'':36} median {times[len(times) // 2]:6.1f}  "
        f"mean {sum(times) / len(times):6.1f}"
    )
    results = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "content_devset.json"), "w") as f:
        json.dump(out, f, indent=1)
    return 0


def repeats(root: str) -> int:
    from crawler.content.repeats import SiteBlocks
    from crawler.engine.worker import page_markdown

    pages = [(url, ROLE_MAIN.sub(" ", html)) for url, html in load(root)]
    out: dict = {"root": root, "pages": len(pages)}
    print(f"{len(pages)} pages under {root}, role=main removed, in path order")
    for name, blocks in (("without repeated-block removal", None), ("with repeated-block removal", SiteBlocks())):
        lines: collections.Counter[str] = collections.Counter()
        chars = 0
        for url, html in pages:
            markdown = page_markdown(html, url, site="http://127.0.0.1", blocks=blocks)[0].markdown
            chars += len(markdown)
            lines.update({line.strip() for line in markdown.splitlines() if line.strip()})
        common = sorted(line for line, count in lines.items() if count > len(pages) / 2)
        print(f"  {name:<32} lines on over half the pages: {len(common):3d}  Markdown characters: {chars:,}")
        for line in common[:10]:
            print(f"      {line[:100]}")
        out[name] = {"lines_on_over_half": common, "markdown_chars": chars}
    results = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "content_repeats.json"), "w") as f:
        json.dump(out, f, indent=1)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/usr/share/doc/python3.11/html")
    parser.add_argument("--rounds", type=int, default=1 if os.environ.get("BENCH_QUICK") else 2)
    parser.add_argument("--compare", action="store_true", help="compare the extractors instead")
    parser.add_argument("--sizes", action="store_true", help="time one big page by size instead")
    parser.add_argument("--devset", action="store_true", help="score main content on the extraction dev set")
    parser.add_argument("--limit", type=int, default=None, help="--devset: the first N pages only")
    parser.add_argument("--repeats", action="store_true", help="count lines repeated across the site")
    args = parser.parse_args()
    if args.sizes:
        return sizes()
    if args.devset:
        return devset(args.limit)
    if args.repeats:
        return repeats(args.root)
    pages = load(args.root)
    if not pages:
        print(f"content: no .html files under {args.root}", file=sys.stderr)
        return 2
    results = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(results, exist_ok=True)
    if args.compare:
        print(f"{len(pages)} pages under {args.root}: share of the role=main element kept")
        out = {"root": args.root, "pages": len(pages), **compare(pages)}
        with open(os.path.join(results, "content_compare.json"), "w") as f:
            json.dump(out, f, indent=1)
        return 0
    selected = [(url, main_content(html), html) for url, html in pages]
    rows = {
        "selection (crawler.content.main)": best_ms_per_page(lambda p: main_content(p[1]), pages, args.rounds),
        "html2text, main content": best_ms_per_page(
            lambda s: to_markdown(s[1] if s[1] is not None else s[2], s[0]), selected, args.rounds
        ),
        "html2text, whole page": best_ms_per_page(lambda p: to_markdown(p[1], p[0]), pages, args.rounds),
    }
    extra = rows["selection (crawler.content.main)"] + rows["html2text, main content"] - rows["html2text, whole page"]
    whole_chars = sum(len(to_markdown(html, url)) for url, html in pages)
    main_chars = sum(len(to_markdown(s if s is not None else html, url)) for url, s, html in selected)
    removed = 1 - main_chars / whole_chars
    kinds = collections.Counter("main" if s is not None else "page" for _, s, _ in selected)
    print(f"{len(pages)} pages under {args.root}, best of {args.rounds}, ms of CPU per page")
    for name, value in rows.items():
        print(f"  {name:<36} {value:8.2f}")
    print(f"  {'net extra CPU per page':<36} {extra:8.2f}")
    print(f"  Markdown characters removed: {removed:.1%} ({whole_chars:,} -> {main_chars:,}); content: {dict(kinds)}")
    with open(os.path.join(results, "content.json"), "w") as f:
        json.dump(
            {
                "root": args.root,
                "pages": len(pages),
                "rounds": args.rounds,
                "ms_per_page": {k: round(v, 3) for k, v in rows.items()},
                "net_extra_ms_per_page": round(extra, 3),
                "markdown_chars_whole": whole_chars,
                "markdown_chars_main": main_chars,
                "share_removed": round(removed, 4),
                "content": dict(kinds),
            },
            f,
            indent=1,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
