"""Boilerplate across a site (crawler/content/repeats.py) and its use by the fetcher."""

from __future__ import annotations

import lxml.html

from crawler.content import repeats
from crawler.content.repeats import MIN_PAGES, SiteBlocks, drop_repeated
from crawler.engine.worker import page_markdown
from tests.helpers.crawlutil import run_crawl
from tests.helpers.siteserver import Route, SiteServer

SITE = "http://h"
FOOTER = "Subscribe to the weekly letter and get every story first in your inbox."


def article(n: int, landmark: bool = False) -> str:
    """A page of the site: its own story, and the footer box no class names."""
    wrapper = "main" if landmark else "div"
    return (
        f"<html><body><{wrapper} class='story'><h1>Story {n}</h1>"
        f"<p>Story number {n} tells of the council, which met on day {n} and voted on item {n} "
        f"of its agenda, the long list the clerk had sent around the week before.</p>"
        f"<p>The vote on item {n} was close, and the minutes of day {n} show who voted how.</p>"
        f"<div class='box'><p>{FOOTER}</p></div></{wrapper}></body></html>"
    )


def converted(pages: list[tuple[str, str]]) -> list[str]:
    """The Markdown of each (URL, HTML) page of the site, in order, as one fetcher
    converts them: with one ``SiteBlocks`` for them all."""
    blocks = SiteBlocks()
    return [page_markdown(html, url, site=SITE, blocks=blocks)[0].markdown for url, html in pages]


def test_a_block_on_more_than_half_the_pages_is_repeated_once_min_pages_are_seen():
    blocks = SiteBlocks()
    answers = [blocks.observe(SITE, {1, 2} if page % 2 else {1}) for page in range(MIN_PAGES)]
    assert answers[: MIN_PAGES - 1] == [frozenset()] * (MIN_PAGES - 1)  # too few pages yet
    assert answers[-1] == {1}  # on 10 of 10 pages; block 2 on 5 of 10 is not over half
    assert blocks.observe("http://other", {1}) == frozenset()  # counted per site


def test_a_sites_counts_freeze_after_learn_pages_and_learning_sites_are_bounded(monkeypatch):
    monkeypatch.setattr(repeats, "LEARN_PAGES", 12)
    monkeypatch.setattr(repeats, "MAX_LEARNING_SITES", 2)
    blocks = SiteBlocks()
    for _ in range(12):
        frozen = blocks.observe(SITE, {7})
    assert frozen == {7}
    for _ in range(30):  # frozen: later pages do not change the answer
        assert blocks.observe(SITE, {8}) == {7}
    for site in ("http://a", "http://b", "http://c"):
        blocks.observe(site, {1})
    assert list(blocks._learning) == ["http://b", "http://c"]  # the least recent one went


def test_the_repeated_footer_goes_from_a_sites_pages_after_min_pages():
    markdowns = converted([(f"{SITE}/{n}.html", article(n)) for n in range(12)])
    assert [FOOTER in markdown for markdown in markdowns] == [True] * (MIN_PAGES - 1) + [False] * 3
    assert markdowns[11].startswith("# Story 11\n\nStory number 11 tells of the council")
    assert markdowns[11].endswith("the minutes of day 11 show who voted how.")


def test_a_block_repeated_inside_a_main_landmark_stays():
    markdowns = converted([(f"{SITE}/{n}.html", article(n, landmark=True)) for n in range(12)])
    assert all(FOOTER in markdown for markdown in markdowns)


def test_headings_and_list_items_that_repeat_across_a_site_stay():
    # found by a reviewer: every recipe's "Ingredients" and "1 tsp salt" went from the
    # tenth page on
    recipes = [
        (
            f"{SITE}/{n}.html",
            f"<html><body><div><h1>Recipe {n}</h1><p>{FOOTER}</p><p>Recipe {n} is a cake for day {n}, "
            f"baked for {n + 20} minutes in a hot oven, and served warm with cream and fruit.</p>"
            "<h2>Ingredients</h2><ul><li>1 tsp salt</li><li>2 eggs</li></ul><h2>Method</h2>"
            f"<p>Mix it all and bake it for {n + 20} minutes until it is golden on top.</p></div></body></html>",
        )
        for n in range(12)
    ]
    markdown = converted(recipes)[-1]
    assert FOOTER not in markdown
    assert "## Ingredients\n\n- 1 tsp salt\n- 2 eggs\n\n## Method" in markdown


def test_labels_beside_values_images_and_near_copies_stay():
    # found by a reviewer: a spec grid's "Weight" went, a figure went with its caption's
    # repeated text, and a page fetched under many query strings lost its own text
    models = [
        (
            f"{SITE}/{n}.html",
            f"<html><body><div><h1>Model {n}</h1><p>{FOOTER}</p><p>Model {n} is a widget built in year "
            f"{n + 2000}, sold in shops of every town for a price that changed every single year.</p>"
            f"<div class='row'><div>Weight</div><div>{n + 2} kg</div></div>"
            f"<div class='fig'><img src='/m{n}.png' alt='Model {n}'> Click to enlarge</div></div></body></html>",
        )
        for n in range(12)
    ]
    markdown = converted(models)[-1]
    assert FOOTER not in markdown
    assert "Weight\n\n13 kg" in markdown and "Click to enlarge" in markdown
    # one page under 12 query strings: all of its text repeats
    markdown = converted([(f"{SITE}/1.html?sort={n}", article(1)) for n in range(12)])[-1]
    assert markdown.startswith("# Story 1\n\nStory number 1 tells") and FOOTER in markdown


def test_code_and_tables_are_never_repeated_blocks():
    blocks = SiteBlocks()
    html = "<div><pre>make test</pre><table><tr><td>same cell</td></tr></table><p>same line</p></div>"
    for _ in range(MIN_PAGES):
        region = lxml.html.fromstring(html)
        dropped = drop_repeated(region, SITE, blocks)
    assert dropped == 1
    assert region.text_content() == "make testsame cell"


def _crawl_twelve_pages(tmp_path, **settings) -> list[bool]:
    """Crawl the 12-page site with one fetcher; whether each page's record has the footer,
    in the order the fetcher converted them (one fetcher writes one shard, in order)."""
    pages = {f"/{n}.html": article(n) for n in range(12)}
    index = "".join(f"<a href='{path}'>{path}</a> " for path in pages)
    with SiteServer() as server:
        server.routes.update({"/": Route(f"<html><body><main>{index}</main></body></html>")})
        server.routes.update({path: Route(html) for path, html in pages.items()})
        summary, records = run_crawl(tmp_path, server.url("/"), obey_robots=False, workers=1, threads=1, **settings)
        assert summary["pages"] == 13
        assert all(server.hits[path] == 1 for path in pages)
    return [FOOTER in record["markdown"] for url, record in records.items() if url.endswith(".html")]


def test_no_site_repeats_keeps_every_pages_footer(tmp_path):
    from crawler.cli import build_parser, config_from_args

    args = build_parser().parse_args(["http://127.0.0.1/", "--no-site-repeats", "--out", str(tmp_path / "o")])
    assert config_from_args(args).site_repeats is False
    assert _crawl_twelve_pages(tmp_path, site_repeats=False) == [True] * 12


def test_a_crawl_drops_the_sites_repeated_footer_once_its_fetcher_saw_min_pages(tmp_path):
    # one fetcher converts the 12 pages in the order it gets them: the first 9 keep the
    # footer (too few pages seen), the last 3 lose it; the server log has each page once
    assert _crawl_twelve_pages(tmp_path) == [True] * (MIN_PAGES - 1) + [False] * 3
