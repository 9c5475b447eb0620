"""Inspect AI tasks on an HPC node: provider `biotool-apptainer`, one Apptainer instance of the
biotool SIF per sample, offline (docs/hpc.md, "Inspect on HPC").

    pip install -e '.[host]'                      # the providers and inspect-ai
    make sif                                      # or copy a biotool-sandbox.sif in
    export BIOTOOL_SIF=$PWD/out/biotool-sandbox.sif BIOTOOL_SITE=/shared/biotool-site
    inspect eval examples/inspect_hpc.py@artic_organism --model openai/gpt-5
    inspect eval examples/inspect_hpc.py@artic_organism_scripted      # no model needed

The task is written as for `sandbox="biotool"` (examples/inspect_biotool.py): only the sandbox
name differs. There is no network in the instance, so taxonomy searches the staged local BLAST
database; the scorer grades the answer and records the sandbox's audit, which says offline.
`artic_organism_scripted` drives it with `mockllm/model` scripting the tool calls.
"""

from __future__ import annotations

import json
import re

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate, use_tools
from inspect_ai.tool import bash, python
from biotool_sandbox.providers.audit import egress_audit
from biotool_sandbox.scripted import scripted_model

READS = "/opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq"
PROMPT = (f"Which organism are the nanopore reads in {READS} from? Answer with its scientific "
          "name and NCBI taxid. `biotool --help` lists the tools; `biotool list` what is staged.")
# Known truth for these 200 reads: an ARTIC amplicon run of SARS-CoV-2.
TRUTH = "2697049 Severe acute respiratory syndrome coronavirus 2"
SANDBOX = "biotool-apptainer"


def _sample() -> Sample:
    return Sample(input=PROMPT, target=TRUTH, id="artic-organism")


@scorer(metrics=[accuracy()])
def organism_and_offline():
    """Correct when the answer names the taxid and the organism; metadata: the sandbox's audit."""

    async def score(state: TaskState, target: Target) -> Score:
        answer = state.output.completion
        taxid, name = target.text.split(" ", 1)
        found = bool(re.search(rf"\b{taxid}\b", answer)) and name.lower() in answer.lower()
        audit = await egress_audit()  # the same scorer code as on `biotool`: here, offline
        return Score(value=CORRECT if found else INCORRECT, answer=answer,
                     explanation=audit["note"],
                     metadata={"instance": audit["run"], "offline": audit["offline"],
                               "egress_records": len(audit["records"])})

    return score


@task
def artic_organism() -> Task:
    """The task for a real model: bash and python in the sample's Apptainer instance."""
    return Task(dataset=[_sample()], solver=[use_tools(bash(timeout=300), python(timeout=300)),
                                             generate()],
                scorer=organism_and_offline(), sandbox=SANDBOX)


# The tool calls of a careful agent, in order; its answer is then read from the taxonomy output.
SCRIPT = (
    ("bash", {"command": f"biotool taxonomy --local --fastq {READS}"}),
    ("bash", {"command": f"biotool align --fastq {READS} --reference MN908947.3"}),
    # No network at all: not even a name resolves (curl exit 6), let alone a connection.
    ("bash", {"command": "curl -sS -m 10 -o /dev/null https://www.ncbi.nlm.nih.gov/; "
                         "echo curl-exit=$?"}),
    # A command that outlives its tool's timeout is stopped and reported as a timeout.
    ("python", {"code": "import time\ntime.sleep(120)\nprint('slept')"}),
)


def _organism(messages) -> str:
    """'TAXID NAME' of the dominant organism in the taxonomy tool's JSON, as an agent reads it."""
    first = next(m.text for m in messages if m.role == "tool")
    for line in first.splitlines():
        if line.startswith("{"):
            organisms = json.loads(line)["summary"]["organisms"]
            if organisms:
                top = max(organisms, key=lambda o: o["reads"])
                return f"{top['taxid']} {top['name']}"
    return "no organism found"


@task
def artic_organism_scripted() -> Task:
    """The same sample with mockllm/model scripting the calls (the image test runs this)."""
    return Task(dataset=[_sample()],
                solver=[use_tools(bash(timeout=300), python(timeout=5)), generate()],
                scorer=organism_and_offline(), sandbox=SANDBOX,
                model=scripted_model(SCRIPT, lambda messages:
                                     f"The reads are from taxid {_organism(messages)}."))
