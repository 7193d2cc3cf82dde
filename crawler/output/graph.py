"""The link graph of what happened, and the site tree derived from it once, at the end.

The graph has one node per normalized URL and idempotent directed edges (adding an edge
twice keeps one, with its first kind); cycles are legal. The tree is a breadth-first
spanning tree from the seed over edges whose target was fetched, so every fetched page
appears exactly once, at its shortest link distance; ties go to the lexicographically first
parent, so the tree is the same for the same graph whatever order the fetchers reported in.

Memory: the graph is loaded once, in the dispatcher, after the crawl, and a crawl of N pages
with 20 links each has 20 N edges, so nothing here is a Python object per edge:

* each distinct URL is interned once: ``_ids`` (dict URL -> node id) and ``_urls`` (list
  node id -> URL), ids in order of first appearance;
* every edge line read (duplicates included) is a slot in three parallel arrays, ``_src`` and
  ``_dst`` (node ids, ``array('I')``) and ``_flags`` (``kind id << 1 | in_scope``, one byte
  while there are at most 128 kinds), in the order read; ``_runs`` holds where each run of
  consecutive edges from one source starts (a fetcher writes a page's edges together, so
  about one run per page);
* the queries (sorted edges, tree, cycles) share an ``_Index`` built once, on first use:
  node ranks in URL order and a CSR adjacency grouped by source in URL order, each
  source's targets sorted by URL and de-duplicated (``offsets``, ``targets``) with the raw
  slot of each edge's first occurrence (``seen``), which gives its kind and its place in
  the order read.

Measured (CPython 3.11, 64-bit; URLs like ``http://127.0.0.1:8000/p12345.html``, an 82 B
string each): tracemalloc, fitted over 100,000 pages x 5 and x 20 links, gives 9.6 B per edge
line + 160 B per node loaded (the string, its dict and list slots) and 8.5 B per distinct
edge + 20 B per node for the index. On 100,000 pages x 20 links (1,998,135 edge lines in two
files), load + ``write_tsv`` + ``tree`` + ``write_tree`` + ``redirect_cycles`` raise the
process's peak RSS by 62 MiB, 32 B per edge (a dict of (source, target) string tuples: 959
MiB, 503 B per edge), in 3.7 s instead of 6.9 s (best of 3 each).
"""

from __future__ import annotations

import glob
import itertools
import os
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Set

from crawler.vocabulary import EdgeKind

#: Edge kinds written by the fetchers.
LINK, REDIRECT = EdgeKind.LINK.value, EdgeKind.REDIRECT.value

#: Array type code of node ids and raw edge slots: unsigned, 4 bytes on every CPython
#: platform, so a graph holds at most 2**32 - 1 URLs and edge lines (OverflowError beyond).
_ID = "I"
#: Kinds that fit a one-byte flag (``kind id << 1 | in_scope``); more switch ``_flags`` to 4 bytes.
_BYTE_KINDS = 128


class _Index:
    """What the queries need, derived from the raw edges of a :class:`LinkGraph`.

    Shapes (n nodes, m distinct edges):
        rank: ``array('I')[n]``, node id -> position of its URL in sorted order.
        urls: ``list[str][n]``, rank -> URL (the graph's interned strings, shared).
        offsets: ``array('Q')[n + 1]``, the edges of the source of rank r are the slots
            ``offsets[r]:offsets[r + 1]`` of ``targets`` and ``seen``.
        targets: ``array('I')[m]``, target ranks, ascending within a source, no repeats.
        seen: ``array('I')[m]``, raw slot (index into the graph's ``_src``/``_dst``/``_flags``)
            of the edge's first occurrence: its kind and in_scope, and its place in the order read.

    Cost: 8 B per distinct edge and 20 B per node (``rank``, the ``urls`` list's pointer,
    ``offsets``); building it holds, besides, one source's targets at a time.
    """

    __slots__ = ("rank", "urls", "offsets", "targets", "seen")

    def __init__(self, graph: LinkGraph) -> None:
        names, src, dst = graph._urls, graph._src, graph._dst
        n, m = len(names), len(src)
        order = sorted(range(n), key=names.__getitem__)
        self.urls = list(map(names.__getitem__, order))
        self.rank = rank = array(_ID, [0]) * n
        for r, node in enumerate(order):
            rank[node] = r
        del order
        # Runs of one source, ordered by the source's URL; sorted() is stable, so the runs
        # of one source stay in the order read, and within a source so do its edges.
        starts = graph._runs
        ends = starts[1:] + array(_ID, [m])
        runs = sorted(range(len(starts)), key=lambda k: rank[src[starts[k]]])
        counts = array(_ID, [0]) * n
        self.targets, self.seen = targets, seen = array(_ID), array(_ID)
        target_rank = rank.__getitem__
        k = 0
        while k < len(runs):
            source = src[starts[runs[k]]]
            ranks: list[int] = []
            slots: list[int] = []
            while k < len(runs) and src[starts[runs[k]]] == source:
                a, b = starts[runs[k]], ends[runs[k]]
                ranks.extend(map(target_rank, dst[a:b]))
                slots.extend(range(a, b))
                k += 1
            # target rank -> first slot: built backwards, the last assignment is the first slot
            first = dict(zip(reversed(ranks), reversed(slots)))
            keys = sorted(first)
            targets.extend(keys)
            seen.extend(map(first.__getitem__, keys))
            counts[rank[source]] = len(keys)
        self.offsets = array("Q", itertools.accumulate(counts, initial=0))

    def slot(self, source_rank: int, target_rank: int) -> int | None:
        """Position in ``targets``/``seen`` of the edge source -> target, or None."""
        lo, hi = self.offsets[source_rank], self.offsets[source_rank + 1]
        p = bisect_left(self.targets, target_rank, lo, hi)
        return p if p < hi and self.targets[p] == target_rank else None


class LinkGraph:
    """Directed graph of URLs with idempotent edges ``(source, target) -> (kind, in_scope)``.

    A repeated (source, target) keeps its first kind and in_scope, first in the order of
    :meth:`add` calls (for :meth:`load`: the lines of the files sorted by name). Storage is
    compact (see the module docstring): per edge line, duplicates included, 9 B (two 4-byte
    node ids and a flag byte) plus the arrays' growth slack; per distinct URL
    its string once plus about 80 B of dict and list slots; the index the queries share adds
    8 B per distinct edge and 20 B per node. ``add`` after a query drops the index; the next
    query rebuilds it.
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._urls: list[str] = []
        self._src = array(_ID)
        self._dst = array(_ID)
        self._flags = array("B")
        self._runs = array(_ID)
        self._last_source = -1
        self._kinds: list[str] = []
        self._kind_flags: dict[str, int] = {}
        self._index: _Index | None = None

    # -- building ---------------------------------------------------------------------
    def _node(self, url: str) -> int:
        """The id of ``url``, interning it if new."""
        node = self._ids.get(url)
        if node is None:
            node = self._ids[url] = len(self._urls)
            self._urls.append(url)
        return node

    def _kind_flag(self, kind: str) -> int:
        """``kind id << 1`` of ``kind``, registering it if new (may widen ``_flags``)."""
        flag = self._kind_flags.get(kind)
        if flag is None:
            if len(self._kinds) == _BYTE_KINDS and self._flags.typecode == "B":
                self._flags = array("I", self._flags)
            flag = self._kind_flags[kind] = len(self._kinds) << 1
            self._kinds.append(kind)
        return flag

    def _append(self, source: int, target: int, flag: int) -> None:
        if source != self._last_source:
            self._runs.append(len(self._src))
            self._last_source = source
        self._src.append(source)
        self._dst.append(target)
        self._flags.append(flag)

    def add(self, source: str, target: str, kind: str = LINK, in_scope: bool = True) -> None:
        """Add an edge; a repeated (source, target) keeps its first kind."""
        self._append(self._node(source), self._node(target), self._kind_flag(kind) | bool(in_scope))
        self._index = None

    @classmethod
    def load(cls, out_dir: str) -> LinkGraph:
        """Read every ``edges-*.tsv`` of ``out_dir`` (partial last lines are skipped).

        Lines are ``source\\ttarget\\tkind\\tin_scope\\n``; a line without its newline or
        without exactly four fields is skipped. Files are read in name order, one line at a
        time: memory is the graph's, never a file's.
        """
        graph = cls()
        ids, urls, kind_flags = graph._ids, graph._urls, graph._kind_flags
        src, runs = graph._src, graph._runs
        add_source, add_target, add_flag = src.append, graph._dst.append, graph._flags.append
        last_url, source = None, -1
        for path in sorted(glob.glob(os.path.join(out_dir, "edges-*.tsv"))):
            with open(path, encoding="utf-8") as f:
                for line in f:
                    if line[-1:] != "\n":
                        continue
                    parts = line[:-1].split("\t")
                    if len(parts) != 4:
                        continue
                    source_url, target_url, kind, scope = parts
                    if source_url != last_url:  # a page's edges come together: one lookup
                        known = ids.get(source_url)
                        if known is None:
                            known = ids[source_url] = len(urls)
                            urls.append(source_url)
                        source = known
                        last_url = source_url
                        if source != graph._last_source:
                            runs.append(len(src))
                            graph._last_source = source
                    target = ids.get(target_url)
                    if target is None:
                        target = ids[target_url] = len(urls)
                        urls.append(target_url)
                    flag = kind_flags.get(kind)
                    if flag is None:
                        flag = graph._kind_flag(kind)
                        add_flag = graph._flags.append  # _flags may have been widened
                    add_source(source)
                    add_target(target)
                    add_flag(flag | (scope == "1"))
        return graph

    # -- queries ----------------------------------------------------------------------
    def _indexed(self) -> _Index:
        if self._index is None:
            self._index = _Index(self)
        return self._index

    def _is_first(self, slot: int, index: _Index) -> bool:
        """Whether raw edge ``slot`` is the first occurrence of its (source, target)."""
        rank = index.rank
        p = index.slot(rank[self._src[slot]], rank[self._dst[slot]])
        return index.seen[p] == slot

    @property
    def edges(self) -> EdgeView:
        """Read-only mapping ``(source, target) -> (kind, in_scope)`` of the distinct edges,
        iterated in (source, target) order. It makes a tuple per edge it yields: for tests
        and small graphs; large ones go through :meth:`write_tsv` and the other queries."""
        return EdgeView(self)

    def nodes(self) -> set[str]:
        """Every URL that is a source or target of an edge."""
        return set(self._urls)

    def has_source(self, url: str) -> bool:
        """Whether ``url`` has an edge out of it."""
        node = self._ids.get(url)
        if node is None:
            return False
        index = self._indexed()
        r = index.rank[node]
        return index.offsets[r + 1] > index.offsets[r]

    def edges_in_order(self) -> Iterator[tuple[str, str, str, bool]]:
        """The distinct edges as ``(source, target, kind, in_scope)``, in the order their
        first occurrence was added (for :meth:`load`: read), as a dict of them would give."""
        index = self._indexed()
        first = bytearray(len(self._src))
        for slot in index.seen:
            first[slot] = 1
        urls, src, dst, flags, kinds = self._urls, self._src, self._dst, self._flags, self._kinds
        for slot in itertools.compress(itertools.count(), first):
            flag = flags[slot]
            yield urls[src[slot]], urls[dst[slot]], kinds[flag >> 1], bool(flag & 1)

    def write_tsv(self, path: str) -> int:
        """Write the de-duplicated edges, sorted, as ``source target kind in_scope``.

        Streams one source at a time: no list of the edges is built. Returns the number of
        edges written.
        """
        index = self._indexed()
        urls, offsets, targets, seen, flags = (index.urls, index.offsets, index.targets, index.seen, self._flags)
        # flag -> "\tkind\tin_scope\n"
        tails = [f"\t{kind}\t{scope}\n" for kind in self._kinds for scope in (0, 1)]
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write("source\ttarget\tkind\tin_scope\n")
            for r in range(len(urls)):
                lo, hi = offsets[r], offsets[r + 1]
                if lo == hi:
                    continue
                head = urls[r] + "\t"
                f.write("".join([head + urls[t] + tails[flags[s]] for t, s in zip(targets[lo:hi], seen[lo:hi])]))
        return len(targets)

    def redirect_cycles(self, fetched: Set[str]) -> list[list[str]]:
        """Cycles of redirects among fetched URLs, each listed from its smallest URL.

        A loop followed within one redirect chain is caught while crawling (the URL that
        closes it fails with "redirect loop"); this finds the loops whose URLs were
        discovered separately, where each fetcher saw only one hop. If a URL has several
        redirect edges, the last one in the order read counts.
        """
        flag = self._kind_flags.get(REDIRECT)
        if flag is None:
            return []
        index = self._indexed()
        urls, src, dst = self._urls, self._src, self._dst
        target = {}
        redirects = map({flag, flag | 1}.__contains__, self._flags)
        for slot in itertools.compress(itertools.count(), redirects):
            s, t = urls[src[slot]], urls[dst[slot]]
            if s in fetched and t in fetched and self._is_first(slot, index):
                target[s] = t
        cycles, done = [], set()
        for start in sorted(target):
            path, node = [], start
            while node in target and node not in done and node not in path:
                path.append(node)
                node = target[node]
            if node in path:  # a new cycle: the part of the path from node on
                cycle = path[path.index(node) :]
                first = cycle.index(min(cycle))
                cycles.append(cycle[first:] + cycle[:first])
            done.update(path)
        return cycles

    def tree(self, roots: Iterable[str], fetched: Set[str]) -> list[tuple[int, str]]:
        """Breadth-first spanning tree over edges into ``fetched`` URLs.

        Args:
            roots: seed URLs, in order (each starts a tree if fetched and not yet placed).
            fetched: set of URLs that have a record.

        Returns:
            ``[(depth, url)]`` in pre-order (a parent before its children, children sorted),
            every fetched URL reachable from a root exactly once. Fetched URLs that no
            root reaches follow as extra roots, sorted.

        Works on URL ranks (sorted ranks = sorted URLs): besides the returned list (64 B
        per fetched URL: a ``(depth, url)`` tuple and its slot; the strings are the graph's),
        10 B per node (fetched and placed marks, where each node's children start and end)
        and 4 B per placed node (the children, in breadth-first order).
        """
        index = self._indexed()
        ids, rank, urls, offsets, targets = (self._ids, index.rank, index.urls, index.offsets, index.targets)
        n = len(urls)
        is_fetched, placed = bytearray(n), bytearray(n)
        for url in fetched:
            node = ids.get(url)
            if node is not None:
                is_fetched[rank[node]] = 1
        # The children of a parent are appended together, so they are one slice of `kids`.
        kids = array(_ID)
        kids_lo, kids_hi = array(_ID, [0]) * n, array(_ID, [0]) * n
        placed_elsewhere: set[str] = set()  # fetched URLs with no edge: roots only
        order = [r for r in roots if r in fetched]
        order += sorted(fetched - set(order))
        top: list[tuple[int | None, str]] = []
        for root in order:
            node = ids.get(root)
            if node is None:
                if root not in placed_elsewhere:
                    placed_elsewhere.add(root)
                    top.append((None, root))
                continue
            r = rank[node]
            if placed[r]:
                continue
            top.append((r, root))
            placed[r] = 1
            level = [r]
            while level:  # breadth-first, one level at a time, parents in sorted order
                following_from = len(kids)
                for parent in sorted(level):
                    lo = len(kids)
                    for child in targets[offsets[parent] : offsets[parent + 1]]:
                        if is_fetched[child] and not placed[child]:  # a self-loop is placed
                            placed[child] = 1
                            kids.append(child)
                    kids_lo[parent], kids_hi[parent] = lo, len(kids)
                level = kids[following_from:].tolist()
        lines: list[tuple[int, str]] = []
        for top_rank, url in top:
            if top_rank is None:
                lines.append((0, url))
                continue
            stack = [(0, top_rank)]
            while stack:
                depth, node = stack.pop()
                lines.append((depth, urls[node]))
                lo, hi = kids_lo[node], kids_hi[node]
                if hi > lo:
                    stack.extend((depth + 1, c) for c in reversed(kids[lo:hi]))
        return lines


class EdgeView(Mapping):
    """Read-only mapping ``(source, target) -> (kind, in_scope)`` over a :class:`LinkGraph`'s
    distinct edges, iterated in (source, target) order; lookups are a binary search in the
    source's sorted targets. It reflects the graph at each call."""

    def __init__(self, graph: LinkGraph) -> None:
        self._graph = graph

    def __getitem__(self, key: tuple[str, str]) -> tuple[str, bool]:
        graph = self._graph
        source, target = key
        s, t = graph._ids.get(source), graph._ids.get(target)
        if s is None or t is None:
            raise KeyError(key)
        index = graph._indexed()
        p = index.slot(index.rank[s], index.rank[t])
        if p is None:
            raise KeyError(key)
        flag = graph._flags[index.seen[p]]
        return graph._kinds[flag >> 1], bool(flag & 1)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        index = self._graph._indexed()
        urls, offsets, targets = index.urls, index.offsets, index.targets
        for r in range(len(urls)):
            for t in targets[offsets[r] : offsets[r + 1]]:
                yield urls[r], urls[t]

    def __len__(self) -> int:
        return len(self._graph._indexed().targets)


def write_tree(lines: Iterable[tuple[int, str]], path: str) -> None:
    """Write ``[(depth, url)]`` as an indented text file, two spaces per level."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for depth, url in lines:
            f.write("  " * depth + url + "\n")
