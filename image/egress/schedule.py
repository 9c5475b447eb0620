"""NCBI's contact rule held host-wide by the egress proxies: one fair, bounded schedule file.

Every run's egress gate (gate.py), and the site's NCBI relay (relay.py) for its gates, asks
here before sending a request to NCBI (the interval: biotool/ncbirule.py). The file lives on
a volume mounted only in egress containers (never in a sandbox), so no agent can read, write,
lock or plant anything in it. It is still treated as untrusted input: it is opened, locked
within a deadline and read size-bounded by biotool/lockedstate.py (the mechanism biotool's
client-side pacing uses too), validated here, and damage is read as "a contact just
happened" (wait one interval), never as "never" or "forever".

NCBI's rule is about what arrives at NCBI, so a grant is not the contact: a slot granted at
T reserves the schedule until T + CONNECT_BOUND_S (the longest the caller may take to
connect and write; upstream.py gives up past it), and once the request is written the caller
stamps the real contact time (`stamp`), from which the next interval counts. Two requests
whose connects differ in length are still an interval apart where NCBI reads them.

Fairness: when the interval has passed, the slot goes to the waiting run served least
recently, so a run that always asks cannot starve one that asks now and then. A waiter that
stops renewing its entry (a crashed gate) drops out after STALE_S.

Declared runs: a run whose egress declares BLAST (settings.BLAST) takes a place in the
`blast` table at its start (`declare`), refused (Full) when one more would make a round of
declared runs longer than the shortest hold among them (ncbirule.sustained); its gate renews
the place every RENEW_S and gives it up at its stop, and a place not renewed for LEASE_S is
free again. A waiting declared run is served before any undeclared one, so runs that never
declared (or flood) cannot push a declared run past its hold.
Standard library only (it runs in the egress image).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import settings
from biotool import lockedstate, ncbirule

STATE = "ncbi-schedule.json"
MAX_STATE_BYTES = 64 << 10  # ~1,000 runs; anything larger is damage, not a schedule
MAX_RUNS = 512              # entries kept per table; the oldest go first
STALE_S = 5.0               # a waiter that has not renewed its entry for this long is gone
SERVED_MEMORY_S = 3600.0    # how long a run's last turn is remembered for fairness
LOCK_WAIT_S = 2.0           # the longest a gate waits for the lock before trying again later
MAX_AHEAD_S = 120.0         # a last contact further ahead than this is a wrong clock or damage
CONNECT_BOUND_S = 20.0      # connect, TLS and the request's write: upstream.py's own bound
LEASE_S = 60.0              # a declared run's place not renewed for this long is free again
RENEW_S = 15.0              # how often a declared run's gate renews its place


class Busy(Exception):
    """No slot before the caller's hold deadline; retry_after says when to ask again."""

    def __init__(self, retry_after: float, why: str):
        super().__init__(why)
        self.retry_after = retry_after


class Full(Exception):
    """One more declared BLAST run would not be served within the holds of those running."""


def grant(state: dict, run: str, now: float, min_interval: float, reserve: float) -> float | None:
    """One look at the validated schedule `state` (changed in place) by `run` at `now`: the
    slot (now) when the interval has passed since the last contact and `run` is the waiter
    to serve (a declared run before any other, then the one served least recently), the
    schedule then reserved for `reserve` s; else None (it waits)."""
    waiting = state["waiting"]
    since = waiting.get(run, (now, now))[0]
    waiting[run] = (since, now)
    if now < state["last_contact"] + min_interval:
        return None
    declared = state.get("blast") or {}
    turn = min(waiting, key=lambda r: (r not in declared, state["served"].get(r, -1e18),
                                       waiting[r][0], r))
    if turn != run:
        return None
    state["last_contact"] = now + reserve  # until the write's stamp says when
    state["served"][run] = now
    waiting.pop(run)
    return now


def contact_after_write(last: float, granted: float, written: float, now: float,
                        reserve: float) -> float:
    """The last contact once a request granted at `granted` was written at `written`: the
    write time where the schedule still holds that grant's reservation, else whichever of
    the two is later (another grant came since: never earlier than it)."""
    ours = abs(last - (granted + reserve)) < 1e-6
    return min(written, now) if ours else max(last, min(written, now))


@dataclass
class Schedule:
    directory: Path
    min_interval: float = ncbirule.MIN_INTERVAL_S
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    tick: float = 0.2
    reserve: float = CONNECT_BOUND_S

    def read(self, raw: bytes, now: float) -> dict:
        """The validated state; anything empty, damaged or oversized reads as a contact made
        now. Empty too: the host-wide volume is a tmpfs that Docker empties when the host's last
        egress stops (and a reboot empties), while the last contact may have been a moment
        before, so "empty" can never mean "no contact yet" (the gate and the relay alike)."""
        fresh = {"last_contact": now, "served": {}, "waiting": {}, "blast": {}}
        if not raw.strip() or len(raw) > MAX_STATE_BYTES:
            return fresh
        try:
            doc = json.loads(raw)
            last = float(doc["last_contact"])
            served = {str(k)[:64]: float(v) for k, v in dict(doc.get("served") or {}).items()}
            waiting = {str(k)[:64]: (float(v[0]), float(v[1]))
                       for k, v in dict(doc.get("waiting") or {}).items()}
            blast = {str(k)[:64]: (float(v[0]), float(v[1]))
                     for k, v in dict(doc.get("blast") or {}).items()}
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            return fresh
        if not math.isfinite(last) or last > now + MAX_AHEAD_S:
            last = now
        served = {k: v for k, v in served.items()
                  if math.isfinite(v) and now - SERVED_MEMORY_S < v <= now + MAX_AHEAD_S}
        waiting = {k: (s, b) for k, (s, b) in waiting.items()
                   if math.isfinite(s) and math.isfinite(b) and now - STALE_S < b <= now + 1}
        # A place is (hold, renewed): damage reads as no place, never as one that holds forever.
        blast = {k: (h, r) for k, (h, r) in blast.items()
                 if ncbirule.MIN_HOLD_S <= h <= ncbirule.MAX_HOLD_S
                 and now - LEASE_S < r <= now + MAX_AHEAD_S}
        # Bounded tables: keep the most recent entries only.
        served = dict(sorted(served.items(), key=lambda kv: kv[1])[-MAX_RUNS:])
        waiting = dict(sorted(waiting.items(), key=lambda kv: kv[1][1])[-MAX_RUNS:])
        blast = dict(sorted(blast.items(), key=lambda kv: kv[1][1])[-MAX_RUNS:])
        return {"last_contact": last, "served": served, "waiting": waiting, "blast": blast}

    def _write(self, locked: "lockedstate.Locked", state: dict) -> None:
        locked.write(json.dumps({k: {r: list(v) for r, v in t.items()}
                                 if k in ("waiting", "blast") else t
                                 for k, t in state.items()}).encode())

    def _step(self, run: str, leave: bool = False) -> float | None:
        """One locked look at the schedule: the slot time if this run may contact NCBI now
        (None also when the lock stays taken past LOCK_WAIT_S: the caller asks again)."""
        try:
            with lockedstate.locked(self.directory / STATE, LOCK_WAIT_S) as locked:
                return self._turn(locked, run, leave)
        except lockedstate.LockTimeout:
            return None

    def _turn(self, locked: "lockedstate.Locked", run: str, leave: bool) -> float | None:
        now = self.clock()
        state = self.read(locked.read(MAX_STATE_BYTES), now)
        if leave:
            state["waiting"].pop(run, None)
            got = None
        else:
            got = grant(state, run, now, self.min_interval, self.reserve)
        self._write(locked, state)
        return got

    def begin(self) -> None:
        """At a start (the relay's, a gate's): an empty (or missing) schedule is written as a
        contact made now (read's own rule), so the interval counts from the start rather than
        from the first request's ask, and a restart that lost it never lets a request out
        early."""
        with lockedstate.locked(self.directory / STATE, LOCK_WAIT_S) as locked:
            raw = locked.read(MAX_STATE_BYTES)
            if not raw.strip():
                self._write(locked, self.read(raw, self.clock()))

    def stamp(self, granted: float, written: float) -> None:
        """The request granted at `granted` was written at `written`: the contact counts from
        then (earlier than the reservation, never earlier than a later grant's)."""
        try:
            with lockedstate.locked(self.directory / STATE, LOCK_WAIT_S) as locked:
                now = self.clock()
                state = self.read(locked.read(MAX_STATE_BYTES), now)
                state["last_contact"] = contact_after_write(state["last_contact"], granted,
                                                            written, now, self.reserve)
                self._write(locked, state)
        except lockedstate.LockTimeout:
            pass  # the reservation stands: later, never sooner

    def declare(self, run: str, hold_s: float) -> int:
        """Take (or renew) `run`'s place as a declared BLAST run; the number of declared runs
        then, or Full when a new place would not be served within every declared run's hold.
        LockTimeout and OSError pass on: a schedule that cannot be read admits no one."""
        with lockedstate.locked(self.directory / STATE, LOCK_WAIT_S) as locked:
            now = self.clock()
            state = self.read(locked.read(MAX_STATE_BYTES), now)
            places = state["blast"]
            if run not in places:
                holds = [h for h, _ in places.values()] + [hold_s]
                if len(places) + 1 > ncbirule.sustained(holds):
                    raise Full(
                        f"this host's NCBI schedule already serves {len(places)} run(s) that "
                        f"declared BLAST, and it sustains {ncbirule.sustained(holds)} at a hold "
                        f"of {min(holds):g} s (one NCBI request every {ncbirule.SLOT_S:g} s, "
                        f"each run once a round): start this run when one of them ends, or "
                        f"give the runs a longer hold ({settings.HOLD.name}, at most "
                        f"{ncbirule.MAX_HOLD_S:g} s)")
            places[run] = (hold_s, now)
            self._write(locked, state)
            return len(places)

    def release(self, run: str) -> None:
        """Give up `run`'s place (its gate stopping); a place left behind frees after LEASE_S."""
        with lockedstate.locked(self.directory / STATE, LOCK_WAIT_S) as locked:
            state = self.read(locked.read(MAX_STATE_BYTES), self.clock())
            if state["blast"].pop(run, None) is not None:
                self._write(locked, state)

    def acquire(self, run: str, hold_s: float) -> float:
        """Wait (at most hold_s) for this run's fair turn; the slot time, else Busy."""
        end = self.clock() + hold_s
        while True:
            slot = self._step(run)
            if slot is not None:
                return slot
            if self.clock() + self.tick > end:
                self._step(run, leave=True)
                raise Busy(self.min_interval, f"no NCBI contact slot free within {hold_s:.0f} s "
                                              f"(NCBI allows one request every "
                                              f"{self.min_interval:.0f} s per host)")
            self.sleep(self.tick)
