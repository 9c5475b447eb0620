"""Parse the egress proxy's access log (the BIOTOOL_EGRESS lines) into audit records.

The log format is rendered by image/egress/render.py; the two must name the same fields.
"""

from __future__ import annotations

import urllib.parse

PREFIX = "BIOTOOL_EGRESS"
FIELDS = ("time", "client", "method", "url", "host", "port", "sni", "bump", "status",
          "http_status", "server", "error", "bytes")
ESCAPED = {"method", "url", "host", "sni"}


def parse_line(line: str) -> dict | None:
    """One record from one log line, or None for lines that are not access records."""
    parts = line.strip().split(" ")
    if len(parts) != len(FIELDS) + 1 or parts[0] != PREFIX:
        return None
    rec: dict = {}
    for name, raw in zip(FIELDS, parts[1:]):
        value = None if raw == "-" else raw
        if value is not None and name in ESCAPED:
            value = urllib.parse.unquote(value)
        rec[name] = value
    rec["time"] = float(rec["time"]) if rec["time"] else None
    rec["port"] = int(rec["port"]) if rec["port"] and rec["port"].isdigit() else None
    rec["http_status"] = int(rec["http_status"]) if (rec["http_status"] or "").isdigit() else None
    rec["bytes"] = int(rec["bytes"]) if (rec["bytes"] or "").isdigit() else 0
    rec["decision"], rec["reason"] = classify(rec)
    return rec


def classify(rec: dict) -> tuple[str, str]:
    """('allowed' | 'denied' | 'error', why) for one record."""
    status = rec.get("status") or ""
    if status.startswith("TCP_DENIED") or rec.get("error") == "ERR_ACCESS_DENIED":
        method = rec.get("method")
        if method and method != "CONNECT":
            return "denied", f"plain {method}: only CONNECT to an allowlisted host:port is tunnelled"
        return "denied", "CONNECT target is not an allowlisted host:port"
    if rec.get("bump") == "terminate":
        return "denied", f"TLS SNI {rec.get('sni') or '(none)'} is not allowlisted"
    if rec.get("bump") == "splice" or status.startswith("TCP_TUNNEL"):
        if rec.get("error"):
            return "allowed", f"tunnel allowed; upstream failed ({rec['error']})"
        return "allowed", "CONNECT and SNI allowlisted; spliced"
    if not rec.get("method"):
        return "error", "connected and closed before sending a request (e.g. a reachability check)"
    return "error", f"unclassified ({status or 'no status'})"


def is_splice_checkpoint(rec: dict) -> bool:
    """Squid logs a spliced tunnel twice: once when the splice is decided (no server yet,
    no error) and once when it ends. The first is a checkpoint of the same attempt."""
    return (rec.get("bump") == "splice" and rec.get("status") == "NONE_NONE"
            and not rec.get("server") and not rec.get("error") and rec.get("http_status") == 200)


LOOPBACK = ("127.0.0.1", "::1")


def is_proxy_internal(rec: dict) -> bool:
    """The proxy's own traffic, not an agent's attempt. The agent port relays allowed
    CONNECTs to a loopback-only SNI port of the same Squid; that port's liveness probes and
    the start-up warm-up come from 127.0.0.1. No agent can connect from the proxy's loopback
    (relayed attempts carry the agent's address), so a loopback client is never an agent --
    except in a spliced tunnel's final record, see parse_log."""
    return rec.get("client") in LOOPBACK and not is_splice_end(rec)


def is_splice_end(rec: dict) -> bool:
    return rec.get("bump") == "splice" and rec.get("method") == "CONNECT" and not is_splice_checkpoint(rec)


def parse_log(text: str) -> list[dict]:
    """Every access record in a log text, oldest first, skipping Squid's other output.

    One record per attempt: a spliced tunnel's decision checkpoint is dropped, and its final
    record (which Squid credits to the relay, 127.0.0.1) takes the agent's address from the
    checkpoint of the same target (one sandbox per proxy, so the same agent in any case)."""
    out = []
    agent_for: dict = {}
    for line in text.splitlines():
        rec = parse_line(line)
        if rec is None:
            continue
        if is_splice_checkpoint(rec):
            if rec.get("client") not in LOOPBACK:
                agent_for[rec.get("url")] = rec.get("client")
            continue
        if is_proxy_internal(rec):
            continue
        if rec.get("client") in LOOPBACK:
            rec["client"] = agent_for.get(rec.get("url"))
        out.append(rec)
    return out


def summarise(records: list[dict]) -> dict:
    counts = {"allowed": 0, "denied": 0, "error": 0}
    for rec in records:
        counts[rec["decision"]] += 1
    return counts
