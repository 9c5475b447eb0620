"""The `biotool-apptainer` Inspect provider end to end, with tests/image/apptainer_shim.py on
PATH as `apptainer`: Inspect's own conformance checks, an `inspect eval` of
examples/inspect_hpc.py with mockllm/model scripting the tool calls, and cleanup that leaves no
instance, container or folder, a failed start included.

Apptainer itself is not run (none on these hosts): the shim maps exactly the subcommands and
flags the provider uses onto docker in hpc/run-docker.sh's shape and refuses any other, so what
passes here is the provider's own logic and the offline shape, not Apptainer's behaviour.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from biotool_testing import inspect_checks
from biotool_testing.paths import REPO

SHIM = Path(__file__).with_name("apptainer_shim.py")
READS = "/opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq"

def _setup(root: Path, image: str) -> dict[str, str]:
    """A shim `apptainer` on PATH, a SIF standing for image, a scratch and a site overlay."""
    bin_dir, scratch, site = root / "bin", root / "scratch", root / "site"
    for d in (bin_dir, scratch, site):
        d.mkdir(parents=True, exist_ok=True)
    (bin_dir / "apptainer").unlink(missing_ok=True)
    (bin_dir / "apptainer").symlink_to(SHIM)
    sif = root / "biotool-sandbox.sif"
    sif.write_text(f"biotool-shim-image: {image}\n")
    # A site overlay anyone could write, so only the read-only bind keeps the sample out of it.
    (site / "staged.json").write_text('{"items": {}}\n')
    os.chmod(site, 0o777)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "BIOTOOL_SIF": str(sif),
            "BIOTOOL_SCRATCH": str(scratch), "BIOTOOL_SITE": str(site)}


def _shim_containers(docker_client) -> list[str]:
    return [c.name for c in docker_client.containers.list(all=True,
                                                         filters={"label": "biotool-apptainer-shim"})]


def _instances(environ: dict) -> list[str]:
    out = subprocess.run(["apptainer", "instance", "list", "--json"], env={**os.environ, **environ},
                         capture_output=True, text=True, check=True).stdout
    return [i["instance"] for i in json.loads(out)["instances"]]


@pytest.fixture
def shim_env(images, tmp_path, monkeypatch):
    environ = _setup(tmp_path, images["sandbox"])
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("BIOTOOL_APPTAINER", raising=False)
    return environ


# ---------------------------------------------------------------- the stand-in itself

@pytest.mark.parametrize("argv", [
    ["exec", "--env", "A=1", "--cleanenv", "instance://bta-x", "true"],   # flag not implemented
    ["exec", "instance://bta-x", "true"],                                   # without --cleanenv
    ["instance", "start", "--net", "--network", "none", "{sif}", "bta-x"],  # without --containall
    ["instance", "start", "--containall", "--network", "none", "{sif}", "bta-x"],  # no --net
    ["instance", "start", "--containall", "--net", "--network", "bridge", "{sif}", "bta-x"],
    ["instance", "start", "--containall", "--bind", "/a:/b:rw,nosuid", "{sif}", "bta-x"],
    ["run", "{sif}"],
    ["shell", "instance://bta-x"],
])
def test_the_shim_refuses_what_it_does_not_implement(argv, shim_env):
    argv = [a.replace("{sif}", shim_env["BIOTOOL_SIF"]) for a in argv]
    ran = subprocess.run(["apptainer", *argv], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 255 and ran.stderr.startswith("FATAL:"), ran
    assert ran.stdout == ""


# ---------------------------------------------------------------- the provider's lifecycle

def test_a_sample_is_offline_in_the_hpc_shape_and_leaves_nothing(shim_env, docker_client):
    from inspect_ai.util import SandboxUnavailableError, SandboxUserUnsupportedError

    from biotool_sandbox.apptainer_sandbox import ApptainerSandboxEnvironment as Box

    async def session() -> tuple[str, Path, dict]:
        await Box.task_init("t", None)
        envs = await Box.sample_init("t", None, {})
        box = envs["default"]
        out = {"during": (_instances(shim_env), sorted(os.listdir(shim_env["BIOTOOL_SCRATCH"])))}
        try:
            out["doctor"] = await box.exec(["bash", "--login", "-c", "biotool doctor --no-sha"],
                                           env={"BIOTOOL_REQUIRE_ENFORCED": "1"})
            out["probe"] = await box.exec(["sh", "-c", "id -u; pwd; touch /opt/biotool-site/x 2>&1; "
                                                       "touch /tmp/t /var/tmp/t /work/t && echo ok"])
            out["list"] = await box.exec(["biotool", "list"])
            out["audit"] = await box.audit()
            try:
                await box.exec(["whoami"], user="root")
            except SandboxUserUnsupportedError as exc:
                out["user"] = str(exc)
            await box.write_file("/tmp/from-host.txt", "x")
            # What an agent leaves that its owner cannot simply delete: cleanup still removes it.
            await box.exec(["sh", "-c", "mkdir -p /work/locked/in && touch /work/locked/in/f && "
                                        "chmod 000 /work/locked/in /work/locked"])
        finally:
            await Box.sample_cleanup("t", None, envs, False)
        try:
            await box.exec(["true"])
        except SandboxUnavailableError as exc:
            out["after"] = str(exc)
        await Box.sample_cleanup("t", None, envs, False)  # a second cleanup is no failure
        return box.name, box.sample.root, out

    name, root, out = asyncio.run(session())
    assert out["during"] == ([name], [name])
    assert out["doctor"].returncode == 0, out["doctor"]
    egress = next(c for c in json.loads(out["doctor"].stdout)["checks"] if c["check"] == "egress")
    assert egress["ok"] and egress["detail"].startswith("offline mode: only lo"), egress
    lines = out["probe"].stdout.splitlines()
    assert lines[:2] == ["12345", "/work"] and "Read-only file system" in lines[2], out["probe"]
    assert lines[-1] == "ok", out["probe"]
    assert json.loads(out["list"].stdout)["site"] == "/opt/biotool-site"
    assert out["audit"]["offline"] is True and out["audit"]["records"] == []
    assert out["audit"]["run"] == name and "--network none" in out["audit"]["note"]
    assert "runs every command as the user" in out["user"]
    assert out["after"].startswith(f"instance {name} is not running (FATAL:"), out["after"]
    assert not root.exists() and os.listdir(shim_env["BIOTOOL_SCRATCH"]) == []
    assert _instances(shim_env) == [] and _shim_containers(docker_client) == []


def test_a_failed_start_leaves_nothing_behind(shim_env, docker_client, tmp_path):
    from biotool_sandbox.apptainer_sandbox import ApptainerSandboxEnvironment as Box
    from biotool_sandbox.errors import EngineError

    # A SIF whose image docker does not have: the instance cannot start.
    Path(shim_env["BIOTOOL_SIF"]).write_text("biotool-shim-image: biotool-sandbox:no-such-tag\n")
    with pytest.raises(EngineError, match=r"^apptainer instance start bta-\w+ failed \(exit 255\)"):
        asyncio.run(Box.sample_init("t", None, {}))
    assert os.listdir(shim_env["BIOTOOL_SCRATCH"]) == []
    assert _instances(shim_env) == [] and _shim_containers(docker_client) == []


def test_cli_cleanup_stops_what_a_killed_eval_left(shim_env, docker_client):
    from biotool_sandbox.apptainer_sandbox import ApptainerSandboxEnvironment as Box

    async def leave_two() -> list[str]:
        envs = [await Box.sample_init("t", None, {}) for _ in range(2)]
        Box._live.clear()  # as after a killed process: nobody will clean these up
        return [e["default"].name for e in envs]

    names = asyncio.run(leave_two())
    assert sorted(_instances(shim_env)) == sorted(names)
    asyncio.run(Box.cli_cleanup(names[0]))
    assert _instances(shim_env) == [names[1]]
    assert os.listdir(shim_env["BIOTOOL_SCRATCH"]) == [names[1]]
    asyncio.run(Box.cli_cleanup(None))
    assert _instances(shim_env) == [] and os.listdir(shim_env["BIOTOOL_SCRATCH"]) == []
    assert _shim_containers(docker_client) == []


# ---------------------------------------------------------------- an eval, as on HPC

def test_inspect_eval_scripted_agent_on_the_apptainer_provider(images, tmp_path, docker_client):
    """`inspect eval examples/inspect_hpc.py@artic_organism_scripted`, the shim as apptainer."""
    from inspect_ai.log import read_eval_log

    environ = _setup(tmp_path / "hpc", images["sandbox"])
    logs = tmp_path / "logs"
    proc = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", "examples/inspect_hpc.py@artic_organism_scripted",
         "--log-dir", str(logs), "--log-format", "json", "--display", "plain"],
        cwd=REPO, capture_output=True, text=True, timeout=1800, env={**os.environ, **environ})
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
    log = read_eval_log(str(next(logs.glob("*.json"))))
    assert log.status == "success", log.error
    sample = log.samples[0]
    tools = [m for m in sample.messages if m.role == "tool"]
    assert [m.function for m in tools] == ["bash"] * 3 + ["python"]
    taxonomy = json.loads(next(line for line in tools[0].text.splitlines() if line.startswith("{")))
    assert taxonomy["mode"] == "local" and taxonomy["summary"]["dominant_fraction"] == 1.0
    align = json.loads(next(line for line in tools[1].text.splitlines() if line.startswith("{")))
    assert (align["mapped"], align["n_reads"]) == (200, 200)
    assert "curl-exit=6" in tools[2].text, tools[2].text
    assert tools[3].error is not None and tools[3].error.type == "timeout", tools[3]
    score = next(iter(sample.scores.values()))
    assert score.value == "C", score
    assert "2697049" in score.answer and "Severe acute respiratory syndrome coronavirus 2" in score.answer
    assert score.metadata["offline"] is True and score.metadata["egress_records"] == 0
    assert os.listdir(environ["BIOTOOL_SCRATCH"]) == [] and _shim_containers(docker_client) == []


# ---------------------------------------------------------------- Inspect's conformance suite

# On one sample's instance shared by the module, as tests/image/test_harness.py does for `biotool`.
# The provider's documented limitation (docs/hpc.md, "No user switching"):
KNOWN_FAILURES = {
    "test_exec_as_user": "Apptainer runs every command as the user who started the instance: "
                         "exec(user=...) raises SandboxUserUnsupportedError, and adduser could "
                         "not write the SIF's read-only /etc either",
}
globals().update(inspect_checks.suite(KNOWN_FAILURES))


@pytest.fixture(scope="module")
async def provider_sample(images, tmp_path_factory):
    from biotool_sandbox.apptainer_sandbox import ApptainerSandboxEnvironment as Box

    environ = _setup(tmp_path_factory.mktemp("self-check"), images["sandbox"])
    async with inspect_checks.one_sample(Box, environ) as env:
        yield env
