"""One exit code per condition (docs/contract.md): each row of the table walked on a real path."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from biotool_testing.contract import error_line
from biotool_testing.ran import Ran

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "refs" / "demo" / "sarscov2"
REF = DEMO / "MN908947.3.reference.fasta"
READS = DEMO / "MT007544.fastq"


def run(*args, env=None, stdin=""):
    e = {**os.environ, "PYTHONPATH": str(REPO / "entrypoints"), **(env or {})}
    p = subprocess.run([sys.executable, "-m", "biotool", *args], capture_output=True,
                       text=True, env=e, input=stdin, timeout=120)
    return Ran(p.returncode, p.stdout, p.stderr)


@pytest.fixture
def empty_home(tmp_path):
    """An inventory with nothing staged: what an image without the item looks like."""
    home = tmp_path / "opt"
    home.mkdir()
    (home / "staged.json").write_text('{"items": {}}')
    return {"BIOTOOL_HOME": str(home), "BIOTOOL_CACHE": str(tmp_path / "cache")}


def test_usage_errors_are_2():
    error_line(run("align", "--fastq"), code=2)
    error_line(run("no-such-command"), code=2)
    error_line(run("align", "--fastq", str(READS), "--fastq", str(READS), "--reference", str(REF)),
               code=2)


def test_bad_input_file_is_2(tmp_path):
    fifo = tmp_path / "p.fq"
    os.mkfifo(fifo)
    assert "FIFO" in error_line(run("align", "--fastq", str(fifo), "--reference", str(REF)), code=2)


def test_not_staged_is_2_wherever_it_is_asked(empty_home):
    # A taxonomy database, a gene table: the request cannot be served in this image.
    error_line(run("taxonomy", "--fastq", str(READS), "--local", env=empty_home), code=2)
    error_line(run("call", "gene_lookup", '{"symbol": "S"}', env=empty_home), code=2)


def test_a_budget_spent_before_any_result_is_2(empty_home):
    # A first-use index build has no partial result; the remedy (a longer --timeout, or a
    # staged index) is the caller's, so it is the request, not a failed tool.
    r = run("align", "--fastq", str(READS), "--reference", str(REF), "--timeout", "1e-9",
            env=empty_home)
    line = error_line(r, code=2)
    assert f"reference {REF}: its minimap2:map-ont index is not staged" in line
    assert "longer --timeout" in line


def test_a_broken_rules_file_is_4_and_fails_closed(tmp_path):
    bad = tmp_path / "rules.toml"
    bad.write_text("[egress\nallow = 1")
    env = {"BIOTOOL_RULES": str(bad)}
    error_line(run("call", "translate", '{"sequence": "ATG"}', env=env), code=4)


def test_refused_by_the_rules_is_3():
    error_line(run("call", "pubmed_search", '{"query": "x"}'), code=3)


def test_quiet_and_old_option_names_after_the_command():
    r = run("align", "--fastq", str(READS), "--reference", str(REF), "--n-reads", "20", "-q")
    assert r.code == 0, r.stderr
    assert r.stderr == ""  # -q after the command silences progress like --quiet
    assert '"n_reads"' in r.stdout
