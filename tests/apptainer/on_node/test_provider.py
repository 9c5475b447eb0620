"""The `biotool-apptainer` Inspect provider on an HPC node with real Apptainer: run ON the node,
as its user, by tests/apptainer/test_provider_on_node.py (`docker exec` of pytest from the node's
Python environment, this checkout bound read-only, the SIF at /hpc/biotool-sandbox.sif).

Inspect's own conformance checks, one sample's lifecycle (offline, the node's user, the overlay
read-only, nothing left), a failed start, `inspect sandbox cleanup` of what a killed eval left,
and an `inspect eval` of examples/inspect_hpc.py with mockllm/model scripting the tool calls.
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

REPO = Path(__file__).resolve().parents[3]
SIF = os.environ.get("BIOTOOL_SIF", "/hpc/biotool-sandbox.sif")


def _setup(root: Path) -> dict[str, str]:
    """A scratch and a site overlay for the provider, the SIF the node holds."""
    scratch, site = root / "scratch", root / "site"
    for d in (scratch, site):
        d.mkdir(parents=True, exist_ok=True)
    # A site overlay anyone could write, so only the read-only bind keeps the sample out of it.
    (site / "staged.json").write_text('{"items": {}}\n')
    os.chmod(site, 0o777)
    return {"BIOTOOL_SIF": SIF, "BIOTOOL_SCRATCH": str(scratch), "BIOTOOL_SITE": str(site)}


def _instances() -> list[str]:
    out = subprocess.run(["apptainer", "instance", "list", "--json"], capture_output=True,
                         text=True, check=True).stdout
    return [i["instance"] for i in json.loads(out)["instances"]]


@pytest.fixture
def hpc_env(tmp_path, monkeypatch):
    environ = _setup(tmp_path)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("BIOTOOL_APPTAINER", raising=False)
    return environ


def test_a_sample_is_offline_as_the_nodes_user_and_leaves_nothing(hpc_env):
    from inspect_ai.util import SandboxUnavailableError, SandboxUserUnsupportedError

    from biotool_sandbox.providers.apptainer import ApptainerSandboxEnvironment as Box

    async def session() -> tuple[str, Path, dict]:
        await Box.task_init("t", None)
        envs = await Box.sample_init("t", None, {})
        box = envs["default"]
        out = {"during": (_instances(), sorted(os.listdir(hpc_env["BIOTOOL_SCRATCH"])))}
        try:
            out["doctor"] = await box.exec(["bash", "--login", "-c", "biotool doctor --no-sha"],
                                           env={"BIOTOOL_REQUIRE_ENFORCED": "1"})
            out["probe"] = await box.exec(["sh", "-c", "id -u; pwd; touch /opt/biotool-site/x 2>&1; "
                                                       "touch /opt/x 2>&1; "
                                                       "touch /tmp/t /var/tmp/t /work/t && echo ok"])
            out["net"] = await box.exec(["sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1"])
            out["list"] = await box.exec(["biotool", "list"])
            out["audit"] = await box.audit()
            try:
                await box.exec(["whoami"], user="root")
            except SandboxUserUnsupportedError as exc:
                out["user"] = str(exc)
            await box.write_file("/tmp/from-host.txt", "x")
            out["tmp_on_disk"] = sorted(p.name for p in (box.sample.root / "tmp").rglob("from-host.txt"))
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
    # The node's user (a UID the image has never seen), the overlay and the root read-only.
    assert lines[:2] == [str(os.getuid()), "/work"], out["probe"]
    assert "Read-only file system" in lines[2] and "Read-only file system" in lines[3], out["probe"]
    assert lines[-1] == "ok", out["probe"]
    assert out["net"].stdout.split() == ["lo"], out["net"]
    assert out["tmp_on_disk"] == ["from-host.txt"], out  # /tmp is the sample's node-local folder
    assert json.loads(out["list"].stdout)["site"] == "/opt/biotool-site"
    assert out["audit"]["offline"] is True and out["audit"]["records"] == []
    assert out["audit"]["run"] == name and "--network none" in out["audit"]["note"]
    assert "runs every command as the user" in out["user"]
    assert out["after"].startswith(f"instance {name} is not running"), out["after"]
    assert not root.exists() and os.listdir(hpc_env["BIOTOOL_SCRATCH"]) == []
    assert _instances() == []


def test_a_failed_start_leaves_nothing_behind(hpc_env, tmp_path, monkeypatch):
    from biotool_sandbox.providers.apptainer import ApptainerSandboxEnvironment as Box
    from biotool_sandbox.errors import EngineError

    # A file that is no SIF: Apptainer cannot start an instance of it.
    bad = tmp_path / "not-a.sif"
    bad.write_bytes(b"not a SIF image\n" * 64)
    monkeypatch.setenv("BIOTOOL_SIF", str(bad))
    with pytest.raises(EngineError, match=r"^apptainer instance start bta-\w+ failed \(exit 255\)"):
        asyncio.run(Box.sample_init("t", None, {}))
    assert os.listdir(hpc_env["BIOTOOL_SCRATCH"]) == []
    assert _instances() == []


def test_cli_cleanup_stops_what_a_killed_eval_left(hpc_env):
    from biotool_sandbox.providers.apptainer import ApptainerSandboxEnvironment as Box

    async def leave_two() -> list[str]:
        envs = [await Box.sample_init("t", None, {}) for _ in range(2)]
        Box._live.clear()  # as after a killed process: nobody will clean these up
        return [e["default"].name for e in envs]

    names = asyncio.run(leave_two())
    assert sorted(_instances()) == sorted(names)
    asyncio.run(Box.cli_cleanup(names[0]))
    assert _instances() == [names[1]]
    assert os.listdir(hpc_env["BIOTOOL_SCRATCH"]) == [names[1]]
    asyncio.run(Box.cli_cleanup(None))
    assert _instances() == [] and os.listdir(hpc_env["BIOTOOL_SCRATCH"]) == []


def _registered(root: Path) -> Path:
    """The providers' entry points as `pip install '.[host]'` registers them, for a checkout
    that is bound in rather than installed (a dist-info folder is what Inspect's registry reads)."""
    info = root / "biotool_sandbox-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: biotool-sandbox\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        "[inspect_ai]\nbiotool_sandbox = biotool_sandbox.providers.compose\n"
        "biotool_apptainer = biotool_sandbox.providers.apptainer\n")
    return root


def test_inspect_eval_scripted_agent_on_the_apptainer_provider(tmp_path):
    """`inspect eval examples/inspect_hpc.py@artic_organism_scripted` on real Apptainer."""
    from inspect_ai.log import read_eval_log

    environ = _setup(tmp_path / "hpc")
    logs = tmp_path / "logs"
    path = os.pathsep.join([str(_registered(tmp_path / "site-packages")), os.environ["PYTHONPATH"]])
    proc = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval",
         str(REPO / "examples" / "inspect_hpc.py") + "@artic_organism_scripted",
         "--log-dir", str(logs), "--log-format", "json", "--display", "plain"],
        cwd=tmp_path, capture_output=True, text=True, timeout=1800,
        env={**os.environ, **environ, "PYTHONPATH": path})
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
    assert os.listdir(environ["BIOTOOL_SCRATCH"]) == [] and _instances() == []


# ---------------------------------------------------------------- Inspect's conformance suite

# On one sample's instance shared by the module. The provider's documented limitation
# (docs/hpc.md, "No user switching"):
KNOWN_FAILURES = {
    "test_exec_as_user": "Apptainer runs every command as the user who started the instance: "
                         "exec(user=...) raises SandboxUserUnsupportedError, and adduser could "
                         "not write the SIF's read-only /etc either",
}
globals().update(inspect_checks.suite(KNOWN_FAILURES))


@pytest.fixture(scope="module")
async def provider_sample(tmp_path_factory):
    from biotool_sandbox.providers.apptainer import ApptainerSandboxEnvironment as Box

    environ = _setup(tmp_path_factory.mktemp("self-check"))
    async with inspect_checks.one_sample(Box, environ) as env:
        yield env
