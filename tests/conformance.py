"""Where the shared conformance cases live: ``../shared/conformance/cases.json`` beside
the project folder (CI lays ``shared/`` beside its clone the same way)."""

from __future__ import annotations

import json
from pathlib import Path

CASES_FILE = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "cases.json"


def load_cases() -> list[dict]:
    """Every case of the file: dicts with id, category, problem, input, expected."""
    return json.loads(CASES_FILE.read_text("utf-8"))
