"""Parse the egress's records into one run's audit.

Two kinds of line: Squid's `BIOTOOL_EGRESS ...` (every attempt Squid ends itself: denials,
and connections closed before a request; format rendered by image/egress/render.py) and the
gate's `BIOTOOL_GATE {json}` (image/egress/tunnel.py and gate.py: each tunnel's opening and
close, each request inside a tunnel, each refused TLS hello). Both are in the container log
and both are kept in the gate's bounded store (image/egress/auditstore.py; a store begun
before Squid's records went there holds the gate's only, and says so by having no header).
A line that carries either prefix but does not parse is counted, never dropped silently.
"""

from __future__ import annotations

import json
import math
import urllib.parse

from auditwire import (AUDIT_FULL, CLOSE, CONNECTION_CAP, DESTINATIONS, GATE_PREFIX,
                        GATE_RESTART, OPEN, REQUEST, SQUID_FIELDS, SQUID_PREFIX, STORE,
                        STORE_HEADER, SUPPRESSED)

# Squid's errors for a connection that never sent a whole request head, by what they mean.
UNFINISHED = {"ERR_REQUEST_START_TIMEOUT": "no request byte",
              "ERR_REQUEST_PARSE_TIMEOUT": "an unfinished request head"}

ESCAPED = {"method", "url", "host"}
RECORD_KEYS = ("time", "source", "event", "client", "method", "url", "host", "port", "sni",
               "status", "http_status", "error", "decision", "reason", "bytes_sent",
               "bytes_received", "tunnel", "what", "rid", "count",
               "relay",  # relay: the site's NCBI relay the gate sent the request to, if any
               "code",   # the gate's fixed reason code (what the store's flood counting keys on)
               # what an allowed Put searched: never the query, its digests
               "program", "database", "query_records", "query_sha256", "titles_sha256",
               "query_seqs",  # a short digest of each record's sequence (auditwire)
               "new_rid",     # the RID an allowed Put's reply created
               "destinations")  # a counted flood of Squid's lines: its distinct destinations
CAP = 600  # characters of any text field in a record, whatever the line held
LISTED_MAX = 100_000  # destinations read from a store's `destinations` records (a 16 MB store
                      # holds fewer: auditstore.DESTINATION_BYTES bounds them)


def _int(raw) -> int | None:
    # ASCII digits only: int() refuses some characters isdigit() accepts (superscripts).
    if isinstance(raw, str):
        return int(raw) if raw.isascii() and raw.isdigit() else None
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else None


def _text(value) -> str | None:
    if value is None:
        return None
    value = str(value)
    return value if len(value) <= CAP else value[:CAP] + "..."


def parse_line(line: str) -> dict | None:
    """One Squid record from one log line, or None for lines that are not Squid records."""
    parts = line.strip().split(" ")
    if len(parts) != len(SQUID_FIELDS) + 1 or parts[0] != SQUID_PREFIX:
        return None
    rec: dict = dict.fromkeys(RECORD_KEYS)
    rec.update(source="proxy", event="connect")
    for name, raw in zip(SQUID_FIELDS, parts[1:]):
        value = None if raw == "-" else raw
        if value is not None and name in ESCAPED:
            value = urllib.parse.unquote(value)
        rec[name] = _text(value)
    try:
        rec["time"] = float(rec["time"]) if rec["time"] else None
    except ValueError:
        return None
    if rec["method"] and rec["method"] != "CONNECT":
        rec["event"] = REQUEST
    rec["port"] = _int(rec["port"])
    rec["http_status"] = _int(rec["http_status"])
    rec["bytes_sent"] = _int(rec["bytes_sent"]) or 0
    rec["bytes_received"] = _int(rec["bytes_received"]) or 0
    rec["decision"], rec["reason"] = classify(rec)
    return rec


def classify(rec: dict) -> tuple[str, str]:
    """('denied' | 'error', why) for one Squid record: Squid itself never lets anything out
    (an allowed CONNECT is relayed to the gate, which logs it)."""
    status = rec.get("status") or ""
    method = rec.get("method")
    if status.startswith("TCP_DENIED") or rec.get("error") == "ERR_ACCESS_DENIED":
        if method and method != "CONNECT":
            return "denied", f"plain {method}: only CONNECT to an allowlisted host:port is tunnelled"
        return "denied", "CONNECT target is not an allowlisted host:port"
    if rec.get("error") == CONNECTION_CAP:
        return "denied", ("connection closed at accept: the client already held the proxy's "
                          "per-client connection cap (a connection flood)")
    if not method and rec.get("error") in UNFINISHED:
        return "error", (f"{UNFINISHED[rec['error']]} within the proxy's request timeout: "
                         f"the connection was cut (held open without a request)")
    if not method:
        return "error", "connected and closed before sending a request (e.g. a reachability check)"
    if rec.get("error") or (rec.get("http_status") or 0) >= 400:
        return "denied", (f"refused by the proxy: {rec.get('error') or 'HTTP ' + str(rec.get('http_status'))}"
                          f" (malformed request, bad port or unreachable relay)")
    return "error", f"unclassified ({status or 'no status'})"


def parse_gate(line: str) -> dict | None:
    """One gate event from a `BIOTOOL_GATE {json}` line; None when it is not one."""
    if not line.startswith(GATE_PREFIX + " "):
        return None
    try:
        doc = json.loads(line[len(GATE_PREFIX) + 1:])
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("event"), str):
        return None
    return doc


def _gate_record(doc: dict) -> dict:
    rec = dict.fromkeys(RECORD_KEYS)
    # The store's records about Squid's lines (a flood counted, a cut line) are the proxy's.
    rec["source"] = "proxy" if doc.get("source") == "proxy" else "gate"
    for key in RECORD_KEYS:
        if key in doc and key != "source":
            value = doc[key]
            rec[key] = value if isinstance(value, (int, float)) and not isinstance(value, bool) \
                else _text(value)
    # The SNI stays as the gate escaped it (%00, %0A...): never decoded into the record.
    decision = doc.get("decision")
    # A 429 the gate answered (its schedule's hold ran out, the run already had a request
    # waiting, a RID asked about early, the site's relay's pacing) is a wait the client is told
    # to sit out, nothing sent anywhere: `paced`, never a denied attempt.
    rec["paced"] = decision == "paced"
    rec["decision"] = decision if decision in ("allowed", "denied", "paced") else "error"
    rec["bytes_sent"] = rec["bytes_sent"] or 0
    rec["bytes_received"] = rec["bytes_received"] or 0
    return rec


def parse_audit(text: str) -> dict:
    """{"records", "tunnels", "open_tunnels", "unparsed", "tunnels_counted"} from a whole
    egress log text.

    records: one per attempt (a request in a tunnel, a refused hello, a Squid denial), oldest
    first. tunnels: each relayed CONNECT with its totals; open ones have "open": true.
    unparsed: lines that carry a record prefix but do not parse (cut, or forged).
    tunnels_counted: tunnels opened and closed that a flood's counting kept no record of."""
    records, tunnels, order, unparsed = [], {}, [], 0
    decided, outcomes = {}, set()
    counted = {"opened": 0, "closed": 0}
    listed, floods = {}, {}  # a counted flood's slot -> its listed destinations, its record
    for line in text.splitlines():
        if SQUID_PREFIX not in line and GATE_PREFIX not in line:
            continue
        rec = parse_line(line)
        if rec is not None:
            records.append(rec)
            continue
        doc = parse_gate(line)
        if doc is None:
            unparsed += 1
            continue
        event = doc["event"]
        if event == SUPPRESSED and doc.get("source") == "proxy":
            # Squid's lines the store counted: each reads as the one it kept of them does.
            n = doc.get("count") if isinstance(doc.get("count"), int) else 1
            sample = parse_line(str(doc.get("line") or ""))
            if sample is None:
                unparsed += n
                continue
            rec = _gate_record(doc)
            # The method only where the key fixes it (CONNECT); another may vary within it.
            rec.update(decision=sample["decision"], reason=sample["reason"],
                       method="CONNECT" if sample["method"] == "CONNECT" else None,
                       destinations=_destinations(doc))
            records.append(rec)
            floods[str(doc.get("slot"))] = rec
            continue
        if event == DESTINATIONS:  # what a counted flood reached: joined to it below
            _list(listed, doc)
            continue
        if event == SUPPRESSED and doc.get("of") in (OPEN, CLOSE):
            # Tunnels the store counted rather than listed: no attempt of their own (the
            # requests inside them have their records), so they are counted apart.
            n = doc.get("count") if isinstance(doc.get("count"), int) else 0
            counted["opened" if doc["of"] == "open" else "closed"] += n
            continue
        if event in ("open", "close"):
            tid = str(doc.get("tunnel"))[:64]
            if tid not in tunnels:
                if len(tunnels) >= 100000:
                    continue
                order.append(tid)
                tunnels[tid] = {"tunnel": tid, "client": _text(doc.get("client")),
                                "host": _text(doc.get("host")), "port": doc.get("port"),
                                "opened": doc.get("time"), "closed": None, "open": True,
                                "requests": 0, "bytes_sent": 0, "bytes_received": 0}
            if event == "close":
                t = tunnels[tid]
                t.update(closed=doc.get("time"), open=False, reason=_text(doc.get("reason")))
                for k in ("requests", "bytes_sent", "bytes_received"):
                    t[k] = doc.get(k) if isinstance(doc.get(k), int) else 0
            continue
        if event == GATE_RESTART:  # tunnels open before it ended with the process
            for t in tunnels.values():
                if t["open"]:
                    t.update(closed=doc.get("time"), open=False, reason="the egress restarted")
        key = (str(doc.get("tunnel")), doc.get("request"))
        if event == "decided":  # the gate's record before relaying; its outcome follows
            decided[key] = doc
            continue
        outcomes.add(key)
        records.append(_gate_record(doc))
    # A decision with no outcome: the egress stopped mid-relay. The request may have reached
    # NCBI, so it is a record of its own rather than nothing.
    for key, doc in decided.items():
        if key not in outcomes:
            rec = _gate_record(doc)
            rec.update(event="request", reason=f"{rec['reason']}; no outcome was recorded "
                                               "(the egress stopped while relaying)")
            records.append(rec)
    for slot, rec in floods.items():
        if rec["destinations"] is not None and slot in listed:
            latest = rec["destinations"]["kept"]
            rec["destinations"]["kept"] = listed[slot] + [d for d in latest if d not in listed[slot]]
    records.sort(key=lambda r: r["time"] or 0)
    opened = [tunnels[t] for t in order]
    return {"records": records, "tunnels": opened,
            "open_tunnels": [t for t in opened if t["open"]], "unparsed": unparsed,
            "tunnels_counted": counted}


def _list(listed: dict, doc: dict) -> None:
    """Add a `destinations` record's destinations (decoded) to its flood's list."""
    names = doc.get("destinations")
    if not isinstance(names, list) or sum(map(len, listed.values())) >= LISTED_MAX:
        return
    listed.setdefault(str(doc.get("slot")), []).extend(
        _text(urllib.parse.unquote(str(d))) for d in names[:LISTED_MAX])


def _destinations(doc: dict) -> dict | None:
    """A counted flood's distinct destinations (Squid's URL field, decoded) that its slot
    kept (the latest, once its `destinations` records reached their budget), and how many
    of its lines went to destinations not named; None from a store that kept one line only.
    parse_audit adds those the flood's `destinations` records list before them."""
    kept = doc.get("destinations")
    if not isinstance(kept, list):
        return None
    return {"kept": [_text(urllib.parse.unquote(str(d))) for d in kept[:64]],
            "more": doc.get("destinations_more") if isinstance(doc.get("destinations_more"), int) else 0}


def parse_log(text: str) -> list[dict]:
    """Every audit record in a log text, oldest first (see parse_audit for the rest)."""
    return parse_audit(text)["records"]


def summarise(records: list[dict]) -> dict:
    """Attempts by decision (allowed, denied, paced, error: each attempt in one); a
    `suppressed` record (a flood the gate counted rather than kept) stands for its count."""
    counts = {"allowed": 0, "denied": 0, "error": 0, "paced": 0}
    for rec in records:
        if rec.get("event") in (GATE_RESTART, AUDIT_FULL):  # events, not attempts
            continue
        n = rec.get("count") if rec.get("event") == SUPPRESSED and isinstance(rec.get("count"), int) else 1
        counts[rec["decision"]] += n
    return counts


def store_holds(store_text: str | None) -> tuple[str, ...]:
    """Whose records a store keeps, from its header; () when unread, the gate's without one."""
    if store_text is None:
        return ()
    first = store_text.split("\n", 1)[0]
    if first.startswith(STORE_HEADER + " "):
        try:
            holds = json.loads(first[len(STORE_HEADER) + 1:])["holds"]
            if isinstance(holds, list) and all(isinstance(h, str) for h in holds):
                return tuple(holds)
        except (ValueError, KeyError, TypeError):
            pass
    return ("gate",)


def store_started(store_text: str | None) -> float | None:
    """When the run's egress began its store (the header's `started`), or None for a store
    without it (older, or unread)."""
    first = (store_text or "").split("\n", 1)[0]
    if not first.startswith(STORE_HEADER + " "):
        return None
    try:
        started = json.loads(first[len(STORE_HEADER) + 1:]).get("started")
    except (ValueError, AttributeError):
        return None
    return float(started) if isinstance(started, (int, float)) and not isinstance(started, bool) \
        and math.isfinite(started) else None


def _full_since(store_text: str) -> float | None:
    """When the store filled up (its final `audit_full` record), or None. Searched from the
    end, not only the last line: the outcomes the store kept room for may follow it."""
    for line in reversed(store_text.splitlines()):
        if f'"{AUDIT_FULL}"' not in line:
            continue
        doc = parse_gate(line)
        if doc and doc["event"] == AUDIT_FULL and isinstance(doc.get("time"), (int, float)):
            return float(doc["time"])
    return None


def _squid_lines(log_text: str, after: float | None = None) -> list[str]:
    """The log's lines that are not the gate's; with `after`, only Squid records newer."""
    lines = [l for l in log_text.splitlines() if not l.startswith(GATE_PREFIX + " ")]
    if after is None:
        return lines
    return [l for l in lines if (rec := parse_line(l)) is not None and (rec["time"] or 0) > after]


def merge(log_text: str, store_text: str | None) -> str:
    """The text to parse: the records the bounded store keeps (the container log can be
    flooded and rotated), and from the log those the store does not keep: Squid's, for a
    store without them, or those after a full store stopped keeping them; the whole log
    when the store was not read."""
    if store_text is None:
        return log_text
    if "proxy" not in store_holds(store_text):
        return "\n".join(_squid_lines(log_text) + store_text.splitlines())
    full = _full_since(store_text)
    if full is None or not log_text:
        return store_text
    return "\n".join(store_text.splitlines() + _squid_lines(log_text, after=full))


def _dropped(log_text: str | None, store_text: str | None) -> int | None:
    """How many of Squid's records the log holds beyond what the store accounts for (kept,
    counted or unparsed): lines Squid dropped while the gate was not reading. A lower bound,
    as a rotated log holds fewer; None when the two cannot be compared."""
    if log_text is None or "proxy" not in store_holds(store_text):
        return None
    in_log = sum(1 for l in log_text.splitlines() if l.startswith(SQUID_PREFIX + " "))
    in_store = 0
    for line in store_text.splitlines():
        if line.startswith(SQUID_PREFIX + " "):
            in_store += 1
        elif (doc := parse_gate(line)) and doc["event"] == SUPPRESSED and \
                doc.get("source") == "proxy" and isinstance(doc.get("count"), int):
            in_store += doc["count"]
    return max(0, in_log - in_store)


def _proxy_log(log_text: str | None, store_text: str | None) -> dict:
    """Where Squid's records were read from ("store", "log", or nowhere, with a note), and
    how many the store missed that the log has (`dropped`; None where the log is unread)."""
    source = "store" if "proxy" in store_holds(store_text) else \
        "log" if log_text is not None else None
    dropped = _dropped(log_text, store_text)
    rotated = _rotated_after_full(log_text, store_text)
    note = None
    if rotated:
        note = ("the store filled up and the container log no longer reaches back to that "
                "moment (Docker rotated it): Squid's denials in between are in no record")
    elif not source:
        note = ("Squid's records (denials before the gate) were not read: this run's store does "
                "not keep them and they are in the egress container's log (on Kubernetes "
                "`kubectl logs POD -c egress`)")
    elif dropped:
        note = (f"{dropped} of Squid's records in the container log are not in the store (Squid "
                "drops what the gate is not reading): the log has them")
    return {"read": source is not None, "from": source, "dropped": dropped,
            "rotated_after_full": rotated, "note": note}


def _rotated_after_full(log_text: str | None, store_text: str | None) -> bool | None:
    """Whether the log, the one place Squid's denials go once the store is full, begins after
    the store filled (rotated: what came between is lost); None where that cannot be told
    (no full store, or no log read)."""
    full = _full_since(store_text) if store_text else None
    if full is None or log_text is None:
        return None
    for line in log_text.splitlines():
        rec = parse_line(line) if line.startswith(SQUID_PREFIX + " ") else parse_gate(line)
        when = rec.get("time") if rec else None
        if isinstance(when, (int, float)):
            return when > full
    return True  # a log with no record at all holds nothing from before the store filled


def report(run: str | None, log_text: str | None, store_text: str | None, egress: dict) -> dict:
    """One run's audit, the same shape wherever it was read. log_text: the egress container's
    log, None where it cannot be read (Inspect's sandbox API reaches files, not logs);
    store_text: the gate's bounded store, None when unread; egress: what the engine says of
    the container (running, restarts, oom_killed; None where it is not known)."""
    parsed = parse_audit(merge(log_text or "", store_text))
    records = parsed["records"]
    return {"run": run, "offline": False,
            "egress": {**egress, "gate_restarts": sum(r.get("event") == GATE_RESTART
                                                      for r in records)},
            "records": records, "counts": summarise(records),
            "tunnels": parsed["tunnels"], "open_tunnels": parsed["open_tunnels"],
            "tunnels_counted": parsed["tunnels_counted"],
            "unparsed_lines": parsed["unparsed"],
            # Squid's own records (its denials of hosts off the allowlist, plain HTTP): from
            # the store where it keeps them, else from the log where it was read.
            "proxy_log": _proxy_log(log_text, store_text),
            "store": {"read": store_text is not None, "path": STORE,
                      "bytes": len(store_text.encode()) if store_text is not None else None,
                      "full": any(r.get("event") == AUDIT_FULL for r in records),
                      "suppressed": sum(r.get("count") or 0 for r in records
                                        if r.get("event") == SUPPRESSED)}}


def offline(run: str, note: str) -> dict:
    """The audit of a run with no way out (an offline run, an Apptainer instance): no record, in
    report's shape, and a note saying why."""
    return {"run": run, "offline": True, "records": [], "counts": summarise([]),
            "tunnels": [], "open_tunnels": [], "unparsed_lines": 0, "note": note}


def main(argv: list[str] | None = None) -> int:
    """`python3 -m biotool_sandbox.audit STATE_DIR [LOG]`: the audit of a gate that ran without
    the engine (an Apptainer episode's own, hpc/episode-gate.sh), read from its run-state
    folder and log in `biotool-sandbox audit`'s shape. Standard library only, so a node's
    python3 runs it; exit 4 with one line when the store is missing or empty."""
    import sys
    from pathlib import Path

    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2):
        print("usage: python3 -m biotool_sandbox.audit STATE_DIR [LOG]", file=sys.stderr)
        return 2
    state = Path(args[0])
    try:
        store = (state / Path(STORE).name).read_text(encoding="utf-8", errors="replace")
        log = Path(args[1]).read_text(encoding="utf-8", errors="replace") if len(args) > 1 else None
    except OSError as exc:
        print(f"audit: the gate's store cannot be read ({exc})", file=sys.stderr)
        return 4
    if not store:  # the gate writes the store's header before it serves anything
        print(f"audit: the gate's store in {state} is empty", file=sys.stderr)
        return 4
    run = (state / "run-id").read_text().strip() if (state / "run-id").is_file() else None
    json.dump(report(run, log, store, {"running": False, "restarts": 0, "oom_killed": None}),
              sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
