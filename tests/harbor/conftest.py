"""The Harbor tier (make test-harbor, docs/tests.md): Harbor's own CLI, pinned
(image/harbor/HARBOR_VERSION), from the runner image (image/harbor/build-runner.sh) on this
host's engine, against the tasks `biotool-sandbox harbor` writes for the images under test.

Each job runs once per session; the tests read what Harbor wrote (result.json, reward.json,
grade.json, the collected artifacts) and what the engine kept of the trials.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from biotool_testing.harbor_jobs import (ANSWER, CHEATS, DRAWN, FILL, FILL_SCRIPT, KEPT,
                                         REMEMBERED, RUNNER, RUNNER_IMAGE, TASKS, TRUTH_HUNT,
                                         UNRUN, UNRUN_ANSWER, cli, harbor_project, run_job,
                                         seeded_answers)
from biotool_testing.images import EGRESS_IMAGE, SANDBOX_IMAGE


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.harbor)


def _present(image: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", image], capture_output=True,
                          timeout=60).returncode == 0


@pytest.fixture(scope="session")
def runner_image():
    """The runner (make harbor-runner), built here when absent; and the images under test."""
    if not _present(RUNNER_IMAGE):
        ran = subprocess.run([str(RUNNER / "build-runner.sh"), RUNNER_IMAGE],
                             capture_output=True, text=True, timeout=1800)
        if ran.returncode != 0:
            pytest.fail(f"the Harbor runner image did not build: {ran.stderr[-2000:]}",
                        pytrace=False)
    missing = [i for i in (SANDBOX_IMAGE, EGRESS_IMAGE) if not _present(i)]
    if missing:
        pytest.fail(f"images {', '.join(missing)} are not built: run `make image`",
                    pytrace=False)
    return RUNNER_IMAGE


@pytest.fixture(scope="session")
def workspace(tmp_path_factory):
    # Bound at the same path in the runner: the engine resolves Harbor's compose paths here.
    return tmp_path_factory.mktemp("harbor")


@pytest.fixture(scope="session")
def tasks(workspace):
    out = workspace / "tasks"
    # The offline tasks: reads-organism-blast needs NCBI itself, which this host cannot reach
    # (tests/image/test_harbor_blast_task.py runs it against the mock NCBI instead).
    written = json.loads(cli("harbor", "--out", str(out), "--image", SANDBOX_IMAGE,
                              "--egress-image", EGRESS_IMAGE,
                              *[a for t in TASKS for a in ("--task", t)]).stdout)
    assert sorted(t["task"] for t in written["tasks"]) == [f"biotool/{t}" for t in TASKS]
    return out


@pytest.fixture(scope="session")
def cheats(workspace, tasks):
    out = workspace / "cheats"
    out.mkdir()
    for name, attempt in CHEATS.items():
        shutil.copytree(tasks / "spike-d614g", out / name)
        (out / name / "solution" / "solve.sh").write_text(
            f"#!/bin/bash\n{attempt}\nprintf '%s' '{json.dumps(ANSWER)}' > "
            "/logs/artifacts/answer.json\n")
    fill = out / FILL
    shutil.copytree(tasks / "spike-d614g", fill)
    (fill / "solution" / "solve.sh").write_text(
        f"#!/bin/bash\nprintf '%s' '{json.dumps(ANSWER)}' > /logs/artifacts/answer.json\n"
        + FILL_SCRIPT)
    unrun = out / UNRUN
    shutil.copytree(tasks / "sarscov2-deletion", unrun)
    (unrun / "solution" / "solve.sh").write_text(
        f"#!/bin/bash\nprintf '%s' '{json.dumps(UNRUN_ANSWER)}' > /logs/artifacts/answer.json\n")
    # An infrastructure failure: the task no longer collects the egress audit, so the
    # verifier has none to read (the answer is right; the grade cannot be given).
    infra = out / "infra-no-audit"
    shutil.copytree(tasks / "spike-d614g", infra)
    toml = (infra / "task.toml").read_text()
    (infra / "task.toml").write_text(toml[:toml.index("[[artifacts]]")])
    # Each drawn task answered from memory: another draw's answer, never this trial's.
    for name, answer in seeded_answers(SANDBOX_IMAGE).items():
        remembered = out / f"{REMEMBERED}{name}"
        shutil.copytree(tasks / name, remembered)
        (remembered / "solution" / "solve.sh").write_text(
            f"#!/bin/bash\nprintf '%s' {shlex.quote(json.dumps(answer))} "
            "> /logs/artifacts/answer.json\n")
    # ...and one that looks for the drawn truth wherever `main` can read, answering from it.
    hunt = out / TRUTH_HUNT
    shutil.copytree(tasks / DRAWN[0], hunt)
    (hunt / "solution" / "solve.sh").write_text(
        "#!/bin/bash\n"
        "found=$(find / -xdev -name 'truth*.json' -readable 2>/dev/null | head -1)\n"
        "ls -la /var/lib/biotool-truth > /logs/agent/hunt.txt 2>&1\n"
        "echo \"found: ${found:-nothing}\" >> /logs/agent/hunt.txt\n"
        "python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[\"values\"]; "
        "json.dump({k: x[\"stored\"] if isinstance(x, dict) else x for k, x in v.items()}, "
        "open(\"/logs/artifacts/answer.json\", \"w\"))' \"${found:-/dev/null}\" || "
        "echo '{}' > /logs/artifacts/answer.json\n")
    return out


def _subset(workspace: Path, tasks: Path, name: str, only) -> Path:
    """A folder of some of the written tasks (a Harbor job runs every task of a folder)."""
    out = workspace / name
    for task in only:
        shutil.copytree(tasks / task, out / task)
    return out


@pytest.fixture(scope="session")
def oracle_job(runner_image, workspace, tasks):
    # keep_containers: the trials' stacks stay (stopped), so `biotool-sandbox audit` can read
    # each trial's egress as an operator would; removed with `biotool-sandbox down` after.
    # Kept stacks hold their networks (two each) from the engine's 31 default pools: the job
    # keeps the fixed tasks and one drawn task; the other drawn tasks run unkept (drawn_job).
    job = run_job(runner_image, workspace, _subset(workspace, tasks, "kept", KEPT), "oracle",
                  "oracle", "--ek", "keep_containers=true")
    yield job
    for trial in job.trials().values():
        cli("down", harbor_project(trial), check=False)
        # The separate verifier's own project, kept too (no audit of its own: compose's down).
        subprocess.run(["docker", "compose", "-p", f"{trial.name.lower()}__verifier__trial",
                        "down", "-v"], capture_output=True, timeout=120)


@pytest.fixture(scope="session")
def drawn_job(runner_image, workspace, tasks):
    return run_job(runner_image, workspace,
                   _subset(workspace, tasks, "drawn", [t for t in TASKS if t not in KEPT]),
                   "oracle", "oracle-drawn")


# Nop and the cheats do little in their agent phase: four trials at once.
@pytest.fixture(scope="session")
def nop_job(runner_image, workspace, tasks):
    return run_job(runner_image, workspace, tasks, "nop", "nop", concurrent=4)


@pytest.fixture(scope="session")
def cheat_job(runner_image, workspace, cheats):
    return run_job(runner_image, workspace, cheats, "oracle", "cheats", concurrent=4)


@pytest.fixture(scope="session")
def engine():
    import docker

    client = docker.from_env()
    client.ping()
    return client
