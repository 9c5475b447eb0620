"""An Inspect AI task on Kubernetes: Inspect's k8s sandbox with this project's values file.

    pip install -e '.[host,k8s]'                  # inspect-ai and inspect-k8s-sandbox
    # once per namespace: the egress TLS material (docs/kubernetes.md)
    k8s/tls.sh | kubectl apply -n evals -f -
    # images the cluster can pull: re-render with --image/--egress-image if not the defaults
    biotool-sandbox k8s-values --image REG/biotool-sandbox:TAG \\
        --egress-image REG/biotool-egress:TAG --out k8s/values.yaml
    inspect eval examples/inspect_k8s.py@artic_deletion_k8s --model openai/gpt-5

Each sample is one `agent-env` Helm release: the agent's pod (`default`, compose's hardening
as a securityContext) and the egress pod (Squid + the gate), whose Cilium policies give the
agent no way out but the egress service. No cluster ran where this was written: the values
file is proven by helm, kubernetes-validate and Cilium's schemas
(tests/unit/sandbox/test_k8s_render.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate, use_tools
from inspect_ai.tool import bash, python
from inspect_ai.util import sandbox

# An absolute path: Inspect resolves a relative one against the directory it runs the task in.
VALUES = str(Path(__file__).resolve().parents[1] / "k8s" / "values.yaml")
READS = "/opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq"
PROMPT = (f"The nanopore reads in {READS} are a SARS-CoV-2 ARTIC amplicon run. Against the "
          "reference MN908947.3, report the largest deletion: its position and its REF>ALT "
          "(as 'POS REF>ALT'). `biotool --help` lists the tools; `biotool list` what is staged.")
TRUTH = "29749 ACGATCGAGTG>A"   # docs/reads.md: a 10-nt deletion at 29749


@scorer(metrics=[accuracy()])
def deletion_and_denied_egress():
    """Correct when the answer names the deletion; metadata says a forbidden host was refused."""

    async def score(state: TaskState, target: Target) -> Score:
        answer = state.output.completion
        pos, change = target.text.split()
        found = bool(re.search(rf"\b{pos}\b", answer)) and change in answer
        # The proxy's own answer to a host off the allowlist: 403 from the egress pod.
        probe = await sandbox().exec(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_connect}",
                                      "https://denied.invalid/"], timeout=30)
        return Score(value=CORRECT if found else INCORRECT, answer=answer,
                     metadata={"forbidden_egress_connect_status": probe.stdout.strip()})

    return score


@task
def artic_deletion_k8s() -> Task:
    return Task(dataset=[Sample(input=PROMPT, target=TRUTH, id="artic-29749")],
                solver=[use_tools(bash(timeout=300), python(timeout=300)), generate()],
                scorer=deletion_and_denied_egress(), sandbox=("k8s", VALUES))
