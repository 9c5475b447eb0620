"""NCBI's request pacing, polite on the client side: a file-locked schedule of contact slots.

NCBI's rule (biotool/ncbirule.py: one contact every 10 s, one poll per RID a minute) is kept
here for every biotool process of one sandbox: each reserves its next slot in one small JSON
file (in the container's own temp dir) under an exclusive flock (biotool/lockedstate.py, the
mechanism the egress gate's host-wide schedule uses too), so its own processes do not trip the
rule. The rule is *enforced* outside the agent's reach, host-wide, by the egress gate
(image/egress/); this file is private to the user and shared with no other run.
Wall-clock time is used because monotonic clocks are not comparable across processes.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from biotool import lockedstate, ncbirule
from biotool.output import ToolFailure
from biotool.settings import NCBI_PACING_DIR

STATE = "ncbi-pacing.json"
POLL_MEMORY_S = 86400.0  # NCBI keeps RIDs about a day; older poll records are dropped
MAX_AHEAD_S = 3600.0     # a reservation this far ahead means a damaged file (360 queued contacts)
MAX_STATE_BYTES = 1 << 20  # a schedule larger than this is damage, read as "a contact just now"
LOCK_WAIT_S = 30.0         # the longest a process waits for the schedule's lock


class PastDeadline(Exception):
    """The next permitted slot falls after the caller's deadline; nothing was reserved."""

    def __init__(self, slot: float):
        super().__init__(f"next permitted contact at {slot:.1f}")
        self.slot = slot


def pacing_dir() -> Path:
    """BIOTOOL_NCBI_PACING_DIR, else one directory in the system temp dir.

    Not under the cache root: two processes with different BIOTOOL_CACHE settings must still
    share one schedule, and the temp dir is what every process in a container shares. It is
    politeness only: the egress gate enforces NCBI's rules whatever this directory holds.
    """
    import tempfile

    return NCBI_PACING_DIR.get() or Path(tempfile.gettempdir()) / "biotool-ncbi-pacing"


@dataclass
class Pacer:
    directory: Path
    min_interval: float = ncbirule.MIN_INTERVAL_S
    poll_interval: float = ncbirule.POLL_INTERVAL_S
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep

    def _read_state(self, raw: bytes, now: float) -> tuple[float, dict]:
        """(last contact, {rid: last poll}) from the file; damage errs on the side of waiting."""
        try:
            state = json.loads(raw) if raw.strip() else {}
            if not isinstance(state, dict):
                raise ValueError("not an object")
            last = float(state.get("last_contact", -1e18))
            polls = state.get("polls") or {}
            if not isinstance(polls, dict):
                raise ValueError("polls is not an object")
            polls = {str(k): float(v) for k, v in polls.items()}
            if not math.isfinite(last) or any(not math.isfinite(v) for v in polls.values()):
                raise ValueError("not finite")
        except (ValueError, TypeError):
            # A damaged schedule (a writer killed mid-write): assume a contact just happened.
            return now, {}
        if last > now + MAX_AHEAD_S:
            # A slot further ahead than any real queue of processes: a wrong clock or a forged
            # file; waiting on it would stall every sandbox sharing the volume.
            last = now
        polls = {k: min(v, now + MAX_AHEAD_S) for k, v in polls.items()
                 if now - v < POLL_MEMORY_S}
        return last, polls

    def reserve(self, rid: str | None = None, not_before: float = 0.0,
                deadline: float | None = None) -> float:
        """Reserve the earliest permitted contact slot (a poll of `rid` if given); no waiting.

        A schedule that cannot be opened, locked or written stops the search (exit 4) rather
        than pacing only this process.
        """
        path = self.directory / STATE
        try:
            new_dir = not self.directory.is_dir()
            if new_dir:
                self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            with lockedstate.locked(path, LOCK_WAIT_S, poll_s=0.05) as state:
                # A schedule missing from a directory that already existed was removed,
                # perhaps just after a contact: assume one happened rather than that none did.
                return self._reserve(state, state.created and not new_dir, rid, not_before,
                                     deadline)
        except lockedstate.NotRegular:
            raise ToolFailure(f"NCBI pacing schedule {path}: not a regular file; nothing was "
                              f"sent (remove it, or set BIOTOOL_NCBI_PACING_DIR)") from None
        except lockedstate.LockTimeout:
            raise ToolFailure(f"NCBI pacing schedule {path}: still locked by another process "
                              f"after {LOCK_WAIT_S:.0f} s; nothing was sent") from None
        except OSError as exc:
            raise ToolFailure(f"NCBI pacing schedule {path}: cannot open it for writing "
                              f"({exc.strerror or exc}); the pacing rules cannot be held "
                              f"across processes, so nothing was sent. Set "
                              f"BIOTOOL_NCBI_PACING_DIR to a writable directory shared by "
                              f"every biotool process") from None

    def _reserve(self, state: "lockedstate.Locked", removed: bool, rid: str | None,
                 not_before: float, deadline: float | None) -> float:
        raw = state.read(MAX_STATE_BYTES)
        if len(raw) > MAX_STATE_BYTES:
            raw = b"{oversized"  # damage: read as a contact just made
        now = self.clock()
        last, polls = self._read_state(raw, now)
        if removed and not raw:
            last = now
        slot = max(now, not_before, last + self.min_interval)
        if rid is not None and rid in polls:
            slot = max(slot, polls[rid] + self.poll_interval)
        if deadline is not None and slot > deadline:
            # Nothing reserved, but what was assumed (a damaged or removed schedule read as a
            # contact just made) is kept, or the next reader would see "never".
            self._write(state, {"last_contact": last, "polls": polls})
            raise PastDeadline(slot)
        if rid is not None:
            polls[rid] = slot
        self._write(state, {"last_contact": slot, "polls": polls})
        return slot

    def _write(self, state: "lockedstate.Locked", doc: dict) -> None:
        try:
            state.write(json.dumps(doc).encode())
        except OSError as exc:
            raise ToolFailure(f"NCBI pacing schedule {self.directory / STATE}: cannot write it "
                              f"({exc.strerror or exc}); nothing was sent") from None

    def wait_turn(self, rid: str | None = None, not_before: float = 0.0,
                  deadline: float | None = None) -> float:
        """Reserve a slot, then sleep until it comes; returns the slot time."""
        slot = self.reserve(rid, not_before, deadline)
        delay = slot - self.clock()
        if delay > 0:
            self.sleep(delay)
        return slot
