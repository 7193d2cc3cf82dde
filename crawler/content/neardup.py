"""Near-duplicate pages: 64-bit SimHash fingerprints and an index that finds a stored
fingerprint within ``k`` bits. Pure: no I/O, no process state.

SimHash (Charikar 2002, "Similarity estimation techniques from rounding algorithms"):
every feature of a text is hashed to 64 bits; bit ``i`` of the fingerprint is 1 when
more features have bit ``i`` set than clear. Texts that share most features get
fingerprints that differ in few bits, so near duplicates are pairs whose Hamming
distance is small. Manku, Jain & Das Sarma 2007 ("Detecting near-duplicates for web
crawling", WWW '07) measured ``k = 3`` bits of 64 as the threshold for web pages and
find all stored fingerprints within ``k`` bits with tables keyed by blocks of bits:
split the 64 bits into ``k + 1`` blocks; two fingerprints that differ in at most ``k``
bits agree exactly on at least one block (pigeonhole), so one exact lookup per block
finds every candidate, and only candidates are compared bit by bit.

Features (:func:`features`): the Markdown text with its link and image targets
removed, lower-cased, cut into words (``\\w+``), words made only of digits dropped,
every run of :data:`SHINGLE_WORDS` consecutive words one feature (a word shingle),
each shingle hashed with xxh3-64. Link targets are dropped because they carry the
crawl's own host and port and per-page anchors; digit-only words because timestamps,
counters and dates are what changes between two copies of one page; Markdown
punctuation (``#``, ``*``, ``|``, ``-``) falls away with the word split. These choices
and the shingle size were made by measurement (``bench/neardup.py``, README.md).
"""

from __future__ import annotations

import array
import re
from collections.abc import Iterable, Iterator

import xxhash

#: Bits of a fingerprint.
BITS = 64
#: Default threshold: fingerprints at most this many bits apart are near duplicates
#: (Manku, Jain & Das Sarma 2007, section 2: k = 3 for 64-bit fingerprints of 8B pages).
DEFAULT_MAX_DISTANCE = 3
#: Words per shingle (feature).
SHINGLE_WORDS = 2

_MASK64 = (1 << BITS) - 1
# Markdown link or image target: "](url)" or "](url "title")", and bare <http...> links.
_LINK_TARGET = re.compile(r"\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*(?:\s+\"[^\"]*\")?\)|<https?://[^>\s]*>")
_WORD = re.compile(r"\w+")
#: A run of ASCII word characters and non-ASCII bytes in UTF-8: where it holds no
#: non-ASCII byte it is one ``\w+`` word, else its text is split by :data:`_WORD` (a
#: UTF-8 character's bytes are all non-ASCII, so no character is cut). ``re`` scans
#: bytes about twice as fast as a text that holds a character past U+00FF.
_WORD_BYTES = re.compile(rb"[0-9A-Za-z_\x80-\xff]+")


def features(text: str, shingle_words: int = SHINGLE_WORDS, strip_links: bool = True) -> list[bytes]:
    """The features of ``text`` (Markdown), in order: each run of ``shingle_words``
    consecutive lower-cased words (digit-only words left out; link targets removed
    unless ``strip_links`` is false), as UTF-8 bytes joined by a space. A text with at
    most ``shingle_words`` words has one feature (all its words); one without words
    has none."""
    if strip_links:
        text = _LINK_TARGET.sub("]", text)
    words: list[bytes] = []
    for run in _WORD_BYTES.findall(text.lower().encode("utf-8", "surrogatepass")):  # a lone surrogate is no word
        if run.isascii():
            if not run.isdigit():
                words.append(run)
        else:
            text_run = run.decode("utf-8", "surrogatepass")
            words += [word.encode() for word in _WORD.findall(text_run) if not word.isdigit()]
    if len(words) <= shingle_words:
        return [b" ".join(words)] if words else []
    runs = zip(*(words[i:] for i in range(shingle_words)))  # each word and the ones after it
    return list(map(b" ".join, runs))


def simhash_of_features(items: Iterable[bytes]) -> int:
    """64-bit SimHash of ``items`` (an iterable of bytes; repeats count again).

    Each item is hashed with xxh3-64; bit ``i`` of the result (``1 << i``) is 1 when
    more than half of the item hashes have bit ``i`` set. No items give 0. One item
    gives its own xxh3-64 (``xxhash.xxh3_64_intdigest``).
    """
    digests = b"".join(map(xxhash.xxh3_64_digest, items))  # big-endian, 8 bytes each
    count = len(digests) // 8
    # per bit of a byte, an int whose `count` bytes are all that bit alone
    masks = [int.from_bytes(bytes((1 << bit,)) * count) for bit in range(8)]
    result = 0
    for position in range(8):  # byte `position` of each digest, as one int
        column = int.from_bytes(digests[position::8])
        shift = (7 - position) * 8
        for bit in range(8):  # the digests with this bit set: a popcount of the masked column
            if 2 * (column & masks[bit]).bit_count() > count:
                result |= 1 << (shift + bit)
    return result


def simhash(text: str) -> int:
    """64-bit SimHash (an int in ``[0, 2**64)``) of the Markdown ``text`` over its
    :func:`features`. Texts without words give 0."""
    return simhash_of_features(features(text))


def hamming(a: int, b: int) -> int:
    """Number of bits in which the 64-bit ints ``a`` and ``b`` differ (0..64)."""
    return (a ^ b).bit_count()


_NONE = 0xFFFFFFFF  # end of a chain
_DENSE_BLOCK_BITS = 16  # blocks this narrow get a flat head array (2**bits * 4 bytes)
#: Most entries compared per block value and query (the newest ones): with random
#: fingerprints a 16-bit block value holds this many entries only past 134 million
#: pages; it bounds the time of a query when many pages crowd one value.
MAX_SCAN = 2048


class NearDuplicateIndex:
    """Stored 64-bit fingerprints, each with an int reference (for example the exact
    content fingerprint under which the caller keeps the page's URL), answering "is
    there one within ``max_distance`` bits?".

    Layout (Manku, Jain & Das Sarma 2007, section 3, with hash tables in place of sorted
    permuted tables, so entries can be added while it is queried): the 64 bits are cut
    into ``max_distance + 1`` blocks of about equal width. Table ``t`` maps each value
    of block ``t`` to the last entry having it, and entries of one value are chained
    (``next`` positions). Entries live in ``array('Q')`` (fingerprint, reference) and
    ``array('I')`` (one chain link per table): 16 + 4 x (k + 1) bytes per entry, plus
    the table heads: a flat ``array('I')`` of ``2**width`` for blocks of at most 16
    bits (256 KiB each), else a dict. At most ``2**32 - 1`` entries.

    Args:
        max_distance: the threshold ``k`` in bits, 0..63 (default 3).

    Raises:
        ValueError: ``max_distance`` is out of range.
    """

    def __init__(self, max_distance: int = DEFAULT_MAX_DISTANCE) -> None:
        if not 0 <= max_distance < BITS:
            raise ValueError(f"max_distance must be from 0 to {BITS - 1}, got {max_distance}")
        self.max_distance = max_distance
        blocks = max_distance + 1
        edges = [round(i * BITS / blocks) for i in range(blocks + 1)]
        #: (shift, mask) of each block, low bits first.
        self.blocks = tuple((lo, (1 << (hi - lo)) - 1) for lo, hi in zip(edges, edges[1:]))
        self._fingerprints = array.array("Q")
        self._references = array.array("Q")
        self._heads: list = [
            array.array("I", [_NONE]) * (mask + 1) if mask < 1 << _DENSE_BLOCK_BITS else {}
            for _shift, mask in self.blocks
        ]
        self._next = [array.array("I") for _ in self.blocks]

    def __len__(self) -> int:
        return len(self._fingerprints)

    def add(self, fingerprint: int, reference: int) -> None:
        """Store ``fingerprint`` (a 64-bit int) with ``reference`` (an int in
        ``[0, 2**64)``). Adding the same pair twice stores it twice."""
        position = len(self._fingerprints)
        self._fingerprints.append(fingerprint)
        self._references.append(reference)
        for heads, chain, (shift, mask) in zip(self._heads, self._next, self.blocks):
            key = fingerprint >> shift & mask
            chain.append(heads[key] if isinstance(heads, array.array) else heads.get(key, _NONE))
            heads[key] = position

    def _candidates(self, fingerprint: int) -> Iterator[int]:
        """Positions sharing at least one block with ``fingerprint``, newest first in
        each table, at most :data:`MAX_SCAN` per table (repeats possible)."""
        for heads, chain, (shift, mask) in zip(self._heads, self._next, self.blocks):
            key = fingerprint >> shift & mask
            position = heads[key] if isinstance(heads, array.array) else heads.get(key, _NONE)
            for _ in range(MAX_SCAN):
                if position == _NONE:
                    break
                yield position
                position = chain[position]

    def nearest(self, fingerprint: int, exclude: int | None = None) -> tuple[int, int] | None:
        """The stored entry closest to ``fingerprint`` within ``max_distance`` bits, as
        ``(reference, distance)``: the one added first among equally close ones;
        entries whose reference is ``exclude`` are ignored. ``None`` when there is none."""
        return self._search(fingerprint, exclude)[0]

    def _search(self, fingerprint: int, exclude: int | None) -> tuple[tuple[int, int] | None, bool]:
        """(:meth:`nearest`, whether ``fingerprint`` itself is stored)."""
        best: tuple[int, int] | None = None  # (distance, position)
        stored, references = self._fingerprints, self._references
        held = False
        for position in self._candidates(fingerprint):
            distance = (stored[position] ^ fingerprint).bit_count()
            held = held or distance == 0
            if (
                distance <= self.max_distance
                and (best is None or (distance, position) < best)
                and (exclude is None or references[position] != exclude)
            ):
                best = (distance, position)
        return (None if best is None else (references[best[1]], best[0])), held

    def add_or_find(self, fingerprint: int, reference: int) -> tuple[int, int] | None:
        """:meth:`nearest` ignoring ``reference`` itself, then :meth:`add` unless an
        entry with this very fingerprint is stored already: it would never be a later
        query's answer (the stored one is as close and was added first), and thousands
        of pages with one fingerprint (a generated site) would otherwise make one chain
        as long as the crawl. Returns what :meth:`nearest` found."""
        found, held = self._search(fingerprint, reference)
        if not held:
            self.add(fingerprint, reference)
        return found
