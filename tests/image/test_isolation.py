"""Isolation between runs, and NCBI's rules held outside the agent's reach (issue 11).

Two runs, A (the attacker) and B, share one mock NCBI (biotool_testing/mock_ncbi.py, TLS as
blast.ncbi.nlm.nih.gov on both runs' outside networks), which counts every breach of NCBI's
rules (10 s between any two requests, a minute between polls of one RID). Each test does the
attack from inside A's sandbox with ordinary tools (curl, python3, dd) and checks the outcome:
the attack fails or is bounded, and B's remote taxonomy still succeeds within its --timeout.
"""

from __future__ import annotations

import json
import re

import pytest

from biotool_testing import certificates, polling, stack

HOST = stack.ALLOWED_HOST
URL = f"https://{HOST}/blast/Blast.cgi"
READS = stack.REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"
WORK_SIZE = "256m"


@pytest.fixture(scope="module")
def pair(tmp_path_factory, images):
    certs = certificates.server_ca(tmp_path_factory.mktemp("test-ca"), stack.ALLOWED_HOST)
    runs = []
    mock = None
    try:
        runs.append(stack.launcher("up", "--extra-ca", str(certs["ca"]), "--work-size", WORK_SIZE,
                                   "--cpus", "1"))
        runs.append(stack.launcher("up", "--extra-ca", str(certs["ca"])))
        mock = stack.start_mock_ncbi(runs, certs, f"{runs[0]['run']}-ncbi", "--rtoe", "1")
        yield {"a": runs[0], "b": runs[1], "mock": mock}
    finally:
        if mock is not None:
            mock.remove(force=True)
        for r in runs:
            stack.launcher("down", r["run"])


def sh(run: dict, script: str, timeout: float = 300) -> dict:
    return stack.launcher("exec", run["run"], "--timeout", str(timeout), "--", "bash", "-c", script,
                          timeout=timeout + 60)


def curl_put(n: int, parallel: bool) -> str:
    """n BLAST submissions by curl through the proxy: each prints its HTTP status."""
    # --max-time only ends a hung curl (a Put waits up to the gate's 30 s hold): one cut short
    # would print 000 while the gate still records its 429.
    one = (f"curl -s -o /dev/null -w '%{{http_code}}\\n' --max-time 300 -X POST "
           f"--data 'CMD=Put&PROGRAM=blastn&DATABASE=nt&QUERY=%3Eq%0AACGTACGTACGTACGTACGTACGT' {URL}")
    if parallel:
        return f"for i in $(seq {n}); do {one} & done; wait"
    return f"for i in $(seq {n}); do {one}; done"


def test_b_succeeds_within_its_timeout_while_a_floods(pair):
    import threading

    a, b, mock = pair["a"], pair["b"], pair["mock"]
    stack.launcher("cp", str(READS), f"{b['run']}:/work/reads.fastq")
    # A floods for as long as B's taxonomy runs (until the test writes STOP in A's sandbox),
    # not for a fixed while that a slow host's B could outlast: B finishing at all, within its
    # --timeout, is then what says A did not starve it.
    stop = "/tmp/biotool-test-stop-flood"
    flood: dict = {}
    t = threading.Thread(target=lambda: flood.update(sh(a, (
        f"end=$((SECONDS+1500)); while [ ! -e {stop} ] && [ $SECONDS -lt $end ]; do "
        + curl_put(8, parallel=True) + "; done"), timeout=1800)))
    t.start()
    try:
        res = stack.launcher("exec", b["run"], "--timeout", "660", "--",
                             "biotool", "taxonomy", "--fastq", "/work/reads.fastq", "--sample", "5",
                             "--remote", "--timeout", "600", "--email", "ci@example.org",
                             timeout=780)
    finally:
        stack.container(a["containers"]["sandbox"]).exec_run(["touch", stop])
        t.join()
    assert res["exit_code"] == 0, res
    out = json.loads(res["stdout"])
    assert "coronavirus 2" in (out["summary"]["dominant"] or "").lower(), out["summary"]
    # A's curl flood got 429s (each logged as paced), a fair share of 200s, and NCBI (the
    # mock) saw no breach of its rules from the two runs together.
    codes = flood["stdout"].split()
    assert codes.count("429") > codes.count("200") > 0, codes[:50]
    assert stack.mock_requests(mock)["violations"] == []
    # Each 429 is on record: one by one up to the gate's burst, then counted (`suppressed`,
    # which reaches the store within a flush).
    def paced(audit: dict) -> list[dict]:
        return [r for r in audit["records"] if r.get("paced")]

    def n_paced(records: list[dict]) -> int:
        return sum(r["count"] if r["event"] == "suppressed" else 1 for r in records)
    recorded = paced(stack.audit_when(a, lambda au: n_paced(paced(au)) >= codes.count("429"),
                                      "every 429 on record"))
    assert n_paced(recorded) == codes.count("429") and all(r["http_status"] == 429 for r in recorded)
    # B's last record (its fetch) is written as the fetch ends, maybe after B has the answer.
    stack.audit_when(b, lambda au: {r["what"] for r in au["records"] if r["event"] == "request"
                                    and r["decision"] == "allowed"} >= {"put", "poll", "fetch"},
                     "B's put, poll and fetch allowed on record")


def test_b_cannot_read_a_rid(pair):
    a, b, mock = pair["a"], pair["b"], pair["mock"]
    # Paced (its slot taken by another run's request)? Asked again after NCBI's interval.
    m = polling.until("A's Put to get a RID", lambda: re.search(r"RID = (\w+)", sh(a, (
        f"curl -s --max-time 120 -X POST --data 'CMD=Put&PROGRAM=blastn&DATABASE=nt&"
        f"QUERY=%3Eq%0AACGTACGTACGTACGTACGT' {URL}"))["stdout"]), every_s=12)
    rid = m.group(1)
    before = [r for r in stack.mock_requests(mock)["requests"] if r["rid"] == rid]
    steal = sh(b, "; ".join(
        f"curl -s -w ' HTTP=%{{http_code}}\\n' --max-time 120 '{URL}?{q}'" for q in (
            f"CMD=Get&FORMAT_TYPE=JSON2_S&RID={rid}",
            f"CMD=Get&FORMAT_OBJECT=SearchInfo&RID={rid}"))
        + f"; curl -s -w ' HTTP=%{{http_code}}\\n' --max-time 120 -X POST --data 'CMD=Get&RID={rid}' {URL}")
    assert re.findall(r"HTTP=(\d+)", steal["stdout"]) == ["403", "403", "403"], steal
    assert "not created by this run" in steal["stdout"]
    # Nothing about A's RID reached NCBI on B's behalf.
    after = [r for r in stack.mock_requests(mock)["requests"] if r["rid"] == rid]
    assert after == before


def test_sandboxes_hold_no_state_shared_with_other_runs(pair):
    import docker

    dc = docker.from_env()
    for key in ("a", "b"):
        run = pair[key]
        sandbox = dc.containers.get(run["containers"]["sandbox"])
        for mount in sandbox.attrs["Mounts"]:
            assert mount["Type"] == "volume" and mount["Name"].startswith(run["run"] + "_"), mount
        egress = dc.containers.get(run["containers"]["egress"])
        names = {m.get("Name") for m in egress.attrs["Mounts"]}
        assert "biotool-ncbi-schedule" in names  # the host-wide schedule: egress only
    # A writes a note wherever it can; B finds none of it.
    sh(pair["a"], "for d in /work /tmp /run/biotool-egress-ca; do echo note > $d/note-for-b 2>/dev/null; done; true")
    found = sh(pair["b"], "ls /work /tmp /run/biotool-egress-ca 2>/dev/null | grep -c note-for-b || true")
    assert found["stdout"].strip() == "0", found
    # The sandbox cannot write its CA, and no pacing override reaches the schedule.
    ca = sh(pair["a"], "echo x > /run/biotool-egress-ca/ca.pem")
    assert ca["exit_code"] != 0


def test_work_is_size_capped_and_limits_are_set(pair):
    import docker

    a = pair["a"]
    res = sh(a, "dd if=/dev/zero of=/work/fill bs=1M count=400 2>&1; df -m /work | tail -1; rm -f /work/fill")
    assert "No space left on device" in res["stdout"], res
    size_mb = int(res["stdout"].strip().splitlines()[-1].split()[1])
    assert 200 <= size_mb <= 260, res["stdout"]
    dc = docker.from_env()
    sandbox = dc.containers.get(a["containers"]["sandbox"]).attrs["HostConfig"]
    assert sandbox["NanoCpus"] == 1_000_000_000  # --cpus 1
    b_sandbox = dc.containers.get(pair["b"]["containers"]["sandbox"]).attrs["HostConfig"]
    assert b_sandbox["NanoCpus"] == 1_500_000_000  # the default
    for name in (*a["containers"].values(), *pair["b"]["containers"].values()):
        log = dc.containers.get(name).attrs["HostConfig"]["LogConfig"]
        assert log["Type"] == "json-file" and log["Config"].get("max-size") == "10m", (name, log)
