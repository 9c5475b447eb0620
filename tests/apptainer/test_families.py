"""Every family's demo command (biotool_sandbox.demo's steps, on the samples the SIF stages) under
real Apptainer and under docker in hpc/run-docker.sh's shape: the same exit codes and the same
answers. Only what measures the run itself (celltype's elapsed_s) may differ."""

from __future__ import annotations

import json
import shlex

import pytest

from biotool_sandbox import demo
from biotool_testing.as_agent import AGENT
from biotool_testing.images import SANDBOX_IMAGE, Runner

# The one key of these answers that is the run's own measurement, not its answer.
MEASURED = {"elapsed_s"}


def _answer(value):
    """value without the measurements of the run that made it."""
    if isinstance(value, dict):
        return {k: _answer(v) for k, v in value.items() if k not in MEASURED}
    if isinstance(value, list):
        return [_answer(v) for v in value]
    return value


@pytest.fixture(scope="module")
def steps(node) -> list[tuple[str, list[str]]]:
    help_ran, list_ran = node.apptainer("biotool --help"), node.apptainer("biotool list")
    assert help_ran.code == 0 and list_ran.code == 0, (help_ran, list_ran)
    todo, skipped = demo.plan(help_ran.stdout, list_ran.stdout)
    assert skipped == [] and {f for f, _ in todo} == {f for f, _, _ in demo.FAMILY_STEPS}, skipped
    return todo


@pytest.mark.parametrize("family", [f for f, _, _ in demo.FAMILY_STEPS])
def test_the_familys_demo_command_answers_as_under_docker(family, steps, node):
    import docker

    argv = dict(steps)[family]
    under_apptainer = node.apptainer(shlex.join(argv))
    under_docker = Runner(docker.from_env(), SANDBOX_IMAGE).run(argv, **AGENT)
    assert under_apptainer.code == under_docker.code == 0, (under_apptainer, under_docker)
    a, d = _answer(under_apptainer.json), _answer(under_docker.json)
    assert a == d, json.dumps({"apptainer": a, "docker": d}, indent=1)[:6000]
