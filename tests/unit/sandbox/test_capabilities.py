"""Each backend's declared Capabilities, checked once against what a run asks for (the one
refusal of each), and each declaration held against what the backend renders or runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from biotool.rules import REPO_RULES
from biotool_sandbox.backends import apptainer, compose, harbor, k8s
from biotool_sandbox.backends.capabilities import Asks, Capabilities, refusal
from biotool_sandbox.backends.spec import RunSpec

REPO = Path(__file__).resolve().parents[3]
COMPOSE = REPO / "compose.yaml"


class _Engine:
    """A docker SDK client as an engine answers: its runtimes, and its components (Podman's)."""

    def __init__(self, podman: str | None = None, refuses_tmpfs_size: bool = False):
        self.podman, self.refuses = podman, refuses_tmpfs_size
        self.volumes = self

    def info(self) -> dict:
        return {"Runtimes": {"runc": {}, "runsc": {}}}

    def version(self) -> dict:
        return {"Components": [{"Name": "Podman Engine", "Version": self.podman}]
                if self.podman else [{"Name": "Engine", "Version": "20.10.24"}]}

    def create(self, name, **_):  # volumes.create: the tmpfs-size probe
        if self.refuses:
            raise RuntimeError("invalid mount option size")
        return self

    def remove(self, force=False):
        return None


def test_what_a_run_asks_is_refused_once_in_the_backends_words():
    bare = Capabilities(backend="Bare", limits=False, network_rule=False, runtimes=(),
                        user_switching=False)
    assert refusal(bare, Asks()) is None
    assert refusal(bare, Asks(limits=True)) == "Bare cannot enforce the sandbox's limits"
    assert "no network only" in refusal(bare, Asks(network_rule=True))
    assert refusal(bare, Asks(runtime="runsc", runtime_source="BIOTOOL_RUNTIME")).startswith(
        "BIOTOOL_RUNTIME 'runsc' is not registered with this engine (it has: none)")
    assert refusal(bare, Asks(user="root")).startswith("exec as user 'root': ")
    # The first thing asked that is missing is the one refusal.
    assert refusal(bare, Asks(limits=True, user="root")).startswith("Bare cannot enforce")


def test_a_run_of_the_stack_asks_for_limits_always_and_the_rule_unless_offline(monkeypatch):
    monkeypatch.delenv("BIOTOOL_RUNTIME", raising=False)
    assert RunSpec().asks() == Asks(limits=True, network_rule=True)
    assert RunSpec(mode="offline").asks().network_rule is False
    monkeypatch.setenv("BIOTOOL_RUNTIME", "runsc")
    assert RunSpec().asks().runtime_source == "BIOTOOL_RUNTIME"
    assert RunSpec(runtime="runc").asks() == Asks(limits=True, network_rule=True,
                                                  runtime="runc", runtime_source="--runtime")


def test_the_compose_backend_asks_the_engine_what_it_gives():
    docker = compose.capabilities(_Engine())
    assert (docker.backend, docker.limits, docker.runtimes) == ("Docker", True, ("runc", "runsc"))
    assert refusal(docker, RunSpec(runtime="runsc").asks()) is None
    podman = compose.capabilities(_Engine(podman="4.3.1", refuses_tmpfs_size=True))
    assert podman.limits is False
    said = refusal(podman, RunSpec(mode="offline").asks())
    assert said.startswith("this engine is Podman 4.3.1, which cannot carry the enforced stack: "
                           "no size-capped tmpfs volumes") and "use Docker" in said


def test_apptainer_declares_what_its_instance_is(tmp_path):
    caps = apptainer.CAPABILITIES
    assert not (caps.limits or caps.network_rule or caps.runtimes or caps.user_switching)
    s = apptainer.Settings(apptainer="/usr/bin/apptainer", sif=tmp_path / "x.sif", site=None,
                           scratch=tmp_path)
    argv = apptainer.start_argv(s, apptainer.Sample(name="bta-0", root=tmp_path))
    assert "--network" in argv and argv[argv.index("--network") + 1] == "none"


def test_kubernetes_declares_what_its_values_render():
    values = k8s.values(REPO_RULES, COMPOSE)
    for service in values["services"].values():
        assert service["runtimeClassName"] in k8s.CAPABILITIES.runtimes
        assert service["resources"]["limits"] == service["resources"]["requests"]
    assert k8s.CAPABILITIES.limits and k8s.CAPABILITIES.network_rule


def test_harbor_declares_what_its_environment_renders():
    main = harbor.agent_compose(COMPOSE, "i:1", "e:1")["services"][harbor.MAIN]
    assert "runtime" not in main and not harbor.CAPABILITIES.runtimes
    assert main["networks"] == ["internal"] and harbor.CAPABILITIES.network_rule
    assert {"cpus", "mem_limit", "pids_limit"} <= set(main) and harbor.CAPABILITIES.limits


@pytest.mark.parametrize("caps", [compose.capabilities(_Engine()), apptainer.CAPABILITIES,
                                  k8s.CAPABILITIES, harbor.CAPABILITIES])
def test_every_backend_declares_one_capabilities(caps):
    assert isinstance(caps, Capabilities) and caps.backend
