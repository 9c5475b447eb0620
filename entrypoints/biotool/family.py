"""What a tool family declares about itself (its `describe()`): its commands, a one-line
summary, and what it needs here, the binaries it runs and the Python modules it imports.
`biotool list` says from it whether the family is usable, `doctor` checks every family's
binaries and `version` reports theirs: one declaration, so the three cannot drift."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

# The tool families, in the CLI's order: each is a folder biotool/<family>/ whose cli.py
# declares its commands (`commands()`) and itself (`describe()`), imported by name so the
# families stay apart and this registry imports none of them at its top.
FAMILIES = ("system", "reads", "taxonomy", "singlecell", "annotate")


@dataclass(frozen=True)
class Binary:
    """A command-line tool a family runs, and how it says its version: the first line of
    what `version` prints, or the line starting with `version_line` (bwa has no flag)."""

    name: str
    version: tuple[str, ...] = ("--version",)
    version_line: str = ""


@dataclass(frozen=True)
class Family:
    commands: tuple[str, ...]
    summary: str
    binaries: tuple[Binary, ...] = ()
    python: tuple[str, ...] = ()  # import names
    # More that `biotool list` shows of the family, computed only there (annotate's tools).
    listing: Callable[[], dict] | None = None


def describe(family: str) -> Family:
    return importlib.import_module(f"biotool.{family}.cli").describe()


def every() -> dict[str, Family]:
    """Each family's declaration, in the CLI's order."""
    return {name: describe(name) for name in FAMILIES}


def binaries() -> list[Binary]:
    """Every family's binaries, each once, in the families' order."""
    seen: dict[str, Binary] = {}
    for fam in every().values():
        for b in fam.binaries:
            seen.setdefault(b.name, b)
    return list(seen.values())
