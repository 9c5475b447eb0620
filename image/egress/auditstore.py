"""This run's audit as the gate keeps it: a file of its own, bounded, that the agent cannot
rotate away.

The container log (Docker's json-file, a few rotated files) is not an audit: an agent that
floods it with denied requests pushes the earlier records out. So every gate record also
goes to a store in the gate's own tmpfs (readable only by the proxy user, never mounted in
the sandbox), with three rules:

  - a flood is counted, not kept: past BURST records with the same key in one WINDOW (and
    past KEEP_WINDOWS bursts of a key in the run, so no kind of record grows the store for
    ever), the rest are counted in one `suppressed` record per key, written once and then
    updated in place (a slot of fixed length: the file never grows by a count), at most
    FLUSH_EVERY seconds behind and before anything else is recorded; past MAX_KEYS keys, a
    new key's records are counted under one key per source and decision. A key is made of
    fixed codes only (the event, the decision, the gate's reason code, the HTTP status),
    never of text the agent chose, so no agent can make each of its requests a flood of its
    own. Denied and paced requests, refused
    tunnels and hellos, and tunnel openings are counted so; a counted opening's close is
    counted with it. A counted flood of Squid's lines names every distinct destination it
    reached, in short `destinations` records appended as they come, up to DESTINATION_BYTES
    in the run; past them its slot keeps the latest DESTINATIONS and counts the rest, so no
    destination hides behind decoys sent before it, short of a flood of thousands of hosts
    that the record then shows;
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

import collections
import json
import os
import threading
import time

import audit
import auditwire

BURST = 20          # denied records kept per reason per window
WINDOW = 60.0       # seconds
RESERVE = 4096      # bytes kept for the final audit_full record
OWED = 2048         # bytes kept for the outcome of a decided request or the close of an opening (each under 1.5 KB)
MAX_BYTES = 16 << 20
DESTINATIONS = 16   # the latest distinct destinations a flood's slot keeps past DESTINATION_BYTES
DESTINATION_BYTES = 1 << 20  # bytes of the run's `destinations` records (each listed once)
LISTED_PER_RECORD = 64  # destinations in one such record
RECORD_ROOM = 256   # bytes charged for one such record beyond its destinations
KEPT, COUNTED = "kept", "counted"  # what write() did; "" when the store is full
HEADER = auditwire.STORE_HEADER  # the store's first line: which records it holds
FLUSH_EVERY = 2.0   # seconds between writes of what a flood's counters hold (flush_every)
KEEP_WINDOWS = 3    # a key keeps at most this many bursts in a run; past them, all is counted
OPEN_KEEP_WINDOWS = 100  # for tunnel openings (each owes its close): an honest long run's
MAX_KEYS = 64       # keys with a slot of their own; later keys share one per source and decision
SLOT_ROOM = 64      # bytes a slot keeps beyond its first text, for its numbers to grow


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


def _listed_bytes(path: str) -> int:
    """Bytes of the `destinations` records already in a store: a restarted gate's listing
    continues within the run's one DESTINATION_BYTES, never a fresh one."""
    marker = f'"event":"{auditwire.DESTINATIONS}"'.encode()
    with open(path, "rb") as fh:
        return sum(len(line) for line in fh if marker in line)


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

def _slot_text(line: str, length: int) -> str | None:
    """`line` (a record, newline-ended) padded with spaces inside its JSON object to `length`
    bytes, so it can replace a slot's text in place; None when it is longer."""
    pad = length - len(line)
    if pad < 0:
        return None
    return line[:-2] + " " * pad + line[-2:]  # `... }` + spaces before `}\n`


class Store:
    def __init__(self, path: str, max_bytes: int = MAX_BYTES, burst: int = BURST,
                 window: float = WINDOW, clock=time.time, holds: tuple[str, ...] = ("gate",)):
        self.path, self.max_bytes, self.burst, self.window = path, max_bytes, burst, window
        self.clock = clock
        self.lock = threading.Lock()
        self.window_start = clock()
        self.denied: dict[tuple, int] = {}      # flood key -> records this window
        self.kept: dict[tuple, int] = {}        # flood key -> records kept in the run
        # flood key -> {"n", "first", "last", "status", "reason", "sample", "slot", "listed",
        # "new", "latest", "more"}: what a flood's counted records were, for the run (its
        # slot's text and its `destinations` records)
        self.suppressed: dict[tuple, dict] = {}
        self.slots: dict[tuple, tuple[int, int]] = {}  # flood key -> (offset, length) in the file
        self.dirty: set[tuple] = set()          # keys whose slot is behind their counter
        self.owed = 0  # bytes kept back for outcomes and closes still to come
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.fh = os.fdopen(fd, "a", encoding="ascii")
        # A second descriptor without O_APPEND: Linux's pwrite appends on an O_APPEND one.
        self.slot_fd = os.open(path, os.O_WRONLY)
        # A restarted gate appends to what its run already recorded, and a full store stays full.
        self.size = self.opened_size = os.fstat(fd).st_size
        self.reopened = self.size > 0
        self.listed_bytes = _listed_bytes(path) if self.reopened else 0  # of DESTINATION_BYTES
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

    def _counted(self, key: tuple, c: dict, drop: int = 0) -> str:
        """The `suppressed` record of `key` as its slot holds it (less `drop` destinations)."""
        rec = {"time": round(c["last"], 3), "event": auditwire.SUPPRESSED, "of": key[1],
               "decision": key[2], "code": key[3], "reason": c["reason"], "count": c["n"],
               "first": round(c["first"], 3), "http_status": c["status"]}
        if key[0] != "gate":
            # One of the lines counted, as written: the reader classifies it as it does a
            # kept one (every line under one key reads the same). The agent chose the
            # destinations: those listed are in the slot's `destinations` records, and past
            # their budget the slot keeps the latest, with a count of the lines to the rest.
            latest = list(c["latest"].items())
            dropped = sum(lines for _, lines in latest[:drop])
            rec.update(source=key[0], of=None, code=None, slot=c["slot"],
                       line=c["sample"].rstrip("\n") if c["sample"] else None,
                       destinations=[d for d, _ in latest[drop:]],
                       destinations_more=c["more"] + dropped,
                       destinations_listed=c["written"])
        return self._line(rec)

    def _flush_suppressed(self) -> bool:
        """Each counted key's slot brought up to its counter: appended the first time (with
        room to grow), rewritten in place after; False when a new slot finds no room."""
        for key in sorted(self.dirty, key=repr):
            c = self.suppressed[key]
            if not self._list_new(c):
                return False
            if key not in self.slots:
                line = self._counted(key, c)
                room = SLOT_ROOM + (DESTINATIONS * (2 * 200 + 3) if key[0] != "gate" else 0)
                text = _slot_text(line, len(line) + room)
                offset = self.size
                if not self._append(text):
                    return False
                self.slots[key] = (offset, len(text))
            else:
                offset, length = self.slots[key]
                text = None
                for drop in range(len(c["latest"]) + 1):  # escapes can outgrow the room
                    text = _slot_text(self._counted(key, c, drop), length)
                    if text is not None:
                        break
                if text is None:
                    continue  # cannot happen (the room holds the numbers); the slot stands
                os.pwrite(self.slot_fd, text.encode("ascii"), offset)
            self.dirty.discard(key)
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
                if flood not in self.kept and flood not in self.suppressed and \
                        len(self.kept.keys() | self.suppressed.keys()) >= MAX_KEYS:
                    # Past MAX_KEYS kinds: one shared key per source and decision, so the
                    # slots stay bounded; its sample says what the first such record was.
                    flood = (flood[0], flood[1], flood[2], "other-kinds", None)
                    counted_now = True
                self.denied[flood] = self.denied.get(flood, 0) + 1
                windows = OPEN_KEEP_WINDOWS if flood[3] == "tunnel-open" else KEEP_WINDOWS
                if counted_now or self.denied[flood] > self.burst or \
                        self.kept.get(flood, 0) >= self.burst * windows:
                    c = self.suppressed.get(flood)
                    if c is None:
                        c = self.suppressed[flood] = {
                            "n": 0, "first": now, "last": now, "status": status,
                            "reason": reason, "sample": sample, "slot": self._slot_id(),
                            "listed": set(), "new": [], "written": 0,
                            "latest": collections.OrderedDict(), "more": 0}
                    c["n"] += 1
                    c["last"] = now
                    self.dirty.add(flood)
                    if sample is not None:
                        self._note_destination(c, _destination(sample))
                    return COUNTED
            if (self.dirty and not self._flush_suppressed()) or \
                    not self._append(text(), owes=owes):
                self._close(now)
                return ""
            self.owed += OWED if owes else 0
            if flood is not None:
                self.kept[flood] = self.kept.get(flood, 0) + 1
            return KEPT

    def _slot_id(self) -> str:
        """A name for a new counted flood that no other in the store has: the store's size when
        this gate opened it (a restarted gate opens a larger one), and the flood's number."""
        return f"{self.opened_size}-{len(self.suppressed)}"

    def _note_destination(self, c: dict, dest: str) -> None:
        """List `dest` for a counted flood once, while DESTINATION_BYTES allows; past it, keep
        it among the flood's latest DESTINATIONS, and count the lines of those it pushes out."""
        if dest in c["listed"]:
            return
        cost = len(json.dumps(dest)) + 1 + (RECORD_ROOM if len(c["new"]) % LISTED_PER_RECORD == 0
                                             else 0)
        if self.listed_bytes + cost <= DESTINATION_BYTES:
            self.listed_bytes += cost
            c["listed"].add(dest)
            c["new"].append(dest)
            return
        latest = c["latest"]
        latest[dest] = latest.pop(dest, 0) + 1  # moved to the end: the latest
        if len(latest) > DESTINATIONS:
            c["more"] += latest.popitem(last=False)[1]

    def _list_new(self, c: dict) -> bool:
        """Append a counted flood's newly reached destinations (at most LISTED_PER_RECORD a
        record); False when there is no room. Each is listed once in the run, so only a new
        destination grows the store, and DESTINATION_BYTES bounds that."""
        while c["new"]:
            batch = c["new"][:LISTED_PER_RECORD]
            line = self._line({"time": round(c["last"], 3), "event": auditwire.DESTINATIONS,
                               "source": "proxy", "slot": c["slot"], "destinations": batch})
            if not self._append(line):
                return False
            del c["new"][:len(batch)]
            c["written"] += len(batch)
        return True

    def _close(self, now: float) -> None:
        self.full = True
        self._append(self._line({"time": round(now, 3), "event": auditwire.AUDIT_FULL,
                                 "decision": "denied", "bytes": self.size,
                                 "reason": "this run's audit store is full: no further request "
                                           "of the run is relayed"}), final=True)

    def flush(self) -> None:
        """Write what is still counted (at exit, or when the audit is read)."""
        with self.lock:
            if not self.full and self.dirty and not self._flush_suppressed():
                self._close(self.clock())


def flush_every(store: Store, stop: threading.Event, interval: float = FLUSH_EVERY) -> None:
    """Write a flood's counts every `interval` seconds until `stop` is set: a reader of the
    file (Inspect's sandbox API reads it as it stands) sees them within that, not at exit."""
    while not stop.wait(interval):
        store.flush()
