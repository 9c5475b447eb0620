"""Parsing the egress proxy's access log into audit records (lines as Squid 5.7 wrote them)."""

from __future__ import annotations

from biotool_sandbox import audit

# Real lines from the egress container during the escape-matrix run.
DENIED_CONNECT = ("BIOTOOL_EGRESS 1796076717.076 172.18.0.3 CONNECT example.com:443 example.com 443 "
                  "- bump TCP_DENIED_ABORTED 200 - ERR_ACCESS_DENIED 0")
DENIED_IPV6 = ("BIOTOOL_EGRESS 1796076717.362 172.18.0.3 CONNECT %5B2606:4700::1111%5D:443 "
               "%5B2606:4700::1111%5D 443 - bump TCP_DENIED_ABORTED 200 - ERR_ACCESS_DENIED 0")
PLAIN_GET = ("BIOTOOL_EGRESS 1796076717.618 172.18.0.3 GET http://blast.ncbi.nlm.nih.gov/ "
             "blast.ncbi.nlm.nih.gov 80 - - TCP_DENIED 403 - ERR_ACCESS_DENIED 3420")
FRONTED = ("BIOTOOL_EGRESS 1796076717.764 172.18.0.3 CONNECT blast.ncbi.nlm.nih.gov:443 "
           "blast.ncbi.nlm.nih.gov 443 evil.example.com terminate NONE_NONE 200 - - 0")
SPLICE_CHECKPOINT = ("BIOTOOL_EGRESS 1796077157.737 172.27.0.3 CONNECT blast.ncbi.nlm.nih.gov:443 "
                     "blast.ncbi.nlm.nih.gov 443 blast.ncbi.nlm.nih.gov splice NONE_NONE 200 - - 0")
TUNNEL = ("BIOTOOL_EGRESS 1796077157.748 172.27.0.3 CONNECT blast.ncbi.nlm.nih.gov:443 "
          "blast.ncbi.nlm.nih.gov 443 blast.ncbi.nlm.nih.gov splice TCP_TUNNEL 200 172.28.0.3 - 2106")
UPSTREAM_DOWN = ("BIOTOOL_EGRESS 1796076717.931 172.18.0.3 CONNECT blast.ncbi.nlm.nih.gov:443 "
                 "blast.ncbi.nlm.nih.gov 443 blast.ncbi.nlm.nih.gov splice NONE_NONE 500 - ERR_CANNOT_FORWARD 0")
SQUID_CHATTER = "2026/11/30 22:10:32| Accepting SSL bumped HTTP Socket connections at conn2"


def test_denied_connect_is_a_denied_record_with_host_and_port():
    rec = audit.parse_line(DENIED_CONNECT)
    assert rec["decision"] == "denied"
    assert (rec["method"], rec["host"], rec["port"], rec["status"]) == (
        "CONNECT", "example.com", 443, "TCP_DENIED_ABORTED")
    assert rec["time"] == 1796076717.076 and rec["sni"] is None


def test_escaped_fields_are_unescaped():
    rec = audit.parse_line(DENIED_IPV6)
    assert rec["url"] == "[2606:4700::1111]:443" and rec["decision"] == "denied"


def test_plain_http_is_denied_as_plain():
    rec = audit.parse_line(PLAIN_GET)
    assert rec["decision"] == "denied" and rec["http_status"] == 403
    assert "plain GET" in rec["reason"]


def test_terminated_sni_is_denied_naming_the_sni():
    rec = audit.parse_line(FRONTED)
    assert rec["decision"] == "denied" and "evil.example.com" in rec["reason"]


def test_spliced_tunnel_is_allowed_once():
    records = audit.parse_log("\n".join([SQUID_CHATTER, SPLICE_CHECKPOINT, TUNNEL]))
    assert len(records) == 1
    assert records[0]["decision"] == "allowed" and records[0]["server"] == "172.28.0.3"
    assert records[0]["bytes"] == 2106


def test_allowed_tunnel_whose_upstream_failed_says_so():
    rec = audit.parse_line(UPSTREAM_DOWN)
    assert rec["decision"] == "allowed" and "ERR_CANNOT_FORWARD" in rec["reason"]


def test_forged_or_foreign_lines_are_not_records():
    assert audit.parse_line(SQUID_CHATTER) is None
    assert audit.parse_line(DENIED_CONNECT + " extra") is None
    assert audit.parse_line("X" + DENIED_CONNECT) is None


def test_summary_counts_each_decision():
    records = audit.parse_log("\n".join([DENIED_CONNECT, PLAIN_GET, FRONTED, TUNNEL]))
    assert audit.summarise(records) == {"allowed": 1, "denied": 3, "error": 0}


# Lines from the two-port proxy: the agent port relays allowed CONNECTs to the loopback-only
# SNI port, whose peer probes and warm-up come from 127.0.0.1, and whose spliced tunnel's
# final record Squid credits to the relay (127.0.0.1) rather than the agent.
PEER_PROBE = ("BIOTOOL_EGRESS 1796080018.060 127.0.0.1 - error:transaction-end-before-headers "
              "- - - - NONE_NONE 000 - ERR_CLIENT_GONE 0")
WARM_UP_PEEK = ("BIOTOOL_EGRESS 1796080370.111 127.0.0.1 CONNECT blast.ncbi.nlm.nih.gov:443 "
                "blast.ncbi.nlm.nih.gov 443 - peek NONE_NONE_ABORTED 200 - ERR_CLIENT_GONE 0")
RELAYED_CHECKPOINT = ("BIOTOOL_EGRESS 1796080375.105 172.23.0.3 CONNECT blast.ncbi.nlm.nih.gov:443 "
                      "blast.ncbi.nlm.nih.gov 443 blast.ncbi.nlm.nih.gov splice NONE_NONE 200 - - 0")
RELAYED_END = ("BIOTOOL_EGRESS 1796080375.113 127.0.0.1 CONNECT blast.ncbi.nlm.nih.gov:443 "
               "blast.ncbi.nlm.nih.gov 443 blast.ncbi.nlm.nih.gov splice TCP_TUNNEL 500 172.22.0.3 - 2106")
DENIED_403 = ("BIOTOOL_EGRESS 1796079971.352 172.31.0.3 CONNECT example.org:443 example.org 443 "
              "- - TCP_DENIED 403 - ERR_ACCESS_DENIED 3407")


def test_proxy_loopback_records_are_not_attempts():
    records = audit.parse_log("\n".join([PEER_PROBE, WARM_UP_PEEK, PEER_PROBE]))
    assert records == []


def test_relayed_splice_is_one_allowed_record_credited_to_the_agent():
    records = audit.parse_log("\n".join([PEER_PROBE, WARM_UP_PEEK, RELAYED_CHECKPOINT, PEER_PROBE,
                                         RELAYED_END]))
    assert len(records) == 1, records
    rec = records[0]
    assert rec["client"] == "172.23.0.3" and rec["server"] == "172.22.0.3" and rec["bytes"] == 2106
    assert rec["decision"] == "allowed" and rec["sni"] == "blast.ncbi.nlm.nih.gov"
    assert audit.summarise(records) == {"allowed": 1, "denied": 0, "error": 0}


def test_denied_connect_answered_403_is_denied():
    rec = audit.parse_line(DENIED_403)
    assert rec["decision"] == "denied" and rec["http_status"] == 403
    assert rec["reason"] == "CONNECT target is not an allowlisted host:port"
