"""biotool-sandbox keeps the contract of biotool and molperceive (docs/contract.md), checked by
the one contract check the bad-input tier uses: usage errors and engine failures are one line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests"))
from badinput.contract import problems  # noqa: E402


def _run(argv, env=None) -> dict:
    e = {**os.environ, "PYTHONPATH": str(REPO / "entrypoints"), **(env or {})}
    p = subprocess.run([sys.executable, "-m", "biotool_sandbox", *argv], capture_output=True,
                       text=True, env=e, timeout=60)
    out = p.stdout.strip()
    try:
        kind = "empty" if not out else ("object" if isinstance(json.loads(out), dict) else "other")
    except ValueError:
        kind = "text"
    return {"rc": p.returncode, "timed_out": False, "elapsed": 0, "stdout": p.stdout,
            "stdout_kind": kind, "stderr": p.stderr, "outputs_present": [], "leftovers": []}


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
