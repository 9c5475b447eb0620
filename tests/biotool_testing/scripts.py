"""The repository's Python files that are in no package (image/egress/*.py, image/lockfile.py,
examples/*.py): the images and the examples run them as scripts beside each other, so a test
imports one as they do, by its file's plain name with its folder on sys.path."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType


def module(path: Path) -> ModuleType:
    """The module in `path`; its siblings import each other by plain name, and every test gets
    the same module object (one gate module, whichever test imported it first)."""
    path = Path(path).resolve()
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    mod = importlib.import_module(path.stem)
    found = Path(getattr(mod, "__file__", "") or "").resolve()
    if found != path:
        raise ImportError(f"{path.stem} is already imported from {found}, not {path}")
    return mod
