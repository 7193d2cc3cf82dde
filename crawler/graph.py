"""The link graph of what happened, and the site tree derived from it once, at the end.

The graph has one node per normalized URL and idempotent directed edges (adding an edge
twice keeps one); cycles are legal. The tree is a breadth-first spanning tree from the
seed over edges whose target was fetched, so every fetched page appears exactly once, at
its shortest link distance; ties go to the lexicographically first parent, so the tree is
the same for the same graph whatever order the fetchers reported in.
"""

from __future__ import annotations

import collections
import glob
import os

#: Edge kinds written by the fetchers.
LINK, REDIRECT = "link", "redirect"


class LinkGraph:
    """Directed graph of URLs. ``edges`` maps (source, target) -> (kind, in_scope)."""

    def __init__(self) -> None:
        self.edges: dict[tuple[str, str], tuple[str, bool]] = {}

    def add(self, source: str, target: str, kind: str = LINK, in_scope: bool = True) -> None:
        """Add an edge; a repeated (source, target) keeps its first kind."""
        self.edges.setdefault((source, target), (kind, in_scope))

    def nodes(self) -> set[str]:
        """Every URL that is a source or target of an edge."""
        return {u for pair in self.edges for u in pair}

    @classmethod
    def load(cls, out_dir: str) -> "LinkGraph":
        """Read every ``edges-*.tsv`` of ``out_dir`` (partial last lines are skipped)."""
        graph = cls()
        for path in sorted(glob.glob(os.path.join(out_dir, "edges-*.tsv"))):
            with open(path, encoding="utf-8") as f:
                for line in f:
                    parts = line.rstrip("\n").split("\t")
                    if len(parts) == 4 and line.endswith("\n"):
                        graph.add(parts[0], parts[1], parts[2], parts[3] == "1")
        return graph

    def write_tsv(self, path: str) -> int:
        """Write the de-duplicated edges, sorted, as ``source target kind in_scope``.

        Returns the number of edges written.
        """
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write("source\ttarget\tkind\tin_scope\n")
            for (source, target), (kind, in_scope) in sorted(self.edges.items()):
                f.write(f"{source}\t{target}\t{kind}\t{int(in_scope)}\n")
        return len(self.edges)

    def redirect_cycles(self, fetched) -> list[list[str]]:
        """Cycles of redirects among fetched URLs, each listed from its smallest URL.

        A loop followed within one redirect chain is caught while crawling (the URL that
        closes it fails with "redirect loop"); this finds the loops whose URLs were
        discovered separately, where each fetcher saw only one hop.
        """
        target = {s: t for (s, t), (kind, _) in self.edges.items()
                  if kind == REDIRECT and s in fetched and t in fetched}
        cycles, done = [], set()
        for start in sorted(target):
            path, node = [], start
            while node in target and node not in done and node not in path:
                path.append(node)
                node = target[node]
            if node in path:  # a new cycle: the part of the path from node on
                cycle = path[path.index(node):]
                first = cycle.index(min(cycle))
                cycles.append(cycle[first:] + cycle[:first])
            done.update(path)
        return cycles

    def tree(self, roots, fetched) -> list[tuple[int, str]]:
        """Breadth-first spanning tree over edges into ``fetched`` URLs.

        Args:
            roots: seed URLs, in order (each starts a tree if fetched and not yet placed).
            fetched: set of URLs that have a record.

        Returns:
            ``[(depth, url)]`` in pre-order (a parent before its children, children sorted),
            every fetched URL reachable from a root exactly once. Fetched URLs that no
            root reaches follow as extra roots, sorted.
        """
        children: dict[str, list[str]] = collections.defaultdict(list)
        adjacency: dict[str, list[str]] = collections.defaultdict(list)
        for source, target in self.edges:
            if target in fetched and source != target:
                adjacency[source].append(target)
        placed: set[str] = set()
        order = [r for r in roots if r in fetched]
        order += sorted(fetched - set(order))
        top: list[str] = []
        for root in order:
            if root in placed:
                continue
            top.append(root)
            placed.add(root)
            level = [root]
            while level:  # breadth-first, one level at a time, parents in sorted order
                following = []
                for parent in sorted(level):
                    for child in sorted(adjacency.get(parent, ())):
                        if child not in placed:
                            placed.add(child)
                            children[parent].append(child)
                            following.append(child)
                level = following
        lines: list[tuple[int, str]] = []
        for root in top:
            stack = [(0, root)]
            while stack:
                depth, url = stack.pop()
                lines.append((depth, url))
                stack.extend((depth + 1, c) for c in reversed(children.get(url, ())))
        return lines


def write_tree(lines, path: str) -> None:
    """Write ``[(depth, url)]`` as an indented text file, two spaces per level."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for depth, url in lines:
            f.write("  " * depth + url + "\n")
