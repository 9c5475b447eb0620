"""egress_audit() read two ways on one real run, in an Inspect eval with mockllm scripting the
agent's egress attempts: from the engine (biotool's provider: the egress container's log and
the gate's store) and through the sandbox API from the `egress` sandbox (sandbox_audit, the
path on Inspect's k8s sandbox and any other provider). The same records, Squid's denials
among them (the store keeps those too), the same shape.
"""

from __future__ import annotations

import pytest

NCBI = "blast.ncbi.nlm.nih.gov"
# A Squid denial (a host off the allowlist), two gate denials inside allowed tunnels (a path
# that is not the BLAST API, a RID this run never made), and a plain HTTP denial.
ATTEMPTS = (
    "curl -sS -o /dev/null https://denied.invalid/; echo exit=$?",
    f"curl -sS -o /dev/null -w '%{{http_code}}\\n' https://{NCBI}/robots.txt",
    f"curl -sS -o /dev/null -w '%{{http_code}}\\n' 'https://{NCBI}/Blast.cgi?CMD=Get&FORMAT_TYPE=JSON2_S&RID=NOTOURS1'",
    f"curl -sS -o /dev/null -w '%{{http_code}}\\n' http://{NCBI}/",
)


def _task():
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import Score, scorer
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import bash
    from inspect_ai.util import sandbox

    from biotool_sandbox.providers.audit import egress_audit, sandbox_audit
    from biotool_sandbox.scripted import scripted_model

    agent = scripted_model([("bash", {"command": c}) for c in ATTEMPTS], lambda messages: "done")

    @scorer(metrics=[])
    def both_ways():
        async def score(state, target) -> Score:
            engine = await egress_audit()
            api = await sandbox_audit(sandbox("egress"), run=engine["run"])
            by_name = await egress_audit("egress")          # the egress sandbox names the run too
            return Score(value=1, metadata={"engine": engine, "api": api,
                                            "by_name_run": by_name["run"]})
        return score

    return Task(dataset=[Sample(input="try the network", id="audit")],
                solver=[use_tools(bash(timeout=60)), generate()], scorer=both_ways(),
                sandbox="biotool", model=agent)


@pytest.fixture(scope="module")
def audits(images, tmp_path_factory) -> dict:
    from inspect_ai import eval as inspect_eval

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BIOTOOL_IMAGE", images["sandbox"])
        mp.setenv("BIOTOOL_EGRESS_IMAGE", images["egress"])
        log = inspect_eval(_task(), display="none", log_dir=str(tmp_path_factory.mktemp("logs")),
                           max_samples=1)[0]
    assert log.status == "success", log.error
    sample = log.samples[0]
    tools = [m.text for m in sample.messages if m.role == "tool"]
    assert len(tools) == len(ATTEMPTS), tools
    return {**next(iter(sample.scores.values())).metadata, "tools": tools}


def test_the_sandbox_api_reads_the_whole_audit_as_the_engine_does(audits):
    # Squid's denials are kept in the gate's store too, so both paths read every record.
    engine, api = audits["engine"], audits["api"]
    # The engine's audit adds the images the run ran (the launcher's own view of the engine,
    # which the sandbox API does not have).
    assert set(api) == set(engine) - {"images"} and set(api["store"]) == set(engine["store"])
    assert set(api["egress"]) == set(engine["egress"])
    gate = [r for r in engine["records"] if r["source"] == "gate"]
    reasons = " | ".join(str(r["reason"]) for r in gate)
    assert "is not the BLAST URL API" in reasons and "was not created by this run" in reasons
    for key in ("records", "counts", "tunnels", "open_tunnels", "unparsed_lines", "store"):
        assert api[key] == engine[key], key
    assert api["tunnels"] and api["store"]["read"] and api["store"]["bytes"] > 0
    assert api["unparsed_lines"] == 0
    assert api["run"] == engine["run"] == audits["by_name_run"]


def test_squids_denials_come_from_the_store_on_both_paths(audits):
    engine, api = audits["engine"], audits["api"]
    proxy = [r for r in api["records"] if r["source"] == "proxy"]
    assert {"denied.invalid", NCBI} <= {r["host"] for r in proxy}, proxy    # CONNECT, plain GET
    assert {r["decision"] for r in proxy} == {"denied"}
    assert api["proxy_log"] == {"read": True, "from": "store", "dropped": None, "note": None,
                                "rotated_after_full": None}
    # The engine also reads the log, and finds no record of Squid's that the store lacks.
    assert engine["proxy_log"] == {"read": True, "from": "store", "dropped": 0, "note": None,
                                   "rotated_after_full": None}
    assert api["counts"]["denied"] == len(ATTEMPTS)  # each attempt is one denial on record
    # A fresh gate is no restart, although its store begins with a header line.
    assert api["egress"] == {"running": True, "restarts": None, "oom_killed": None,
                             "gate_restarts": 0}
    assert engine["egress"] == {"running": True, "restarts": 0, "oom_killed": False,
                                "gate_restarts": 0}
