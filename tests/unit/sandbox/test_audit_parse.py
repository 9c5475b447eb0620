"""Parsing the egress container's log into audit records (lines as Squid 5.7 and the gate wrote
them in the egress image: a denied CONNECT, plain GET, bad ports, an IPv6 literal, a
connect-and-close, and the gate's tunnel and request events)."""

from __future__ import annotations

import json

import pytest

from biotool_sandbox import audit

DENIED_CONNECT = ("BIOTOOL_EGRESS 1796113593.097 172.18.0.3 CONNECT example.com:443 example.com 443 "
                  "TCP_DENIED 403 ERR_ACCESS_DENIED 59 3413")
PLAIN_GET = ("BIOTOOL_EGRESS 1796113593.098 172.18.0.3 GET http://blast.ncbi.nlm.nih.gov/ "
             "blast.ncbi.nlm.nih.gov 80 TCP_DENIED 403 ERR_ACCESS_DENIED 77 3431")
PORT_ZERO = ("BIOTOOL_EGRESS 1796113593.099 172.18.0.3 CONNECT blast.ncbi.nlm.nih.gov:0 - - "
             "NONE_NONE 400 - 54 3604")
PORT_HUGE = ("BIOTOOL_EGRESS 1796113593.099 172.18.0.3 CONNECT blast.ncbi.nlm.nih.gov:99999 - - "
             "NONE_NONE 400 - 58 3612")
DENIED_IPV6 = ("BIOTOOL_EGRESS 1796113593.100 172.18.0.3 CONNECT %5B::1%5D:443 %5B::1%5D 443 "
               "TCP_DENIED 403 ERR_ACCESS_DENIED 39 3401")
CONNECT_AND_CLOSE = ("BIOTOOL_EGRESS 1796113593.103 172.18.0.3 - error:transaction-end-before-headers "
                     "- - NONE_NONE 000 ERR_CLIENT_GONE 0 0")
GATE_OPEN = ('BIOTOOL_GATE {"time":1796113593.101,"tunnel":"e3c4110f-2","client":"172.18.0.3",'
             '"event":"open","method":"CONNECT","url":"blast.ncbi.nlm.nih.gov:443",'
             '"host":"blast.ncbi.nlm.nih.gov","port":443,"decision":"allowed","reason":"tunnel open"}')
GATE_NOT_TLS = ('BIOTOOL_GATE {"time":1796113593.101,"tunnel":"e3c4110f-2","client":"172.18.0.3",'
                '"event":"tls","host":"blast.ncbi.nlm.nih.gov","port":443,"sni":null,'
                '"decision":"denied","reason":"not TLS inside the tunnel"}')
GATE_CLOSE = ('BIOTOOL_GATE {"time":1796113593.102,"tunnel":"e3c4110f-2","client":"172.18.0.3",'
              '"event":"close","url":"blast.ncbi.nlm.nih.gov:443","host":"blast.ncbi.nlm.nih.gov",'
              '"port":443,"decision":"allowed","reason":"not TLS inside the tunnel","requests":0,'
              '"bytes_sent":0,"bytes_received":0}')
SQUID_CHATTER = "2026/12/01 08:22:57| Accepting HTTP Socket connections at conn2 local=0.0.0.0:3128"


def gate(**fields) -> str:
    return "BIOTOOL_GATE " + json.dumps({"time": 1796113600.0, "tunnel": "t-1", "client": "172.18.0.3",
                                         **fields})


def test_denied_connect_is_a_denied_record_with_host_port_and_bytes():
    rec = audit.parse_line(DENIED_CONNECT)
    assert rec["decision"] == "denied" and rec["source"] == "proxy"
    assert (rec["method"], rec["host"], rec["port"], rec["status"]) == (
        "CONNECT", "example.com", 443, "TCP_DENIED")
    assert (rec["bytes_sent"], rec["bytes_received"]) == (59, 3413)
    assert rec["reason"] == "CONNECT target is not an allowlisted host:port"


def test_escaped_fields_are_unescaped():
    rec = audit.parse_line(DENIED_IPV6)
    assert rec["url"] == "[::1]:443" and rec["decision"] == "denied"


def test_plain_http_is_denied_as_plain():
    rec = audit.parse_line(PLAIN_GET)
    assert rec["decision"] == "denied" and rec["http_status"] == 403 and "plain GET" in rec["reason"]


def test_bad_ports_are_denied_not_errors():
    for line in (PORT_ZERO, PORT_HUGE):
        rec = audit.parse_line(line)
        assert rec["decision"] == "denied" and rec["http_status"] == 400, rec


def test_connect_and_close_is_an_error_record():
    rec = audit.parse_line(CONNECT_AND_CLOSE)
    assert rec["decision"] == "error" and "closed before" in rec["reason"]


def test_non_tls_in_a_tunnel_is_denied_and_the_tunnel_is_listed():
    out = audit.parse_audit("\n".join([SQUID_CHATTER, GATE_OPEN, GATE_NOT_TLS, GATE_CLOSE]))
    assert [(r["event"], r["decision"]) for r in out["records"]] == [("tls", "denied")]
    assert out["tunnels"][0]["open"] is False and out["open_tunnels"] == []
    assert out["unparsed"] == 0


def test_an_open_tunnel_is_visible_while_open():
    out = audit.parse_audit("\n".join([GATE_OPEN]))
    assert [t["tunnel"] for t in out["open_tunnels"]] == ["e3c4110f-2"]
    assert out["records"] == []


def test_each_request_in_a_tunnel_is_one_record_with_bytes_both_ways():
    lines = [GATE_OPEN] + [gate(event="request", tunnel="e3c4110f-2", method="POST", what="put",
                                decision="allowed", http_status=200, bytes_sent=2_000_400,
                                bytes_received=700) for _ in range(10)]
    out = audit.parse_audit("\n".join(lines))
    assert len(out["records"]) == 10
    assert all(r["bytes_sent"] == 2_000_400 and r["bytes_received"] == 700 for r in out["records"])


def test_paced_requests_are_waits_counted_apart_from_denials():
    # The gate's 429 (its schedule's hold ran out) is a wait the client sits out: never a
    # denied attempt, so a grader that fails denials does not fail an honest agent for it.
    recs = audit.parse_log("\n".join([gate(event="request", decision="paced", http_status=429,
                                           code="slot-busy"),
                                      gate(event="request", decision="allowed", http_status=200),
                                      DENIED_CONNECT, CONNECT_AND_CLOSE]))
    assert audit.summarise(recs) == {"allowed": 1, "denied": 1, "error": 1, "paced": 1}
    paced = [r for r in recs if r.get("paced")]
    assert [(r["decision"], r["code"], r["http_status"]) for r in paced] == \
        [("paced", "slot-busy", 429)]


def test_cut_or_forged_lines_are_counted_not_dropped_silently():
    cut = DENIED_CONNECT.rsplit(" ", 3)[0]
    out = audit.parse_audit("\n".join([cut, "BIOTOOL_GATE {\"event\": \"req", "x BIOTOOL_EGRESS y",
                                       DENIED_CONNECT, SQUID_CHATTER]))
    assert len(out["records"]) == 1 and out["unparsed"] == 3


def test_sni_stays_escaped_and_long_fields_are_capped():
    rec = audit.parse_log(gate(event="tls", decision="denied", sni="evil%0A%00.example",
                               reason="x" * 5000))[0]
    assert rec["sni"] == "evil%0A%00.example"
    assert len(rec["reason"]) <= audit.CAP + 3


def test_forged_or_foreign_lines_are_not_records():
    assert audit.parse_line(SQUID_CHATTER) is None
    assert audit.parse_line(DENIED_CONNECT + " extra") is None
    assert audit.parse_line("X" + DENIED_CONNECT) is None


def _gate(**doc) -> str:
    base = {"time": 1796113593.2, "tunnel": "e3c4110f-3", "client": "172.18.0.3",
            "host": "blast.ncbi.nlm.nih.gov", "port": 443, "what": "put", "request": 7}
    return "BIOTOOL_GATE " + json.dumps({**base, **doc})


def test_a_decision_is_one_record_with_its_outcome_and_a_record_without_one():
    decided = _gate(event="decided", method="POST", decision="allowed",
                    reason="BLAST put decided; relaying")
    outcome = _gate(time=1796113594.0, event="request", method="POST", decision="allowed",
                    reason="BLAST put relayed", http_status=200)
    both = audit.parse_audit("\n".join([decided, outcome]))["records"]
    assert [r["reason"] for r in both] == ["BLAST put relayed"]
    # The egress stopped mid-relay: the request may have reached NCBI, so it is recorded.
    alone = audit.parse_audit(decided)["records"]
    assert len(alone) == 1 and alone[0]["decision"] == "allowed" and alone[0]["event"] == "request"
    assert "no outcome was recorded" in alone[0]["reason"]


def test_the_gates_store_replaces_its_log_lines_and_a_counted_flood_counts():
    flooded_log = "\n".join([DENIED_CONNECT, GATE_OPEN])  # the gate's lines rotated away but one
    store = "\n".join([
        GATE_OPEN,
        _gate(event="request", method="POST", decision="allowed", reason="BLAST put relayed"),
        _gate(event="suppressed", decision="denied", reason="CMD=DisplayRIDs by GET is not allowed",
              count=4000, first=1796113593.3)])
    parsed = audit.parse_audit(audit.merge(flooded_log, store))
    events = [r["event"] for r in parsed["records"]]
    assert events.count("request") == 1 and "suppressed" in events
    assert audit.summarise(parsed["records"]) == {"allowed": 1, "denied": 4001, "error": 0,
                                                  "paced": 0}  # Squid's denial + the counted flood
    # Without a readable store, the log is all there is.
    assert audit.merge(flooded_log, None) == flooded_log


def test_a_gate_restart_closes_the_tunnels_it_cut_and_is_no_attempt():
    restarted = _gate(time=1796113599.0, event="gate_restart", decision="allowed", rids_kept=2,
                      reason="the gate started again in this run; its RIDs, CA and audit were kept")
    parsed = audit.parse_audit("\n".join([GATE_OPEN, restarted]))
    assert parsed["open_tunnels"] == [] and parsed["tunnels"][0]["reason"] == "the egress restarted"
    assert [r["event"] for r in parsed["records"]] == ["gate_restart"]
    assert audit.summarise(parsed["records"]) == {"allowed": 0, "denied": 0, "error": 0, "paced": 0}
    # A tunnel opened after the restart is open until its own close.
    later = GATE_OPEN.replace("1796113593.101", "1796113600.0").replace("e3c4110f-2", "e3c4110f-9")
    assert [t["tunnel"] for t in audit.parse_audit("\n".join([GATE_OPEN, restarted, later]))
            ["open_tunnels"]] == ["e3c4110f-9"]


def test_a_report_read_from_the_store_alone_has_the_engines_shape_and_says_what_it_lacks():
    store = "\n".join([GATE_OPEN, GATE_NOT_TLS, GATE_CLOSE])
    engine = audit.report("run-1", "\n".join([DENIED_CONNECT, SQUID_CHATTER]), store,
                          {"running": True, "restarts": 0, "oom_killed": False})
    api = audit.report(None, None, store, {"running": True, "restarts": None, "oom_killed": None})
    assert set(api) == set(engine) and set(api["store"]) == set(engine["store"])
    assert [r["source"] for r in engine["records"]] == ["proxy", "gate"]
    assert api["records"] == engine["records"][1:] and api["tunnels"] == engine["tunnels"]
    assert api["store"] == engine["store"] == {"read": True, "path": audit.STORE,
                                               "bytes": len(store), "full": False, "suppressed": 0}
    assert engine["proxy_log"] == {"read": True, "from": "log", "dropped": None,
                                   "rotated_after_full": None, "note": None}
    assert api["proxy_log"]["read"] is False and api["proxy_log"]["from"] is None
    assert "Squid's records" in api["proxy_log"]["note"]
    assert (engine["counts"]["denied"], api["counts"]["denied"]) == (2, 1)
    # No store read: the log's own gate lines are the record, and the store says it was unread.
    unread = audit.report("run-1", "\n".join([DENIED_CONNECT, GATE_NOT_TLS]), None, {})
    assert unread["store"]["read"] is False and unread["counts"]["denied"] == 2


HOLDS_BOTH = 'BIOTOOL_STORE {"holds":["gate","proxy"]}'


def test_a_store_that_keeps_squids_records_is_the_whole_audit_on_both_paths():
    # The store (header first) keeps Squid's denial and a counted flood of them; the log
    # holds the same denial, the gate's lines and chatter, and more of the flood than kept.
    flood = _gate(event="suppressed", source="proxy", decision="denied", count=300,
                  reason="the proxy ended it: CONNECT, TCP_DENIED, ERR_ACCESS_DENIED, 403",
                  first=1796113593.3, http_status=403, line=DENIED_CONNECT)
    store = "\n".join([HOLDS_BOTH, DENIED_CONNECT, GATE_OPEN, GATE_NOT_TLS, GATE_CLOSE, flood])
    log = "\n".join([DENIED_CONNECT] * 5 + [SQUID_CHATTER, GATE_OPEN, GATE_NOT_TLS, GATE_CLOSE])
    engine = audit.report("run-1", log, store, {"running": True, "restarts": 0, "oom_killed": False})
    api = audit.report(None, None, store, {"running": True, "restarts": None, "oom_killed": None})
    for key in ("records", "counts", "tunnels", "open_tunnels", "unparsed_lines", "store"):
        assert api[key] == engine[key], key
    assert [r["source"] for r in api["records"]] == ["proxy", "gate", "proxy"]
    assert api["records"][-1]["event"] == "suppressed" and api["records"][-1]["count"] == 300
    assert api["counts"] == {"allowed": 0, "denied": 302, "error": 0, "paced": 0}
    assert api["proxy_log"] == {"read": True, "from": "store", "dropped": None,
                                   "rotated_after_full": None, "note": None}
    assert engine["proxy_log"]["dropped"] == 0  # the log's 5 denials are the store's 1 + 300
    assert api["unparsed_lines"] == 0  # the header is no record and no unparsed line


@pytest.mark.parametrize("first, holds", [
    (HOLDS_BOTH, ("gate", "proxy")),
    ('BIOTOOL_STORE {"holds":["gate"]}', ("gate",)),
    ("BIOTOOL_STORE not json", ("gate",)),
    ('BIOTOOL_STORE {"holds":[1]}', ("gate",)),
    (GATE_OPEN, ("gate",)),          # a store begun before the header
    ("", ("gate",)),
])
def test_what_a_store_holds_is_read_from_its_header_and_nothing_else(first, holds):
    assert audit.store_holds(first + "\n" + GATE_CLOSE) == holds
    # Squid's records are taken from the log unless the store says it keeps them.
    from_log = audit.merge(DENIED_CONNECT, first + "\n" + GATE_CLOSE).count("BIOTOOL_EGRESS")
    assert from_log == (0 if "proxy" in holds else 1)
    assert audit.store_holds(None) == ()
