"""The image's own shape checks (tests/image/test_container_apptainer_shape.py, written for
hpc/run-docker.sh's docker shape) that hold as they are under real Apptainer: the heavy
libraries import with every cache redirected to /tmp, and nothing is fetched at run time."""

from __future__ import annotations

import pytest

from biotool_testing import hpc_node
from image.test_container_apptainer_shape import (  # noqa: F401  (collected here)
    test_heavy_libraries_import_with_their_caches_redirected,
    test_nothing_is_fetched_at_run_time,
)


@pytest.fixture(scope="module")
def sandbox(node):
    return hpc_node.SandboxOnNode(node)


@pytest.fixture
def apptainer_shape() -> dict:
    return {"environment": {}}  # the shape is Apptainer's own: nothing to ask of it
