"""`biotool taxonomy` inside the enforced stack reaches NCBI BLAST only through the proxy.

The mock NCBI service (tests/mock_ncbi.py, the real BLAST URL protocol) runs on the run's
outside network under the name blast.ncbi.nlm.nih.gov, over TLS with a test CA the sandbox
trusts. Because the name is NCBI's, biotool keeps NCBI's real pacing (10 s between contacts,
a minute between polls of one RID), so this test takes under a minute.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import stack  # tests/image/stack.py; conftest puts this folder on sys.path

HOST = stack.ALLOWED_HOST
READS = stack.REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"


@pytest.fixture(scope="module")
def run(tmp_path_factory, images):
    import docker

    certs = stack.make_test_ca(tmp_path_factory.mktemp("test-ca"))
    up = stack.launcher("up", "--extra-ca", str(certs["ca"]))
    dc = docker.from_env()
    net = f"{up['run']}_outside"
    host_config = dc.api.create_host_config(binds={
        str(Path(certs["cert"]).parent): {"bind": "/certs", "mode": "ro"},
        str(stack.REPO): {"bind": "/repo", "mode": "ro"},
    })
    netcfg = dc.api.create_networking_config({net: dc.api.create_endpoint_config(aliases=[HOST])})
    created = dc.api.create_container(
        stack.SANDBOX_IMAGE, user="0", entrypoint=[], name=f"{up['run']}-ncbi",
        command=["python3", "/repo/tests/mock_ncbi.py", "--port", "443", "--rtoe", "1",
                 "--tls-cert", "/certs/server.pem", "--tls-key", "/certs/server.key"],
        host_config=host_config, networking_config=netcfg, labels={"org.biotool.test": "mock-ncbi"})
    mock = dc.containers.get(created["Id"])
    mock.start()
    deadline = time.monotonic() + 30
    while mock.status != "running" and time.monotonic() < deadline:
        time.sleep(0.2)
        mock.reload()
    time.sleep(1.0)
    up["mock"] = mock
    yield up
    mock.remove(force=True)
    stack.launcher("down", up["run"])


def mock_requests(mock) -> dict:
    """The mock's own record of every request (read from inside its container)."""
    code = ("import json, ssl, urllib.request; ctx = ssl._create_unverified_context();"
            "print(urllib.request.urlopen('https://127.0.0.1/_mock/requests', context=ctx).read().decode())")
    res = mock.exec_run(["python3", "-c", code])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


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

    # The proxy saw exactly one CONNECT per request, every one to NCBI's host:443, spliced.
    records = stack.audit(run)
    assert records, "the proxy logged nothing"
    assert all(r["method"] == "CONNECT" for r in records), records
    assert {(r["host"], r["port"], r["sni"], r["decision"]) for r in records} == {
        (HOST, 443, HOST, "allowed")}, records
    assert len(records) == len(seen["requests"]), (records, seen["requests"])
