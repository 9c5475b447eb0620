"""The bad-input corpus (tests/badinput) against the contract, one test per case.

Every case runs as a real subprocess of `biotool` or `molperceive` on the staged demo home,
two at a time, each with a timeout (a hang is a failure); the selected cases run once, in a
session fixture, and each test then judges its own case. Under pytest-xdist the cases are one
group (`--dist loadgroup`, `make test-unit`), so one worker runs the corpus once: every
worker's session sees every collected case, and without the group each would run them all.
The image tier (tests/image/test_bad_input_corpus.py) runs the same cases inside the image as
an arbitrary UID on a read-only root.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from badinput import cases as corpus
from badinput.contract import problems
from badinput.driver import HANG_S
from badinput.tier import failure, report, restore_permissions, selected_ids

TESTS = Path(__file__).resolve().parents[1]

CASES = corpus.cases()
ROOT = os.geteuid() == 0


@pytest.fixture(scope="session")
def corpus_results(request, staged_home) -> dict:
    """Results of the cases this session selected, by id (the corpus runs once)."""
    wanted = selected_ids(request)
    selected = [c for c in CASES if c["id"] in wanted and not (ROOT and c["nonroot"])]
    base = Path(tempfile.mkdtemp(prefix="badinput-"))
    try:
        root = corpus.materialise(base / "corpus")
        (root / "cases.json").write_text(json.dumps({"cases": selected}))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(TESTS.parent / "entrypoints"), os.environ.get("PYTHONPATH", "")]))
        subprocess.run([sys.executable, str(TESTS / "badinput" / "driver.py"),
                        str(root / "cases.json"), str(base / "results.json"),
                        "--home", str(staged_home), "--cache", str(base / "cache"),
                        "--jobs", "2", "--timeout", str(HANG_S)], env=env, check=True)
        results = json.loads((base / "results.json").read_text())
        if os.environ.get("BADINPUT_RESULTS"):  # kept for whoever reads the failures at length
            shutil.copyfile(base / "results.json", os.environ["BADINPUT_RESULTS"])
    finally:
        restore_permissions(base / "corpus")
        shutil.rmtree(base, ignore_errors=True)
    return report(request, "unit tier", selected, results)


def test_corpus_is_wide():
    """At least the width the issue asks: every command, every class, ~250+ cases."""
    assert len(CASES) >= 250
    commands = {(c["argv"][0], c["argv"][1]) for c in CASES if len(c["argv"]) > 1}
    for cmd in ("align", "breakpoints", "variants", "taxonomy", "celltype", "call", "list",
                "references", "doctor", "version"):
        assert ("biotool", cmd) in commands, cmd
    for cmd in ("contract", "selftest", "label", "corrupt", "build", "gate", "score"):
        assert ("molperceive", cmd) in commands, cmd
    classes = {c["cls"] for c in CASES}
    assert {"special", "format", "same", "json", "count", "option", "output", "cache",
            "usage", "refused"} <= classes
    assert len({c["id"] for c in CASES}) == len(CASES)


def test_contract_check_catches_breaches():
    """The checker itself fails on each kind of breach (so a green corpus means something)."""
    case = {"id": "x", "argv": ["biotool", "align"], "expect": 2, "culprit": "x.fq",
            "outputs": []}
    good = {"rc": 2, "timed_out": False, "stdout": "", "stdout_kind": "empty", "elapsed": 0.1,
            "stderr": "biotool: aligning...\nbiotool: error: --fastq x.fq: empty\n",
            "outputs_present": [], "leftovers": []}
    assert problems(case, good) == []
    for change in ({"rc": 4}, {"timed_out": True}, {"stdout_kind": "not JSON"},
                   {"stdout_kind": "JSON list, not an object"},
                   {"stderr": "Traceback (most recent call last):\nbiotool: error: x.fq\n"},
                   {"stderr": "biotool: error: a x.fq\nbiotool: error: b x.fq\n"},
                   {"stderr": "warning: numpy\nbiotool: error: x.fq bad\n"},
                   {"stderr": "biotool: error: the file is bad\n"},
                   {"outputs_present": ["out/v.vcf.gz"]}, {"leftovers": [".work.abc"]}):
        assert problems(case, {**good, **change}), change


@pytest.mark.xdist_group("badinput-corpus")
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_bad_input(case, corpus_results):
    if ROOT and case["nonroot"]:
        pytest.skip("a permission case: root reads anything (the image tier runs it as a UID)")
    result = corpus_results[case["id"]]
    bad = problems(case, result)
    assert not bad, failure(case, result, bad)
