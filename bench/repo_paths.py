"""The one place a bench script's import path is set: a script run as `python3 bench/NAME.py`
has only bench/ on sys.path, so importing this module first puts the repository's tests/ there
too and the shared test helpers import by name (`from biotool_testing import simulate`), as
pytest's `pythonpath` setting in pyproject.toml does for the tests."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"

if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))
