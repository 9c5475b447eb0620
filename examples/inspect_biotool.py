"""Inspect AI tasks in the biotool sandbox (provider `biotool`, shipped by this project).

    pip install -e '.[host]'                      # the launcher, the docker SDK, inspect-ai
    make image                                    # biotool-sandbox:latest, biotool-egress:latest
    inspect eval examples/inspect_biotool.py@artic_deletion --model openai/gpt-5
    inspect eval examples/inspect_biotool.py@artic_deletion_scripted   # no model needed

Each sample runs in a fresh enforced stack (the agent's container on an internal network whose
only way out is the Squid egress proxy), taken down after scoring. The scorer grades the
answer and reports the run's egress audit: every allowed and denied attempt the proxy logged.
`artic_deletion_scripted` drives the same task with `mockllm/model` scripting the tool calls
a careful agent would make, including the ones the rules refuse.
"""

from __future__ import annotations

import re

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate, use_tools
from inspect_ai.tool import bash, python

from biotool_sandbox.providers.audit import egress_audit
from biotool_sandbox.scripted import scripted_model

READS = "/opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq"
PROMPT = (f"The nanopore reads in {READS} are a SARS-CoV-2 ARTIC amplicon run. Against the "
          "reference MN908947.3, report the largest deletion: its position and its REF>ALT "
          "(as 'POS REF>ALT'). `biotool --help` lists the tools; `biotool list` what is staged.")
# Known truth for these 200 reads (docs/reads.md): a 10-nt deletion at 29749.
TRUTH = "29749 ACGATCGAGTG>A"


def _sample() -> Sample:
    return Sample(input=PROMPT, target=TRUTH, id="artic-29749")


@scorer(metrics=[accuracy()])
def deletion_and_egress():
    """Correct when the answer names the deletion; metadata carries the run's egress audit."""

    async def score(state: TaskState, target: Target) -> Score:
        answer = state.output.completion
        pos, change = target.text.split()
        found = bool(re.search(rf"\b{pos}\b", answer)) and change in answer
        audit = await egress_audit()
        denied = [r for r in audit["records"] if r.get("decision") == "denied"]
        return Score(value=CORRECT if found else INCORRECT, answer=answer,
                     explanation=f"{len(denied)} egress attempts denied",
                     metadata={"run": audit["run"], "egress_counts": audit["counts"],
                               "egress_denied": denied,
                               "egress_offline": audit["offline"]})

    return score


@task
def artic_deletion() -> Task:
    """The task for a real model: tools are bash and python in the enforced sandbox."""
    return Task(dataset=[_sample()], solver=[use_tools(bash(timeout=300), python(timeout=300)),
                                             generate()],
                scorer=deletion_and_egress(), sandbox="biotool")


# The tool calls of a careful agent, in order; its answer is then read from the variants output.
SCRIPT = (
    ("bash", {"command": "biotool doctor --no-sha >/dev/null; echo doctor-exit=$?"}),
    ("bash", {"command": f"biotool variants --fastq {READS} --reference MN908947.3 --top 5 "
                     "--timeout 240"}),
    # Literature search is off-limits in this sandbox: the rules refuse it with exit 3.
    ("bash", {"command": "biotool call pubmed_search '{\"query\": \"SARS-CoV-2 ORF10\"}'; "
                     "echo call-exit=$?"}),
    # A host not on the egress allowlist (.invalid never resolves anywhere): the proxy says 403.
    ("bash", {"command": "curl -sS -o /dev/null -w 'proxy-answer=%{http_connect}\\n' "
                     "https://denied.invalid/; echo curl-exit=$?"}),
    # A command that outlives its tool's timeout is stopped and reported as a timeout.
    ("python", {"code": "import time\ntime.sleep(120)\nprint('slept')"}),
)


def _largest_deletion(messages) -> str:
    """'POS REF>ALT' of the longest deletion in the variants tool's JSON, as an agent reads it."""
    import json

    tool_outputs = [m.text for m in messages if m.role == "tool"]
    for line in tool_outputs[1].splitlines():  # the second call was `biotool variants`
        if line.startswith("{"):
            found = [v for v in json.loads(line).get("variants", []) if v.get("type") == "deletion"]
            if found:
                v = max(found, key=lambda v: v["length"])
                return f"{v['pos']} {v['ref']}>{v['alt']}"
    return "no deletion found"


@task
def artic_deletion_scripted() -> Task:
    """The same sample with mockllm/model scripting the calls (the image test runs this)."""
    return Task(dataset=[_sample()],
                solver=[use_tools(bash(timeout=300), python(timeout=5)), generate()],
                scorer=deletion_and_egress(), sandbox="biotool",
                model=scripted_model(SCRIPT, lambda messages:
                                     f"The largest deletion is {_largest_deletion(messages)}."))
