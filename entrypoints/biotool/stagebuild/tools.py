"""What the preparers share: what one returns (`Prepared`), running a tool (its failure a
StagingError with stderr's tail) and unpacking a tar archive safely."""

from __future__ import annotations

import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from biotool.output import ToolFailure
from biotool.procs import capture
from biotool.staging import StagingError


@dataclass(frozen=True)
class Prepared:
    """What a preparer made of an item's fetched files: its files ({"main": path, index name:
    path}) and the facts it found, recorded beside the manifest's fields in staged.json (a
    database's taxa, a tool's `use` line, a model's probe). The manifest entry is never
    changed."""
    files: Mapping[str, Path]
    facts: Mapping[str, Any] = field(default_factory=dict)


def run_tool(cmd: list[str], env: dict | None = None, stdout=None) -> str:
    """A tool's stdout (or into the open file `stdout`); StagingError with its stderr's tail."""
    try:
        done = capture(cmd, None, env=env, into=stdout)
    except ToolFailure as exc:
        raise StagingError(str(exc)) from None
    if done.rc != 0:
        raise StagingError(f"{' '.join(cmd)} failed: {done.err.strip()[-500:]}")
    return done.out


def safe_extract(archive: Path, into: Path) -> list[str]:
    try:
        with tarfile.open(archive, "r:*") as tar:
            names = tar.getnames()
            for m in tar.getmembers():  # also where tarfile predates extraction filters
                if not (m.isfile() or m.isdir()) or m.name.startswith("/") or ".." in m.name:
                    raise tarfile.TarError(f"unsafe member {m.name!r}")
            if hasattr(tarfile, "data_filter"):
                tar.extractall(into, filter="data")
            else:
                tar.extractall(into)
    except (tarfile.TarError, OSError) as exc:
        raise StagingError(f"{archive.name}: not a usable tar archive ({exc})") from None
    archive.unlink()
    return names
