"""Matrices that must be refused in one line (exit 2), with nothing before it on stderr and
nothing that can hang: NaN/inf/ragged CSV rows, a FIFO, a folder nobody may read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from biotool_testing.contract import error_line

CSV_HEAD = "cell,CD3E,MS4A1,LYZ\n"
CASES = {
    "nan.csv": (CSV_HEAD + "c1,1,nan,3\nc2,2,3,4\n", "NaN or infinite (first: cell c1, gene MS4A1)"),
    "inf.csv": (CSV_HEAD + "c1,1,2,3\nc2,inf,3,4\n", "NaN or infinite (first: cell c2, gene CD3E)"),
    "short_row.csv": (CSV_HEAD + "c1,1,2\nc2,2,3,4\n", "NaN or infinite (first: cell c1, gene LYZ)"),
    "long_row.csv": (CSV_HEAD + "c1,1,2,3\nc2,2,3,4,9\n", "rows of different lengths"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_non_finite_and_ragged_tables_are_one_line_exit_2(biotool, tmp_path, name):
    text, message = CASES[name]
    path = tmp_path / name
    path.write_text(text)
    line = error_line(biotool("celltype", "--matrix", str(path)), alone=True)
    assert str(path) in line and message in line


def test_non_finite_values_in_an_h5ad_are_refused_too(biotool, tmp_path, halves):
    import numpy as np

    _, query = halves
    q = query.copy()
    x = q.X.toarray() if hasattr(q.X, "toarray") else np.array(q.X)
    x[3, 5] = np.nan
    q.X = x
    q.write_h5ad(tmp_path / "nan.h5ad")
    line = error_line(biotool("celltype", "--matrix", str(tmp_path / "nan.h5ad")), alone=True)
    assert "1 value(s) are NaN or infinite" in line


def test_a_fifo_with_no_writer_is_refused_without_blocking(biotool, tmp_path):
    fifo = tmp_path / "x.csv"
    os.mkfifo(fifo)
    line = error_line(biotool("celltype", "--matrix", str(fifo), timeout=60), alone=True)
    assert "FIFO" in line and str(fifo) in line


def test_a_matrix_folder_nobody_may_read_is_exit_2(tmp_path, staged_home, biotool_env):
    """Mode 000 binds only a user without root's override: as root, the check runs as `nobody`
    (the whole command where nobody's Python has the packages, else the matrix loader under
    the same output contract, which needs only the standard library)."""
    folder = tmp_path / "locked"
    shutil.copytree(staged_home / "samples" / "demo-pbmc68k-heldout", folder)
    prefix, whole_command = [], True
    entrypoints = str(Path(__file__).resolve().parents[3] / "entrypoints")
    env = {**biotool_env, "BIOTOOL_CACHE": str(tmp_path / "cache"), "HOME": str(tmp_path),
           "PYTHONPATH": entrypoints}
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("root without setpriv cannot drop to another user")
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        for p in [tmp_path, *tmp_path.parents]:  # let nobody reach the folder itself
            if p != p.parent:
                p.chmod(p.stat().st_mode | 0o011)
        probe = subprocess.run([*prefix, sys.executable, "-c", "import anndata"],
                               capture_output=True, env=env)
        whole_command = probe.returncode == 0
    if not whole_command:
        cmd = [sys.executable, "-c", "import sys; from biotool.output import emit; "
               "from commandline.ladder import finish; "
               "from biotool.singlecell.matrix import load; "
               "finish('biotool', lambda: load(sys.argv[1]), emit)",
               str(folder)]
    else:
        cmd = [sys.executable, "-m", "biotool", "celltype", "--matrix", str(folder)]
    folder.chmod(0o000)
    try:
        proc = subprocess.run([*prefix, *cmd], capture_output=True, text=True, env=env,
                              timeout=300)
    finally:
        folder.chmod(0o755)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and str(folder) in lines[0] and "not readable" in lines[0], lines
