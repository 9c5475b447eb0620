"""Fixtures for the Apptainer tier (`make test-apptainer`, docs/hpc.md): real Apptainer, Slurm
and munge in an HPC node container (tests/biotool_testing/hpc_node.py) running the SIF built from
the image under test (image/hpc/build-sif.sh). Nothing here stands in for Apptainer.

A SIF that is missing or was built from another image fails the tier with what to run.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from biotool_testing import hpc_node
from biotool_testing.images import SANDBOX_IMAGE

# Run on the node by test_provider_on_node.py (with --confcutdir, so without this file).
collect_ignore = ["on_node"]


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.apptainer)


@pytest.fixture(scope="session")
def node(tmp_path_factory):
    for image in (SANDBOX_IMAGE, hpc_node.NODE_IMAGE):
        if subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode:
            pytest.fail(f"image {image} is not in the engine: run make test-apptainer "
                        "(it builds the node and the SIF)", pytrace=False)
    current, why = hpc_node.sif_is_current(SANDBOX_IMAGE)
    if not current:
        pytest.fail(why, pytrace=False)
    started = hpc_node.start(tmp_path_factory.mktemp("hpc") / "results")
    yield started
    hpc_node.stop(started)
