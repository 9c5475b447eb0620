"""Fixtures for the image tests: a docker SDK client, the built images, and a runner that
starts one throw-away container per command (the jupyter/docker-stacks pattern).

The images are `biotool-sandbox:latest` and `biotool-egress:latest` unless BIOTOOL_IMAGE /
BIOTOOL_EGRESS_IMAGE say otherwise; when absent they are built with `make image`
(BIOTOOL_TEST_BUILD=0 turns that off and fails instead).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

# Sibling helper modules (stack.py, probe.py) import by plain name.
sys.path.insert(0, str(Path(__file__).parent))

REPO = Path(__file__).resolve().parents[2]
SANDBOX_IMAGE = os.environ.get("BIOTOOL_IMAGE", "biotool-sandbox:latest")
EGRESS_IMAGE = os.environ.get("BIOTOOL_EGRESS_IMAGE", "biotool-egress:latest")
TEST_LABEL = "biotool-image-test"
RUN_TIMEOUT = 300

# The shape Apptainer runs an image in: an arbitrary non-root UID, a read-only root,
# no network, a private /tmp, and a HOME the user cannot write (here: the agent's home).
APPTAINER_SHAPE = {
    "user": "12345:12345",
    "read_only": True,
    "network_mode": "none",
    "tmpfs": {"/tmp": ""},  # docker's defaults: rw,noexec,nosuid,nodev
    "environment": {"HOME": "/home/agent"},
}


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.image)


@dataclass(repr=False)
class Ran:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict:
        try:
            return json.loads(self.stdout)
        except ValueError:
            raise AssertionError(f"stdout is not one JSON object (exit {self.code}):\n"
                                 f"{self.stdout[-2000:]}\nstderr:\n{self.stderr[-2000:]}")

    def __repr__(self) -> str:
        return f"exit {self.code}\nstdout: {self.stdout[-1500:]}\nstderr: {self.stderr[-1500:]}"


@pytest.fixture(scope="session")
def docker_client():
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception as exc:  # docker.errors.DockerException, or the SDK missing
        pytest.fail(f"the image tests need a running Docker engine: {exc} "
                    f"(start dockerd, or run .ci/run)", pytrace=False)
    yield client
    for c in client.containers.list(all=True, filters={"label": TEST_LABEL}):
        c.remove(force=True)


def _missing(client) -> list[str]:
    import docker

    out = []
    for name in (SANDBOX_IMAGE, EGRESS_IMAGE):
        try:
            client.images.get(name)
        except docker.errors.ImageNotFound:
            out.append(name)
    return out


@pytest.fixture(scope="session")
def images(docker_client) -> dict:
    """The built images, building them with `make image` if they are absent."""
    missing = _missing(docker_client)
    if missing and os.environ.get("BIOTOOL_TEST_BUILD", "1") != "0":
        proc = subprocess.run(["make", "image"], cwd=REPO, capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.fail(f"make image failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}",
                        pytrace=False)
        missing = _missing(docker_client)
    if missing:
        pytest.fail(f"images {', '.join(missing)} are not built: run `make image`",
                    pytrace=False)
    return {"sandbox": SANDBOX_IMAGE, "egress": EGRESS_IMAGE}


class Runner:
    """Runs one command in a fresh container of the sandbox image and removes it."""

    def __init__(self, client, image: str):
        self.client, self.image = client, image

    def run(self, command, timeout: int = RUN_TIMEOUT, **kwargs) -> Ran:
        if isinstance(command, str):
            command = ["bash", "-c", command]
        kwargs.setdefault("network_mode", "none")
        kwargs.setdefault("labels", {}).update({TEST_LABEL: "1"})
        container = self.client.containers.run(
            self.image, command, detach=True, name=f"biotool-test-{uuid.uuid4().hex[:10]}",
            **kwargs)
        try:
            status = container.wait(timeout=timeout)
            return Ran(code=status["StatusCode"],
                       stdout=container.logs(stdout=True, stderr=False).decode(errors="replace"),
                       stderr=container.logs(stdout=False, stderr=True).decode(errors="replace"))
        finally:
            container.remove(force=True)

    def biotool(self, *args: str, **kwargs) -> Ran:
        return self.run(["biotool", *args], **kwargs)


@pytest.fixture(scope="session")
def sandbox(docker_client, images) -> Runner:
    return Runner(docker_client, images["sandbox"])


@pytest.fixture(scope="session")
def apptainer_shape() -> dict:
    return {k: (dict(v) if isinstance(v, dict) else v) for k, v in APPTAINER_SHAPE.items()}
