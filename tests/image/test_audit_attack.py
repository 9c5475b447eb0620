"""The audit survives an agent that attacks it (issue 38 items 2 and 5, issue 36 item 8).

One run with the recording mock NCBI (biotool_testing/mock_ncbi.py) on its outside network.
From inside the sandbox, as the agent, 8 loops flood the egress for FLOOD_S seconds with
BLAST Puts, requests that name a new parameter each time (text the agent chooses), and
CONNECTs to a new host each time; the run's audit must then count exactly what was tried and
hold exactly the Puts the mock received. Then the egress is killed, and killed again until
its restart policy gives up: the audit is read from the store's volume all the same.
FLOOD_S is 60 s here (the issue's adversarial round floods for 10 minutes; docs/escape-matrix.md
gives the numbers of that run by hand).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from biotool_testing import certificates, polling, stack
from biotool_testing.contract import error_line
from biotool_testing.ran import Ran

HOST = stack.ALLOWED_HOST
URL = f"https://{HOST}/blast/Blast.cgi"
FLOOD_S = int(os.environ.get("BIOTOOL_AUDIT_FLOOD_S", "60"))


@pytest.fixture(scope="module")
def run(tmp_path_factory, images):
    certs = certificates.server_ca(tmp_path_factory.mktemp("test-ca"), HOST)
    up, mock = None, None
    try:
        up = stack.launcher("up", "--extra-ca", str(certs["ca"]))
        mock = stack.start_mock_ncbi([up], certs, f"{up['run']}-ncbi", "--rtoe", "1")
        yield {"up": up, "mock": mock}
    finally:
        if mock is not None:
            mock.remove(force=True)
        if up is not None:
            stack.launcher("down", up["run"], check=False)


def _put(i: int) -> str:
    """One BLAST Put as an agent's loop sends it (its title made unique by $n)."""
    # --max-time only ends a hung curl: a Put waits up to the gate's 30 s hold for its slot.
    return (f"curl -s -o /dev/null -w 'put %{{http_code}}\\n' --max-time 300 -X POST --data "
            f"\"CMD=Put&PROGRAM=blastn&DATABASE=nt&QUERY=%3Eq{i}_$n%0AACGTACGTACGTACGTACGT\" {URL}")


def _loop(i: int) -> str:
    """One of the agent's loops: each attempt prints one line, so the lines count attempts."""
    put = _put(i)
    param = (f"curl -s -o /dev/null -w 'param %{{http_code}}\\n' --max-time 120 "
             f"\"{URL}?CMD=Get&p{i}x$n=1\"")
    other = (f"curl -s -o /dev/null -w 'other %{{http_code}}\\n' --max-time 120 "
             f"https://h{i}x$n.example.org/")
    return (f"n=0; end=$((SECONDS+{FLOOD_S})); while [ $SECONDS -lt $end ]; do n=$((n+1)); "
            f"case $((n % 3)) in 0) {put};; 1) {param};; 2) {other};; esac; done")


def test_a_flood_from_8_loops_leaves_an_audit_of_exactly_what_happened(run):
    up, mock = run["up"], run["mock"]
    script = " & ".join(f"( {_loop(i)} )" for i in range(8)) + " & wait"
    flood = stack.launcher("exec", up["run"], "--timeout", str(FLOOD_S + 600), "--",
                           "bash", "-c", script, timeout=FLOOD_S + 720)
    lines = flood["stdout"].split("\n")
    tried = {kind: sum(1 for l in lines if l.startswith(kind + " ")) for kind in ("put", "param", "other")}
    puts_ok = sum(1 for l in lines if l == "put 200")
    # The store writes a flood's counts every 2 s: read it once it holds as many as were tried.
    audit = stack.audit_when(up, lambda a: sum(a["counts"][k] for k in ("allowed", "denied", "paced", "error"))
                             >= sum(tried.values()), "the audit to count every attempt")
    received = stack.mock_requests(mock)
    puts = [r for r in received["requests"] if r["what"] == "put"]
    allowed = [r for r in audit["records"] if r["decision"] == "allowed"]
    # Allowed is what reached NCBI: the same Puts, by their queries' digests, and nothing else.
    assert sorted(r["query_sha256"] for r in allowed) == sorted(r["query_sha256"] for r in puts)
    assert 0 < len(puts) == puts_ok and all(r["program"] == "blastn" and r["database"] == "nt"
                                        for r in allowed)
    assert received["violations"] == []
    # Every attempt is counted once, kept or counted: none lost, none invented.
    assert sum(audit["counts"][k] for k in ("allowed", "denied", "paced", "error")) == sum(tried.values())
    assert not audit["store"]["full"] and audit["unparsed_lines"] == 0
    assert audit["store"]["bytes"] < 4 << 20, audit["store"]
    squid = [r for r in audit["records"] if r["source"] == "proxy" and r["event"] == "suppressed"]
    # Each CONNECT named a host of its own: a counted flood names each one (listed once, up
    # to the store's budget, then the latest) and counts the rest, so none stands for others.
    assert squid and all(len(r["destinations"]["kept"]) + r["destinations"]["more"] == r["count"]
                         for r in squid), squid


def _gate_pids_killed(egress) -> int:
    kill = ("import os\nfor p in os.listdir('/proc'):\n if p.isdigit():\n  try:\n"
            "   c = open(f'/proc/{p}/cmdline', 'rb').read()\n  except OSError:\n   continue\n"
            "  if b'gatekeeper.py' in c:\n   os.kill(int(p), 9)\n")
    return egress.exec_run(["python3", "-c", kill], user="proxy").exit_code


def _readies(egress) -> int:
    return egress.logs(stdout=False, stderr=True).count(b"egress: ready")


def _wait(egress, until) -> dict:
    def state() -> dict:
        egress.reload()
        return egress.attrs["State"]
    return polling.until("the egress's state", state, until, every_s=0.2)


def test_the_audit_outlives_a_killed_egress_and_one_out_of_restarts(run):
    up = run["up"]
    # A Put of its own, so the test stands without the flood before it (after the flood it
    # may be paced: the flood's allowed Puts are then what the audit must keep).
    def attempts(a: dict) -> int:
        return sum(a["counts"][k] for k in ("allowed", "denied", "paced", "error"))
    pre = stack.launcher("audit", up["run"])
    stack.launcher("exec", up["run"], "--", "bash", "-c", f"n=0; {_put(0)}")
    # Its record is written as it ends (or counted, and flushed within 2 s, if paced).
    before = stack.audit_when(up, lambda a: attempts(a) > attempts(pre), "the Put on record")
    egress = stack.container(up["containers"]["egress"])
    egress.kill()
    _wait(egress, lambda s: not s["Running"])
    killed = stack.launcher("audit", up["run"])
    assert killed["egress"]["running"] is False and killed["store"]["read"]
    assert killed["counts"]["allowed"] == before["counts"]["allowed"] > 0
    # Started again, then its gate killed (as an OOM kill would) until on-failure:5 gives up:
    # each kill waits for the gate that came back ("egress: ready" once more).
    ready = _readies(egress)
    egress.start()
    while True:
        state = _wait(egress, lambda s: s["Status"] == "exited" or _readies(egress) > ready)
        if state["Status"] == "exited":
            break
        ready = _readies(egress)
        # The killer may die with the container its kill brings down (137), or finish first.
        assert _gate_pids_killed(egress) in (0, 137)
    assert state["ExitCode"] != 0
    dead = stack.launcher("audit", up["run"])
    assert dead["egress"]["running"] is False and dead["egress"]["restarts"] >= 5
    assert dead["counts"]["allowed"] == before["counts"]["allowed"]
    assert dead["egress"]["gate_restarts"] >= 5


def test_every_launcher_command_on_an_unknown_run_is_one_line_exit_2(tmp_path):
    import subprocess
    import sys

    run = "bts-0badc0de"
    for argv in (["audit", run], ["down", run], ["exec", run, "--", "true"],
                 ["cp", f"{run}:/work/x", str(tmp_path / "x")],
                 ["cp", __file__, f"{run}:/work/"]):
        proc = subprocess.run([sys.executable, "-m", "biotool_sandbox", *argv],
                              capture_output=True, text=True, cwd=stack.REPO, timeout=60)
        error_line(Ran(proc.returncode, proc.stdout, proc.stderr), f"unknown run {run}",
                   prog="biotool-sandbox", alone=True)


GO = "/tmp/biotool-test-go"
# The episode's line waits for the test's word (GO, written once `during` is done), so what is
# done to the run happens while the line runs on any host, not within a sleep's margin.
AFTER_GO = f"until [ -e {GO} ]; do sleep 0.2; done; echo done"


def _enforced_episode(tmp_path, during) -> tuple[subprocess.CompletedProcess, Path]:
    """hpc/run-enforced.sh with AFTER_GO as its line; `during(run_id, egress)` is done to the
    run while the line waits (the run found by the egress the episode brought up)."""
    import docker

    episode, work = tmp_path / "episode", tmp_path / "work"
    episode.mkdir()
    work.mkdir()
    launcher = shutil.which("biotool-sandbox")
    if launcher is None:  # the console script's equivalent where the project is not installed
        launcher = tmp_path / "biotool-sandbox"
        launcher.write_text(f"#!/bin/sh\nexec {sys.executable} -m biotool_sandbox \"$@\"\n")
        launcher.chmod(0o755)
    env = {**os.environ, "BIOTOOL_IMAGE": stack.SANDBOX_IMAGE, "BIOTOOL_EGRESS_IMAGE": stack.EGRESS_IMAGE,
           "BIOTOOL_SANDBOX": str(launcher), "BIOTOOL_EPISODE_DIR": str(episode),
           "BIOTOOL_EPISODE_TIMEOUT": "900"}
    before = set(stack.launcher("ps")["runs"])
    proc = subprocess.Popen([str(stack.REPO / "hpc" / "run-enforced.sh"), str(work), AFTER_GO],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=stack.REPO)
    dc = docker.from_env()

    def service(run: str, name: str) -> list:
        return dc.containers.list(ignore_removed=True, filters={"label": [f"com.docker.compose.project={run}",
                                                     f"com.docker.compose.service={name}"]})

    def ready_egress() -> list:
        assert proc.poll() is None, proc.communicate()
        return [c for r in sorted(set(stack.launcher("ps")["runs"]) - before)
                for c in service(r, "egress") if b"egress: ready" in c.logs(stdout=False, stderr=True)]
    try:
        egress = polling.until("the episode's egress to be ready", ready_egress, every_s=0.5)
        run_id = egress[0].labels["com.docker.compose.project"]
        during(run_id, egress[0])
        [sandbox] = service(run_id, "sandbox")
        assert sandbox.exec_run(["touch", GO]).exit_code == 0
        out, err = proc.communicate(timeout=900)
    finally:
        # A failure above must not leave the episode waiting with its run up (8.5g reserved
        # against the next tests' `up`): its TERM trap brings the run down.
        if proc.poll() is None:
            proc.terminate()
            proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), episode


def test_run_enforced_with_a_dead_egress_keeps_a_real_audit(tmp_path, images):
    def kill(run_id, egress):
        stack.launcher("exec", run_id, "--", "python3", "-c", stack.PROBE, "connect",
                       "example.net:443")
        # Killed once the store holds the attempt, which the audit must then still show.
        stack.wait_for_record({"run": run_id}, lambda r: r["host"] == "example.net")
        egress.kill()

    ran, episode = _enforced_episode(tmp_path, kill)
    assert ran.returncode == 0 and ran.stdout == "done\n", ran.stderr
    audit = json.loads((episode / "audit.json").read_text())
    assert audit["egress"]["running"] is False and audit["store"]["read"]
    assert any(r["host"] == "example.net" for r in audit["records"]), audit["records"]


def test_run_enforced_fails_loudly_when_no_audit_can_be_read(tmp_path, images):
    import docker

    kept = {}

    def unreadable(run_id, egress):
        # The store made unreadable to its reader (as a corrupted volume would be), then the
        # egress killed: neither exec nor the volume can give the audit.
        volume = next(m["Name"] for m in egress.attrs["Mounts"]
                      if m["Destination"] == "/var/lib/biotool-egress-run")
        docker.from_env().containers.run(egress.attrs["Image"], entrypoint=["chmod", "000",
                                          "/s/audit.jsonl"], user="0", network_mode="none",
                                          volumes={volume: {"bind": "/s", "mode": "rw"}},
                                          remove=True)
        egress.kill()
        kept.update(run=run_id, volume=volume)

    ran, episode = _enforced_episode(tmp_path, unreadable)
    try:
        assert ran.returncode == 4 and ran.stdout == "done\n", ran.stderr
        assert not (episode / "audit.json").exists() and not list(episode.iterdir())
        assert f"the egress audit of {kept['run']} could not be read" in ran.stderr
        docker.from_env().volumes.get(kept["volume"])  # the store is kept, not deleted
        again = stack.launcher("audit", kept["run"], check=False)
        assert again["_code"] == 4 and "cannot be read" in again["_stderr"]
    finally:
        gone = stack.launcher("down", kept["run"], check=False)
    assert gone["_code"] == 0 and gone["left"]["volumes"] == 0
