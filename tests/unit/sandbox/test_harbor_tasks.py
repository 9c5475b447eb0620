"""`biotool-sandbox harbor` and `harbor-check` without an engine: the tasks' environment is
compose.yaml's enforced stack (compose itself resolves both files), Harbor's network modes that
would weaken the rule are refused, and a task edited into such a combination is refused too
(docs/harbor.md). Harbor's own CLI runs the tasks in tests/harbor (make test-harbor)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from biotool_sandbox import harbor_tasks
from biotool_sandbox.backends import harbor as harbor_env
from biotool_sandbox.engine import budget
from biotool_sandbox.engine.variables import compose_defaults

REPO = Path(__file__).resolve().parents[3]
COMPOSE = REPO / "compose.yaml"
IMAGE, EGRESS = "biotool-sandbox:t3st", "biotool-egress:t3st"
HARBOR_ADDED_VOLUMES = {"logs:/logs", "solution:/solution"}
# `docker compose config` needs the CLI, not an engine; CI (.ci/run) installs it, so there a
# missing CLI is a failure, never a skip.
needs_compose = pytest.mark.skipif(shutil.which("docker") is None and not os.environ.get("CI"),
                                   reason="needs the docker CLI and its compose plugin")


def launcher(*args: str) -> subprocess.CompletedProcess:
    # No engine: the schedule volume is skipped, everything else is written.
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent.sock"}
    return subprocess.run([sys.executable, "-m", "biotool_sandbox", *args], capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("harbor-tasks")
    proc = launcher("harbor", "--out", str(out), "--image", IMAGE, "--egress-image", EGRESS)
    assert proc.returncode == 0, proc.stderr
    written = json.loads(proc.stdout)
    assert [t["task"] for t in written["tasks"]] == [f"biotool/{n}"
                                                     for n in harbor_tasks.sources()]
    return out


def _copy(tasks: Path, tmp_path: Path, name: str = "spike-d614g") -> Path:
    return Path(shutil.copytree(tasks / name, tmp_path / name))


def test_every_task_is_harbors_folder_layout(tasks):
    for name, src in harbor_tasks.sources().items():
        task = tasks / name
        assert sorted(p.relative_to(task).as_posix() for p in task.rglob("*") if p.is_file()) \
            == ["environment/docker-compose.yaml", "instruction.md", "solution/solve.sh",
                "task.toml", "tests/docker-compose.yaml", "tests/key.json", "tests/test.sh"]
        assert os.access(task / "solution" / "solve.sh", os.X_OK)
        assert os.access(task / "tests" / "test.sh", os.X_OK)
        assert (task / "instruction.md").read_bytes() == (src / "instruction.md").read_bytes()
        config = tomllib.loads((task / "task.toml").read_text())
        key = json.loads((src / "key.json").read_text())
        assert config["task"]["name"] == f"biotool/{name}" and config["task"]["version"] == "1"
        assert config["environment"]["docker_image"] == IMAGE
        assert config["environment"]["network_mode"] == "public"
        assert config["agent"]["timeout_sec"] == key["agent_timeout_sec"]
        # The agent runs as the sandbox's own non-root user, never Harbor's default root.
        assert config["agent"]["user"] == yaml.safe_load(COMPOSE.read_text())["services"][
            "sandbox"]["user"] == "1000:1000"
        assert config["verifier"]["environment_mode"] == "separate"
        assert config["verifier"]["environment"]["docker_image"] == IMAGE
        drawn = [{"source": harbor_env.TRUTH_ARTIFACT, "service": "draw"}] \
            if "draw" in key else []
        assert config["artifacts"] == [{"source": harbor_env.AUDIT_ARTIFACT,
                                        "service": "egress"}, *drawn]


def test_task_limits_are_compose_yamls(tasks):
    defaults = compose_defaults(COMPOSE)
    env = tomllib.loads((tasks / "spike-d614g" / "task.toml").read_text())["environment"]
    assert env["cpus"] == float(defaults["BIOTOOL_CPUS"])
    assert env["memory_mb"] * 2**20 == budget.to_bytes(defaults["BIOTOOL_MEM_LIMIT"])


def _compose_config(path: Path, **env: str) -> dict:
    done = subprocess.run(["docker", "compose", "-p", "harbor-check", "-f", str(path), "config",
                           "--format", "json"], cwd=path.parent, capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@needs_compose
def test_environment_is_compose_yamls_stack_as_compose_resolves_both(tasks):
    ours = _compose_config(COMPOSE, BIOTOOL_IMAGE=IMAGE, BIOTOOL_EGRESS_IMAGE=EGRESS)
    theirs = _compose_config(tasks / "spike-d614g" / "environment" / "docker-compose.yaml")
    sandbox, main = ours["services"]["sandbox"], dict(theirs["services"]["main"])
    # Harbor's additions, and nothing else: its copy targets and the sidecar guard.
    added = {f"{v['source']}:{v['target']}" for v in main["volumes"]} - \
        {f"{v['source']}:{v['target']}" for v in sandbox["volumes"]}
    assert added == HARBOR_ADDED_VOLUMES
    main["volumes"] = [v for v in main["volumes"] if v["target"] not in ("/logs", "/solution")]
    environment = main.pop("environment")
    assert environment.pop(harbor_env.GUARD) == ""
    assert environment == sandbox["environment"]
    assert main == {k: v for k, v in sandbox.items() if k != "environment"}
    egress = dict(theirs["services"]["egress"])
    # The additions: the trial's hold at NCBI's queue (the spike task's 900 s, bounded), and
    # Harbor's folders kept mounted, read-only, past main's stop.
    assert egress.pop("environment") == {"BIOTOOL_EGRESS_HOLD_S": "240",
                                         "BIOTOOL_EGRESS_BLAST": ""}
    ours["services"]["egress"].pop("environment")
    kept = [v for v in egress["volumes"] if v["source"] in harbor_env.CAPS]
    assert {(v["source"], v["target"], v.get("read_only")) for v in kept} == {
        (n, f"{harbor_env.KEPT_AT}/{n}", True) for n in harbor_env.CAPS}
    egress["volumes"] = [v for v in egress["volumes"] if v not in kept]
    assert egress == ours["services"]["egress"]
    assert theirs["networks"] == ours["networks"]
    assert theirs["networks"]["internal"]["internal"] is True
    assert {k: v for k, v in theirs["volumes"].items() if k not in ("logs", "solution")} \
        == ours["volumes"]
    # Both on a tmpfs of their cap, as compose passes them to the engine's local driver.
    for name, size in harbor_env.CAPS.items():
        assert theirs["volumes"][name]["driver_opts"] == {
            "type": "tmpfs", "device": "tmpfs", "o": f"size={size},mode=0755"}


def test_each_trials_egress_holds_a_request_as_long_as_its_agent_phase_can(tasks):
    # Issue 48 item 3: a request waits for NCBI's slot as long as the episode can, not a fixed
    # 30 s, within the gate's bound; a task whose agent phase is shorter holds it that long.
    from biotool import ncbirule

    for name in harbor_tasks.sources():
        task = tasks / name
        timeout = tomllib.loads((task / "task.toml").read_text())["agent"]["timeout_sec"]
        egress = yaml.safe_load((task / "environment" / "docker-compose.yaml").read_text())[
            "services"]["egress"]
        assert float(egress["environment"]["BIOTOOL_EGRESS_HOLD_S"]) == \
            min(timeout, ncbirule.MAX_HOLD_S), name
        # Only a task that searches declares BLAST (counted at its trial's start).
        key = json.loads((harbor_tasks.sources()[name] / "key.json").read_text())
        assert egress["environment"]["BIOTOOL_EGRESS_BLAST"] == ("1" if key.get("search") else ""), \
            name
    assert harbor_env.egress_hold(60) == 60.0 and harbor_env.egress_hold(0.2) == 1.0
    assert harbor_env.egress_hold(1800) == ncbirule.MAX_HOLD_S


def test_the_hold_setting_is_read_within_its_bounds_or_named():
    from biotool import ncbirule

    assert ncbirule.hold_from(None, "H") == ncbirule.hold_from(" ", "H") == 30.0
    assert ncbirule.hold_from("240", "H") == 240.0
    for bad in ("0.5", "241", "nan", "inf", "-5", "soon"):
        with pytest.raises(ValueError, match=f"BIOTOOL_EGRESS_HOLD_S='{bad}'"):
            ncbirule.hold_from(bad, "BIOTOOL_EGRESS_HOLD_S")


@needs_compose
def test_a_change_to_compose_yaml_reaches_the_tasks(tmp_path):
    # Rendered, not copied: a limit changed in compose.yaml is the task's limit.
    compose = tmp_path / "compose.yaml"
    compose.write_text(COMPOSE.read_text().replace("${BIOTOOL_MEM_LIMIT:-8g}",
                                                   "${BIOTOOL_MEM_LIMIT:-6g}"))
    proc = launcher("harbor", "--out", str(tmp_path / "out"), "--compose-file", str(compose),
                    "--task", "spike-d614g")
    assert proc.returncode == 0, proc.stderr
    task = tmp_path / "out" / "spike-d614g"
    main = _compose_config(task / "environment" / "docker-compose.yaml")["services"]["main"]
    assert main["mem_limit"] == str(6 * 2**30)
    assert tomllib.loads((task / "task.toml").read_text())["environment"]["memory_mb"] == 6144


@needs_compose
def test_harbors_sidecar_variable_reaches_main_as_the_guard(tasks):
    # Harbor exports it for compose only when its egress sidecar runs (allowlist/no-network).
    env_file = tasks / "spike-d614g" / "environment" / "docker-compose.yaml"
    main = _compose_config(env_file, **{harbor_env.SIDECAR_VARIABLE: "allowlist"})
    assert main["services"]["main"]["environment"][harbor_env.GUARD] == "allowlist"


def test_the_healthcheck_refuses_harbors_sidecar_before_anything_else():
    done = subprocess.run([shutil.which("bash"), "-c", harbor_tasks.HEALTHCHECK], capture_output=True,
                          text=True, timeout=30,
                          env={"PATH": "/nonexistent", harbor_env.GUARD: "no-network"})
    assert done.returncode == 1
    assert done.stderr.startswith("refused: Harbor's egress sidecar runs (network_mode "
                                  "no-network)")


@pytest.mark.parametrize("mode", ["allowlist", "no-network", "open"])
def test_the_generator_refuses_network_modes_that_weaken_the_rule(tmp_path, mode):
    proc = launcher("harbor", "--out", str(tmp_path / "out"), "--network-mode", mode)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"network_mode {mode!r} is refused" in lines[0], proc.stderr
    assert not (tmp_path / "out").exists()


def test_check_passes_the_written_tasks(tasks):
    proc = launcher("harbor-check", *[str(tasks / n) for n in harbor_tasks.sources()])
    assert proc.returncode == 0, proc.stderr
    assert all(c["ok"] for c in json.loads(proc.stdout)["checked"])


def _edit_toml(task: Path, old: str, new: str) -> None:
    text = (task / "task.toml").read_text()
    assert old in text
    (task / "task.toml").write_text(text.replace(old, new, 1))


def _edit_yaml(path: Path, change) -> None:
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc))


SIDECAR = "harbor-docker-egress-control-sidecar"
EDITS = {
    "environment allowlist": (lambda t: _edit_toml(
        t, 'network_mode = "public"', 'network_mode = "allowlist"\n'
        'allowed_hosts = ["blast.ncbi.nlm.nih.gov"]'), "[environment]: network_mode 'allowlist'"),
    "agent phase no-network": (lambda t: _edit_toml(
        t, "[agent]\n", '[agent]\nnetwork_mode = "no-network"\n'), "[agent]: network_mode"),
    "a step's agent allowlist": (lambda t: (t / "task.toml").write_text(
        (t / "task.toml").read_text() + '\n[[steps]]\nname = "first"\n[steps.agent]\n'
        'network_mode = "allowlist"\n'), "[steps.first.agent]: network_mode 'allowlist'"),
    "allow_internet false": (lambda t: _edit_toml(
        t, "[environment]\n", "[environment]\nallow_internet = false\n"), "allow_internet"),
    # Harbor's overlay for a service without task-authored networking: main in the sidecar.
    "main in the sidecar's namespace": (lambda t: _edit_yaml(
        t / "environment" / "docker-compose.yaml",
        lambda d: (d["services"]["main"].pop("networks"),
                   d["services"]["main"].update(network_mode=f"service:{SIDECAR}"))),
        "not on the stack's internal network alone"),
    "main networking dropped": (lambda t: _edit_yaml(
        t / "environment" / "docker-compose.yaml",
        lambda d: d["services"]["main"].pop("networks")), "internal network alone"),
    "internal network opened": (lambda t: _edit_yaml(
        t / "environment" / "docker-compose.yaml",
        lambda d: d["networks"]["internal"].pop("internal")), "internal network alone"),
    "egress removed": (lambda t: _edit_yaml(
        t / "environment" / "docker-compose.yaml",
        lambda d: d["services"].pop("egress")), "no egress service"),
    "guard removed": (lambda t: _edit_yaml(
        t / "environment" / "docker-compose.yaml",
        lambda d: d["services"]["main"]["environment"].pop(harbor_env.GUARD)),
        "healthcheck that refuses"),
    "healthcheck replaced": (lambda t: _edit_toml(
        t, "command = ", 'command = "true"\nx = '), "healthcheck that refuses"),
    # An agent could then fill the engine's disk through /logs, or lose its logs at main's stop.
    "logs uncapped": (lambda t: _edit_yaml(
        t / "environment" / "docker-compose.yaml",
        lambda d: d["volumes"].update(logs={})), "logs volume is not the 512m tmpfs"),
    "solution not kept": (lambda t: _edit_yaml(
        t / "environment" / "docker-compose.yaml",
        lambda d: d["services"]["egress"].update(volumes=[
            v for v in d["services"]["egress"]["volumes"] if not v.startswith("solution:")])),
        "solution volume is not the 64m tmpfs"),
    "verifier online": (lambda t: _edit_yaml(
        t / "tests" / "docker-compose.yaml",
        lambda d: d["services"]["main"].pop("network_mode")), "verifier is not offline"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_check_refuses_a_task_edited_to_weaken_the_rule(tasks, tmp_path, edit):
    change, culprit = EDITS[edit]
    task = _copy(tasks, tmp_path)
    change(task)
    proc = launcher("harbor-check", str(task))
    assert proc.returncode == 2, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and culprit in lines[0] and "spike-d614g" in lines[0], proc.stderr


def test_unknown_task_and_bad_sources_are_one_line_errors(tmp_path):
    proc = launcher("harbor", "--out", str(tmp_path / "o"), "--task", "no-such-task")
    assert proc.returncode == 2 and "unknown task(s) no-such-task" in proc.stderr
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())
    src = tmp_path / "src" / "t1"
    src.mkdir(parents=True)
    for name in ("instruction.md", "solve.sh"):
        (src / name).write_text("x\n")
    (src / "key.json").write_text('{"task": "t2", "fields": {}}')
    proc = launcher("harbor", "--out", str(tmp_path / "o2"), "--sources", str(src.parent))
    assert proc.returncode == 2 and "names task 't2', not t1" in proc.stderr
    assert not (tmp_path / "o2" / "t1").exists()
