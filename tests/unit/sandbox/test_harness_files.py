"""What a harness reads without a docker engine: the Inspect provider's registration and modes,
compose.inspect.yaml's shape for Inspect's docker provider, and the CUDA image's tag in make."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]


def test_inspect_finds_the_biotool_provider_through_its_entry_point():
    pytest.importorskip("inspect_ai")
    from inspect_ai.util._sandbox.registry import registry_find_sandboxenv

    from biotool_sandbox.inspect_sandbox import BiotoolSandboxEnvironment

    assert registry_find_sandboxenv("biotool") is BiotoolSandboxEnvironment


def test_provider_modes_map_to_the_launcher(monkeypatch):
    pytest.importorskip("inspect_ai")
    from biotool_sandbox import inspect_sandbox as box
    from biotool_sandbox.stack import MODES

    assert [box.mode_of(c) for c in (None, "enforced", "offline", "gpu")] == \
        ["default", "default", "offline", "gpu"]
    assert set(box.MODES.values()) == set(MODES)
    with pytest.raises(ValueError, match="enforced, offline, gpu"):
        box.mode_of("compose.yaml")
    monkeypatch.delenv("BIOTOOL_CUDA_IMAGE", raising=False)
    monkeypatch.setenv("BIOTOOL_IMAGE", "biotool-sandbox:mine")
    assert box._image_for("gpu") == "biotool-sandbox:cuda"
    assert box._image_for("default") == box._image_for("offline") == "biotool-sandbox:mine"
    from biotool_sandbox.inspect_io import resolve
    assert resolve("a/b") == "/work/a/b" and resolve("/tmp/x") == "/tmp/x"


def test_compose_file_for_inspects_docker_provider():
    doc = yaml.safe_load((REPO / "compose.inspect.yaml").read_text())
    default = doc["services"]["default"]
    assert default["x-default"] is True and default["x-local"] is True
    assert doc["services"]["egress"]["x-local"] is True
    assert any(t.startswith("/var/tmp:") and "exec" in t.split(":", 1)[1].split(",")
               for t in default["tmpfs"])
    # Inspect's mount check refuses external volumes and host binds: only project volumes
    # (the workspace, and the run's egress CA read-only).
    assert default["volumes"] == ["work:/work", "egress-ca:/run/biotool-egress-ca:ro"]
    assert all(not v or not v.get("external") for v in doc["volumes"].values())
    assert doc["networks"]["internal"]["internal"] is True and default["networks"] == ["internal"]
    assert default["cap_drop"] == ["ALL"] and default["read_only"] is True


def test_inspects_compose_file_carries_every_limit_of_the_enforced_stack():
    # One declaration in effect: each service of compose.inspect.yaml has the limits and the
    # hardening its counterpart in compose.yaml has, with the same values.
    ours = yaml.safe_load((REPO / "compose.yaml").read_text())["services"]
    inspect = yaml.safe_load((REPO / "compose.inspect.yaml").read_text())["services"]
    keys = ("cpus", "mem_limit", "pids_limit", "logging", "cap_drop", "security_opt",
            "read_only", "user", "tmpfs", "restart")
    for mine, theirs in (("sandbox", "default"), ("egress", "egress")):
        for key in keys:
            assert inspect[theirs].get(key) == ours[mine].get(key), (theirs, key)
    # The run's egress state (certificate, RIDs, audit) survives a restart, in both files.
    assert ours["egress"]["restart"].startswith("on-failure")
    for doc in (ours, inspect):
        assert "egress-state:/var/lib/biotool-egress-run" in doc["egress"]["volumes"]
        assert not any("egress-state" in v for svc, d in doc.items() if svc != "egress"
                       for v in d.get("volumes", []))


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
    assert "-m 'not cuda'" in _make_n("test-image", "BIOTOOL_TEST_BUILD=0", "-o", "image")
    assert "-m cuda" in _make_n("test-cuda", "-o", "image-cuda")
