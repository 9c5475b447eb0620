"""One NCBI authority for a site: two runs' gates, one relay, the mock NCBI behind it (issue 24).

Each run is its own compose stack on its own networks (standing for two hosts), started with
`--relay https://ncbi-relay:8443` and its own client certificate from a throw-away site CA. The
relay (the egress image in relay mode) joins both runs' outside networks as `ncbi-relay` and a
third network that only it and the mock NCBI (biotool_testing/mock_ncbi.py, TLS as
blast.ncbi.nlm.nih.gov) share, so the runs' egress cannot reach the mock but through the relay.
The mock serves NCBI's name, so NCBI's real intervals apply (10 s between requests): two small
remote taxonomies take about a minute together.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading

import pytest

from biotool_testing import certificates, polling, stack
from biotool_testing.ncbi_relay import RELAY_NAME, RELAY_PORT, relay_records, start_relay
from biotool_testing.images import EGRESS_IMAGE

HOST = stack.ALLOWED_HOST
URL = f"https://{HOST}/blast/Blast.cgi"
READS = stack.REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"
# Wide: NCBI's intervals take about a minute; the rest is this host's, ten times slower or not.
TAXONOMY_TIMEOUT = 600
PUT = (f"curl -s -w ' HTTP=%{{http_code}}\\n' --max-time 90 -X POST --data "
       f"'CMD=Put&PROGRAM=blastn&DATABASE=nt&QUERY=%3Eq%0AACGTACGTACGTACGTACGTACGT' {URL}")


@pytest.fixture(scope="module")
def site(tmp_path_factory, images):
    import docker

    dc = docker.from_env()
    certs = certificates.server_ca(tmp_path_factory.mktemp("test-ca"), stack.ALLOWED_HOST)
    tls = certificates.relay_site(tmp_path_factory.mktemp("site-ca"), RELAY_NAME,
                                  gates=("gate-a", "gate-b", "gate-hpc"))
    runs, made = [], []
    net = None
    try:
        for gate in ("gate-a", "gate-b"):
            runs.append(stack.launcher("up", "--extra-ca", str(certs["ca"]), "--relay",
                                       f"https://{RELAY_NAME}:{RELAY_PORT}", "--relay-tls",
                                       str(tls[gate])))
        # NCBI's side: a network only the relay and the mock join.
        net = dc.networks.create(f"{runs[0]['run']}-ncbi", driver="bridge", internal=True,
                                 labels={"org.biotool.test": "ncbi-relay"})
        mock = stack.start_mock_ncbi([], certs, f"{runs[0]['run']}-ncbi", "--rtoe", "1",
                                     nets=[net.name])
        made.append(mock)
        relay = start_relay(dc, f"{runs[0]['run']}-relay", tls["relay"], certs["ca"],
                            [net.name, *(f"{r['run']}_outside" for r in runs)])
        made.append(relay)
        yield {"a": runs[0], "b": runs[1], "mock": mock, "relay": relay, "tls": tls}
    finally:
        for c in made:
            c.remove(force=True)
        if runs:
            try:
                dc.volumes.get(f"{runs[0]['run']}-relay-state").remove()
            except docker.errors.NotFound:
                pass
        for r in runs:
            stack.launcher("down", r["run"])
        if net is not None:
            net.remove()


def sh(run: dict, script: str, timeout: float = 120) -> dict:
    return stack.launcher("exec", run["run"], "--timeout", str(timeout), "--", "bash", "-c",
                          script, timeout=timeout + 60)


def test_the_runs_egress_reaches_ncbi_only_through_the_relay(site):
    code = ("import socket\ntry:\n    socket.create_connection(('%s', 443), timeout=5)\n"
            "    print('reached')\nexcept OSError as exc:\n    print('refused', exc)\n" % HOST)
    for key in ("a", "b"):
        egress = stack.container(site[key]["containers"]["egress"])
        out = egress.exec_run(["python3", "-c", code], user="proxy").output.decode()
        assert out.startswith("refused"), (key, out)
        env = egress.attrs["Config"]["Env"]
        assert f"BIOTOOL_NCBI_RELAY=https://{RELAY_NAME}:{RELAY_PORT}" in env, env


def test_two_runs_taxonomy_through_one_relay_keeps_ncbi_s_interval(site):
    results: dict = {}

    def taxonomy(key: str) -> None:
        run = site[key]
        stack.launcher("cp", str(READS), f"{run['run']}:/work/reads.fastq")
        results[key] = stack.launcher(
            "exec", run["run"], "--timeout", str(TAXONOMY_TIMEOUT + 60), "--", "biotool",
            "taxonomy", "--fastq", "/work/reads.fastq", "--sample", "3", "--remote",
            "--timeout", str(TAXONOMY_TIMEOUT), "--email", "ci@example.org",
            timeout=TAXONOMY_TIMEOUT + 120)

    threads = [threading.Thread(target=taxonomy, args=(k,)) for k in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TAXONOMY_TIMEOUT + 180)
    for key in ("a", "b"):
        res = results[key]
        assert res["exit_code"] == 0, res  # finished within its --timeout (else exit 4)
        out = json.loads(res["stdout"])
        assert "coronavirus 2" in (out["summary"]["dominant"] or "").lower(), out["summary"]
    seen = stack.mock_requests(site["mock"])
    assert seen["violations"] == [], seen["violations"]  # 10 s apart, both runs together
    # Every request the mock saw is one a run's gate allowed and sent through the relay (each
    # record written as its request ends, maybe after the client has its answer: read once
    # there are as many as the mock saw).
    allowed = polling.until(
        "the gates' record of every request the mock got",
        lambda: [r for key in ("a", "b") for r in stack.audit(site[key])
                 if r["event"] == "request" and r["decision"] == "allowed"],
        lambda recs: len(recs) >= len(seen["requests"]))
    assert len(allowed) == len(seen["requests"]) >= 6, (allowed, seen["requests"])
    assert {r["relay"] for r in allowed} == {f"{RELAY_NAME}:{RELAY_PORT}"}
    assert {r["what"] for r in allowed} >= {"put", "poll", "fetch"}
    sent = polling.until("the relay's record of every request the mock got",
                         lambda: [r for r in relay_records(site["relay"]) if r["decision"] == "allowed"],
                         lambda recs: len(recs) >= len(seen["requests"]))
    assert len(sent) == len(seen["requests"]) and {r["client"] for r in sent} == \
        {"gate-a", "gate-b"}


def test_run_b_cannot_poll_run_a_s_rid(site):
    a, b, mock = site["a"], site["b"], site["mock"]
    put = sh(a, PUT)
    m = re.search(r"RID = (\w+)", put["stdout"])
    assert m, put
    rid = m.group(1)
    before = len(stack.mock_requests(mock)["requests"])
    steal = sh(b, "; ".join(
        f"curl -s -w ' HTTP=%{{http_code}}\\n' --max-time 120 '{URL}?{q}'" for q in (
            f"CMD=Get&FORMAT_OBJECT=SearchInfo&RID={rid}",
            f"CMD=Get&FORMAT_TYPE=JSON2_S&RID={rid}")))
    assert re.findall(r"HTTP=(\d+)", steal["stdout"]) == ["403", "403"], steal
    assert "not created by this run" in steal["stdout"]  # B's own gate said so
    assert len(stack.mock_requests(mock)["requests"]) == before


def test_an_hpc_episode_on_the_enforced_runtime_reaches_ncbi_through_the_relay(site, tmp_path):
    """hpc/run-enforced.sh, the Slurm template's runtime for remote BLAST: an episode is its own
    enforced run, whose gate sends only to the site relay; its output and audit are kept."""
    import docker

    dc = docker.from_env()
    runs_before = set(stack.launcher("ps")["runs"])
    # The site's route to the relay: a network the relay joins as RELAY_NAME, and the episode
    # run's egress as soon as it exists; the line waits for ROUTED (written in its sandbox once
    # the route is joined), so its first Put never races the join.
    route = dc.networks.create(f"{site['a']['run']}-hpc-route", driver="bridge", internal=True,
                               labels={"org.biotool.test": "ncbi-relay"})
    route.connect(site["relay"], aliases=[RELAY_NAME])
    stop, joined, told = threading.Event(), set(), set()
    routed = "/tmp/biotool-test-routed"

    def join_egress() -> None:
        while not stop.is_set():
            for c in dc.containers.list(ignore_removed=True, filters={"label": "com.docker.compose.service=egress"}):
                run = c.labels.get("com.docker.compose.project")
                relayed = any(e.startswith("BIOTOOL_NCBI_RELAY=") for e in c.attrs["Config"]["Env"])
                if relayed and run not in runs_before | joined:
                    joined.add(run)
                    route.connect(c)
            for run in joined - told:
                for c in dc.containers.list(ignore_removed=True, filters={"label": [
                        f"com.docker.compose.project={run}", "com.docker.compose.service=sandbox"]}):
                    if c.exec_run(["touch", routed]).exit_code == 0:
                        told.add(run)
            stop.wait(0.2)

    work, episode = tmp_path / "work", tmp_path / "episode"
    work.mkdir()
    episode.mkdir()
    line = (f"until [ -e {routed} ]; do sleep 0.2; done; "
            "biotool taxonomy --fastq /opt/biotool/samples/demo-sarscov2-artic-reads/"
            f"MT007544.fastq --sample 3 --remote --timeout {TAXONOMY_TIMEOUT} --email ci@example.org")
    env = {**os.environ, "BIOTOOL_IMAGE": stack.SANDBOX_IMAGE, "BIOTOOL_EGRESS_IMAGE": EGRESS_IMAGE,
           "BIOTOOL_NCBI_RELAY": f"https://{RELAY_NAME}:{RELAY_PORT}",
           "BIOTOOL_NCBI_RELAY_TLS": str(site["tls"]["gate-hpc"]),
           "BIOTOOL_EPISODE_DIR": str(episode), "BIOTOOL_EPISODE_TIMEOUT": str(TAXONOMY_TIMEOUT + 180),
           # A third run's limits beside the fixture's two pass a 24 GB host's budget (0.9);
           # they are ceilings, and these runs use a fraction of them.
           "BIOTOOL_HOST_MEMORY_SHARE": os.environ.get("BIOTOOL_HOST_MEMORY_SHARE", "1.5")}
    router = threading.Thread(target=join_egress, daemon=True)
    router.start()
    try:
        ran = subprocess.run([str(stack.REPO / "hpc" / "run-enforced.sh"), str(work), line], env=env,
                             capture_output=True, text=True, timeout=TAXONOMY_TIMEOUT + 240)
    finally:
        stop.set()
        router.join(120)
        route.disconnect(site["relay"])
        route.remove()
    assert ran.returncode == 0, ran.stderr[-2000:]
    out = json.loads(ran.stdout)
    assert "coronavirus 2" in (out["summary"]["dominant"] or "").lower(), out["summary"]
    audit = json.loads((episode / "audit.json").read_text())
    allowed = [r for r in audit["records"] if r["event"] == "request" and r["decision"] == "allowed"]
    assert allowed and {r["relay"] for r in allowed} == {f"{RELAY_NAME}:{RELAY_PORT}"}, allowed
    polling.until("the relay's record of the episode's requests", lambda: relay_records(site["relay"]),
                  lambda recs: "gate-hpc" in {r["client"] for r in recs if r["decision"] == "allowed"})
    assert stack.mock_requests(site["mock"])["violations"] == []
    assert joined and "run-enforced:" not in ran.stderr  # brought down
    assert not joined & set(stack.launcher("ps")["runs"])


GATE_SENDS = r'''
import sys
sys.path.insert(0, "/usr/local/lib/egress")
import upstream
ctx = upstream.relay_client_context("/etc/biotool/relay")
head = "CMD=Put&PROGRAM=blastn&DATABASE=nt&QUERY="
form = head + "A%0A" * (((8 << 20) - len(head)) // 4)
for _ in range(6):
    reply = upstream.send("RELAY", PORT, ctx, "POST", "/Blast.cgi", form)
    print(reply.status, reply.data.decode()[:120].strip(), flush=True)
'''


def test_the_relay_bounds_what_one_gate_sends(site):
    """Issue 38: a gate (its certificate, from inside run A's egress) sends the relay six
    8 MB Puts of one-letter lines, the shape that took 516 MB to parse: each is refused
    (403) by the bounded parse, the relay stays up (never restarted or OOM-killed), and
    nothing reaches the mock."""
    relay, mock = site["relay"], site["mock"]
    before = len(stack.mock_requests(mock)["requests"])
    egress = stack.container(site["a"]["containers"]["egress"])
    res = egress.exec_run(["python3", "-c", GATE_SENDS.replace("RELAY", RELAY_NAME).replace(
        "PORT", str(RELAY_PORT))], user="proxy")
    lines = res.output.decode().strip().splitlines()
    assert res.exit_code == 0 and len(lines) == 6, res.output.decode()[-2000:]
    assert all(line.startswith("403 ") and "more than 250000 lines" in line for line in lines)
    relay.reload()
    assert relay.attrs["State"]["Running"] and not relay.attrs["State"]["OOMKilled"]
    assert relay.attrs["RestartCount"] == 0
    assert len(stack.mock_requests(mock)["requests"]) == before


def test_the_interval_holds_across_a_relay_restart(site):
    """Issue 38: the relay's schedule is on its volume (and an empty one counts as a contact
    at start), so a Put right after a restart still reaches the mock an interval after the
    one before it."""
    a, mock, relay = site["a"], site["mock"], site["relay"]
    assert "HTTP=200" in sh(a, PUT)["stdout"]
    relay.restart(timeout=5)
    polling.until("the restarted relay's ready line", relay.logs,
                  lambda logs: logs.count(b"egress relay: ready") >= 2)
    assert "HTTP=200" in sh(a, PUT)["stdout"]
    seen = stack.mock_requests(mock)
    assert seen["violations"] == [], seen["violations"]
    t = [r["t"] for r in seen["requests"]]
    assert t[-1] - t[-2] >= 10.0, t[-2:]


def test_a_relay_outage_fails_closed_with_a_record(site):
    a, mock, relay = site["a"], site["mock"], site["relay"]
    before = len(stack.mock_requests(mock)["requests"])
    relay.stop(timeout=2)
    res = sh(a, PUT)
    assert re.findall(r"HTTP=(\d+)", res["stdout"]) in (["502"], ["503"]), res
    rec = stack.wait_for_record(a, lambda r: r["event"] == "request" and
                                r["http_status"] in (502, 503) and "relay" in (r["reason"] or ""))
    assert rec["decision"] == "denied" and rec["relay"] == f"{RELAY_NAME}:{RELAY_PORT}", rec
    assert len(stack.mock_requests(mock)["requests"]) == before  # nothing reached NCBI
