"""This run's audit as the gate keeps it: a file of its own, bounded, that the agent cannot
rotate away.

The container log (Docker's json-file, a few rotated files) is not an audit: an agent that
floods it with denied requests pushes the earlier records out. So every gate record also
goes to a store in the gate's own tmpfs (readable only by the proxy user, never mounted in
the sandbox), with three rules:

  - a flood is counted, not kept: past BURST denied records with the same reason in one
    WINDOW, the rest are counted and written as one `suppressed` record when the window
    ends (or when anything else is recorded);
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

BURST = 20          # denied records kept per reason per window
WINDOW = 60.0       # seconds
RESERVE = 4096      # bytes kept for the final audit_full record
MAX_BYTES = 16 << 20
HEADER = "BIOTOOL_STORE"  # the store's first line: which records it holds
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
    with open(path, "rb") as fh:
        fh.seek(max(0, os.fstat(fh.fileno()).st_size - 1024))
        return b'"event":"audit_full"' in fh.read()


class Store:
    def __init__(self, path: str, max_bytes: int = MAX_BYTES, burst: int = BURST,
                 window: float = WINDOW, clock=time.time, holds: tuple[str, ...] = ("gate",)):
        self.path, self.max_bytes, self.burst, self.window = path, max_bytes, burst, window
        self.clock = clock
        self.lock = threading.Lock()
        self.window_start = clock()
        self.denied: dict[tuple, int] = {}      # (source, decision, reason) -> records this window
        # (source, decision, reason) -> [count, first, last, status], and for Squid's lines
        # the last one counted
        self.suppressed: dict[tuple, list] = {}
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
            self._append(f"{HEADER} {json.dumps({'holds': list(holds)}, separators=(',', ':'))}\n")
        if not self.full and self.size > self.max_bytes - RESERVE:
            self._close(clock())

    def _line(self, rec: dict) -> str:
        return audit.line(audit.GATE, rec)

    def _append(self, line: str, final: bool = False) -> bool:
        limit = self.max_bytes if final else self.max_bytes - RESERVE
        if self.size + len(line) > limit:
            return False
        self.fh.write(line)
        self.fh.flush()
        self.size += len(line)
        return True

    def _flush_suppressed(self) -> bool:
        for (source, decision, reason), (n, first, last, status, *sample) in \
                sorted(self.suppressed.items()):
            rec = {"time": round(last, 3), "event": "suppressed", "decision": decision,
                   "reason": reason, "count": n, "first": round(first, 3), "http_status": status}
            if source != "gate":
                # One of the lines counted, as written: the reader classifies it as it does a
                # kept one (every line under one key reads the same).
                rec.update(source=source, line=sample[0].rstrip("\n") if sample else None)
            if not self._append(self._line(rec)):
                return False
        self.suppressed.clear()
        return True

    def write(self, rec: dict) -> bool:
        """Keep `rec` (a finished gate record); False when the store is full (nothing kept)."""
        flood = None
        if rec.get("decision") in ("denied", "paced") and rec.get("event") == "request":
            flood = ("gate", rec["decision"], str(rec.get("reason"))[:200])
        return self._keep(lambda: self._line(rec), rec.get("time") or self.clock(), flood,
                          rec.get("http_status"), None)

    def write_proxy(self, line: str, reason: str, status: int | None,
                    decision: str = "denied") -> bool:
        """Keep one of Squid's records, `line` as Squid wrote it (squidlog.py has checked it),
        counted past the burst under `reason`. A store that does not say it holds them (one
        begun before this version) leaves them to the container log."""
        if "proxy" not in self.holds:
            return True
        return self._keep(lambda: line, self.clock(), ("proxy", decision, reason[:200]), status,
                          line)

    def _keep(self, text, now: float, flood: tuple | None, status, sample: str | None) -> bool:
        """Append text() unless the store is full or `flood` (its key) is past its burst."""
        with self.lock:
            if self.full:
                return False
            if now - self.window_start >= self.window:
                self.window_start, self.denied = now, {}
            if flood is not None:
                self.denied[flood] = self.denied.get(flood, 0) + 1
                if self.denied[flood] > self.burst:
                    n, first = self.suppressed.get(flood, [0, now])[:2]
                    self.suppressed[flood] = [n + 1, first, now, status] + \
                        ([sample] if sample is not None else [])
                    return True
            if (self.suppressed and not self._flush_suppressed()) or not self._append(text()):
                self._close(now)
                return False
            return True

    def _close(self, now: float) -> None:
        self.full = True
        self._append(self._line({"time": round(now, 3), "event": "audit_full",
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
