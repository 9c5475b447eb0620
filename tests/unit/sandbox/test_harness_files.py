"""What a harness reads without a docker engine: the Inspect provider's registration and modes,
compose.inspect.yaml's shape for Inspect's docker provider, and the CUDA image's tag in make."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]


def test_inspect_finds_the_biotool_provider_through_its_entry_point():
    pytest.importorskip("inspect_ai")
    from inspect_ai.util._sandbox.registry import registry_find_sandboxenv

    from biotool_sandbox.providers.compose import BiotoolSandboxEnvironment

    assert registry_find_sandboxenv("biotool") is BiotoolSandboxEnvironment


def test_provider_modes_map_to_the_launcher(monkeypatch):
    pytest.importorskip("inspect_ai")
    from biotool_sandbox.engine.composefile import MODES
    from biotool_sandbox.providers import config

    of = config.StackConfig.of
    assert [of(c).launcher_mode for c in (None, "enforced", "offline", "gpu")] == \
        ["default", "default", "offline", "gpu"]
    assert set(config.MODES.values()) == set(MODES)
    with pytest.raises(ValueError, match="enforced, offline, gpu"):
        of("compose.yaml")
    monkeypatch.delenv("BIOTOOL_CUDA_IMAGE", raising=False)
    monkeypatch.setenv("BIOTOOL_IMAGE", "biotool-sandbox:mine")
    assert of("gpu").image == "biotool-sandbox:cuda"
    assert of("enforced").image == of("offline").image == "biotool-sandbox:mine"
    from biotool_sandbox.providers.files import resolve
    assert resolve("a/b") == "/work/a/b" and resolve("/tmp/x") == "/tmp/x"


def test_provider_config_may_name_the_sandbox_runtime():
    pytest.importorskip("inspect_ai")
    from biotool_sandbox.providers.compose import BiotoolSandboxEnvironment
    from biotool_sandbox.providers.config import StackConfig

    of = StackConfig.of
    assert of("enforced:runsc") == StackConfig(mode="enforced", runtime="runsc")
    assert of("offline:runsc").runtime == "runsc" and of("offline").runtime is None
    assert of(None) == StackConfig() and of(StackConfig(mode="gpu")).mode == "gpu"
    for bad in ("enforced:", "compose.yaml:runsc", ":runsc"):
        with pytest.raises(ValueError, match="enforced:runsc"):
            of(bad)
    # The typed config, as Inspect deserializes a logged one; an unknown field is refused.
    assert BiotoolSandboxEnvironment.config_deserialize({"mode": "offline"}) == \
        StackConfig(mode="offline")
    with pytest.raises(ValueError):
        BiotoolSandboxEnvironment.config_deserialize({"mdoe": "offline"})


COUNTERPART = {"default": "sandbox", "egress": "egress"}  # compose.inspect.yaml -> compose.yaml
# All compose.inspect.yaml may set itself: the rest (hardening, limits, mounts, networks)
# comes from compose.yaml by `extends`, declared once.
FOR_INSPECT = {"extends", "x-default", "x-local", "working_dir", "depends_on"}


def _docs() -> tuple[dict, dict]:
    return (yaml.safe_load((REPO / "compose.yaml").read_text()),
            yaml.safe_load((REPO / "compose.inspect.yaml").read_text()))


def _resolved(name: str) -> dict:
    """A compose.inspect.yaml service as `extends` makes it: compose.yaml's counterpart with
    the few keys FOR_INSPECT lets this file set (each replaces the counterpart's whole value)."""
    ours, theirs = _docs()
    svc = theirs["services"][name]
    base = ours["services"][svc["extends"]["service"]]
    return {**base, **{k: v for k, v in svc.items() if k != "extends"}}


def test_inspects_compose_file_extends_the_enforced_stack_and_repeats_none_of_it():
    ours, theirs = _docs()
    assert set(theirs["services"]) == set(COUNTERPART)
    for name, counterpart in COUNTERPART.items():
        svc = theirs["services"][name]
        assert svc["extends"] == {"file": "compose.yaml", "service": counterpart}, name
        assert set(svc) <= FOR_INSPECT, (name, sorted(set(svc) - FOR_INSPECT))
    # Networks cannot be extended: the file declares compose.yaml's, exactly.
    assert theirs["networks"] == ours["networks"]
    # The run's egress state (certificate, RIDs, audit) survives a restart, egress only.
    assert ours["services"]["egress"]["restart"].startswith("on-failure")
    assert "egress-state:/var/lib/biotool-egress-run" in _resolved("egress")["volumes"]
    assert not any("egress-state" in v for svc, d in ours["services"].items() if svc != "egress"
                   for v in d.get("volumes", []))


def test_compose_file_for_inspects_docker_provider():
    _, doc = _docs()
    default = _resolved("default")
    assert default["x-default"] is True and default["x-local"] is True
    assert _resolved("egress")["x-local"] is True
    assert default["depends_on"] == {"egress": {"condition": "service_healthy"}}
    assert any(t.startswith("/var/tmp:") and "exec" in t.split(":", 1)[1].split(",")
               for t in default["tmpfs"])
    # Inspect's mount check refuses external volumes and host binds: only project volumes
    # (the workspace, and the run's egress CA read-only), and none with driver options.
    assert default["volumes"] == ["work:/work", "egress-ca:/run/biotool-egress-ca:ro"]
    assert all(not v or not (v.get("external") or v.get("driver_opts"))
               for v in doc["volumes"].values())
    assert {v.split(":")[0] for name in COUNTERPART for v in _resolved(name)["volumes"]} \
        <= set(doc["volumes"])
    assert doc["networks"]["internal"]["internal"] is True and default["networks"] == ["internal"]
    assert default["cap_drop"] == ["ALL"] and default["read_only"] is True


@pytest.mark.skipif(shutil.which("docker") is None, reason="needs the docker CLI (no engine)")
def test_compose_resolves_inspects_file_to_the_enforced_stacks_services():
    # Compose itself (this host's v2 plugin; no engine needed) resolves `extends` across files:
    # each service has its counterpart's hardening and limits, the same values.
    def config(name: str) -> dict:
        done = subprocess.run(["docker", "compose", "-p", "biotool-check", "-f", name, "config",
                               "--format", "json"], cwd=REPO, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["services"]

    ours, theirs = config("compose.yaml"), config("compose.inspect.yaml")
    keys = ("cpus", "mem_limit", "pids_limit", "logging", "cap_drop", "security_opt",
            "read_only", "user", "tmpfs", "restart", "environment", "networks", "image",
            "command", "init", "healthcheck")
    for name, counterpart in COUNTERPART.items():
        for key in keys:
            assert theirs[name].get(key) == ours[counterpart].get(key), (name, key)
    assert theirs["egress"]["volumes"] == ours["egress"]["volumes"]


def test_gpu_profile_runs_the_cuda_tag():
    doc = yaml.safe_load((REPO / "compose.yaml").read_text())
    assert doc["services"]["sandbox-gpu"]["image"] == "${BIOTOOL_CUDA_IMAGE:-biotool-sandbox:cuda}"
    assert "biotool-sandbox:latest" in doc["services"]["sandbox"]["image"]


def _make_n(*args: str) -> str:
    return subprocess.run(["make", "-n", *args], cwd=REPO, capture_output=True, text=True,
                          check=True, timeout=60).stdout


def test_make_gives_the_cuda_image_its_own_tag_and_keeps_it_out_of_make_test():
    assert "IMAGE_NAME=biotool-sandbox:cuda" in _make_n("image", "TORCH_VARIANT=cuda")
    assert "IMAGE_NAME=biotool-sandbox:latest" in _make_n("image")
    assert "-m 'not cuda and not podman'" in _make_n("test-image", "BIOTOOL_TEST_BUILD=0",
                                                      "-o", "image")
    assert "-m cuda" in _make_n("test-cuda", "-o", "image-cuda")
