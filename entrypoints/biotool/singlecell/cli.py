"""Commands of the singlecell family (being built; see its issue)."""

from __future__ import annotations

import typer


def describe() -> dict:
    return {"commands": [], "summary": "singlecell tools", "requires": {}}


def register(app: typer.Typer) -> None:
    return None
