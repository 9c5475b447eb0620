"""The site's NCBI relay (image/egress/relay.py) and a gate that uses it, without docker.

A real relay on loopback (mutual TLS with a throw-away site CA) in front of the real mock NCBI
(biotool_testing/mock_ncbi.py, TLS with its own CA), and a real gate (gate.py) configured with the
relay. Intervals are shortened; the mock counts breaches of the same shortened rules, less
SLACK. As in test_gate.py, no verdict depends on the host's speed: a request that must be
paced meets an interval it cannot outlast, and records are waited for (at most SETTLE_S).
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import ssl
import threading
import time
from pathlib import Path
from typing import Callable
from urllib.parse import urlencode

import pytest
import yaml

from biotool_testing import certificates, mock_ncbi, polling, scripts

REPO = Path(__file__).resolve().parents[3]
EGRESS = REPO / "image" / "egress"
HOST = "blast.ncbi.nlm.nih.gov"
INTERVAL, POLL = 1.0, 2.5
SLACK = 0.5      # a request's write-to-arrival delay, which load stretches (test_gate.py)
SETTLE_S = 60.0  # the longest a test waits for what must come
PACED_S = 4.0    # an interval the test's next request cannot outlast, short enough to wait out


def wait_until(check: Callable[[], bool], seconds: float = SETTLE_S) -> bool:
    """Whether check() holds within `seconds`."""
    return polling.within(check, seconds)


schedule = scripts.module(EGRESS / "schedule.py")
gate_mod = scripts.module(EGRESS / "gate.py")
tunnel = scripts.module(EGRESS / "tunnel.py")
upstream = scripts.module(EGRESS / "upstream.py")
relay_mod = scripts.module(EGRESS / "relay.py")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    base = tmp_path_factory.mktemp("relay-certs")
    site = certificates.relay_site(base / "site", "localhost", gates=("gate-a", "gate-b"))
    rogue = certificates.relay_site(base / "rogue", "localhost", gates=("gate-x",),
                                    ca_name="other CA")
    # The run's CA (what a sandbox trusts) and the mock's, each with a certificate for NCBI's name.
    return {**site, "rogue": rogue["gate-x"],
            "run": certificates.server_ca(base / "run", HOST, ca_name="run CA"),
            "up": certificates.server_ca(base / "up", HOST, ca_name="upstream CA")}


@pytest.fixture()
def mock(certs):
    m = mock_ncbi.MockNCBI("ok", rtoe=0, min_interval=INTERVAL - SLACK, poll_interval=POLL - SLACK)
    m.port = m.serve(0, "127.0.0.1", certs["up"]["cert"], certs["up"]["key"])
    yield m
    m.close()


@pytest.fixture()
def relay(certs, mock, tmp_path, capsys):
    state = tmp_path / "relay-state"
    state.mkdir()
    r = relay_mod.Relay(str(certs["relay"]), str(state), extra_ca=certs["up"]["ca"],
                        min_interval=INTERVAL, hold_s=SETTLE_S,
                        upstream_address=("127.0.0.1", mock.port))
    server = relay_mod.RelayServer(("127.0.0.1", 0), r)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    r.port, r.state = server.server_address[1], state
    yield r
    server.shutdown()
    server.server_close()


Records = Callable[[list[dict]], bool]


def requests(n: int = 1, **fields) -> Records:
    """Whether at least n request records have all these fields."""
    return lambda recs: sum(r.get("event") == "request" and
                            all(r.get(k) == v for k, v in fields.items()) for r in recs) >= n


def _records(capsys, prefix: str, until: Records) -> list[dict]:
    """The `prefix` records so far, once `until` holds of them (at most SETTLE_S): the relay
    and the gate record a request just after answering it."""
    seen: list[dict] = []

    def enough() -> bool:
        seen.extend(json.loads(line.split(" ", 1)[1]) for line in
                    capsys.readouterr().out.splitlines() if line.startswith(prefix + " "))
        return until(seen)
    wait_until(enough)
    return seen


def relay_records(capsys, until: Records = bool) -> list[dict]:
    return _records(capsys, "BIOTOOL_RELAY", until)


def ask(relay, method: str, target: str, body: bytes = b"", *, tls_dir, run="run-a"):
    """One request to the relay as a gate (tls_dir: the gate's client certificates)."""
    ctx = upstream.relay_client_context(str(tls_dir))
    conn = http.client.HTTPSConnection("localhost", relay.port, context=ctx, timeout=20)
    headers = {"X-Biotool-Run": run, "Connection": "close"}
    if method == "POST":
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    conn.request(method, target, body=body or None, headers=headers)
    resp = conn.getresponse()
    data = resp.read().decode("utf-8", "replace")
    conn.close()
    return resp.status, dict(resp.getheaders()), data


def put_body(seq: str = "ACGT" * 30) -> bytes:
    return urlencode({"CMD": "Put", "PROGRAM": "blastn", "DATABASE": "nt",
                      "QUERY": f">q1\n{seq}\n"}).encode()


def _no_cert_context(certs) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile=str(certs["relay"] / "site-ca.pem"))
    return ctx


@pytest.mark.parametrize("who", ["no certificate", "another CA's certificate"])
def test_a_client_that_is_not_a_gate_of_the_site_is_refused(relay, mock, certs, capsys, who):
    ctx = _no_cert_context(certs)
    if who != "no certificate":
        ctx.load_cert_chain(str(certs["rogue"] / "client.pem"), str(certs["rogue"] / "client.key"))
    conn = http.client.HTTPSConnection("localhost", relay.port, context=ctx, timeout=10)
    with pytest.raises((ssl.SSLError, ConnectionError, http.client.RemoteDisconnected)):
        conn.request("POST", "/Blast.cgi", body=put_body(),
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        conn.getresponse().read()
    conn.close()
    assert mock.requests == []
    recs = relay_records(capsys)
    assert [r["event"] for r in recs] == ["tls"] and recs[0]["decision"] == "denied"
    assert "not a gate of this site" in recs[0]["reason"]


def test_an_authenticated_gate_is_relayed_in_the_canonical_form(relay, mock, certs, capsys):
    body = b"QUERY=%3Eq1%0AACGTACGTACGTAC%0A&DATABASE=nt&CMD=Put&PROGRAM=blastn&tool=biotool"
    status, _, text = ask(relay, "POST", "/blast/Blast.cgi", body, tls_dir=certs["gate-a"])
    assert status == 200 and "RID = " in text
    got = mock.requests[-1]
    assert list(got["params"]) == ["CMD", "PROGRAM", "DATABASE", "tool"]  # blastrequest's order
    assert got["headers"]["User-Agent"] == "biotool-egress"
    rec = [r for r in relay_records(capsys, requests()) if r["event"] == "request"][-1]
    assert (rec["client"], rec["run"], rec["what"], rec["decision"]) == \
        ("gate-a", "run-a", "put", "allowed")


@pytest.mark.parametrize("method,target,body,status,why", [
    ("POST", "/Blast.cgi", b"CMD=Put&PROGRAM=blastn&DATABASE=nt&QUERY=NC_045512.2", 403,
     "QUERY must be sequence data"),
    ("POST", "/Blast.cgi", b"CMD=Put&PROGRAM=blastn&DATABASE=nt&QUERY=ACGT&ENTREZ_QUERY=x", 403,
     "'ENTREZ_QUERY' is not one the sandbox relays"),
    ("GET", "/Blast.cgi?CMD=Get&FORMAT_TYPE=JSON2_S&RID=ABCDEF123;CMD=DisplayRIDs", b"", 400,
     "separators are '&' only"),
    ("GET", "/Blast.cgi?CMD=DisplayRIDs", b"", 403, "is not allowed"),
    ("GET", "/_mock/requests", b"", 403, "is not the BLAST URL API"),
])
def test_the_relay_checks_the_request_again_and_refuses_what_a_gate_would(
        relay, mock, certs, capsys, method, target, body, status, why):
    got, headers, text = ask(relay, method, target, body, tls_dir=certs["gate-a"])
    assert got == status and why in text and headers["X-Biotool-Egress"] == "denied", text
    assert mock.requests == []
    rec = relay_records(capsys)[-1]
    assert rec["decision"] == "denied" and why in rec["reason"]


def test_the_relay_paces_every_gate_together_with_a_429(relay, mock, certs, capsys):
    assert ask(relay, "POST", "/Blast.cgi", put_body(), tls_dir=certs["gate-a"])[0] == 200
    relay.hold_s, relay.schedule.min_interval = 0.2, PACED_S  # the next one is paced
    status, headers, text = ask(relay, "POST", "/Blast.cgi", put_body(), tls_dir=certs["gate-b"],
                                run="run-b")
    assert status == 429 and headers["X-Biotool-Egress"] == "paced"
    assert int(headers["Retry-After"]) == PACED_S and "NCBI" in text
    relay.hold_s, relay.schedule.min_interval = SETTLE_S, INTERVAL  # and then waits its turn
    assert ask(relay, "POST", "/Blast.cgi", put_body(), tls_dir=certs["gate-b"], run="run-b")[0] \
        == 200
    assert len(mock.requests) == 2 and mock.violations == []
    assert (relay.state / schedule.STATE).is_file()  # the relay's own schedule, on its own state


# ---- a gate configured with the relay

class RelayedRun:
    """One run's gate on loopback (as in test_gate.py), sending upstream through the relay."""

    def __init__(self, certs, relay_url: str, state: Path, tls_dir: Path, poll: float = POLL):
        self.gate = gate_mod.Gate([(HOST, 443)], certs["run"]["cert"], certs["run"]["key"],
                                  str(state), min_interval=INTERVAL, poll_interval=poll,
                                  hold_s=SETTLE_S, relay=relay_url, relay_tls=str(tls_dir))
        self.server = tunnel.GateServer(("127.0.0.1", 0), self.gate)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.port = self.server.server_address[1]
        self.ctx = ssl.create_default_context(cafile=certs["run"]["ca"])

    def https(self, method: str, path: str, body: bytes = b""):
        """One request as the sandbox makes it: CONNECT to the gate, then TLS to NCBI's name."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=20)
        sock.sendall(f"CONNECT {HOST}:443 HTTP/1.1\r\nHost: {HOST}:443\r\n"
                     f"X-Forwarded-For: 10.0.0.5\r\n\r\n".encode())
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        conn = http.client.HTTPSConnection(HOST, 443, context=self.ctx, timeout=30)
        conn.sock = self.ctx.wrap_socket(sock, server_hostname=HOST)
        headers = {"Content-Type": "application/x-www-form-urlencoded"} if method == "POST" else {}
        conn.request(method, path, body=body or None, headers=headers)
        resp = conn.getresponse()
        data = resp.read().decode("utf-8", "replace")
        conn.close()
        return resp.status, dict(resp.getheaders()), data

    def put(self):
        return self.https("POST", "/blast/Blast.cgi", put_body())

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def rid_of(text: str) -> str:
    return text.split("RID = ")[1].split()[0]


@pytest.fixture()
def relayed(certs, tmp_path):
    made = []

    def make(relay_port: int, gate: str = "gate-a", poll: float = POLL):
        state = tmp_path / f"gate-state-{len(made)}"
        state.mkdir()
        r = RelayedRun(certs, f"https://localhost:{relay_port}", state, certs[gate], poll)
        r.state = state
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def gate_records(capsys, until: Records) -> list[dict]:
    return _records(capsys, "BIOTOOL_GATE", until)


def test_a_gate_with_a_relay_sends_through_it_and_keeps_its_rids(relay, mock, relayed, capsys):
    a, b = relayed(relay.port, "gate-a"), relayed(relay.port, "gate-b")
    status, _, text = a.put()
    assert status == 200
    rid = rid_of(text)
    assert a.https("GET", f"/blast/Blast.cgi?CMD=Get&FORMAT_OBJECT=SearchInfo&RID={rid}")[0] == 200
    status, _, text = a.https("GET", f"/blast/Blast.cgi?CMD=Get&FORMAT_TYPE=JSON2_S&RID={rid}")
    assert status == 200 and '"accession"' not in text  # the gate still cuts the report
    status, _, text = b.https("GET", f"/blast/Blast.cgi?CMD=Get&FORMAT_TYPE=JSON2_S&RID={rid}")
    assert status == 403 and "not created by this run" in text  # RIDs stay per run
    assert [r["what"] for r in mock.requests] == ["put", "poll", "get"]
    assert mock.violations == []
    assert not (a.state / schedule.STATE).exists()  # the relay, not the host, held the interval
    recs = [r for r in gate_records(capsys, requests(4)) if r.get("event") == "request"]
    allowed = [r for r in recs if r["decision"] == "allowed"]
    assert [r["what"] for r in allowed] == ["put", "poll", "fetch"]
    assert all(r["relay"] == f"localhost:{relay.port}" for r in allowed)


def test_a_relay_429_reaches_the_agent_as_paced_and_gives_the_poll_back(relay, mock, relayed,
                                                                      capsys):
    a = relayed(relay.port, poll=SETTLE_S)  # a poll that counted would hold the RID a minute
    rid = rid_of(a.put()[2])
    relay.hold_s, relay.schedule.min_interval = 0.1, PACED_S  # the relay paces the poll below
    poll = f"/blast/Blast.cgi?CMD=Get&FORMAT_OBJECT=SearchInfo&RID={rid}"
    status, headers, _ = a.https("GET", poll)
    assert status == 429 and headers["X-Biotool-Egress"] == "paced"
    assert float(headers["Retry-After"]) == PACED_S
    # Until the relay's Retry-After the gate answers for it: asked sooner, the relay would
    # only pace again, and each try would be two more records in the run's audit.
    status, _, text = a.https("GET", poll)
    assert status == 429 and "may ask again" in text
    time.sleep(float(headers["Retry-After"]))
    relay.hold_s, relay.schedule.min_interval = SETTLE_S, INTERVAL
    assert a.https("GET", poll)[0] == 200  # inside the poll rule: the paced poll did not count
    assert [r["what"] for r in mock.requests] == ["put", "poll"] and mock.violations == []
    paced = [r for r in gate_records(capsys, lambda recs: sum(r.get("decision") == "paced"
                                                              for r in recs) >= 2)
             if r.get("decision") == "paced"]
    assert [(r["http_status"], r["code"]) for r in paced] == [(429, "relay-paced"),
                                                              (429, "relay-retry-after")]


def test_a_gate_whose_relay_is_down_fails_closed_with_a_record(mock, relayed, certs, capsys):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: the relay is down
    a = relayed(port)
    status, headers, text = a.put()
    assert status == 502 and headers["X-Biotool-Egress"] == "denied"
    assert "relay" in text and mock.requests == []
    rec = [r for r in gate_records(capsys, requests()) if r.get("event") == "request"][-1]
    assert rec["decision"] == "denied" and rec["http_status"] == 502
    assert rec["sent_upstream"] is False and "relay" in rec["reason"]


def test_a_gate_refuses_to_start_with_a_relay_but_no_client_certificate(certs, tmp_path):
    with pytest.raises((OSError, ssl.SSLError)):
        gate_mod.Gate([(HOST, 443)], certs["run"]["cert"], certs["run"]["key"], str(tmp_path),
                      relay="https://localhost:8443", relay_tls=str(tmp_path / "none"))
    with pytest.raises(ValueError):
        upstream.parse_relay_url("http://relay:8443")


# ---- the launcher's side: `biotool-sandbox up --relay URL --relay-tls DIR`

def test_the_launcher_mounts_the_gates_certificates_and_names_the_relay(certs, tmp_path):
    from biotool_sandbox.engine import overrides

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    path = overrides.relay_override(run_dir, "https://ncbi-relay:8443", str(certs["gate-a"]))
    copied = run_dir / "relay" / "tls"
    # Only the egress gets the certificates, read-only, with the relay's URL.
    assert yaml.safe_load(path.read_text()) == {"services": {"egress": {
        "volumes": [{"type": "bind", "source": str(copied), "target": overrides.RELAY_TLS_IN_EGRESS,
                     "read_only": True}],
        "environment": {"BIOTOOL_NCBI_RELAY": "https://ncbi-relay:8443",
                        "BIOTOOL_NCBI_RELAY_TLS": overrides.RELAY_TLS_IN_EGRESS}}}}
    assert sorted(p.name for p in copied.iterdir()) == sorted(overrides.RELAY_TLS_FILES)
    assert (run_dir / "relay").stat().st_mode & 0o777 == 0o700  # the host's other users: out


@pytest.mark.parametrize("url,tls,why", [
    ("http://ncbi-relay:8443", "gate-a", "is not https://HOST[:PORT]"),
    ("https://ncbi-relay:8443/Blast.cgi", "gate-a", "is not https://HOST[:PORT]"),
    ("https://ncbi-relay:8443", None, "missing: site-ca.pem, client.pem, client.key"),
])
def test_the_launcher_refuses_a_bad_relay_before_docker(certs, tmp_path, url, tls, why):
    from biotool_sandbox.engine import overrides
    from biotool_sandbox.errors import LauncherError

    with pytest.raises(LauncherError, match=re.escape(why)):
        overrides.relay_override(tmp_path, url, str(certs[tls]) if tls else None)


def test_the_sites_relay_setting_reaches_every_way_a_run_starts(monkeypatch):
    from biotool_sandbox.engine import overrides

    monkeypatch.delenv("BIOTOOL_NCBI_RELAY", raising=False)
    monkeypatch.delenv("BIOTOOL_NCBI_RELAY_TLS", raising=False)
    assert overrides.relay_settings(None, None) == (None, None)  # one host: nothing changes
    monkeypatch.setenv("BIOTOOL_NCBI_RELAY", "https://relay.site:8443")
    monkeypatch.setenv("BIOTOOL_NCBI_RELAY_TLS", "/etc/biotool-gate")
    assert overrides.relay_settings(None, None) == ("https://relay.site:8443", "/etc/biotool-gate")
    assert overrides.relay_settings("https://other:1", "/d") == ("https://other:1", "/d")


def _start_relay(certs, mock, state: Path):
    r = relay_mod.Relay(str(certs["relay"]), str(state), extra_ca=certs["up"]["ca"],
                        min_interval=INTERVAL, hold_s=SETTLE_S, poll_interval=SETTLE_S,
                        upstream_address=("127.0.0.1", mock.port))
    server = relay_mod.RelayServer(("127.0.0.1", 0), r)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    r.port = server.server_address[1]
    return r, server


def test_the_interval_and_the_rids_hold_across_a_relay_restart(relay, mock, certs, capsys):
    """Issue 38: a restarted relay reads its schedule and RIDs from its state volume (an empty
    one counts as a contact at start), so the mock never sees two requests under the
    interval; a RID answers only to the gate and run that created it, and its poll rule
    is the relay's own."""
    status, _, text = ask(relay, "POST", "/Blast.cgi", put_body(), tls_dir=certs["gate-a"])
    assert status == 200
    rid = rid_of(text)
    again, server = _start_relay(certs, mock, relay.state)  # the same state directory
    try:
        assert ask(again, "POST", "/Blast.cgi", put_body(), tls_dir=certs["gate-b"])[0] == 200
        poll = f"/Blast.cgi?CMD=Get&FORMAT_OBJECT=SearchInfo&RID={rid}"
        assert ask(again, "GET", poll, tls_dir=certs["gate-b"])[0] == 403     # another gate
        assert ask(again, "GET", poll, tls_dir=certs["gate-a"], run="run-z")[0] == 403
        assert ask(again, "GET", poll, tls_dir=certs["gate-a"])[0] == 200
        status, headers, _ = ask(again, "GET", poll, tls_dir=certs["gate-a"])
        assert status == 429 and headers["X-Biotool-Egress"] == "paced"    # the RID's minute
    finally:
        server.shutdown()
        server.server_close()
    assert len(mock.requests) == 3 and mock.violations == []  # each an interval apart


def test_an_empty_schedule_at_start_is_a_contact_made_then(certs, mock, tmp_path):
    state = tmp_path / "fresh"
    state.mkdir()
    before = time.time()
    r, server = _start_relay(certs, mock, state)
    try:
        doc = json.loads((state / schedule.STATE).read_text())
        assert doc["last_contact"] >= before
        ask(r, "POST", "/Blast.cgi", put_body(), tls_dir=certs["gate-a"])
    finally:
        server.shutdown()
        server.server_close()
    assert mock.requests[0]["t"] >= before + INTERVAL - 0.05
