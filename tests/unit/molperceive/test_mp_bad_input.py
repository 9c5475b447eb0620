"""Bad input through the real CLI: exit 2 (3 for an excluded field), one stderr line, nothing on
stdout, and nothing hangs (every run has a timeout; a FIFO with no writer must never be opened)."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from biotool_testing.contract import error_line
from biotool_testing.ran import Ran

NCI = Path(__file__).parent / "data" / "nci_first_400.smi"


def run(*args, umask=None, timeout=120):
    env = {k: v for k, v in os.environ.items() if k != "BIOTOOL_DEBUG"}
    proc = subprocess.run([sys.executable, "-m", "molperceive", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=timeout,
                          preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)
    return Ran(proc.returncode, proc.stdout, proc.stderr)


def refusal(ran: Ran, code: int, *names) -> str:
    """molperceive's one error line, alone on stderr (`error_line` with this program's name)."""
    return error_line(ran, *names, code=code, prog="molperceive", alone=True)


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    return path


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("small") / "rows.jsonl"
    ran = run("build", NCI, "--out", out, "--limit", "30")
    assert ran.code == 0, ran
    return out


def test_fifo_with_no_writer_never_hangs(fifo, small_corpus, tmp_path):
    refusal(run("label", "--file", fifo, timeout=60), 2, fifo, "FIFO")
    refusal(run("build", fifo, "--out", tmp_path / "o.jsonl", timeout=60), 2, fifo, "FIFO")
    refusal(run("gate", fifo, timeout=60), 2, fifo, "FIFO")
    refusal(run("score", fifo, small_corpus, timeout=60), 2, fifo, "FIFO")
    refusal(run("score", small_corpus, fifo, timeout=60), 2, fifo, "FIFO")
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("n", ["100000", "0", "-3"])
def test_rows_per_molecule_is_bounded(n, tmp_path):
    refusal(run("build", NCI, "--out", tmp_path / "o.jsonl", f"--rows-per-molecule={n}"), 2,
            "Invalid value for '--rows-per-molecule'", "not in the range 1<=x<=100")
    assert not (tmp_path / "o.jsonl").exists()


def _deep(n=10_000):
    return '{"id": "mp-000001", "answers": ' + "[" * n + "]" * n + "}\n"


def _long_int(digits=5000):
    return '{"id": "mp-000001", "answers": {"bond_count": ' + "7" * digits + "}}\n"


@pytest.mark.parametrize("make,why", [(_deep, "nested deeper than 32 levels"),
                                      (_long_int, "Exceeds the limit")])
def test_deep_json_and_huge_integers_are_one_line_exit_2(make, why, small_corpus, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(make())
    refusal(run("gate", bad), 2, bad, "line 1", why)
    refusal(run("score", bad, small_corpus), 2, bad, "line 1", why)
    refusal(run("score", small_corpus, bad), 2, bad, "line 1", why)
    refusal(run("score", small_corpus, bad, "--strict"), 2, bad, "line 1", why)


def test_corpus_row_whose_labels_is_a_string_is_named(small_corpus, tmp_path):
    rows = [json.loads(line) for line in small_corpus.read_text().splitlines()]
    rows[4]["labels"] = "C6H6O"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    refusal(run("gate", bad), 2, "line 5", rows[4]["id"], "labels must be an object")
    refusal(run("score", bad, small_corpus), 2, "line 5", rows[4]["id"], "labels must be an object")


def test_predictions_given_as_the_corpus_is_refused(small_corpus, tmp_path):
    rows = [json.loads(line) for line in small_corpus.read_text().splitlines()]
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"id": r["id"], "answers": {}}) + "\n" for r in rows))
    refusal(run("score", preds, preds), 2, preds, "predictions file given as the corpus")
    refusal(run("gate", preds), 2, preds, "predictions file given as the corpus")


def test_absurd_bracket_numbers_are_bad_input():
    refusal(run("label", "[CH999999999]"), 2, "hydrogen count 999999999")
    refusal(run("label", "[99999C]CC"), 2, "isotope")


def test_a_5_mb_smiles_line_is_refused_before_parsing(tmp_path):
    big = tmp_path / "big.smi"
    big.write_text("CCO ethanol\n" + "C" * 5_000_000 + " huge\n")
    refusal(run("label", "--file", big), 2, big, "line 2", "5,000,000 characters", "4,096")
    refusal(run("build", big, "--out", tmp_path / "o.jsonl"), 2, big, "line 2", "4,096")
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_build_out_honours_the_umask(umask, mode, tmp_path):
    out = tmp_path / "rows.jsonl"
    ran = run("build", NCI, "--out", out, "--limit", "8", umask=umask)
    assert ran.code == 0, ran
    assert stat.S_IMODE(out.stat().st_mode) == mode
    assert not list(tmp_path.glob(".*.part"))


def test_out_folder_missing_is_refused_before_any_work(tmp_path):
    refusal(run("build", NCI, "--out", tmp_path / "no" / "rows.jsonl"), 2, "does not exist")


def test_excluded_fields_in_any_case_are_refused_with_the_reason():
    for name, key in (("LogP", "logp"), ("InChIKey", "inchikey"), ("TPSA", "tpsa")):
        refusal(run("label", "CCO", "--fields", name), 3, name, f"= {key}:")
