"""Remote BLAST from an Apptainer episode through the site's relay (docs/hpc.md): the documented
runtime, hpc/run-apptainer.sh with BIOTOOL_NCBI_RELAY set, on the tier's node as its user. The
episode and its own gate (the egress SIF) each run under --net --network none; the relay and the
mock NCBI (TLS as blast.ncbi.nlm.nih.gov, NCBI's real intervals) are docker containers, the relay
on a network the node joins (the site's network) and the mock on one only the relay joins.
"""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from biotool_testing import certificates, hpc_node, polling, stack
from biotool_testing.images import EGRESS_IMAGE
from biotool_testing.ncbi_relay import RELAY_NAME, RELAY_PORT, relay_records, start_relay
from biotool_testing.paths import REPO

RUNTIME = REPO / "hpc" / "run-apptainer.sh"
READS = "/opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq"
# Wide: NCBI's intervals take about 25 s for a Put, a poll and a fetch; the rest is this host's.
TAXONOMY_TIMEOUT = 600
# After the taxonomy, as an agent would: kill every socketpipe the episode runs (its way to the
# gate), then try the proxy again, the relay's name and the socket folder the gate holds.
AFTER = r"""
for p in /proc/[0-9]*; do
    [ "$(cat $p/comm 2>/dev/null)" = python3 ] && grep -qa socketpipe $p/cmdline && kill ${p#/proc/}
done
sleep 0.5
curl -sS -o /dev/null --max-time 10 https://blast.ncbi.nlm.nih.gov/Blast.cgi 2>/dev/null; echo "curl $?" > /work/after
python3 - >> /work/after <<'PY'
import os, socket
try:
    socket.getaddrinfo("ncbi-relay", 8443)
    print("relay name resolves")
except OSError:
    print("relay name does not resolve")
try:
    socket.create_connection((os.environ["RELAY_IP"], 8443), timeout=5)
    print("relay reached")
except OSError as exc:
    print("relay unreachable", exc.errno)
print("relay socket", os.path.exists("/run/biotool-relay"))
PY
"""


@pytest.fixture(scope="module")
def relay(node, tmp_path_factory):
    """The relay and the mock NCBI, the relay on a network the node joins; the gate's client
    certificate in the node's results folder, owned by its user."""
    import docker

    current, why = hpc_node.sif_is_current(EGRESS_IMAGE, hpc_node.EGRESS_SIF, make="egress-sif")
    if not current:
        pytest.fail(why, pytrace=False)
    dc = docker.from_env()
    certs = certificates.server_ca(tmp_path_factory.mktemp("test-ca"), stack.ALLOWED_HOST)
    tls = certificates.relay_site(node.results / "site-ca", RELAY_NAME, gates=("gate-hpc",))
    subprocess.run(["chown", "-R", f"{node.uid}:{node.uid}", str(node.results / "site-ca")], check=True)
    label = {"org.biotool.test": "ncbi-relay"}
    made, ncbi = [], None
    # The site's network stays joined until the node goes (hpc_node.stop removes it): docker's
    # disconnect would drop the node's own name from its /etc/hosts, which Slurm resolves.
    site = dc.networks.create(f"{node.name}-site", driver="bridge", internal=True,
                              labels={**label, hpc_node.LABEL: node.name})
    site.connect(node.name)
    try:
        ncbi = dc.networks.create(f"{node.name}-ncbi", driver="bridge", internal=True, labels=label)
        made.append(stack.start_mock_ncbi([], certs, f"{node.name}-mock", "--rtoe", "1",
                                          nets=[ncbi.name]))
        made.append(start_relay(dc, f"{node.name}-relay", tls["relay"], certs["ca"],
                                [ncbi.name, site.name]))
        made[1].reload()
        address = made[1].attrs["NetworkSettings"]["Networks"][site.name]["IPAddress"]
        yield {"mock": made[0], "relay": made[1], "tls": tls["gate-hpc"], "address": address}
    finally:
        for c in made:
            c.remove(force=True)
        if len(made) > 1:
            dc.volumes.get(f"{node.name}-relay-state").remove()
        if ncbi is not None:
            ncbi.remove()


def episode(node, relay: dict, name: str, line: str, **env: str):
    """hpc/run-apptainer.sh WORKDIR LINE on the node, as the Slurm template runs it; the
    episode's results folder (BIOTOOL_EPISODE_DIR) holds its audit."""
    base = node.results / name
    node.sh(f"mkdir -p {base}/work {base}/tmp {base}/out")
    settings = {"BIOTOOL_SIF": hpc_node.NODE_SIF, "BIOTOOL_EGRESS_SIF": hpc_node.NODE_EGRESS_SIF,
                "BIOTOOL_NCBI_RELAY": f"https://{RELAY_NAME}:{RELAY_PORT}",
                "BIOTOOL_NCBI_RELAY_TLS": str(relay["tls"]), "BIOTOOL_EPISODE_DIR": f"{base}/out",
                "BIOTOOL_EPISODE_TMP": f"{base}/tmp", **env}
    ran = node.sh(f"{RUNTIME} {base}/work {shlex.quote(line)}", env=settings,
                  timeout=TAXONOMY_TIMEOUT + 120)
    return ran, base


def test_an_apptainer_episode_reaches_ncbi_only_through_its_own_gate_and_the_relay(node, relay):
    # Every command under BIOTOOL_REQUIRE_ENFORCED=1: the episode's shape must pass it.
    line = (f"export RELAY_IP={relay['address']} BIOTOOL_REQUIRE_ENFORCED=1; "
            "biotool doctor --no-sha > /work/doctor.json; "
            f"biotool taxonomy --fastq {READS} --sample 3 --remote --timeout {TAXONOMY_TIMEOUT} "
            f"--email ci@example.org; rc=$?\n{AFTER}exit $rc\n")
    ran, base = episode(node, relay, "remote", line)
    assert ran.code == 0, ran.stderr[-3000:]
    out = json.loads(ran.stdout)
    assert "coronavirus 2" in (out["summary"]["dominant"] or "").lower(), out["summary"]
    # doctor in the episode: only lo, and the proxy on it (the pipe to the gate) answers.
    doctor = json.loads((base / "work" / "doctor.json").read_text())
    egress = next(c for c in doctor["checks"] if c["check"] == "egress")
    assert egress["ok"] and egress["detail"].startswith("enforced: only lo, and the egress proxy"), egress
    # The episode's gate recorded every request it let out, each sent to the relay only.
    audit = json.loads((base / "out" / "audit.json").read_text())
    allowed = [r for r in audit["records"] if r["event"] == "request" and r["decision"] == "allowed"]
    assert {r["what"] for r in allowed} == {"put", "poll", "fetch"}, allowed
    assert {r["relay"] for r in allowed} == {f"{RELAY_NAME}:{RELAY_PORT}"}, allowed
    # The relay's log holds the same requests under the gate's certificate and the episode's run.
    sent = polling.until("the relay's record of the episode's requests",
                         lambda: [r for r in relay_records(relay["relay"]) if r["decision"] == "allowed"],
                         lambda recs: len(recs) >= len(allowed))
    assert {(r["client"], r["run"]) for r in sent} == {("gate-hpc", audit["run"])}, sent
    assert sorted(r["what"] for r in sent) == sorted(r["what"] for r in allowed)
    seen = stack.mock_requests(relay["mock"])
    assert len(seen["requests"]) == len(allowed) and seen["violations"] == [], seen
    # With its pipe killed the episode reaches nothing: not the proxy, not the relay.
    after = (base / "work" / "after").read_text().splitlines()
    assert after[0] in ("curl 5", "curl 7"), after  # the proxy's address: nothing listens
    assert after[1:] == ["relay name does not resolve", "relay unreachable 101",
                         "relay socket False"], after
    assert not list((base / "tmp").glob("biotool-gate.*"))  # the gate's folder is gone


def test_without_its_gate_an_episode_reaches_nothing_and_doctor_says_so(node, relay):
    # The offline runtime (no relay set) with the proxy's variables: nothing answers on lo.
    ran = node.apptainer("biotool doctor --no-sha",
                         env={"HTTPS_PROXY": "http://127.0.0.1:3128"})
    egress = next(c for c in ran.json["checks"] if c["check"] == "egress")
    assert ran.code == 4 and not egress["ok"] and "unreachable" in egress["detail"], egress


@pytest.mark.parametrize("setting, value, culprit", [
    ("BIOTOOL_NCBI_RELAY_TLS", "/nonexistent", "BIOTOOL_NCBI_RELAY_TLS (/nonexistent) has no readable site-ca.pem"),
    ("BIOTOOL_EGRESS_SIF", "/nonexistent.sif", "BIOTOOL_EGRESS_SIF (/nonexistent.sif) is not a file"),
    ("BIOTOOL_NCBI_RELAY", "http://ncbi-relay", "BIOTOOL_NCBI_RELAY=http://ncbi-relay is not https://HOST[:PORT]"),
])
def test_a_gate_that_cannot_be_set_up_is_one_line_and_exit_2(node, relay, setting, value, culprit):
    ran, base = episode(node, relay, f"bad-{setting.lower()}", "touch /work/ran", **{setting: value})
    lines = ran.stderr.strip().splitlines()
    assert ran.code == 2 and len(lines) == 1 and lines[0].startswith(f"run-apptainer: {culprit}"), ran
    assert not (base / "work" / "ran").exists()
