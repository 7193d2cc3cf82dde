"""MemoryFrontier: lowest depth first, FIFO within a depth, len, drain, empty pop."""

import pytest

from crawler.engine.frontier import MemoryFrontier
from crawler.engine.messages import FetchTask


def task(name: str, depth: int) -> FetchTask:
    return FetchTask(f"http://example.org/{name}", depth)


def urls(tasks) -> list[str]:
    return [t.url.rsplit("/", 1)[1] for t in tasks]


def test_empty_frontier_has_length_zero_and_pop_raises():
    frontier = MemoryFrontier()
    assert len(frontier) == 0
    with pytest.raises(IndexError):
        frontier.pop()


def test_pop_returns_lowest_depth_first():
    frontier = MemoryFrontier()
    frontier.push(task("d2", 2))
    frontier.push(task("d0", 0))
    frontier.push(task("d1", 1))
    assert urls([frontier.pop(), frontier.pop(), frontier.pop()]) == ["d0", "d1", "d2"]


def test_fifo_within_a_depth():
    frontier = MemoryFrontier()
    for name in ("c", "a", "b"):
        frontier.push(task(name, 3))
    assert urls([frontier.pop() for _ in range(3)]) == ["c", "a", "b"]


def test_len_tracks_push_and_pop():
    frontier = MemoryFrontier()
    frontier.push(task("a", 1))
    frontier.push(task("b", 0))
    frontier.push(task("c", 1))
    assert len(frontier) == 3
    frontier.pop()
    assert len(frontier) == 2
    frontier.pop()
    frontier.pop()
    assert len(frontier) == 0
    with pytest.raises(IndexError):
        frontier.pop()


def test_mixed_pushes_between_pops_keep_depth_order():
    frontier = MemoryFrontier()
    frontier.push(task("a1", 1))
    frontier.push(task("b1", 1))
    assert urls([frontier.pop()]) == ["a1"]
    frontier.push(task("c0", 0))
    frontier.push(task("d1", 1))
    frontier.push(task("e2", 2))
    assert urls(frontier.drain()) == ["c0", "b1", "d1", "e2"]
    assert len(frontier) == 0


def test_drain_yields_everything_lowest_depth_first_then_empties():
    frontier = MemoryFrontier()
    pushed = [task("x2", 2), task("y0", 0), task("z1", 1), task("w0", 0), task("v2", 2)]
    for t in pushed:
        frontier.push(t)
    drained = list(frontier.drain())
    assert urls(drained) == ["y0", "w0", "z1", "x2", "v2"]
    assert drained[0] is pushed[1]  # the very objects pushed come back
    assert len(frontier) == 0
    assert list(frontier.drain()) == []
    with pytest.raises(IndexError):
        frontier.pop()


def test_task_fields_survive_the_round_trip():
    frontier = MemoryFrontier()
    original = FetchTask("http://example.org/t", 4, "http://example.org/p", ("http://example.org/r",))
    frontier.push(original)
    assert frontier.pop() == original
