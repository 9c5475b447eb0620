"""Fixtures for the image tests: a docker SDK client, the built images, and a runner that
starts one throw-away container per command (biotool_testing.images, the jupyter/docker-stacks
pattern).

When the images (biotool_testing.images.SANDBOX_IMAGE and EGRESS_IMAGE) are absent they are
built with `make image` (BIOTOOL_TEST_BUILD=0 turns that off and fails instead).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from biotool_testing.images import (APPTAINER_SHAPE, EGRESS_IMAGE, SANDBOX_IMAGE, SESSION, TEST_LABEL,
                                    Runner)
from biotool_testing.paths import REPO


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.image)


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
    for c in client.containers.list(ignore_removed=True, all=True, filters={"label": f"{TEST_LABEL}={SESSION}"}):
        c.remove(force=True)


@pytest.fixture(scope="module", autouse=True)
def no_run_left_behind():
    """After each module, the runs its tests brought up and did not take down (a test that
    failed before its `down`) go: one leak must not fail the next module's `up` for memory."""
    yield
    from biotool_testing import stack

    left = stack.down_leftovers()
    if left:
        print(f"took down {len(left)} run(s) a test left up: {', '.join(left)}")


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


@pytest.fixture(scope="session")
def sandbox(docker_client, images) -> Runner:
    return Runner(docker_client, images["sandbox"])


@pytest.fixture(scope="session")
def apptainer_shape() -> dict:
    return {k: (dict(v) if isinstance(v, dict) else v) for k, v in APPTAINER_SHAPE.items()}
