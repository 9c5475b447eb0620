"""Fixtures for molperceive: a corpus built from a real molecule list, and a CLI runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
NCI = DATA / "nci_first_400.smi"


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> tuple[Path, dict]:
    """Rows built from the first 400 NCI molecules (real list, see data/PROVENANCE.md)."""
    from molperceive import build
    out = tmp_path_factory.mktemp("corpus") / "rows.jsonl"
    summary = build.build(NCI, out, seed=0, graph_fraction=0.3, invalid_fraction=0.15,
                          para_fraction=0.4)
    return out, summary


@pytest.fixture
def rows_io():
    """(read, write) helpers for JSONL rows."""

    def read(path: Path) -> list[dict]:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def write(path: Path, rows) -> Path:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path

    return read, write


@pytest.fixture
def molperceive():
    """Run `molperceive ARGS...` as a subprocess; returns (code, stdout, stderr)."""

    def run(*args: str):
        env = {k: v for k, v in os.environ.items() if k != "BIOTOOL_DEBUG"}
        proc = subprocess.run([sys.executable, "-m", "molperceive", *map(str, args)],
                              capture_output=True, text=True, env=env, timeout=300)
        return proc.returncode, proc.stdout, proc.stderr

    return run
