"""LinkGraph: idempotent edges, the breadth-first tree, TSV round trips, the tree file."""

import random

from crawler.graph import LINK, REDIRECT, LinkGraph, write_tree

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
    graph = graph_of([(S, u("x")), (u("x"), u("y")), (u("y"), u("deep")), (S, u("deep")),
                      (u("deep"), u("z"))])
    fetched = {S, u("x"), u("y"), u("deep"), u("z")}
    assert graph.tree([S], fetched) == [
        (0, S), (1, u("deep")), (2, u("z")), (1, u("x")), (2, u("y")),
    ]


def test_tree_ties_go_to_the_lexicographically_first_parent():
    graph = graph_of([(S, u("p2")), (S, u("p1")), (u("p2"), u("child")), (u("p1"), u("child"))])
    fetched = {S, u("p1"), u("p2"), u("child")}
    assert graph.tree([S], fetched) == [(0, S), (1, u("p1")), (2, u("child")), (1, u("p2"))]


def test_tree_is_the_same_whatever_the_insertion_order():
    edges = [(S, u("b")), (S, u("a")), (u("a"), u("c")), (u("b"), u("c")), (u("b"), u("d")),
             (u("c"), u("e")), (u("d"), u("e")), (u("e"), S), (u("d"), u("b"))]
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
    graph = graph_of([(S, u("fetched")), (S, u("failed-not-fetched")),
                      (S, "http://external.test/", LINK, False),
                      (u("failed-not-fetched"), u("behind"))])
    fetched = {S, u("fetched"), u("behind")}
    # "behind" is fetched but reachable only through an unfetched page: an extra root.
    assert graph.tree([S], fetched) == [(0, S), (1, u("fetched")), (0, u("behind"))]


def test_unreached_fetched_urls_become_sorted_extra_roots():
    graph = graph_of([(S, u("a")), (u("z-orphan"), u("z-child"))])
    fetched = {S, u("a"), u("m-orphan"), u("z-orphan"), u("z-child")}
    assert graph.tree([S], fetched) == [
        (0, S), (1, u("a")), (0, u("m-orphan")), (0, u("z-child")), (0, u("z-orphan")),
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
        (0, u("r1")), (1, u("a")), (0, u("r2")), (1, u("b")),
    ]
    # a root already placed under an earlier root does not start its own tree.
    assert graph.tree([u("r2"), u("b")], fetched) == [
        (0, u("r2")), (1, u("a")), (1, u("b")), (0, u("r1")),
    ]


def test_redirect_edges_are_followed_in_the_tree():
    graph = graph_of([(S, u("old")), (u("old"), u("new"), REDIRECT, True)])
    assert graph.tree([S], {S, u("old"), u("new")}) == [(0, S), (1, u("old")), (2, u("new"))]


def test_tree_of_nothing_fetched_is_empty():
    assert graph_of([(S, u("a"))]).tree([S], set()) == []


def test_write_tsv_header_sorted_unique_lines(tmp_path):
    graph = graph_of([(u("b"), u("a")), (u("a"), u("c"), REDIRECT, True),
                      (u("a"), "http://x.test/", LINK, False), (u("b"), u("a"), REDIRECT, False),
                      (u("a"), u("b"))])
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
        f"{u('a')}\t{u('b')}\tredirect\t0\n"      # duplicate pair: first kind kept
        f"{u('b')}\t{u('c')}\tlink\t1", encoding="utf-8")  # no newline: partial
    (tmp_path / "edges-01.tsv").write_text(
        f"{u('c')}\t{u('d')}\tredirect\t1\n"
        "malformed line with no tabs\n"
        f"{u('d')}\t{u('e')}\tlink\n"              # three fields: skipped
        f"{u('d')}\t{u('e')}\tli", encoding="utf-8")
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
    assert path.read_bytes() == (
        f"{S}\n  {u('a')}\n    {u('a/b')}\n  {u('c')}\n{u('orphan')}\n").encode("utf-8")


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
