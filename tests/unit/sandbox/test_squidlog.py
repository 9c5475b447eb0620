"""Squid's own records kept in the run's audit store (image/egress/squidlog.py): the lines
Squid's TCP logger sends, split anywhere, checked, kept as written, a flood counted, and read
back by the host's audit parser as the container log's lines are."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

from biotool_sandbox import audit as host_audit
from biotool_testing import scripts

EGRESS = Path(__file__).resolve().parents[3] / "image" / "egress"
SETTLE_S = 60.0  # the longest a test waits for what the listener's thread must do
auditstore = scripts.module(EGRESS / "auditstore.py")
squidlog = scripts.module(EGRESS / "squidlog.py")

DENIED = ("BIOTOOL_EGRESS 1796113593.100 172.18.0.3 CONNECT {host}:443 {host} 443 "
          "TCP_DENIED 403 ERR_ACCESS_DENIED 3900 97")
PLAIN = ("BIOTOOL_EGRESS 1796113594.200 172.18.0.3 GET http://blast.ncbi.nlm.nih.gov/ "
         "blast.ncbi.nlm.nih.gov 80 TCP_DENIED 403 ERR_ACCESS_DENIED 3900 120")


@pytest.fixture()
def listening(tmp_path):
    """(store, send): a store that keeps Squid's records, and a sender standing for Squid's
    TCP logger, one connection per call."""
    store = auditstore.Store(str(tmp_path / "audit.jsonl"), holds=("gate", "proxy"), burst=5)
    listener = squidlog.start(("127.0.0.1", 0), store)

    def send(*chunks: bytes, lines: int) -> None:
        with socket.create_connection(listener.server_address, timeout=5) as sock:
            for chunk in chunks:
                sock.sendall(chunk)
                time.sleep(0.01)   # separate segments: a line may arrive in pieces
        deadline = time.monotonic() + SETTLE_S   # each line handled is counted under its flood key
        while sum(store.denied.values()) < lines:
            assert time.monotonic() < deadline, f"{sum(store.denied.values())} of {lines} handled"
            time.sleep(0.01)

    yield store, send
    listener.shutdown()
    listener.server_close()


def _text(store) -> str:
    store.flush()
    return Path(store.path).read_text()


def test_squids_lines_are_kept_as_written_and_read_back_as_the_logs_are(listening):
    store, send = listening
    line = DENIED.format(host="denied.invalid")
    data = f"{line}\n{PLAIN}\n".encode()
    send(data[:17], data[17:90], data[90:], lines=2)
    text = _text(store)
    head, *rest = text.splitlines()
    assert rest == [line, PLAIN]
    assert head.startswith('BIOTOOL_STORE {"holds":["gate","proxy"],"started":')
    assert abs(host_audit.store_started(text) - store.window_start) < 0.002  # its clock
    report = host_audit.report(None, None, text, {})
    assert [(r["source"], r["host"], r["decision"]) for r in report["records"]] == [
        ("proxy", "denied.invalid", "denied"), ("proxy", "blast.ncbi.nlm.nih.gov", "denied")]
    assert report["records"] == host_audit.parse_log(f"{line}\n{PLAIN}")
    assert report["proxy_log"] == {"read": True, "from": "store", "dropped": None,
                                   "rotated_after_full": None, "note": None}
    # Read beside the log that holds the same two lines, nothing is missing or counted twice.
    engine = host_audit.report("run", f"{line}\n{PLAIN}", text, {})
    assert engine["records"] == report["records"] and engine["proxy_log"]["dropped"] == 0


@pytest.mark.parametrize("bad", [
    b"BIOTOOL_EGRESS too few fields\n",
    b"BIOTOOL_GATE " + json.dumps({"event": "request", "decision": "allowed"}).encode() + b"\n",
    DENIED.format(host="caf\xc3\xa9.invalid").encode() + b"\n",          # not Squid's escaping
    DENIED.format(host="a\x1b[2J.invalid").encode() + b"\n",            # a control character
    DENIED.format(host="x" * 9000).encode() + b"\n",                     # past Squid's limit
    DENIED.format(host="cut.invalid").encode()[:60],                    # the connection ended
])
def test_what_is_not_one_of_squids_records_is_counted_unparsed_as_from_the_log(listening, bad):
    store, send = listening
    after = DENIED.format(host="after.invalid")
    if bad.endswith(b"\n"):
        send(bad, after.encode() + b"\n", lines=2)
    else:
        send(bad, lines=1)
    lines = _text(store).splitlines()[1:]
    assert lines == [squidlog.UNPARSED.strip()] + ([after] if bad.endswith(b"\n") else [])
    report = host_audit.report(None, None, _text(store), {})
    # Counted among the unparsed lines, as a cut line in the log is: no record, no gate record.
    assert report["unparsed_lines"] == 1 and report["counts"]["error"] == 0
    assert [r["host"] for r in report["records"]] == (["after.invalid"] if bad.endswith(b"\n") else [])


def test_a_flood_of_denials_is_counted_under_keys_no_agent_can_vary(listening):
    # 400 hosts off the allowlist, 100 plain GETs: each is one key (the method as CONNECT or
    # another, Squid's status, error and HTTP status), so host names make no keys of their own.
    store, send = listening
    lines = [DENIED.format(host=f"h{i}.invalid") for i in range(400)] + [PLAIN] * 100
    send("".join(l + "\n" for l in lines).encode(), lines=500)
    report = host_audit.report(None, None, _text(store), {})
    kept = [r for r in report["records"] if r["event"] != "suppressed"]
    suppressed = [r for r in report["records"] if r["event"] == "suppressed"]
    assert len(kept) == 10 and {r["source"] for r in report["records"]} == {"proxy"}
    assert sorted(r["count"] for r in suppressed) == [95, 395]
    # A counted record reads as the kept ones of its kind do.
    assert {r["reason"] for r in suppressed} == {r["reason"] for r in kept} == {
        "CONNECT target is not an allowlisted host:port",
        "plain GET: only CONNECT to an allowlisted host:port is tunnelled"}
    assert report["counts"]["denied"] == 500 and report["store"]["suppressed"] == 490
    assert report["counts"] == host_audit.report(None, "\n".join(lines), None, {})["counts"]


def test_connections_closed_before_a_request_are_errors_however_many(listening):
    # Squid's record of a connection opened and closed (a reachability check): an error, not
    # a denial, kept or counted, as the log's own reading says.
    store, send = listening
    closed = "BIOTOOL_EGRESS 1796113595.000 172.18.0.3 - - - - NONE_NONE 000 ERR_CLIENT_GONE 0 0"
    lines = [closed] * 30 + [DENIED.format(host="x.invalid")] * 12
    send("".join(l + "\n" for l in lines).encode(), lines=42)
    report = host_audit.report(None, None, _text(store), {})
    assert report["counts"] == host_audit.report(None, "\n".join(lines), None, {})["counts"] == {
        "allowed": 0, "denied": 12, "error": 30, "paced": 0}


def test_a_store_begun_without_squids_records_stays_without_them(tmp_path):
    # A store an older gate began (no header): its readers take Squid's records from the log,
    # so a line kept here as well would be counted twice.
    path = tmp_path / "audit.jsonl"
    path.write_text('BIOTOOL_GATE {"time":1.0,"event":"request","decision":"allowed"}\n')
    store = auditstore.Store(str(path), holds=("gate", "proxy"))
    assert store.holds == ("gate",) and store.reopened
    assert store.write_proxy(DENIED.format(host="x.invalid") + "\n", "r", 403)
    assert "BIOTOOL_EGRESS" not in path.read_text()
    reopened = auditstore.Store(str(tmp_path / "new.jsonl"), holds=("gate", "proxy"))
    assert auditstore.Store(reopened.path).holds == ("gate", "proxy")


def test_a_floods_counts_reach_the_file_without_waiting_for_another_record(tmp_path):
    store = auditstore.Store(str(tmp_path / "audit.jsonl"), holds=("gate", "proxy"), burst=1)
    for i in range(30):
        store.write_proxy(DENIED.format(host=f"h{i}.invalid") + "\n", "k", 403)
    assert "suppressed" not in Path(store.path).read_text()
    stop = threading.Event()
    flusher = threading.Thread(target=auditstore.flush_every, args=(store, stop, 0.05))
    flusher.start()
    deadline = time.monotonic() + SETTLE_S
    while "suppressed" not in Path(store.path).read_text() and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()
    flusher.join(SETTLE_S)
    assert not flusher.is_alive()
    counted = [json.loads(l.split(" ", 1)[1]) for l in Path(store.path).read_text().splitlines()
               if '"suppressed"' in l]
    # The first line counted, and each distinct destination listed in the flood's own
    # records: the agent cannot choose one destination to stand for the rest.
    assert [(r["count"], r["source"], r["line"]) for r in counted] == [
        (29, "proxy", DENIED.format(host="h1.invalid"))]
    assert counted[0]["destinations_listed"] == 29 and counted[0]["destinations_more"] == 0
    read = host_audit.report(None, None, Path(store.path).read_text(), {})
    flood = [r for r in read["records"] if r["event"] == "suppressed"][0]
    assert flood["destinations"] == {"kept": [f"h{i}.invalid:443" for i in range(1, 30)],
                                     "more": 0}


def test_a_full_store_leaves_later_denials_to_the_log_and_a_gap_is_said(tmp_path):
    store = auditstore.Store(str(tmp_path / "audit.jsonl"), holds=("gate", "proxy"),
                             max_bytes=6000, burst=1000, clock=lambda: 1796113595.0)
    lines = [DENIED.format(host=f"h{i}.invalid") for i in range(40)]
    while store.write_proxy(lines[0] + "\n", "k", 403):
        pass
    text = Path(store.path).read_text()
    kept = text.count("BIOTOOL_EGRESS")
    later = [l.replace("1796113593.100", "1796113600.000") for l in lines]  # after it filled
    engine = host_audit.report("run", "\n".join(lines[:kept] + later), text, {})
    assert engine["store"]["full"] and engine["counts"]["denied"] == kept + 40
    api = host_audit.report(None, None, text, {})
    assert api["counts"]["denied"] == kept  # the full store, not an attempt, and no more
    # Squid lines the log has beyond the store's: counted and said, on the engine's path.
    missing = host_audit.report("run", "\n".join([lines[0]] * (kept + 7)), text, {})
    assert missing["proxy_log"]["dropped"] == 7 and "7 of Squid's records" in missing["proxy_log"]["note"]
