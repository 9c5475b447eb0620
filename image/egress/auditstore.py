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

Standard library only (it runs in the egress image beside gatekeeper.py); the lines are
audit.py's.
"""

from __future__ import annotations

import os
import threading
import time

import audit

BURST = 20          # denied records kept per reason per window
WINDOW = 60.0       # seconds
RESERVE = 4096      # bytes kept for the final audit_full record
MAX_BYTES = 16 << 20


def _ends_full(path: str) -> bool:
    with open(path, "rb") as fh:
        fh.seek(max(0, os.fstat(fh.fileno()).st_size - 1024))
        return b'"event":"audit_full"' in fh.read()


class Store:
    def __init__(self, path: str, max_bytes: int = MAX_BYTES, burst: int = BURST,
                 window: float = WINDOW, clock=time.time):
        self.path, self.max_bytes, self.burst, self.window = path, max_bytes, burst, window
        self.clock = clock
        self.lock = threading.Lock()
        self.window_start = clock()
        self.denied: dict[tuple, int] = {}      # (decision, reason) -> records in this window
        self.suppressed: dict[tuple, list] = {}  # (decision, reason) -> [count, first, last, status]
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.fh = os.fdopen(fd, "a", encoding="ascii")
        # A restarted gate appends to what its run already recorded, and a full store stays full.
        self.size = os.fstat(fd).st_size
        self.full = _ends_full(path)
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
        for (decision, reason), (n, first, last, status) in sorted(self.suppressed.items()):
            rec = {"time": round(last, 3), "event": "suppressed", "decision": decision,
                   "reason": reason, "count": n, "first": round(first, 3), "http_status": status}
            if not self._append(self._line(rec)):
                return False
        self.suppressed.clear()
        return True

    def write(self, rec: dict) -> bool:
        """Keep `rec` (a finished gate record); False when the store is full (nothing kept)."""
        with self.lock:
            if self.full:
                return False
            now = rec.get("time") or self.clock()
            if now - self.window_start >= self.window:
                self.window_start, self.denied = now, {}
            if rec.get("decision") in ("denied", "paced") and rec.get("event") == "request":
                key = (rec["decision"], str(rec.get("reason"))[:200])
                self.denied[key] = self.denied.get(key, 0) + 1
                if self.denied[key] > self.burst:
                    n, first, _, _ = self.suppressed.get(key, [0, now, now, None])
                    self.suppressed[key] = [n + 1, first, now, rec.get("http_status")]
                    return True
            if (self.suppressed and not self._flush_suppressed()) or \
                    not self._append(self._line(rec)):
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
