"""`biotool taxonomy` inside the enforced stack reaches NCBI BLAST only through the proxy.

The mock NCBI service (tests/mock_ncbi.py, the real BLAST URL protocol) runs on the run's
outside network under the name blast.ncbi.nlm.nih.gov, over TLS with a test CA the egress
gate trusts upstream (the sandbox trusts only its run's egress CA). Because the name is
NCBI's, biotool and the gate keep NCBI's real pacing (10 s between contacts, a minute between
polls of one RID), so this test takes under a minute.
"""

from __future__ import annotations

import json

import pytest

import stack  # tests/image/stack.py; conftest puts this folder on sys.path

HOST = stack.ALLOWED_HOST
READS = stack.REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"


@pytest.fixture(scope="module")
def run(tmp_path_factory, images):
    certs = stack.make_test_ca(tmp_path_factory.mktemp("test-ca"))
    up = stack.launcher("up", "--extra-ca", str(certs["ca"]))
    try:
        up["mock"] = stack.start_mock_ncbi([up], certs, f"{up['run']}-ncbi", "--rtoe", "1")
        yield up
    finally:
        if up.get("mock"):
            up["mock"].remove(force=True)
        stack.launcher("down", up["run"])


mock_requests = stack.mock_requests


def test_taxonomy_remote_through_the_proxy_obeys_ncbi_rules(run):
    stack.launcher("cp", str(READS), f"{run['run']}:/work/reads.fastq")
    res = stack.launcher("exec", run["run"], "--timeout", "300", "--",
                         "biotool", "taxonomy", "--fastq", "/work/reads.fastq", "--sample", "10",
                         "--remote", "--timeout", "240", "--email", "ci@example.org")
    assert res["exit_code"] == 0, res
    out = json.loads(res["stdout"])
    assert out["summary"]["dominant"] and "coronavirus 2" in out["summary"]["dominant"].lower()
    assert out["n"] == 10

    seen = mock_requests(run["mock"])
    assert seen["violations"] == [], seen["violations"]
    puts = [r for r in seen["requests"] if r["what"] == "put"]
    assert len(puts) == 1 and puts[0]["method"] == "POST", seen["requests"]  # 10 fit one batch
    assert puts[0]["queries"] == 10
    assert puts[0]["params"].get("tool") and puts[0]["params"].get("email") == "ci@example.org"

    # The egress saw each request (not just each tunnel): one allowed record per request the
    # mock got, each to NCBI's host over TLS with the right SNI, with bytes both ways.
    records = stack.audit(run)
    assert records, "the proxy logged nothing"
    assert all(r["event"] == "request" for r in records), records
    assert {(r["host"], r["port"], r["sni"], r["decision"]) for r in records} == {
        (HOST, 443, HOST, "allowed")}, records
    assert len(records) == len(seen["requests"]), (records, seen["requests"])
    assert [r["what"] for r in records] == [r["what"] if r["what"] != "get" else "fetch"
                                            for r in seen["requests"]]
    assert all(r["bytes_sent"] > 0 and r["bytes_received"] > 0 for r in records)


FLOOD = r'''
import os, socket, ssl, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
sock = socket.create_connection((proxy.hostname, proxy.port), timeout=60)
sock.sendall(b"CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += sock.recv(4096)
ctx = ssl.create_default_context(cafile=os.environ["REQUESTS_CA_BUNDLE"])
tls = ctx.wrap_socket(sock, server_hostname="{host}")
line = ("GET /blast/Blast.cgi?CMD=DisplayRIDs&x=" + "%C3%A9" * 100 +
        " HTTP/1.1\r\nHost: {host}\r\n\r\n").encode()
pattern, answered, tail = b"HTTP/1.1 4", 0, b""
def read_until(total):  # the gate's answers, pipelined, come back in order
    global answered, tail
    while answered < total:
        chunk = tls.recv(65536)
        if not chunk:
            return
        buf = tail + chunk
        answered += buf.count(pattern)
        tail = buf[-(len(pattern) - 1):]
sent = 0
for _ in range({n} // 500):  # one thread: batches of 500 pipelined requests, then their answers
    tls.sendall(line * 500)
    sent += 500
    read_until(sent)
tls.sendall(b"GET /blast/Blast.cgi?CMD=Get&FORMAT_TYPE=JSON2_S&RID=NONE HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
read_until(sent + 1)
print(answered)
'''


def test_a_flood_of_denied_requests_cannot_empty_the_audit(run):
    # After the remote search above, the agent floods its egress with pipelined denied
    # requests: the gate's own store keeps the earlier allowed records and counts the flood.
    before = [r for r in stack.audit(run) if r["decision"] == "allowed" and r["event"] == "request"]
    assert before, "the remote taxonomy test above left no allowed record"
    n = 20000
    res = stack.launcher("exec", run["run"], "--timeout", "300", "--", "python3", "-c",
                         FLOOD.replace("{host}", HOST).replace("{n}", str(n)))
    assert res["exit_code"] == 0, (res["stdout"][-2000:], res["stderr"][-2000:])
    out = stack.launcher("audit", run["run"])
    after = [r for r in out["records"] if r["decision"] == "allowed" and r["event"] == "request"]
    assert [(r["what"], r["rid"]) for r in after] == [(r["what"], r["rid"]) for r in before]
    answered = int(res["stdout"].split()[-1])
    assert answered == n + 1  # every request of the flood was answered, so decided
    assert out["store"]["read"] is True and out["store"]["suppressed"] > n * 0.9
    assert out["counts"]["denied"] >= n
