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
SOURCES = REPO / "harbor" / "tasks"
KEYS = {p.name: json.loads((p / "key.json").read_text())
        for p in sorted(SOURCES.iterdir()) if (p / "key.json").is_file()}
# Every task this host can run: reads-organism-blast needs NCBI itself, which this host cannot
# reach (tests/image/test_harbor_blast_task.py runs it against the mock NCBI instead).
TASKS = tuple(n for n, k in KEYS.items() if not k.get("search"))
DRAWN = tuple(n for n in TASKS if KEYS[n].get("draw"))
# The oracle trials kept after their job (the fixed tasks and one drawn): their stacks are
# read by `biotool-sandbox audit` and checked for sharing nothing.
KEPT = tuple(n for n in TASKS if n not in DRAWN) + DRAWN[:1]
MOLPERCEIVE = {"molperceive_formula", "molperceive_heavy_atom_count", "molperceive_drift"}
# Components a task's key adds to reward.json beside the common ones (harbor_grade).
TASK_COMPONENTS = {
    **{n: MOLPERCEIVE for n, k in KEYS.items() if any(
        "molperceive" in r or r.get("drawn") == "molperceive" for r in k["fields"].values())},
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
# A solution of spike-d614g that writes the right answer, then tries to fill Harbor's folders
# (/logs, where an agent writes its logs, and /solution) with 2 GiB each; what each write got
# goes to /logs/agent/fill.txt.
FILL = "cheat-fill-logs"
FILL_SCRIPT = "".join(
    f"dd if=/dev/zero of={d}/fill bs=1M count=2048 2> /tmp/dd.txt\n"
    f"echo \"{d} $(stat -c %s {d}/fill 2>/dev/null || echo 0) $(tr '\\n' ' ' < /tmp/dd.txt)\" "
    f">> /tmp/fill.txt\nrm -f {d}/fill\n"
    for d in ("/logs/agent", "/solution")) + "cp /tmp/fill.txt /logs/agent/fill.txt\n"
# A solution of sarscov2-deletion that writes the right answer without running anything: the
# key asks for the caller's output on the staged reads beside it (evidence), so it scores 0.
UNRUN = "cheat-unrun"
UNRUN_ANSWER = {"pos": 29749, "ref": "ACGATCGAGTG", "alt": "A"}
# A drawn task's cheat: the answer of another draw of the same task (seed 0), as an agent that
# remembered an earlier trial would write it ("mem-" + the task's name, short: Harbor cuts a
# trial's name at 32 characters).
REMEMBERED = "mem-"
# A cheat that hunts the trial's filesystem for the drawn truth and answers from what it finds.
TRUTH_HUNT = "cheat-truth-hunt"


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


def answer_of(values: dict) -> dict:
    """The answer a draw's truth values make (a stored label's value for MolPerceive's)."""
    return {f: v["stored"] if isinstance(v, dict) and "stored" in v else v
            for f, v in values.items()}


def seeded_answers(image: str, seed: int = 0) -> dict[str, dict]:
    """{drawn task: the answer of its draw with `seed`}, drawn in the image (its staged data)."""
    script = ("import json, pathlib, random, sys, tempfile\n"
              "from biotool_sandbox.harbor_draw import resolve\n"
              "out = {}\n"
              "for task, draw in json.loads(sys.argv[1]).items():\n"
              "    out[task] = resolve(draw)(random.Random(int(sys.argv[2])),"
              " pathlib.Path(tempfile.mkdtemp()))\n"
              "print(json.dumps(out))\n")
    draws = json.dumps({n: KEYS[n]["draw"] for n in DRAWN})
    ran = subprocess.run(["docker", "run", "--rm", "--network", "none", "-e", "HOME=/tmp",
                          image, "python", "-c", script, draws, str(seed)],
                         capture_output=True, text=True, timeout=900, check=True)
    return {n: answer_of(v) for n, v in json.loads(ran.stdout).items()}


def run_job(runner_image, workspace, path: Path, agent: str, name: str, *extra,
            concurrent: int = 2) -> Job:
    jobs = workspace / "jobs"
    jobs.mkdir(exist_ok=True)
    ran = harbor(runner_image, workspace, "run", "-p", str(path), "-a", agent, "-o", str(jobs),
                 "--job-name", name, "-n", str(concurrent), "-y", *extra)
    result = jobs / name / "result.json"
    assert result.is_file(), f"harbor wrote no result (exit {ran.returncode}): " \
                             f"{(ran.stdout + ran.stderr)[-3000:]}"
    return Job(jobs / name, json.loads(result.read_text()), ran.stdout + ran.stderr)


def harbor_project(trial: Path) -> str:
    """The compose project of a trial's agent environment (Harbor: the trial's name + __env)."""
    return f"{trial.name.lower()}__env"


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


