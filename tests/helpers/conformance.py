"""Where the shared conformance cases live: ``../shared/conformance/cases.json`` beside
the project folder (CI lays ``shared/`` beside its clone the same way).

A clone without that folder skips the tests that read the file, saying so; under CI
(``CI`` set) a missing file is an error, so coverage can never vanish silently there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

CASES_FILE = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "cases.json"


def load_cases() -> list[dict]:
    """Every case of the file: dicts with id, category, problem, input, expected.

    Skips the calling test module when the file is absent outside CI.
    """
    if not CASES_FILE.exists() and not os.environ.get("CI"):
        pytest.skip(f"{CASES_FILE} not found (the shared/ folder beside the project)", allow_module_level=True)
    return json.loads(CASES_FILE.read_text("utf-8"))
