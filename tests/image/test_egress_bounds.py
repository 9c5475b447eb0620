"""Issue 38 against the real stack: what an agent can make the egress spend. From the sandbox
(uid 1000, through the proxy), Puts of one-letter lines at the body cap and a search whose
report from the mock NCBI (tests/biotool_testing/mock_ncbi.py --big-report 150) is 150 MB:
the egress answers each with a record and stays up (never restarted, never OOM-killed, its
cgroup's peak under its 512 MB), and the agent gets a cut-off report, not the bytes."""

from __future__ import annotations

import json

import pytest

from biotool_testing import certificates, stack

HOST = stack.ALLOWED_HOST
READS = stack.REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"
LIMIT = 512 << 20  # compose.yaml: the egress's mem_limit

ONE_LETTER_PUTS = stack.put_script('head + b"A%0A" * (((8 << 20) - len(head)) // 4)')


@pytest.fixture(scope="module")
def run(tmp_path_factory, images):
    certs = certificates.server_ca(tmp_path_factory.mktemp("test-ca"), HOST)
    up = stack.launcher("up", "--extra-ca", str(certs["ca"]))
    try:
        up["mock"] = stack.start_mock_ncbi([up], certs, f"{up['run']}-ncbi", "--rtoe", "1",
                                           "--big-report", "150")
        yield up
    finally:
        if up.get("mock"):
            up["mock"].remove(force=True)
        stack.launcher("down", up["run"])


def egress_state(run) -> dict:
    c = stack.container(run["containers"]["egress"])
    c.reload()
    peak = None
    for path in ("/sys/fs/cgroup/memory.peak", "/sys/fs/cgroup/memory/memory.max_usage_in_bytes"):
        res = c.exec_run(["cat", path])
        if res.exit_code == 0 and res.output.strip().isdigit():
            peak = int(res.output)
            break
    return {"running": c.attrs["State"]["Running"], "oom": c.attrs["State"]["OOMKilled"],
            "restarts": c.attrs["RestartCount"], "peak": peak}


def test_memory_shapes_leave_the_egress_up_and_every_request_recorded(run):
    res = stack.launcher("exec", run["run"], "--timeout", "300", "--",
                         "python3", "-c", ONE_LETTER_PUTS, "6")
    assert res["exit_code"] == 0, res
    assert res["stdout"].split("\n")[:6] == ["HTTP/1.1 403 Forbidden"] * 6, res
    stack.launcher("cp", str(READS), f"{run['run']}:/work/reads.fastq")
    # --timeout wide (NCBI's intervals take under a minute): the cut-off report, not the
    # clock, must be what ends it on any host.
    res = stack.launcher("exec", run["run"], "--timeout", "660", "--",
                         "biotool", "taxonomy", "--fastq", "/work/reads.fastq", "--sample", "1",
                         "--remote", "--timeout", "600", check=False, timeout=780)
    # One query whose report is 150 MB: cut off at the gate, so the client says so (exit 4).
    assert res["exit_code"] == 4 and "truncated" in res["stderr"], res
    state = egress_state(run)
    print("egress after the attack:", json.dumps(state))
    assert state["running"] and not state["oom"] and state["restarts"] == 0, state
    if state["peak"] is not None:
        assert state["peak"] < LIMIT, state
    # The fetch's record is written as it ends, which may be after the client gave up on it.
    records = stack.audit_when(run, lambda a: any(r.get("what") == "fetch" for r in a["records"]),
                               "the fetch's record")["records"]
    puts = [r for r in records if r.get("event") == "request" and r.get("http_status") == 403
            and "more than 250000 lines" in r.get("reason", "")]
    assert len(puts) == 6, records
    fetch = [r for r in records if r.get("event") == "request" and r.get("what") == "fetch"]
    assert fetch and "passed on as a cut-off report" in (fetch[-1]["reason"] or ""), fetch
    seen = stack.mock_requests(run["mock"])
    assert seen["violations"] == [] and [r["what"] for r in seen["requests"]] == \
        ["put", "poll", "get"], seen
