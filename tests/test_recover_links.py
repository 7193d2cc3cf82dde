"""A resume's recovery of the links a crashed run claimed: the dispatcher's guards apply."""

from crawler.config import CrawlConfig
from crawler.engine.resume import _recover_links
from crawler.engine.statestore import FRONTIER, SKIPPED, StateStore
from crawler.vocabulary import EdgeKind

SITE = "http://127.0.0.1:8000"


def test_recovered_links_pass_the_trap_and_length_guards(tmp_path):
    config = CrawlConfig(seeds=(SITE + "/",), out_dir=str(tmp_path), max_url_length=80).validated()
    deep = SITE + "/x" * 21  # 21 segments: past the default 20
    repeated = SITE + "/docs/docs/docs/a"  # a segment three times in a row: past the default 2
    long = SITE + "/" + "l" * 80
    links = [SITE + "/ok", deep, repeated, long]
    with open(tmp_path / "edges-00.tsv", "w", encoding="utf-8") as f:
        for target in links:
            f.write(f"{SITE}/\t{target}\t{EdgeKind.LINK}\t1\n")
    records = {SITE + "/": {"url": SITE + "/", "depth": 0}}
    with StateStore.open(str(tmp_path)) as store:
        assert _recover_links(config, store, records) == 1
        assert [(store.state_of(url), store.reason_of(url)) for url in links] == [
            (FRONTIER, None),
            (SKIPPED, "too many path segments"),
            (SKIPPED, "repeated path segment"),
            (SKIPPED, "url too long"),
        ]
