"""The package's layers: imports point down only.

Ranks, lowest first: the base (the package root, errors, vocabulary), web, content,
output, config, engine, and the front (api, cli, seeds, __main__). A module may import
its own layer or any layer below it; an import of a higher layer is an upward edge and
fails here (docs/architecture.md has the picture)."""

import ast
import os

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "crawler")

RANKS = {"base": 0, "web": 1, "content": 2, "output": 3, "config": 4, "engine": 5, "front": 6}
TOP = {
    "__init__": "base",
    "errors": "base",
    "vocabulary": "base",
    "config": "config",
    "api": "front",
    "cluster": "front",
    "cli": "front",
    "seeds": "front",
    "__main__": "front",
}


def layer_of(module: str) -> str:
    """The layer of a dotted module name under ``crawler``."""
    parts = module.split(".")[1:]
    if not parts:
        return "base"
    if parts[0] in RANKS and parts[0] not in ("base", "config", "front"):
        return parts[0]
    if parts[0] in TOP:
        return TOP[parts[0]]
    raise AssertionError(f"crawler.{parts[0]} belongs to no layer: add it to RANKS or TOP")


def modules():
    for folder, _dirs, files in os.walk(ROOT):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                yield rel.removesuffix(".__init__") if name == "__init__.py" else rel, path


def imports(path: str):
    """The ``crawler`` modules imported by the file at ``path`` (top level or inside
    functions), each as the most specific module name the statement names."""
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.split(".")[0] == "crawler")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "crawler":
            if node.level:
                raise AssertionError(f"{path}: relative import")
            if node.module == "crawler":  # from crawler import errors / __version__
                for alias in node.names:
                    yield f"crawler.{alias.name}" if alias.name in TOP or alias.name in RANKS else "crawler"
            else:
                yield node.module


def upward_edges():
    edges = []
    for module, path in modules():
        here = layer_of(module)
        for target in imports(path):
            there = layer_of(target)
            if RANKS[there] > RANKS[here]:
                edges.append(f"{module} ({here}) imports {target} ({there})")
    return sorted(edges)


def test_no_module_imports_a_higher_layer():
    assert upward_edges() == []


def test_every_module_has_a_layer():
    found = {module for module, _ in modules()}
    assert "crawler.engine.dispatcher" in found and "crawler.web.urlnorm" in found
    for module in found:
        layer_of(module)


def test_an_upward_edge_is_found(tmp_path, monkeypatch):
    fake = tmp_path / "crawler"
    (fake / "web").mkdir(parents=True)
    (fake / "web" / "fetch.py").write_text("from crawler.engine.messages import FetchTask\n")
    (fake / "engine").mkdir()
    (fake / "engine" / "pool.py").write_text("from crawler.web import fetch\nimport crawler.errors\n")
    monkeypatch.setitem(globals(), "ROOT", str(fake))
    assert upward_edges() == ["crawler.web.fetch (web) imports crawler.engine.messages (engine)"]
