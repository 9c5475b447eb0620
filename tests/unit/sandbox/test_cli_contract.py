"""biotool-sandbox keeps the contract of biotool and molperceive (docs/contract.md), checked by
the one contract check the bad-input tier uses: usage errors and engine failures are one line."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from badinput.contract import problems
from biotool_testing.contract import judged
from biotool_testing.ran import Ran

REPO = Path(__file__).resolve().parents[3]


def _run(argv, env=None) -> dict:
    e = {**os.environ, "PYTHONPATH": str(REPO / "entrypoints"), **(env or {})}
    p = subprocess.run([sys.executable, "-m", "biotool_sandbox", *argv], capture_output=True,
                       text=True, env=e, timeout=60)
    return judged(Ran(p.returncode, p.stdout, p.stderr))


@pytest.mark.parametrize("argv,culprit", [
    (["bogus"], "bogus"),
    (["exec"], "exec"),
    (["up", "--mode", "nope"], "--mode"),
    (["down", "not-a-run"], "not-a-run"),
    (["up", "--cpus", "lots"], "--cpus"),
])
def test_usage_errors_are_one_line_exit_2(argv, culprit):
    case = {"argv": ["biotool-sandbox", *argv], "expect": 2, "culprit": culprit}
    assert problems(case, _run(argv)) == []


def test_an_unreachable_engine_is_one_line_exit_4(tmp_path):
    # The docker SDK's own exception must not escape as a traceback.
    env = {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    case = {"argv": ["biotool-sandbox", "ps"], "expect": 4, "culprit": None}
    assert problems(case, _run(["ps"], env)) == []
