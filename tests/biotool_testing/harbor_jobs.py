"""Harbor jobs for the Harbor tier (tests/harbor): the runner, the tasks' constants, and
reading what Harbor wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from biotool_testing.paths import REPO
RUNNER = REPO / "image" / "harbor"
VERSION = (RUNNER / "HARBOR_VERSION").read_text().strip()
# image/harbor/run.sh's variable: a runner built under another tag (build-runner.sh TAG).
RUNNER_IMAGE = os.environ.get("HARBOR_RUNNER_IMAGE") or f"biotool-harbor-runner:{VERSION}"
JOB_TIMEOUT = 3600  # only stops a job that hangs: a busy host's few minutes, ten times over
TASKS = ("molperceive-batch", "pbmc-celltype", "sarscov2-deletion", "spike-d614g")
# Components a task's key adds to reward.json beside the common ones (harbor_grade).
TASK_COMPONENTS = {
    "molperceive-batch": {"molperceive_formula", "molperceive_heavy_atom_count",
                          "molperceive_drift"},
    "sarscov2-deletion": {"evidence_ok"},
}
ANSWER = {"gene": "S", "hgvs_p": "p.Asp614Gly", "effect": "missense"}
# Cheating solutions of spike-d614g: each writes the right answer, and what else it does is
# what the task's declaration scores 0.
CHEATS = {
    "cheat-offhost": "curl -sS -m 20 https://example.org/ > /dev/null 2>&1 || true",
    # An accession as the BLAST query: a lookup of a record, which the rules forbid.
    "cheat-accession": ("curl -sS -m 30 -d 'CMD=Put&PROGRAM=blastn&DATABASE=core_nt"
                        "&QUERY=MN908947.3' https://blast.ncbi.nlm.nih.gov/Blast.cgi "
                        "> /logs/agent/blast.txt 2>&1 || true"),
}
# A solution of sarscov2-deletion that writes the right answer without running anything: the
# key asks for the caller's output on the staged reads beside it (evidence), so it scores 0.
UNRUN = "cheat-unrun"
UNRUN_ANSWER = {"pos": 29749, "ref": "ACGATCGAGTG", "alt": "A"}


@dataclass
class Job:
    dir: Path
    result: dict
    output: str

    def trials(self) -> dict[str, Path]:
        """{task folder's name: trial folder} (one trial per task; Harbor names a trial after
        its task's folder)."""
        return {d.name.rsplit("__", 1)[0]: d for d in sorted(self.dir.iterdir())
                if (d / "result.json").is_file()}


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "entrypoints")}
    return subprocess.run([sys.executable, "-m", "biotool_sandbox", *args], capture_output=True,
                          text=True, env=env, check=check, timeout=300)


def harbor(runner_image: str, workspace: Path, *args: str,
           timeout: float = JOB_TIMEOUT) -> subprocess.CompletedProcess:
    """Harbor's CLI in the runner image, the workspace bound at the same path."""
    return subprocess.run([str(RUNNER / "run.sh"), "--bind", str(workspace), "--", *args],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "HARBOR_RUNNER_IMAGE": runner_image})


def run_job(runner_image, workspace, path: Path, agent: str, name: str, *extra) -> Job:
    jobs = workspace / "jobs"
    jobs.mkdir(exist_ok=True)
    ran = harbor(runner_image, workspace, "run", "-p", str(path), "-a", agent, "-o", str(jobs),
                 "--job-name", name, "-n", "2", "-y", *extra)
    result = jobs / name / "result.json"
    assert result.is_file(), f"harbor wrote no result (exit {ran.returncode}): " \
                             f"{(ran.stdout + ran.stderr)[-3000:]}"
    return Job(jobs / name, json.loads(result.read_text()), ran.stdout + ran.stderr)


def harbor_project(trial: Path) -> str:
    """The compose project of a trial's agent environment (Harbor: the trial's name + __env)."""
    return f"{trial.name.lower()}__env"


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


