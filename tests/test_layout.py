"""The suite's layout: test modules share code only through ``tests.helpers`` and
fixtures only through ``tests/conftest.py``, never by importing one another."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def is_test_module(name: str) -> bool:
    """``test_x``, ``tests.test_x`` or ``.test_x``: a module of tests/ named ``test_*``."""
    name = name.lstrip(".")
    name = name[len("tests.") :] if name.startswith("tests.") else name
    return "." not in name and name.startswith("test_")


def imported_test_modules(source: str) -> list[str]:
    """The test modules ``source`` imports, anywhere in it (also inside functions):
    ``import test_x``, ``from test_x import ...``, ``from tests.test_x import ...``,
    ``from tests import test_x``, ``from . import test_x``, ``from .test_x import ...``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if is_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if is_test_module(module):
                found.append(module)
            elif module in ("tests", "." * node.level):
                found += [alias.name for alias in node.names if is_test_module(alias.name)]
    return found


def test_no_test_module_imports_another():
    # the check itself: every spelling is caught, helpers, conftest and others are not
    caught = imported_test_modules(
        "import test_a\nimport tests.test_b as b\nfrom test_c import x\n"
        "from tests.test_d import y  # noqa: F401\nfrom tests import test_e\n"
        "from . import test_f\nfrom .test_g import z\n"
        "def f():\n    from tests.test_h import w\n"
        "from tests.helpers.siteserver import SiteServer\nfrom tests.conftest import reference\n"
        "from tests import helpers\nimport pytest\nfrom crawler.engine import test_named\n"
    )
    assert sorted(name.rsplit(".", 1)[-1] for name in caught) == [f"test_{c}" for c in "abcdefgh"]
    modules = sorted(TESTS.glob("test_*.py"))
    assert len(modules) > 40 and Path(__file__).resolve() in modules
    offenders = {p.name: names for p in modules if (names := imported_test_modules(p.read_text("utf-8")))}
    assert offenders == {}, (
        "test modules importing other test modules (move shared fixtures "
        f"to tests/conftest.py, shared code to tests/helpers/): {offenders}"
    )
