"""egress_audit() where there is no egress service to read, on Inspect's own `local` sandbox
in a real (mockllm) eval: one line naming what is missing, never an empty audit."""

from __future__ import annotations

import pytest

pytest.importorskip("inspect_ai")


def _errors(tmp_path) -> dict:
    import os

    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, scorer
    from inspect_ai.solver import generate

    from biotool_sandbox.audit import STORE
    from biotool_sandbox.providers.audit import egress_audit

    assert not os.path.exists(STORE)  # this host runs no egress gate

    @scorer(metrics=[])
    def audit_errors():
        async def score(state, target) -> Score:
            seen = {}
            for key, name in (("no_egress", None), ("not_a_gate", "default")):
                try:
                    await egress_audit(name)
                    seen[key] = None
                except Exception as exc:  # noqa: BLE001 - the type and line are what is checked
                    seen[key] = f"{type(exc).__name__}: {exc}"
            return Score(value=1, metadata=seen)
        return score

    answer = ModelOutput.from_content("mockllm/model", "done")
    # Usage given, so mockllm does not count tokens (its tokenizer would be downloaded).
    answer.usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)
    log = inspect_eval(Task(dataset=[Sample(input="x")], solver=[generate()],
                            scorer=audit_errors(), sandbox="local",
                            model=get_model("mockllm/model", custom_outputs=[answer])),
                       display="none", log_dir=str(tmp_path))[0]
    assert log.status == "success", log.error
    return next(iter(log.samples[0].scores.values())).metadata


def test_no_egress_sandbox_and_no_store_are_one_line_errors(tmp_path):
    seen = _errors(tmp_path)
    assert seen["no_egress"] == ("ValueError: egress_audit: this sample has no sandbox named "
                                 "'egress', so no egress service whose audit could be read")
    assert seen["not_a_gate"].startswith("RuntimeError: egress_audit: the gate's audit store "
                                         "/var/lib/biotool-egress-run/audit.jsonl cannot be read")
    assert all("\n" not in line for line in seen.values())
