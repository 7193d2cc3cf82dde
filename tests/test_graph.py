"""LinkGraph: idempotent edges, the breadth-first tree, TSV round trips, the tree file."""

import collections
import glob
import os
import random

from crawler.output.graph import LINK, REDIRECT, LinkGraph, write_tree

S = "http://s.test/"


def u(path: str) -> str:
    return S + path


def graph_of(edges) -> LinkGraph:
    graph = LinkGraph()
    for edge in edges:
        graph.add(*edge)
    return graph


def test_add_is_idempotent_and_keeps_the_first_kind():
    graph = LinkGraph()
    graph.add(u("a"), u("b"))
    graph.add(u("a"), u("b"), REDIRECT, False)
    graph.add(u("a"), u("b"))
    assert graph.edges == {(u("a"), u("b")): (LINK, True)}


def test_nodes_and_cycles():
    graph = graph_of([(u("a"), u("b")), (u("b"), u("c")), (u("c"), u("a")), (u("c"), u("c"))])
    assert len(graph.edges) == 4
    assert graph.nodes() == {u("a"), u("b"), u("c")}


def test_tree_of_a_cycle_places_each_fetched_url_once():
    graph = graph_of([(u("a"), u("b")), (u("b"), u("c")), (u("c"), u("a")), (u("a"), u("a"))])
    fetched = {u("a"), u("b"), u("c")}
    assert graph.tree([u("a")], fetched) == [(0, u("a")), (1, u("b")), (2, u("c"))]


def test_tree_places_each_url_at_its_shortest_depth():
    # root -> x -> y -> deep and root -> deep: deep belongs at depth 1, not 3.
    graph = graph_of([(S, u("x")), (u("x"), u("y")), (u("y"), u("deep")), (S, u("deep")), (u("deep"), u("z"))])
    fetched = {S, u("x"), u("y"), u("deep"), u("z")}
    assert graph.tree([S], fetched) == [
        (0, S),
        (1, u("deep")),
        (2, u("z")),
        (1, u("x")),
        (2, u("y")),
    ]


def test_tree_ties_go_to_the_lexicographically_first_parent():
    graph = graph_of([(S, u("p2")), (S, u("p1")), (u("p2"), u("child")), (u("p1"), u("child"))])
    fetched = {S, u("p1"), u("p2"), u("child")}
    assert graph.tree([S], fetched) == [(0, S), (1, u("p1")), (2, u("child")), (1, u("p2"))]


def test_tree_is_the_same_whatever_the_insertion_order():
    edges = [
        (S, u("b")),
        (S, u("a")),
        (u("a"), u("c")),
        (u("b"), u("c")),
        (u("b"), u("d")),
        (u("c"), u("e")),
        (u("d"), u("e")),
        (u("e"), S),
        (u("d"), u("b")),
    ]
    fetched = {S, u("a"), u("b"), u("c"), u("d"), u("e")}
    expected = [(0, S), (1, u("a")), (2, u("c")), (3, u("e")), (1, u("b")), (2, u("d"))]
    assert graph_of(edges).tree([S], fetched) == expected
    assert graph_of(reversed(edges)).tree([S], fetched) == expected
    rng = random.Random(1234)
    for _ in range(50):
        order = edges[:]
        rng.shuffle(order)
        assert graph_of(order).tree([S], fetched) == expected


def test_only_fetched_targets_appear():
    graph = graph_of(
        [
            (S, u("fetched")),
            (S, u("failed-not-fetched")),
            (S, "http://external.test/", LINK, False),
            (u("failed-not-fetched"), u("behind")),
        ]
    )
    fetched = {S, u("fetched"), u("behind")}
    # "behind" is fetched but reachable only through an unfetched page: an extra root.
    assert graph.tree([S], fetched) == [(0, S), (1, u("fetched")), (0, u("behind"))]


def test_unreached_fetched_urls_become_sorted_extra_roots():
    graph = graph_of([(S, u("a")), (u("z-orphan"), u("z-child"))])
    fetched = {S, u("a"), u("m-orphan"), u("z-orphan"), u("z-child")}
    assert graph.tree([S], fetched) == [
        (0, S),
        (1, u("a")),
        (0, u("m-orphan")),
        (0, u("z-child")),
        (0, u("z-orphan")),
    ]


def test_every_fetched_url_appears_exactly_once():
    edges = [(u(str(i)), u(str(j))) for i in range(12) for j in range(12) if (i * 7 + j) % 5 == 0]
    fetched = {u(str(i)) for i in range(12)} | {u("lonely")}
    lines = graph_of(edges).tree([u("0")], fetched)
    assert sorted(url for _, url in lines) == sorted(fetched)
    assert len(lines) == 13


def test_several_roots_and_unfetched_roots():
    graph = graph_of([(u("r1"), u("a")), (u("r2"), u("a")), (u("r2"), u("b"))])
    fetched = {u("r1"), u("r2"), u("a"), u("b")}
    # r1 claims a first because it comes first in roots; an unfetched root is ignored.
    assert graph.tree([u("r1"), u("never"), u("r2")], fetched) == [
        (0, u("r1")),
        (1, u("a")),
        (0, u("r2")),
        (1, u("b")),
    ]
    # a root already placed under an earlier root does not start its own tree.
    assert graph.tree([u("r2"), u("b")], fetched) == [
        (0, u("r2")),
        (1, u("a")),
        (1, u("b")),
        (0, u("r1")),
    ]


def test_redirect_edges_are_followed_in_the_tree():
    graph = graph_of([(S, u("old")), (u("old"), u("new"), REDIRECT, True)])
    assert graph.tree([S], {S, u("old"), u("new")}) == [(0, S), (1, u("old")), (2, u("new"))]


def test_tree_of_nothing_fetched_is_empty():
    assert graph_of([(S, u("a"))]).tree([S], set()) == []


def test_write_tsv_header_sorted_unique_lines(tmp_path):
    graph = graph_of(
        [
            (u("b"), u("a")),
            (u("a"), u("c"), REDIRECT, True),
            (u("a"), "http://x.test/", LINK, False),
            (u("b"), u("a"), REDIRECT, False),
            (u("a"), u("b")),
        ]
    )
    path = tmp_path / "edges.tsv"
    assert graph.write_tsv(str(path)) == 4
    assert path.read_bytes().decode("utf-8") == (
        "source\ttarget\tkind\tin_scope\n"
        f"{u('a')}\t{u('b')}\tlink\t1\n"
        f"{u('a')}\t{u('c')}\tredirect\t1\n"
        f"{u('a')}\thttp://x.test/\tlink\t0\n"
        f"{u('b')}\t{u('a')}\tlink\t1\n"
    )


def test_load_reads_every_edge_file_and_skips_a_partial_last_line(tmp_path):
    (tmp_path / "edges-00.tsv").write_text(
        f"{u('a')}\t{u('b')}\tlink\t1\n"
        f"{u('a')}\thttp://x.test/\tlink\t0\n"
        f"{u('a')}\t{u('b')}\tredirect\t0\n"  # duplicate pair: first kind kept
        f"{u('b')}\t{u('c')}\tlink\t1",
        encoding="utf-8",
    )  # no newline: partial
    (tmp_path / "edges-01.tsv").write_text(
        f"{u('c')}\t{u('d')}\tredirect\t1\n"
        "malformed line with no tabs\n"
        f"{u('d')}\t{u('e')}\tlink\n"  # three fields: skipped
        f"{u('d')}\t{u('e')}\tli",
        encoding="utf-8",
    )
    (tmp_path / "edges.tsv").write_text(f"{u('zz')}\t{u('yy')}\tlink\t1\n", encoding="utf-8")
    (tmp_path / "pages-00.jsonl").write_text("{}\n", encoding="utf-8")
    graph = LinkGraph.load(str(tmp_path))
    assert graph.edges == {
        (u("a"), u("b")): ("link", True),
        (u("a"), "http://x.test/"): ("link", False),
        (u("c"), u("d")): ("redirect", True),
    }


def test_load_of_an_empty_folder_is_empty(tmp_path):
    assert LinkGraph.load(str(tmp_path)).edges == {}


def test_write_tsv_then_load_round_trips_through_an_edge_file(tmp_path):
    graph = graph_of([(u("a"), u("b")), (u("b"), u("a"), REDIRECT, False)])
    graph.write_tsv(str(tmp_path / "edges.tsv"))
    body = (tmp_path / "edges.tsv").read_text(encoding="utf-8").split("\n", 1)[1]
    (tmp_path / "edges-07.tsv").write_text(body, encoding="utf-8")
    assert LinkGraph.load(str(tmp_path)).edges == graph.edges


def test_write_tree_indents_two_spaces_per_level(tmp_path):
    path = tmp_path / "tree.txt"
    write_tree([(0, S), (1, u("a")), (2, u("a/b")), (1, u("c")), (0, u("orphan"))], str(path))
    assert path.read_bytes() == (f"{S}\n  {u('a')}\n    {u('a/b')}\n  {u('c')}\n{u('orphan')}\n").encode()


def test_write_tree_of_nothing_is_an_empty_file(tmp_path):
    path = tmp_path / "tree.txt"
    write_tree([], str(path))
    assert path.read_bytes() == b""


def test_redirect_cycles_found_once_each_from_their_smallest_url():
    g = LinkGraph()
    for s, t in (("c", "a"), ("a", "b"), ("b", "c"), ("x", "y"), ("y", "x"), ("p", "a"), ("q", "z")):
        g.add(s, t, "redirect")
    g.add("a", "x", "link")
    fetched = {"a", "b", "c", "x", "y", "p", "q", "z"}
    assert g.redirect_cycles(fetched) == [["a", "b", "c"], ["x", "y"]]
    assert g.redirect_cycles(fetched - {"b"}) == [["x", "y"]]


# -- the compact graph against a plain dict-based one -------------------------------------
class DictGraph:
    """The straightforward reference: a dict (source, target) -> (kind, in_scope), as
    crawler/output/graph.py was before its compact storage; the outputs must match it exactly."""

    def __init__(self):
        self.edges = {}

    def add(self, source, target, kind=LINK, in_scope=True):
        self.edges.setdefault((source, target), (kind, in_scope))

    @classmethod
    def load(cls, out_dir):
        graph = cls()
        for path in sorted(glob.glob(os.path.join(out_dir, "edges-*.tsv"))):
            with open(path, encoding="utf-8") as f:
                for line in f:
                    parts = line.rstrip("\n").split("\t")
                    if len(parts) == 4 and line.endswith("\n"):
                        graph.add(parts[0], parts[1], parts[2], parts[3] == "1")
        return graph

    def write_tsv(self, path):
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write("source\ttarget\tkind\tin_scope\n")
            for (source, target), (kind, in_scope) in sorted(self.edges.items()):
                f.write(f"{source}\t{target}\t{kind}\t{int(in_scope)}\n")
        return len(self.edges)

    def redirect_cycles(self, fetched):
        target = {
            s: t for (s, t), (kind, _) in self.edges.items() if kind == REDIRECT and s in fetched and t in fetched
        }
        cycles, done = [], set()
        for start in sorted(target):
            path, node = [], start
            while node in target and node not in done and node not in path:
                path.append(node)
                node = target[node]
            if node in path:
                cycle = path[path.index(node) :]
                first = cycle.index(min(cycle))
                cycles.append(cycle[first:] + cycle[:first])
            done.update(path)
        return cycles

    def tree(self, roots, fetched):
        children = collections.defaultdict(list)
        adjacency = collections.defaultdict(list)
        for source, target in self.edges:
            if target in fetched and source != target:
                adjacency[source].append(target)
        placed = set()
        order = [r for r in roots if r in fetched]
        order += sorted(fetched - set(order))
        top = []
        for root in order:
            if root in placed:
                continue
            top.append(root)
            placed.add(root)
            level = [root]
            while level:
                following = []
                for parent in sorted(level):
                    for child in sorted(adjacency.get(parent, ())):
                        if child not in placed:
                            placed.add(child)
                            children[parent].append(child)
                            following.append(child)
                level = following
        lines = []
        for root in top:
            stack = [(0, root)]
            while stack:
                depth, url = stack.pop()
                lines.append((depth, url))
                stack.extend((depth + 1, c) for c in reversed(children.get(url, ())))
        return lines


def never_claimed_reference(graph, tree, listed, max_depth):
    """crawler/api.py never_claimed as it was, over DictGraph.edges."""
    depth_of = {url: depth for depth, url in tree}
    found = {}
    for (source, target), (_kind, in_scope) in graph.edges.items():
        if not in_scope or target in listed or source not in depth_of:
            continue
        depth = depth_of[source] + 1
        if max_depth is None or depth <= max_depth:
            found.setdefault(target, (depth, source))
    return [(url, depth, parent, "x") for url, (depth, parent) in sorted(found.items())]


#: URLs whose sort order is not their order of appearance: prefixes, "/" vs "-" vs "é".
POOL = [
    u(""),
    u("a"),
    u("a/"),
    u("a/b"),
    u("a-b"),
    u("A"),
    u("é"),
    u("z"),
    u("b?x=1"),
    u("b?"),
    u("p10"),
    u("p2"),
    u("p1"),
    "http://x.test/",
    "https://s.test/a",
    "http://s.test:81/",
]


def random_nodes(rng, most):
    """Some of POOL and up to ``most`` plain URLs."""
    pool = rng.sample(POOL, rng.randint(1, len(POOL)))
    return pool + [u(f"n{k}") for k in range(rng.randint(0, most))]


def random_edges(rng, nodes, count):
    """Edges over ``nodes`` with duplicates, self-loops and cycles; redirects and external ones."""
    edges = []
    for _ in range(count):
        source = rng.choice(nodes)
        target = source if rng.random() < 0.05 else rng.choice(nodes)
        if edges and rng.random() < 0.15:  # an exact or kind-changed repeat of an earlier edge
            source, target = rng.choice(edges)[:2]
        kind = REDIRECT if rng.random() < 0.25 else LINK
        edges.append((source, target, kind, rng.random() < 0.8))
    if rng.random() < 0.5:  # runs: a source's edges together, as a fetcher writes them
        edges.sort(key=lambda e: nodes.index(e[0]))
    return edges


def write_edge_files(tmp_path, rng, edges):
    """Spread ``edges`` over 1-3 edges-NN.tsv files (in name order) with noise that load skips."""
    files = rng.randint(1, 3)
    cuts = sorted(rng.randint(0, len(edges)) for _ in range(files - 1))
    parts = [edges[a:b] for a, b in zip([0, *cuts], [*cuts, len(edges)])]
    for k, part in enumerate(parts):
        lines = [f"{s}\t{t}\t{kind}\t{int(i)}\n" for s, t, kind, i in part]
        if rng.random() < 0.3:
            lines.insert(rng.randint(0, len(lines)), "three\tfields\tonly\n")
        if rng.random() < 0.3:
            lines.insert(rng.randint(0, len(lines)), "five\tfields\tlink\t1\tx\n")
        if rng.random() < 0.5:
            lines.append(f"{u('partial')}\t{u('last')}\tli")  # no newline: a crash mid-write
        (tmp_path / f"edges-{k:02d}.tsv").write_text("".join(lines), encoding="utf-8")
    # the edges are read in file-name order, which is the order of `parts`
    return [e for part in parts for e in part]


def assert_same_outputs(graph, reference, tmp_path, rng, nodes):
    assert graph.edges == reference.edges
    assert len(graph.edges) == len(reference.edges)
    assert list(graph.edges) == sorted(reference.edges)
    assert list(graph.edges_in_order()) == [
        (s, t, kind, in_scope) for (s, t), (kind, in_scope) in reference.edges.items()
    ]
    assert graph.nodes() == {url for pair in reference.edges for url in pair}
    new, old = tmp_path / "new.tsv", tmp_path / "old.tsv"
    assert graph.write_tsv(str(new)) == reference.write_tsv(str(old))
    assert new.read_bytes() == old.read_bytes()
    sources = {s for s, _ in reference.edges}
    assert all(graph.has_source(url) == (url in sources) for url in nodes + [u("nowhere")])
    for _ in range(4):
        fetched = {url for url in nodes if rng.random() < 0.7} | {u("no-edges"), u("zz-no-edges")}
        roots = rng.sample(nodes + [u("no-edges"), u("never")], 3) + [rng.choice(nodes)]
        tree = graph.tree(roots, fetched)
        assert tree == reference.tree(roots, fetched)
        assert graph.redirect_cycles(fetched) == reference.redirect_cycles(fetched)
        write_tree(tree, str(tmp_path / "tree.txt"))
        listed = {url for url in nodes if rng.random() < 0.4}
        for max_depth in (None, 0, 1, 2):
            assert never_claimed_new(graph, tree, listed, max_depth) == never_claimed_reference(
                reference, tree, listed, max_depth
            )


def never_claimed_new(graph, tree, listed, max_depth):
    """crawler/api.py never_claimed, with stand-ins for the config and the dispatcher."""
    from types import SimpleNamespace

    from crawler.api import never_claimed

    config = SimpleNamespace(max_depth=max_depth)
    return [row[:3] + ("x",) for row in never_claimed(config, graph, tree, set(listed).__contains__)]


def test_loaded_graph_gives_the_dict_graphs_outputs_on_random_graphs(tmp_path):
    rng = random.Random(20240611)
    for case in range(60):
        folder = tmp_path / str(case)
        folder.mkdir()
        nodes = random_nodes(rng, 30)
        edges = write_edge_files(folder, rng, random_edges(rng, nodes, rng.randint(0, 150)))
        graph, reference = LinkGraph.load(str(folder)), DictGraph.load(str(folder))
        # the reference keeps each edge's first kind (a dict built backwards keeps the first)
        assert reference.edges == {(s, t): (kind, i) for s, t, kind, i in reversed(edges)}
        assert_same_outputs(graph, reference, folder, rng, nodes)


def test_built_graph_gives_the_dict_graphs_outputs_also_after_adding_more(tmp_path):
    rng = random.Random(7)
    for _ in range(40):
        nodes = random_nodes(rng, 20)
        graph, reference = LinkGraph(), DictGraph()
        for _ in range(3):  # a query in between must not freeze the graph
            for edge in random_edges(rng, nodes, rng.randint(0, 60)):
                graph.add(*edge)
                reference.add(*edge)
            assert_same_outputs(graph, reference, tmp_path, rng, nodes)


def test_a_long_redirect_cycle_and_a_self_redirect():
    graph, reference = LinkGraph(), DictGraph()
    ring = [u(f"r{k:03d}") for k in range(200)]
    for a, b in zip(ring, ring[100:] + ring[:100]):  # 100 cycles of 2, until the next loop
        graph.add(a, b, REDIRECT)
        reference.add(a, b, REDIRECT)
    for a, b in zip(ring, ring[1:] + ring[:1]):  # a source's last redirect wins: one cycle
        graph.add(a, b, REDIRECT)
        reference.add(a, b, REDIRECT)
    graph.add(u("self"), u("self"), REDIRECT)
    reference.add(u("self"), u("self"), REDIRECT)
    fetched = set(ring) | {u("self")}
    assert graph.redirect_cycles(fetched) == reference.redirect_cycles(fetched)
    assert graph.redirect_cycles(fetched) == [ring, [u("self")]]


def test_many_kinds_widen_the_flags_and_keep_each_edges_first_kind(tmp_path):
    graph, reference = LinkGraph(), DictGraph()
    for k in range(300):
        for edge in (
            (u(f"s{k % 7}"), u(f"t{k}"), f"kind{k}", k % 3 == 0),
            (u(f"s{k % 7}"), u(f"t{k}"), f"other{k}", False),
        ):
            graph.add(*edge)
            reference.add(*edge)
    assert graph.edges == reference.edges
    new, old = tmp_path / "new.tsv", tmp_path / "old.tsv"
    assert graph.write_tsv(str(new)) == reference.write_tsv(str(old)) == 300
    assert new.read_bytes() == old.read_bytes()


def test_edge_view_lookups():
    graph = graph_of([(u("a"), u("b")), (u("a"), u("c"), REDIRECT, False)])
    assert graph.edges[(u("a"), u("c"))] == (REDIRECT, False)
    assert (u("a"), u("b")) in graph.edges
    assert (u("b"), u("a")) not in graph.edges
    assert (u("a"), u("nowhere")) not in graph.edges
    assert dict(graph.edges.items()) == {(u("a"), u("b")): (LINK, True), (u("a"), u("c")): (REDIRECT, False)}
    assert LinkGraph().edges == {} and len(LinkGraph().edges) == 0
    assert LinkGraph().tree([S], {S}) == [(0, S)]
    assert LinkGraph().redirect_cycles({S}) == []
