"""SimHash, Hamming distance and the block-table index (crawler.content.neardup), and the
visited table's one-call content registry (exact and near duplicates)."""

import itertools
import multiprocessing
import os
import re

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.content.neardup import NearDuplicateIndex, features, hamming, simhash, simhash_of_features
from crawler.engine.visited import VisitedTable, start_manager
from tests.helpers.texts import PAGE

FLASK_DOC = "/usr/share/doc/python-flask-doc/html"


# --- features and simhash ----------------------------------------------------------------


def test_features_drop_link_targets_digits_and_markdown_punctuation():
    text = "# Title\n\nSee [the docs](http://h/a.html) on 2024-05-06 12:00, *now*!"
    assert features(text) == [b"title see", b"see the", b"the docs", b"docs on", b"on now"]
    assert features(text, strip_links=False)[:6] == [
        b"title see",
        b"see the",
        b"the docs",
        b"docs http",
        b"http h",
        b"h a",
    ]
    assert features("one") == [b"one"]
    assert features("one two") == [b"one two"]
    assert features("12 34 | ** --") == []


def _features_of_text(text: str) -> list[bytes]:
    """The rule of features() read on the text itself, for comparison."""
    text = re.sub(r"\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*(?:\s+\"[^\"]*\")?\)|<https?://[^>\s]*>", "]", text)
    words = [word for word in re.findall(r"\w+", text.lower()) if not word.isdigit()]
    if len(words) <= 2:
        return [" ".join(words).encode()] if words else []
    return [f"{a} {b}".encode() for a, b in zip(words, words[1:])]


@given(st.text(alphabet=st.sampled_from("aZ_09 -.\n\u00e9\u00c9\u2019\u00b2\u0663\u4e2d\u00a0\u2003\ud800](<>:/\"")))
def test_features_read_on_bytes_are_the_words_of_the_text(text):
    # features() splits UTF-8 bytes and only the runs that hold a non-ASCII character as text:
    # letters past ASCII (é, 中), punctuation (’), digits (², ٣), spaces (nbsp, em space) and
    # a lone surrogate (text loaded back from JSON may hold one)
    assert features(text) == _features_of_text(text)


def test_features_of_text_past_ascii():
    expected = ["größe s", "s x\u0663", "x\u0663 中文", "中文 a", "a b"]  # "²2" and "٣" are digits
    assert features("Größe’s ²2 x\u0663 \u0663 中文 a\u00a0b") == [shingle.encode() for shingle in expected]


def test_simhash_known_values():
    assert simhash("") == 0
    assert simhash("2024-01-01") == 0  # no words left
    # one feature: the fingerprint is that feature's xxh3-64
    assert simhash("word") == xxhash.xxh3_64_intdigest(b"word") == 0xE3CE369CF66C5C55
    assert simhash("Hello, *world*") == xxhash.xxh3_64_intdigest(b"hello world") == 0xD447B1EA40E6988B
    assert simhash("The quick brown fox jumps over the lazy dog") == 0x12BF80024A210544


def test_simhash_of_three_features_is_their_bitwise_majority():
    a, b, c = (xxhash.xxh3_64_intdigest(x) for x in (b"a", b"b", b"c"))
    assert simhash_of_features([b"a", b"b", b"c"]) == (a & b) | (a & c) | (b & c) == 0xC642239E4698CC1F


@given(st.lists(st.binary(max_size=12), max_size=40))
def test_simhash_of_features_matches_a_bit_by_bit_count(items):
    hashes = [xxhash.xxh3_64_intdigest(i) for i in items]
    expected = sum(1 << bit for bit in range(64) if 2 * sum(h >> bit & 1 for h in hashes) > len(hashes))
    assert simhash_of_features(items) == expected


def test_hamming():
    assert hamming(0, 0) == 0
    assert hamming(0, 2**64 - 1) == 64
    assert hamming(0b1011, 0b0110) == 3


def test_distances_of_edited_copies_of_a_126_word_page():
    """Exact distances (measured): a changed timestamp line is invisible, a changed
    footer moves 3 bits (within k), a cookie banner on top 4 (a short page is not
    caught: README, "Near duplicates"), another page of the same site 28."""
    stamped = PAGE + "\n\nLast updated on 2024-01-05 10:22:31."
    restamped = PAGE + "\n\nLast updated on 2025-11-30 08:05:59."
    assert simhash(stamped) == simhash(restamped)  # digits are not features
    footer_a = PAGE + "\n\n© Pallets. [Privacy](http://h/privacy) | [Contact](http://h/contact)"
    footer_b = (
        PAGE + "\n\n© 2010 Pallets Projects, all rights reserved. [Imprint](http://h/imprint)"
        " | [Privacy policy](http://h/pp)"
    )
    assert hamming(simhash(footer_a), simhash(footer_b)) == 3
    banner = "We use cookies to give you the best experience. [Accept](http://h/c?a=1)\n\n" + PAGE
    assert hamming(simhash(PAGE), simhash(banner)) == 4
    other = (
        "# Quickstart\n\nEager to get started? This page gives a good introduction to Flask. "
        "Follow Installation to set up a project and install Flask first.\n\nA Minimal "
        "Application\n\nA minimal Flask application looks something like this: it imports "
        "the Flask class, creates an instance, and uses the route decorator to tell Flask "
        "what URL should trigger our function."
    )
    assert hamming(simhash(PAGE), simhash(other)) == 28


# --- the index ---------------------------------------------------------------------------


def test_index_blocks_cover_the_64_bits():
    assert NearDuplicateIndex().blocks == ((0, 0xFFFF), (16, 0xFFFF), (32, 0xFFFF), (48, 0xFFFF))
    assert [mask.bit_length() for _, mask in NearDuplicateIndex(4).blocks] == [13, 13, 12, 13, 13]
    assert NearDuplicateIndex(0).blocks == ((0, 2**64 - 1),)
    with pytest.raises(ValueError, match="max_distance must be from 0 to 63"):
        NearDuplicateIndex(64)


def test_index_finds_the_closest_entry_within_k_bits():
    index = NearDuplicateIndex()
    base = 0x0123456789ABCDEF
    assert index.nearest(base) is None
    index.add(base ^ 0b111, 10)  # 3 bits away
    index.add(base ^ (1 << 63), 11)  # 1 bit away
    index.add(base ^ 0b1111, 12)  # 4 bits away: too far
    assert index.nearest(base) == (11, 1)
    assert index.nearest(base, exclude=11) == (10, 3)
    assert index.nearest(base ^ 0b1111) == (12, 0)
    # one bit flipped in every block: 4 bits from base, no block in common with it
    assert index.nearest(base ^ (1 | 1 << 16 | 1 << 32 | 1 << 48)) is None
    assert len(index) == 3


def test_index_ties_go_to_the_entry_added_first():
    index = NearDuplicateIndex()
    index.add(0b01, 1)
    index.add(0b10, 2)
    assert index.nearest(0) == (1, 1)


def test_add_or_find_does_not_find_itself_or_store_a_fingerprint_twice():
    index = NearDuplicateIndex()
    assert index.add_or_find(0xFF, 7) is None
    assert index.add_or_find(0xFF, 7) is None  # the same page again
    assert len(index) == 1
    assert index.add_or_find(0xFE, 8) == (7, 1)
    assert index.add_or_find(0xFF, 9) == (7, 0)  # same fingerprint: found, not stored again
    assert len(index) == 2
    for reference in range(10, 5000):  # a generated site: one fingerprint, one entry
        assert index.add_or_find(0x1234_5678_9ABC_DEF0, reference) == (None if reference == 10 else (10, 0))
    assert len(index) == 3


fingerprints = st.integers(0, 2**64 - 1)


@settings(max_examples=200, deadline=None)
@given(
    k=st.integers(0, 6),
    stored=st.lists(fingerprints, max_size=30),
    flips=st.lists(st.lists(st.integers(0, 63), max_size=8), max_size=30),
    query=fingerprints,
)
def test_index_agrees_with_brute_force(k, stored, flips, query):
    """Pigeonhole: every stored fingerprint within k bits shares a block with the query,
    so the index finds exactly what comparing against every entry finds."""
    near_query = []  # entries made close to the query, so there is something to find
    for bits in flips:
        value = query
        for bit in bits:
            value ^= 1 << bit
        near_query.append(value)
    index = NearDuplicateIndex(k)
    entries = stored + near_query
    for reference, value in enumerate(entries):
        index.add(value, reference)
    within = [
        (hamming(value, query), reference) for reference, value in enumerate(entries) if hamming(value, query) <= k
    ]
    expected = None if not within else (min(within)[1], min(within)[0])
    assert index.nearest(query) == expected


# --- the visited table's content registry ------------------------------------------------


def test_register_content_exact_then_near_then_distinct():
    table = VisitedTable(4)
    assert table.register_content(0xA1, 0xF0F0, "http://h/a") == (None, None, None)
    assert table.register_content(0xA1, 0xF0F0, "http://h/copy") == ("http://h/a", None, None)
    assert table.register_content(0xB2, 0xF0F3, "http://h/near") == (None, "http://h/a", 2)
    assert table.register_content(0xC3, 0x0F0F0000, "http://h/other") == (None, None, None)
    assert table.register_content(0xB2, 0xF0F3, "http://h/near") == (None, "http://h/a", 2)  # again
    assert table.first_content(0xA1, "http://h/x") == "http://h/a"  # the exact registry is shared


def test_register_contents_reloads_a_registry_as_register_content_built_it():
    table = VisitedTable(4)  # an earlier run's pages, in order (exact duplicates left out)
    assert (
        table.register_contents(
            [(0xA1, 0xF0F0, "http://h/a"), (0xB2, 0xF0F3, "http://h/near"), (0xA1, 0xF0F0, "http://h/other")]
        )
        == 2
    )
    assert table.register_content(0xA1, 0xF0F0, "http://h/b") == ("http://h/a", None, None)
    assert table.register_content(0xD4, 0xF0F1, "http://h/c") == (None, "http://h/a", 1)


def test_register_content_through_the_manager():
    manager = start_manager(multiprocessing.get_context("spawn"))
    try:
        table = manager.VisitedTable(8)
        assert table.register_content(1, 2**64 - 1, "http://h/a") == (None, None, None)
        assert table.register_content(2, 2**64 - 2, "http://h/b") == (None, "http://h/a", 1)
        assert table.register_content(1, 0, "http://h/c") == ("http://h/a", None, None)
    finally:
        manager.shutdown()


@pytest.mark.skipif(
    not os.path.isdir(FLASK_DOC), reason="Debian's python-flask-doc is not installed (.ci/run installs it)"
)
def test_flask_doc_distinct_pages_are_not_near_duplicates():
    """Measured: of flask-doc's 77 HTML pages (77 distinct Markdown texts), no two
    distinct ones are within 3 bits."""
    from crawler.content.markdown import to_markdown
    from crawler.web.decode import decode_html

    texts = {}
    for folder, _dirs, files in os.walk(FLASK_DOC):
        for name in files:
            rel = os.path.relpath(os.path.join(folder, name), FLASK_DOC)
            if name.endswith(".html") and not rel.startswith(("_sources", "_static", "_images")):
                with open(os.path.join(folder, name), "rb") as f:
                    text, _ = decode_html(f.read(), "text/html")
                texts[rel] = to_markdown(text, "http://127.0.0.1:8000/" + rel)
    distinct = {markdown: rel for rel, markdown in sorted(texts.items())}
    prints = {rel: simhash(markdown) for markdown, rel in distinct.items()}
    close = [(a, b) for a, b in itertools.combinations(sorted(prints), 2) if hamming(prints[a], prints[b]) <= 3]
    assert (len(texts), len(distinct), close) == (77, 77, [])
