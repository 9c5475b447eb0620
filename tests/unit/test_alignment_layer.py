"""The reference and alignment layer sits below the tool families: nothing in it imports a
family, annotate reaches references through it and never through `reads`, staging imports
no family at all, and each of the layer's modules imports on its own (no import cycle
through a family)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from biotool.cli import FAMILIES

PACKAGE = Path(__file__).resolve().parents[2] / "entrypoints" / "biotool"
LAYER = sorted((PACKAGE / "alignment").glob("*.py"))


def imported(path: Path, root: Path = PACKAGE) -> set[str]:
    """Every module a file of the package at `root` imports, at its top or inside a function,
    by absolute name."""
    package = "biotool." + ".".join(path.relative_to(root).parent.parts)
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.rstrip(".").split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return out


def family_imports(path: Path, families=FAMILIES, root: Path = PACKAGE) -> list[str]:
    return sorted(m for m in imported(path, root) for f in families
                  if m == f"biotool.{f}" or m.startswith(f"biotool.{f}."))


def test_the_walk_sees_imports_at_every_depth(tmp_path):
    mod = PACKAGE / "alignment" / "reference.py"
    assert {"biotool.staging", "biotool.alignment.indexes", "pysam"} <= imported(mod)
    # A family import inside a function counts like one at the top; relative ones resolve.
    fake = tmp_path / "alignment" / "late.py"
    fake.parent.mkdir()
    fake.write_text("def f():\n    from biotool.reads import bam\n    from . import aligners\n")
    assert family_imports(fake, root=tmp_path) == ["biotool.reads", "biotool.reads.bam"]
    assert "biotool.alignment.aligners" in imported(fake, tmp_path)


@pytest.mark.parametrize("path", LAYER, ids=lambda p: p.name)
def test_nothing_in_the_layer_imports_a_family(path):
    assert family_imports(path) == []


def test_annotate_reaches_references_through_the_layer():
    for path in sorted((PACKAGE / "annotate").glob("*.py")):
        assert family_imports(path, ("reads",)) == [], path.name


def test_staging_imports_no_family():
    # A family's code that staging runs (a demo builder, a model's check) is named by the
    # manifest item ("module:function"), so staging knows no family's internals.
    for path in sorted((PACKAGE / "staging").glob("*.py")):
        assert family_imports(path) == [], path.name


def test_each_layer_module_imports_first_and_alone():
    for path in LAYER:
        name = f"biotool.alignment.{path.stem}".removesuffix(".__init__")
        proc = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0, (name, proc.stderr[-500:])
