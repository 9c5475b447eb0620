"""NCBI's request pacing, polite on the client side: a file-locked schedule of contact slots.

NCBI's BLAST URL API rules: contact the server at most once every 10 seconds, and poll one
RID at most once a minute. Every biotool process of one sandbox reserves its next slot in one
small JSON file (in the container's own temp dir) under an exclusive flock, so its own
processes do not trip the rules. The rules are *enforced* outside the agent's reach, host-wide,
by the egress gate (image/egress/gatekeeper.py); this file is private to the user and shared
with no other run. The lock is taken with a deadline and the file is read size-bounded.
Wall-clock time is used because monotonic clocks are not comparable across processes.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from biotool.output import ToolFailure

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

    env = os.environ.get("BIOTOOL_NCBI_PACING_DIR")
    if env:
        return Path(env)
    return Path(tempfile.gettempdir()) / "biotool-ncbi-pacing"


@dataclass
class Pacer:
    directory: Path
    min_interval: float = 10.0
    poll_interval: float = 60.0
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep

    def _state_fd(self) -> tuple[int, bool]:
        """The one schedule file, opened read-write, private to this user.

        A schedule that cannot be opened for writing stops the search (exit 4) rather than
        pacing only this process.
        """
        import stat

        path = self.directory / STATE
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            new_dir = not self.directory.is_dir()
            if new_dir:
                self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            # O_NOFOLLOW: a link planted in the directory must not redirect our writes;
            # O_NONBLOCK: a FIFO planted there must not hang us.
            try:
                fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
                created = True
            except FileExistsError:
                fd, created = os.open(path, flags), False
        except OSError as exc:
            raise ToolFailure(f"NCBI pacing schedule {path}: cannot open it for writing "
                              f"({exc.strerror or exc}); the pacing rules cannot be held "
                              f"across processes, so nothing was sent. Set "
                              f"BIOTOOL_NCBI_PACING_DIR to a writable directory shared by "
                              f"every biotool process") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ToolFailure(f"NCBI pacing schedule {path}: not a regular file; nothing was "
                              f"sent (remove it, or set BIOTOOL_NCBI_PACING_DIR)")
        # A schedule missing from a directory that already existed was removed, perhaps just
        # after a contact: assume one happened rather than that none ever did.
        return fd, created and not new_dir

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
        """Reserve the earliest permitted contact slot (a poll of `rid` if given); no waiting."""
        import fcntl

        fd, removed = self._state_fd()
        try:
            self._lock(fd, fcntl)
            raw = os.pread(fd, MAX_STATE_BYTES + 1, 0)
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
                # Nothing reserved, but what was assumed (a damaged or removed schedule read
                # as a contact just made) is kept, or the next reader would see "never".
                self._write(fd, {"last_contact": last, "polls": polls})
                raise PastDeadline(slot)
            if rid is not None:
                polls[rid] = slot
            self._write(fd, {"last_contact": slot, "polls": polls})
        finally:
            os.close(fd)  # closing releases the lock
        return slot

    def _lock(self, fd: int, fcntl) -> None:
        """The exclusive lock within LOCK_WAIT_S, else ToolFailure: never an unbounded wait."""
        end = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= end:
                    raise ToolFailure(f"NCBI pacing schedule {self.directory / STATE}: still "
                                      f"locked by another process after {LOCK_WAIT_S:.0f} s; "
                                      f"nothing was sent") from None
                time.sleep(0.05)

    def _write(self, fd: int, state: dict) -> None:
        data = json.dumps(state).encode()
        try:
            # Overwrite, then cut: a writer killed in between leaves unparsable JSON (read as
            # "a contact just happened"), never an empty file (read as "never").
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
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
