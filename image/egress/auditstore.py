"""This run's audit as the gate keeps it: a file of its own, bounded, that the agent cannot
rotate away.

The container log (Docker's json-file, a few rotated files) is not an audit: an agent that
floods it with denied requests pushes the earlier records out. So every gate record also
goes to a store in the gate's own tmpfs (readable only by the proxy user, never mounted in
the sandbox), with three rules:

  - a flood is counted, not kept: past BURST records with the same key in one WINDOW, the
    rest are counted and written as one `suppressed` record when the window ends (or when
    anything else is recorded). A key is made of fixed codes only (the event, the decision,
    the gate's reason code, the HTTP status), never of text the agent chose, so no agent can
    make each of its requests a flood of its own. Denied and paced requests, refused
    tunnels and hellos, and tunnel openings are counted so; a counted opening's close is
    counted with it;
  - what must pair is kept whole: a request's `decided` record (written once it holds its
    NCBI slot) reserves room for its outcome, and a kept opening for its close, so neither
    half is ever alone in the store for want of room or by being counted;
  - it is bounded: past `max_bytes` nothing more is kept, so instead of forgetting old
    records the store refuses new ones, and the gate then refuses every request of the run
    (503) after one final `audit_full` record, for which room is kept;
  - a record that could not be stored means its request is not relayed (the gate checks).

Squid's own records (its denials, which never reach the gate) come in too, through
squidlog.py, as Squid wrote them, under the same three rules. A store that keeps them says so
in its first line (`BIOTOOL_STORE {"holds": ["gate", "proxy"]}`), so a reader takes Squid's
records from the store rather than from the container log, and never counts one twice.

Standard library only (it runs in the egress image beside gatekeeper.py); the gate's lines
are audit.py's, Squid's are render.py's.
"""

from __future__ import annotations

import json
import os
import threading
import time

import audit
from biotool_sandbox import auditwire  # in the egress image: beside this file

BURST = 20          # denied records kept per reason per window
WINDOW = 60.0       # seconds
RESERVE = 4096      # bytes kept for the final audit_full record
OWED = 2048         # bytes kept for the outcome of a decided request or the close of an opening (each under 1.5 KB)
MAX_BYTES = 16 << 20
DESTINATIONS = 16   # distinct destinations a counted flood of Squid's lines keeps per window
KEPT, COUNTED = "kept", "counted"  # what write() did; "" when the store is full
HEADER = auditwire.STORE_HEADER  # the store's first line: which records it holds
FLUSH_EVERY = 2.0   # seconds between writes of what a flood's counters hold (flush_every)


def _holds(path: str) -> tuple[str, ...]:
    """What an existing store says it holds: a store without the header holds the gate's only."""
    with open(path, "rb") as fh:
        first = fh.readline(4096).decode("ascii", "replace")
    if first.startswith(HEADER + " "):
        try:
            return tuple(json.loads(first[len(HEADER) + 1:])["holds"])
        except (ValueError, KeyError, TypeError):
            pass
    return ("gate",)


def _ends_full(path: str) -> bool:
    # Anywhere, not only at the end: outcomes owed room may follow the final record.
    with open(path, "rb") as fh:
        return any(f'"event":"{auditwire.AUDIT_FULL}"'.encode() in line for line in fh)


def flood_key(rec: dict) -> tuple | None:
    """The key a gate record is counted under past the burst, from fixed codes only (None:
    always kept). The reason's text can hold what the agent sent (a parameter name, a path,
    a Host header), so it is never part of a key; the code says which rule refused it."""
    event, decision = rec.get("event"), rec.get("decision")
    status = rec.get("http_status") if isinstance(rec.get("http_status"), int) else None
    code = rec.get("code") if isinstance(rec.get("code"), str) else "uncoded"
    if event in (auditwire.REQUEST, auditwire.TUNNEL, auditwire.TLS) and decision in ("denied", "paced"):
        return ("gate", event, decision, code[:64], status)
    if event == auditwire.OPEN:
        return ("gate", auditwire.OPEN, "allowed", "tunnel-open", None)
    return None


def _destination(line: str) -> str:
    """The URL field of one of Squid's lines (host:port for a CONNECT), as Squid escaped it."""
    parts = line.split(" ")  # prefix, time, client, method, url, ... (render.LOG_FIELDS)
    return parts[4][:200] if len(parts) > 4 else ""

class Store:
    def __init__(self, path: str, max_bytes: int = MAX_BYTES, burst: int = BURST,
                 window: float = WINDOW, clock=time.time, holds: tuple[str, ...] = ("gate",)):
        self.path, self.max_bytes, self.burst, self.window = path, max_bytes, burst, window
        self.clock = clock
        self.lock = threading.Lock()
        self.window_start = clock()
        self.denied: dict[tuple, int] = {}      # flood key -> records this window
        # flood key -> {"n", "first", "last", "status", "reason", "sample", "destinations",
        # "more"}: what a flood's counted records were
        self.suppressed: dict[tuple, dict] = {}
        self.owed = 0  # bytes kept back for outcomes and closes still to come
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.fh = os.fdopen(fd, "a", encoding="ascii")
        # A restarted gate appends to what its run already recorded, and a full store stays full.
        self.size = os.fstat(fd).st_size
        self.reopened = self.size > 0
        self.full = _ends_full(path)
        # The header only on a new store: an older one's readers already take Squid's records
        # from the log, and a restart must not change what the store is said to hold.
        self.holds = _holds(path) if self.reopened else holds
        if not self.reopened:
            # `started`: when the run's egress began, so a verifier can refuse a record dated
            # before it (docs/harbor.md).
            head = {"holds": list(holds), "started": round(clock(), 3)}
            self._append(f"{HEADER} {json.dumps(head, separators=(',', ':'))}\n")
        if not self.full and self.size > self.max_bytes - RESERVE:
            self._close(clock())

    def _line(self, rec: dict) -> str:
        return audit.line(audit.GATE, rec)

    def _append(self, line: str, final: bool = False, owed: bool = False, owes: bool = False) -> bool:
        """Append `line` within the limit: the whole store for the final record, less RESERVE
        for any other, less the room still owed (and OWED more, when it `owes` a record)
        for all but the records that room was kept for."""
        limit = self.max_bytes if final else self.max_bytes - RESERVE - (
            0 if owed else self.owed + (OWED if owes else 0))
        if self.size + len(line) > limit:
            return False
        self.fh.write(line)
        self.fh.flush()
        self.size += len(line)
        return True

    def _flush_suppressed(self) -> bool:
        for key, c in sorted(self.suppressed.items(), key=lambda kv: repr(kv[0])):
            rec = {"time": round(c["last"], 3), "event": auditwire.SUPPRESSED, "of": key[1],
                   "decision": key[2], "code": key[3], "reason": c["reason"], "count": c["n"],
                   "first": round(c["first"], 3), "http_status": c["status"]}
            if key[0] != "gate":
                # One of the lines counted, as written: the reader classifies it as it does a
                # kept one (every line under one key reads the same). The agent chose the
                # destinations, so each distinct one is kept (up to DESTINATIONS), not one.
                rec.update(source=key[0], of=None, code=None,
                           line=c["sample"].rstrip("\n") if c["sample"] else None,
                           destinations=c["destinations"], destinations_more=c["more"])
            if not self._append(self._line(rec)):
                return False
        self.suppressed.clear()
        return True

    def write(self, rec: dict, how: str = "flood") -> str:
        """Keep `rec` (a finished gate record): KEPT, COUNTED (past its key's burst), or ""
        when the store is full (nothing kept). `how`: "flood" (counted past the burst by its
        flood_key), "owed" (an outcome or a close that room was kept for: never counted),
        "count" (counted at once: the close of an opening that was counted)."""
        flood = flood_key(rec) if how == "flood" else None
        if how == "count":
            flood = ("gate", str(rec.get("event")), str(rec.get("decision")), "tunnel-close", None)
        owes = rec.get("event") == auditwire.DECIDED or (rec.get("event") == auditwire.OPEN
                                                      and how == "flood")
        return self._keep(lambda: self._line(rec), rec.get("time") or self.clock(), flood,
                          rec.get("http_status"), None, reason=str(rec.get("reason"))[:200],
                          owed=how == "owed", owes=owes, counted_now=how == "count")

    def write_proxy(self, line: str, reason: str, status: int | None,
                    decision: str = "denied") -> bool:
        """Keep one of Squid's records, `line` as Squid wrote it (squidlog.py has checked it),
        counted past the burst under `reason` (squidlog's key, of bounded fields only). A
        store that does not say it holds them (one begun before this version) leaves them to
        the container log."""
        if "proxy" not in self.holds:
            return True
        return bool(self._keep(lambda: line, self.clock(), ("proxy", "proxy", decision, reason[:200],
                                                             status), status, line, reason=reason))

    def _keep(self, text, now: float, flood: tuple | None, status, sample: str | None, *,
              reason: str, owed: bool = False, owes: bool = False,
              counted_now: bool = False) -> str:
        """Append text() unless the store is full or `flood` (its key) is past its burst."""
        with self.lock:
            if owed:  # its room was kept: written even into a full store, never counted
                self.owed = max(0, self.owed - OWED)
                return KEPT if self._append(text(), owed=True) else ""
            if self.full:
                return ""
            if now - self.window_start >= self.window:
                self.window_start, self.denied = now, {}
            if flood is not None:
                self.denied[flood] = self.denied.get(flood, 0) + 1
                if counted_now or self.denied[flood] > self.burst:
                    c = self.suppressed.setdefault(flood, {
                        "n": 0, "first": now, "last": now, "status": status, "reason": reason,
                        "sample": sample, "destinations": [], "more": 0})
                    c["n"] += 1
                    c["last"] = now
                    if sample is not None:
                        dest = _destination(sample)
                        if dest not in c["destinations"]:
                            if len(c["destinations"]) < DESTINATIONS:
                                c["destinations"].append(dest)
                            else:
                                c["more"] += 1
                    return COUNTED
            if (self.suppressed and not self._flush_suppressed()) or \
                    not self._append(text(), owes=owes):
                self._close(now)
                return ""
            self.owed += OWED if owes else 0
            return KEPT

    def _close(self, now: float) -> None:
        self.full = True
        self._append(self._line({"time": round(now, 3), "event": auditwire.AUDIT_FULL,
                                 "decision": "denied", "bytes": self.size,
                                 "reason": "this run's audit store is full: no further request "
                                           "of the run is relayed"}), final=True)

    def flush(self) -> None:
        """Write what is still counted (at exit, or when the audit is read)."""
        with self.lock:
            if not self.full and self.suppressed and not self._flush_suppressed():
                self._close(self.clock())


def flush_every(store: Store, stop: threading.Event, interval: float = FLUSH_EVERY) -> None:
    """Write a flood's counts every `interval` seconds until `stop` is set: a reader of the
    file (Inspect's sandbox API reads it as it stands) sees them within that, not at exit."""
    while not stop.wait(interval):
        store.flush()
