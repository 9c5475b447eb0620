"""The image under the harnesses that run agents: plain `docker run`, login shells, any UID,
Inspect AI (the project's `biotool` provider and compose.inspect.yaml), and enforcement seen
from inside the container. Every network used is one the test starts (bridge, none, the stack)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid

import pytest

from biotool_testing import inspect_checks, polling
from biotool_testing.contract import error_line
from biotool_testing.images import EGRESS_IMAGE, SANDBOX_IMAGE, SESSION, TEST_LABEL
from biotool_testing.paths import REPO

READS = "/opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq"


# ---------------------------------------------------------------- init and signals

@pytest.mark.parametrize("command", [["sleep", "1000"], ["bash", "-c", "sleep 1000; echo never"]])
def test_docker_stop_ends_a_running_command_by_its_sigterm(docker_client, images, command):
    c = docker_client.containers.run(images["sandbox"], command, detach=True, network_mode="none",
                                     labels={TEST_LABEL: SESSION}, name=f"biotool-test-{uuid.uuid4().hex[:10]}")
    try:
        def sleeping() -> bool:
            c.reload()
            return c.status == "running" and "sleep" in c.top()["Processes"][-1][-1]
        polling.until("the container's sleep to run", sleeping, every_s=0.1)
        # SIGTERM, then SIGKILL after 300 s had it been ignored: the exit code says which ended
        # it (143, 128 + SIGTERM passed on by tini; 137 for the SIGKILL), not how long it took.
        c.stop(timeout=300)
        assert c.wait(timeout=300)["StatusCode"] == 143
    finally:
        c.remove(force=True)


def test_pid_1_is_tini(sandbox):
    ran = sandbox.run(["cat", "/proc/1/comm"])
    assert ran.code == 0 and ran.stdout.strip() == "tini", ran


# ---------------------------------------------------------------- tools on PATH in every shell

PROBE = ("command -v biotool; python3 -c 'import sys, torch, biotool; print(sys.prefix)'; "
         "biotool version >/dev/null && echo version-ok")


@pytest.mark.parametrize("argv,user", [
    (["bash", "-lc", PROBE], None),
    (["sh", "-lc", PROBE], None),
    (["env", "-i", "/bin/sh", "-c", PROBE], None),
    (["env", "-i", "/bin/bash", "-lc", PROBE], None),
    (["bash", "-lc", PROBE], "54321:54321"),
    (["env", "-i", "/bin/sh", "-c", PROBE], "54321:54321"),
], ids=["bash-login", "sh-login", "env-i-sh", "env-i-bash-login", "uid-54321-login", "uid-54321-env-i"])
def test_tools_on_path_in_every_shell(sandbox, apptainer_shape, argv, user):
    kwargs = dict(apptainer_shape, user=user) if user else {}
    ran = sandbox.run(argv, **kwargs)
    assert ran.code == 0, ran
    lines = ran.stdout.split()
    assert lines[0] in ("/opt/venv/bin/biotool", "/usr/local/bin/biotool"), ran
    assert lines[1] == "/opt/venv" and lines[2] == "version-ok", ran


def test_no_setuid_or_setgid_file_is_left(sandbox):
    ran = sandbox.run(["find", "/", "-xdev", "-perm", "/6000", "-type", "f"], user="0")
    assert ran.code == 0 and ran.stdout.strip() == "", ran
    # su is the usual one: still there, no longer setuid.
    ran = sandbox.run(["stat", "-c", "%A", "/usr/bin/su"])
    assert ran.stdout.strip() == "-rwxr-xr-x", ran


def test_var_tmp_is_sticky_and_world_writable(sandbox):
    ran = sandbox.run(["stat", "-c", "%a", "/var/tmp"])
    assert ran.stdout.strip() == "1777", ran


# ---------------------------------------------------------------- enforcement from inside

def test_doctor_fails_on_the_default_bridge_and_says_how(sandbox):
    ran = sandbox.biotool("doctor", "--no-sha", network_mode="bridge")
    assert ran.code == 4, ran
    assert ran.stderr.count("\n") == 1 and "default route" in ran.stderr, ran
    assert "--network none" in ran.stderr and "biotool-sandbox up" in ran.stderr
    egress = next(c for c in ran.json["checks"] if c["check"] == "egress")
    assert egress["ok"] is False and egress["required"] is True


def test_a_proxy_setting_on_the_bridge_does_not_make_it_enforced(sandbox):
    # The gateway of docker's bridge is this host, which answers: the proxy could be bypassed.
    env = {"HTTPS_PROXY": "http://127.0.0.1:3128", "BIOTOOL_REQUIRE_ENFORCED": "1"}
    ran = sandbox.biotool("list", network_mode="bridge", environment=env)
    assert ran.code == 3 and "the default gateway" in ran.stderr and "answers" in ran.stderr, ran


def test_doctor_passes_with_network_none(sandbox):
    ran = sandbox.biotool("doctor", "--no-sha", network_mode="none")
    assert ran.code == 0, ran
    egress = next(c for c in ran.json["checks"] if c["check"] == "egress")
    assert egress["ok"] and egress["detail"].startswith("offline mode: only lo")


def test_doctor_reads_its_own_namespace_even_with_the_hosts_sys_mounted(sandbox):
    # /sys bind-mounted from the host lists the host's interfaces; /proc/net and netlink are
    # this container's, so doctor neither fails nor shows the agent the host's names.
    ran = sandbox.biotool("doctor", "--no-sha", network_mode="none",
                          volumes={"/sys": {"bind": "/sys", "mode": "ro"}})
    assert ran.code == 0, ran
    egress = next(c for c in ran.json["checks"] if c["check"] == "egress")
    assert egress["ok"] and egress["detail"].startswith("offline mode: only lo")
    assert "docker0" not in ran.stdout + ran.stderr and "veth" not in ran.stdout + ran.stderr


@pytest.mark.parametrize("args", [["list"], ["version"], ["doctor", "--no-sha"]])
def test_require_enforced_refuses_every_command_on_the_bridge(sandbox, args):
    env = {"BIOTOOL_REQUIRE_ENFORCED": "1"}
    ran = sandbox.biotool(*args, network_mode="bridge", environment=env)
    assert error_line(ran, code=3, alone=True).startswith("biotool: error: refused:")
    assert sandbox.biotool(*args, network_mode="none", environment=env).code == 0


@pytest.mark.parametrize("network,warnings", [("bridge", 1), ("none", 0)])
@pytest.mark.parametrize("shell", [["bash", "-i", "-c", "true"], ["bash", "-il", "-c", "true"]])
def test_interactive_shell_warns_once_when_unenforced(sandbox, network, warnings, shell):
    ran = sandbox.run(shell, network_mode=network)
    assert ran.code == 0, ran
    assert ran.stderr.count("biotool: warning: network not enforced") == warnings, ran


# ---------------------------------------------------------------- the Inspect AI provider

def _left(run: str) -> dict:
    import docker

    dc = docker.from_env()
    label = {"label": f"com.docker.compose.project={run}"}
    return {"containers": len(dc.containers.list(ignore_removed=True, all=True, filters=label)),
            "networks": len(dc.networks.list(filters=label)),
            "volumes": len(dc.volumes.list(filters=label))}


@pytest.fixture
def image_env(images, monkeypatch):
    monkeypatch.setenv("BIOTOOL_IMAGE", images["sandbox"])
    monkeypatch.setenv("BIOTOOL_EGRESS_IMAGE", images["egress"])


def test_inspect_provider_exec_files_timeout_and_teardown(image_env):
    from inspect_ai.util import ExecResult

    from biotool_sandbox.providers.compose import BiotoolSandboxEnvironment as Box

    async def session() -> tuple[str, dict]:
        await Box.task_init("t", None)
        envs = await Box.sample_init("t", None, {})
        box = envs["default"]
        out = {}
        try:
            out["doctor"] = await box.exec(["bash", "--login", "-c", "biotool doctor --no-sha"],
                                           env={"BIOTOOL_REQUIRE_ENFORCED": "1"})
            out["stdin"] = await box.exec(["bash", "--login", "-c", "python3 -"],
                                          input="import sys; print(sys.prefix); sys.exit(7)")
            await box.write_file("sub/dir/data.bin", bytes(range(256)) * 3)
            await box.write_file("/tmp/note.txt", "tmpfs é\n")
            out["read_work"] = await box.read_file("sub/dir/data.bin", text=False)
            out["read_tmp"] = await box.read_file("/tmp/note.txt")
            out["ls"] = await box.exec(["ls", "-n", "dir"], cwd="sub")
            for name, call in (("missing", box.read_file("/work/nope")),
                               ("readonly", box.write_file("/opt/biotool/x", "x")),
                               ("isdir", box.read_file("/work/sub"))):
                try:
                    await call
                    out[name] = None
                except Exception as exc:  # noqa: BLE001 - the type is what is checked
                    out[name] = type(exc).__name__
            # The 2 s timeout, not the sleep's own end (600 s), ends it: TimeoutError is the outcome.
            start = time.monotonic()
            try:
                await box.exec(["sleep", "600"], timeout=2)
                out["timeout"] = None
            except TimeoutError:
                out["timeout"] = time.monotonic() - start
        finally:
            await Box.sample_cleanup("t", None, envs, False)
        return box.run, out

    run, out = asyncio.run(session())
    assert isinstance(out["doctor"], ExecResult) and out["doctor"].returncode == 0, out["doctor"]
    egress = next(c for c in json.loads(out["doctor"].stdout)["checks"] if c["check"] == "egress")
    assert egress["detail"].startswith("enforced: no way out but the egress proxy"), egress
    assert out["stdin"].returncode == 7 and out["stdin"].stdout.strip() == "/opt/venv"
    assert out["read_work"] == bytes(range(256)) * 3 and out["read_tmp"] == "tmpfs é\n"
    assert " 1000 " in out["ls"].stdout and "data.bin" in out["ls"].stdout
    assert (out["missing"], out["readonly"], out["isdir"]) == \
        ("FileNotFoundError", "PermissionError", "IsADirectoryError")
    assert out["timeout"] is not None and out["timeout"] < 300, out["timeout"]
    assert _left(run) == {"containers": 0, "networks": 0, "volumes": 0}


def test_inspect_eval_scripted_agent_in_the_enforced_stack(image_env, tmp_path):
    """`inspect eval` with mockllm/model scripting the tool calls (examples/inspect_biotool.py)."""
    from inspect_ai.log import read_eval_log

    proc = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval",
         "examples/inspect_biotool.py@artic_deletion_scripted", "--log-dir", str(tmp_path),
         "--log-format", "json", "--display", "plain"],
        cwd=REPO, capture_output=True, text=True, timeout=1800,
        env={**os.environ, "BIOTOOL_IMAGE": SANDBOX_IMAGE, "BIOTOOL_EGRESS_IMAGE": EGRESS_IMAGE})
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
    log = read_eval_log(str(next(tmp_path.glob("*.json"))))
    assert log.status == "success", log.error
    sample = log.samples[0]
    tools = [m for m in sample.messages if m.role == "tool"]
    assert [m.function for m in tools] == ["bash"] * 4 + ["python"]
    assert "doctor-exit=0" in tools[0].text
    variants = json.loads(next(line for line in tools[1].text.splitlines() if line.startswith("{")))
    deletion = next(v for v in variants["variants"] if v["pos"] == 29749)
    assert (deletion["ref"], deletion["alt"], deletion["type"]) == ("ACGATCGAGTG", "A", "deletion")
    assert "call-exit=3" in tools[2].text and "biotool: error:" in tools[2].text
    assert "proxy-answer=403" in tools[3].text
    assert tools[4].error is not None and tools[4].error.type == "timeout", tools[4]
    score = next(iter(sample.scores.values()))
    assert score.value == "C" and "29749 ACGATCGAGTG>A" in score.answer
    denied_hosts = {r["host"] for r in score.metadata["egress_denied"]}
    assert "denied.invalid" in denied_hosts and score.metadata["egress_offline"] is False
    assert _left(score.metadata["run"]) == {"containers": 0, "networks": 0, "volumes": 0}


# ---------------------------------------------------------------- compose.inspect.yaml

def test_compose_file_for_inspects_docker_provider(images, docker_client):
    from inspect_ai.util._sandbox.docker.mounts import validate_compose_mounts

    project = f"bti-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "BIOTOOL_IMAGE": images["sandbox"], "BIOTOOL_EGRESS_IMAGE": images["egress"]}
    base = ["docker", "compose", "-p", project, "-f", str(REPO / "compose.inspect.yaml")]
    config = json.loads(subprocess.run(base + ["config", "--format", "json"], env=env, check=True,
                                       capture_output=True, text=True).stdout)
    # (compose drops the services' x- keys here; tests/unit/sandbox checks them in the file)
    assert config["services"]["default"]["networks"] == {"internal": None}
    asyncio.run(validate_compose_mounts(config, project))  # Inspect's own mount policy passes
    try:
        subprocess.run(base + ["up", "-d", "--wait"], env=env, check=True, capture_output=True,
                       text=True, timeout=900)
        c = docker_client.containers.list(ignore_removed=True, filters={"label": [f"com.docker.compose.project={project}",
                                                             "com.docker.compose.service=default"]})[0]
        # Exit codes through the SDK (compose exec loses them on this engine).
        doctor = c.exec_run(["bash", "--login", "-c", "biotool doctor --no-sha"],
                            environment={"BIOTOOL_REQUIRE_ENFORCED": "1"})
        assert doctor.exit_code == 0, doctor.output[-2000:]
        script = "printf '#!/bin/sh\\necho ran-from-var-tmp\\n' > /var/tmp/t && chmod +x /var/tmp/t && /var/tmp/t"
        ran = c.exec_run(["sh", "-c", script])
        assert ran.exit_code == 0 and ran.output.strip() == b"ran-from-var-tmp", ran.output
    finally:
        subprocess.run(base + ["down", "-v", "--timeout", "2"], env=env, capture_output=True, timeout=120)
    assert _left(project) == {"containers": 0, "networks": 0, "volumes": 0}


def test_inspect_provider_names_a_missing_image_and_its_make_target(images, monkeypatch):
    from biotool_sandbox.providers.compose import BiotoolSandboxEnvironment as Box

    monkeypatch.setenv("BIOTOOL_CUDA_IMAGE", "biotool-sandbox:no-such-tag")
    monkeypatch.setenv("BIOTOOL_EGRESS_IMAGE", images["egress"])
    from biotool_sandbox.errors import LauncherError

    # The launcher's one wording of a missing image, naming the variable and its make target.
    with pytest.raises(LauncherError, match=r"^BIOTOOL_CUDA_IMAGE biotool-sandbox:no-such-tag: "
                                            r"no such image on this engine .*`make image-cuda`"):
        asyncio.run(Box.task_init("t", "gpu"))
    with pytest.raises(ValueError, match="enforced, offline, gpu"):
        asyncio.run(Box.task_init("t", "compose.yaml"))


# ---------------------------------------------------------------- Inspect's conformance suite

# Inspect's portable checks (inspect_ai.util._sandbox.self_check), on one sample's
# `sandbox="biotool"` stack shared by the module (biotool_testing/inspect_checks.py).
# The provider's documented limitation (docs/harnesses.md, Inspect AI):
KNOWN_FAILURES = {
    "test_exec_as_user": "adduser cannot write /etc or /run on the sandbox's read-only root (by "
                         "design); exec as root, the image's users or any numeric UID works",
}
globals().update(inspect_checks.suite(KNOWN_FAILURES))


@pytest.fixture(scope="module")
async def provider_sample(images):
    from biotool_sandbox.providers.compose import BiotoolSandboxEnvironment as Box

    environ = {"BIOTOOL_IMAGE": images["sandbox"], "BIOTOOL_EGRESS_IMAGE": images["egress"]}
    async with inspect_checks.one_sample(Box, environ) as env:
        yield env


@pytest.mark.anyio
async def test_inspect_exec_as_root_an_image_user_or_a_uid(sandbox_env):
    # What works instead of adding a user: the users in the image's /etc/passwd and any UID.
    for user, whoami, uid in (("root", "root", "0"), ("nobody", "nobody", "65534"),
                              ("agent", "agent", "1000"), ("54321:54321", None, "54321")):
        ran = await sandbox_env.exec(["sh", "-c", "id -u; whoami"], user=user)
        assert ran.stdout.split("\n")[0] == uid, (user, ran)
        if whoami:
            assert ran.success and ran.stdout.split()[1] == whoami, (user, ran)


@pytest.mark.anyio
async def test_inspect_exec_as_an_unknown_user_names_it_every_time(sandbox_env):
    # The engine drops its own message now and then (a quarter of the time on 20.10), so once
    # would pass by chance; every one of 20 names the user or the group.
    for user, named in [("nonexistent", "user nonexistent")] * 16 + [
            ("agent:no-such-group", "group no-such-group"), ("no-such:1000", "user no-such")] * 2:
        ran = await sandbox_env.exec(["whoami"], user=user)
        assert ran.returncode == 126 and f"unable to find {named}" in ran.stdout, (user, ran)
