"""A Harbor task answered through NCBI BLAST is graded on the search the audit shows
(harbor_audit.check_search), and an audit holding records the run could not have written
scores 0 (harbor_audit.impossible): issue 48, items 1 and 6.

The audit stores here are written by the real gate (image/egress/) relaying to the mock NCBI
(biotool_testing/mock_ncbi.py) over TLS into a real bounded store, as test_gate.py runs it;
the honest search is biotool's own BLAST client on 10 reads of the staged sample.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

from biotool_testing import certificates, mock_ncbi, scripts

REPO = Path(__file__).resolve().parents[3]
HOST = "blast.ncbi.nlm.nih.gov"
EGRESS = REPO / "image" / "egress"
READS = REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"
TASK_KEY = REPO / "harbor" / "tasks" / "reads-organism-blast" / "key.json"
ORGANISM = {"organism": "Severe acute respiratory syndrome coronavirus 2"}
INTERVAL, POLL = 0.3, 1.0
CLIENT = "10.0.0.5"

audit = scripts.module(EGRESS / "audit.py")
gate_mod = scripts.module(EGRESS / "gate.py")
tunnel = scripts.module(EGRESS / "tunnel.py")
auditstore = scripts.module(EGRESS / "auditstore.py")


def _reads(n: int) -> list[tuple[str, str]]:
    lines = READS.read_text().splitlines()
    return [(lines[i][1:].split()[0], lines[i + 1]) for i in range(0, 4 * n, 4)]


@pytest.fixture(scope="module")
def cas(tmp_path_factory):
    base = tmp_path_factory.mktemp("cas")
    return {"run": certificates.server_ca(base / "run", HOST, ca_name="run CA"),
            "up": certificates.server_ca(base / "up", HOST, ca_name="upstream CA")}


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    """The task's own key, beside the truth a draw of READS would write (truth.json: the
    organism and its reads' sequences), which grade() passes as --truth."""
    from biotool_sandbox.harbor_grade import SEARCH_READS

    path = tmp_path_factory.mktemp("key") / "key.json"
    path.write_bytes(TASK_KEY.read_bytes())
    lines = READS.read_text().splitlines()
    (path.parent / "truth.json").write_text(json.dumps({"values": {
        **ORGANISM, SEARCH_READS: lines[1::4]}}))
    return path


class Egress:
    """One run's gate on loopback with its bounded store (holding Squid's records too, as the
    image's does), relaying to a mock NCBI of its own."""

    def __init__(self, cas, tmp: Path, hold_s: float = 20.0):
        self.mock = mock_ncbi.MockNCBI("ok", rtoe=0, min_interval=INTERVAL - 0.05,
                                       poll_interval=POLL - 0.05)
        port = self.mock.serve(0, "127.0.0.1", cas["up"]["cert"], cas["up"]["key"])
        (tmp / "schedule").mkdir()
        self.store = auditstore.Store(str(tmp / "audit.jsonl"), holds=("gate", "proxy"))
        self.gate = gate_mod.Gate([(HOST, 443)], cas["run"]["cert"], cas["run"]["key"],
                                  str(tmp / "schedule"), cas["up"]["ca"],
                                  min_interval=INTERVAL, poll_interval=POLL, hold_s=hold_s,
                                  upstream_address=("127.0.0.1", port),
                                  run_state=str(tmp / "state"),
                                  records=audit.Records(audit.GATE, self.store))
        self.server = tunnel.GateServer(("127.0.0.1", 0), self.gate)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.port = self.server.server_address[1]
        self.ctx = ssl.create_default_context(cafile=cas["run"]["ca"])

    def https(self, method: str, path: str, body: bytes = b""):
        import http.client

        sock = socket.create_connection(("127.0.0.1", self.port), timeout=20)
        sock.sendall(f"CONNECT {HOST}:443 HTTP/1.1\r\nHost: {HOST}:443\r\n"
                     f"X-Forwarded-For: {CLIENT}\r\n\r\n".encode())
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        conn = http.client.HTTPSConnection(HOST, 443, context=self.ctx, timeout=30)
        conn.sock = self.ctx.wrap_socket(sock, server_hostname=HOST)
        hdrs = {"Content-Type": "application/x-www-form-urlencoded"} if method == "POST" else {}
        conn.request(method, path, body=body or None, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read().decode("utf-8", "replace")
        conn.close()
        return resp.status, data

    def put(self, records: list[tuple[str, str]]) -> str:
        query = "".join(f">{i}\n{s}\n" for i, s in records)
        body = urlencode({"CMD": "Put", "PROGRAM": "blastn", "DATABASE": "nt",
                          "QUERY": query}).encode()
        status, text = self.https("POST", "/blast/Blast.cgi", body)
        assert status == 200, text
        return text.split("RID = ")[1].split()[0]

    def poll(self, rid: str) -> None:
        time.sleep(POLL)  # one poll per RID per POLL s
        assert self.https("GET", f"/blast/Blast.cgi?CMD=Get&FORMAT_OBJECT=SearchInfo"
                                 f"&RID={rid}")[0] == 200

    def fetch(self, rid: str) -> None:
        assert self.https("GET", f"/blast/Blast.cgi?CMD=Get&FORMAT_TYPE=JSON2_S"
                                 f"&RID={rid}")[0] == 200

    def text(self, requests: int) -> str:
        """The store once it holds `requests` outcomes and every tunnel's close (the gate
        records a request just after answering it)."""
        from biotool_sandbox import audit as host_audit

        deadline = time.monotonic() + 30
        while True:
            self.store.flush()
            text = Path(self.store.path).read_text()
            rep = host_audit.report(None, None, text, {})
            done = sum(r["event"] == "request" for r in rep["records"]) >= requests \
                and not rep["open_tunnels"]
            if done or time.monotonic() > deadline:
                return text
            time.sleep(0.05)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.mock.close()


@pytest.fixture()
def egress(cas, tmp_path):
    e = Egress(cas, tmp_path)
    yield e
    e.close()


@pytest.fixture(scope="module")
def honest(cas, tmp_path_factory):
    """biotool's own BLAST client searching 10 of the staged reads through the gate."""
    from biotool.deadline import Deadline
    from biotool.taxonomy.ncbi import BlastClient, Settings
    from biotool.taxonomy.pacing import Pacer

    tmp = tmp_path_factory.mktemp("honest")
    e = Egress(cas, tmp)
    saved = {k: os.environ.get(k) for k in ("HTTPS_PROXY", "SSL_CERT_FILE")}
    os.environ.update(HTTPS_PROXY=f"http://127.0.0.1:{e.port}", SSL_CERT_FILE=cas["run"]["ca"])
    try:
        client = BlastClient(Settings(min_interval=INTERVAL, poll_interval=POLL),
                             Pacer(tmp / "pacing", INTERVAL, POLL))
        out = client.search(_reads(10), top=3, budget=Deadline.from_now(60))
        assert len(out.searched) == 10, out
        return e.text(requests=3)
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        e.close()


@pytest.fixture(scope="module")
def scripted(cas, tmp_path_factory):
    """A search of 10 staged reads written by hand (a Put, its poll, its fetch), each tunnel
    from the client Squid names (X-Forwarded-For), as in the image."""
    e = Egress(cas, tmp_path_factory.mktemp("scripted"))
    try:
        rid = e.put(_reads(10))
        e.poll(rid)
        e.fetch(rid)
        return e.text(requests=3)
    finally:
        e.close()


def grade(tmp: Path, key: Path, store: str, answer=ORGANISM, not_after: float | None = None):
    (tmp / "answer.json").write_text(json.dumps(answer))
    (tmp / "audit.jsonl").write_text(store)
    extra = ["--not-after", repr(not_after)] if not_after is not None else []
    done = subprocess.run([sys.executable, "-m", "biotool_sandbox.harbor_grade", "--key",
                           str(key), "--answer", str(tmp / "answer.json"), "--audit",
                           str(tmp / "audit.jsonl"), "--out", str(tmp / "v"),
                           "--truth", str(key.parent / "truth.json"), *extra],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr + done.stdout
    return (json.loads((tmp / "v" / "reward.json").read_text()),
            json.loads((tmp / "v" / "grade.json").read_text()))


def test_biotools_search_of_the_staged_reads_polled_and_fetched_scores_1(honest, key, tmp_path):
    reward, detail = grade(tmp_path, key, honest, not_after=time.time())
    assert (reward["reward"], reward["search_ok"], reward["search_reads"]) == (1, 1, 10), detail
    [search] = detail["search"]["searches"]
    assert search["records_of_sample"] == 10 and search["polled"] and search["fetched"]
    assert (search["program"], search["database"]) == ("blastn", "nt")
    assert detail["egress"]["broken"] == []


def test_the_put_record_lists_each_records_digest_within_the_stores_room(honest):
    from auditwire import query_seq_digest

    puts = [json.loads(l.split(" ", 1)[1]) for l in honest.splitlines()
            if '"what":"put"' in l and '"event":"request"' in l]
    assert [p["query_seqs"].split(",") for p in puts] == \
        [[query_seq_digest(s) for _, s in _reads(10)]]
    # Its outcome fits the room the store keeps for it, even with 40 records listed.
    line = max((l for l in honest.splitlines() if '"what":"put"' in l), key=len)
    assert len(line) + 40 * 9 - len(puts[0]["query_seqs"]) < auditstore.OWED


@pytest.mark.parametrize("cheat,why", [
    # The cheat: the known answer and one Put of repeats, never polled or fetched.
    ("repeats", "0 read(s) of the drawn reads searched in complete searches"),
    ("first-read", "1 read(s) of the drawn reads searched in complete searches"),
    ("unpolled", "0 read(s) of the drawn reads searched in complete searches"),
    ("unfetched", "0 read(s) of the drawn reads searched in complete searches"),
    ("none", "no search reached NCBI"),
])
def test_a_put_that_is_not_a_search_of_the_sample_scores_0(egress, key, tmp_path, cheat, why):
    requests = 0
    if cheat == "repeats":
        egress.put([("q", "ACGTTGCA" * 8)])
        requests = 1
    elif cheat == "first-read":
        rid = egress.put(_reads(1))
        egress.poll(rid)
        egress.fetch(rid)
        requests = 3
    elif cheat in ("unpolled", "unfetched"):
        rid = egress.put(_reads(10))
        requests = 1
        if cheat == "unfetched":
            egress.poll(rid)
            requests = 2
    store = egress.text(requests) if requests else Path(egress.store.path).read_text()
    reward, detail = grade(tmp_path, key, store)
    assert (reward["reward"], reward["answer"], reward["search_ok"]) == (0, 1, 0), detail
    assert reward["egress_ok"] == 1 and reward["infrastructure_error"] == 0
    assert len(detail["search"]["broken"]) == 1 and why in detail["search"]["broken"][0]


def test_the_gates_own_queue_wait_is_paced_never_a_denied_attempt(cas, key, tmp_path):
    # Another run holds the host-wide slot well past this run's hold: the Put waits its hold
    # and is answered 429 (slot-busy). That is the gate's scheduling, not the agent breaking a
    # rule, so the search that follows once the slot frees still scores 1 (issue 48 item 3).
    (tmp_path / "egress").mkdir()
    e = Egress(cas, tmp_path / "egress", hold_s=0.2)
    try:
        schedule = tmp_path / "egress" / "schedule" / "ncbi-schedule.json"
        schedule.write_text(json.dumps({"last_contact": time.time() + 100, "served": {},
                                        "waiting": {}}))
        query = "".join(f">{i}\n{s}\n" for i, s in _reads(10))
        body = urlencode({"CMD": "Put", "PROGRAM": "blastn", "DATABASE": "nt",
                          "QUERY": query}).encode()
        status, text = e.https("POST", "/blast/Blast.cgi", body)
        assert status == 429 and "no NCBI contact slot free" in text, text
        schedule.write_text(json.dumps({"last_contact": 0.0, "served": {}, "waiting": {}}))
        e.gate.hold_s = 20.0  # the slot is free now: the rest waits its turn as usual
        rid = e.put(_reads(10))
        e.poll(rid)
        e.fetch(rid)
        store = e.text(requests=4)
    finally:
        e.close()
    reward, detail = grade(tmp_path, key, store, not_after=time.time())
    assert (reward["reward"], reward["egress_ok"], reward["search_ok"]) == (1, 1, 1), detail
    assert (reward["egress_denied"], reward["egress_paced"]) == (0, 1), reward
    [paced] = [r for r in detail["egress"]["audit"]["records"] if r.get("paced")]
    assert (paced["decision"], paced["code"], paced["http_status"]) == ("paced", "slot-busy", 429)


def _lines(store: str) -> list[str]:
    return store.splitlines()


def _forged(store: str, what: str, **change) -> str:
    """The store with one more copy of its allowed `what` record, changed: a line someone with
    the egress container's shell could append."""
    line = next(l for l in _lines(store) if f'"what":"{what}"' in l and '"event":"request"' in l)
    doc = json.loads(line.split(" ", 1)[1])
    doc.update(change)
    return store + f"BIOTOOL_GATE {json.dumps(doc, separators=(',', ':'))}\n"


@pytest.mark.parametrize("change,why", [
    ({"time": "future"}, "dated outside the run"),
    ({"time": "past"}, "dated outside the run"),
    ({"client": "172.17.0.1"}, "records from 2 clients"),
    ({"tunnel": "t-forged"}, "tunnel(s) never opened"),
    ({"rid": "FORGED123"}, "a RID no earlier Put of this run created"),
    ({}, "holds more request records than its close counted"),
])
def test_an_audit_record_impossible_for_the_run_scores_0(scripted, key, tmp_path, change, why):
    honest = scripted
    started = json.loads(_lines(honest)[0].split(" ", 1)[1])["started"]
    now = time.time()
    if change.get("time") == "future":
        change["time"] = now + 3600
    elif change.get("time") == "past":
        change["time"] = started - 3600
    store = _forged(honest, "fetch", **change)
    reward, detail = grade(tmp_path, key, store, not_after=now)
    assert (reward["reward"], reward["egress_ok"], reward["infrastructure_error"]) == (0, 0, 0)
    broken = [b for b in detail["egress"]["broken"] if b.startswith("impossible for this run")]
    assert any(why in b for b in broken), detail["egress"]["broken"]
    # The same store without the forged line is whole.
    (tmp_path / "clean").mkdir()
    reward, detail = grade(tmp_path / "clean", key, honest, not_after=now)
    assert (reward["reward"], reward["search_reads"]) == (1, 10), detail
