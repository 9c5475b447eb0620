"""The repository's folders, for helpers and tests that read its files."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REFS = REPO / "refs"
