"""The `biotool-apptainer` Inspect provider against real Apptainer: tests/apptainer/on_node/ run
by pytest on the node, as the node's user, from the node's Python environment (what
`pip install '.[host]'` brings, image/hpc/build-node.sh) with this checkout on PYTHONPATH."""

from __future__ import annotations

from biotool_testing.paths import REPO

ON_NODE = REPO / "tests" / "apptainer" / "on_node"


def test_the_provider_passes_its_checks_on_the_node(node):
    ran = node.sh(f"/opt/inspect/bin/python -m pytest -q -p no:cacheprovider -rfEX "
                  f"--confcutdir={ON_NODE} --basetemp={node.results}/provider {ON_NODE}",
                  env={"PYTHONPATH": f"{REPO / 'entrypoints'}:{REPO / 'tests'}",
                       "HOME": "/home/hpcuser"}, timeout=3600)
    assert ran.code == 0, ran.stdout[-6000:] + ran.stderr[-2000:]
    assert " passed" in ran.stdout.splitlines()[-1] and "1 xfailed" in ran.stdout.splitlines()[-1]
