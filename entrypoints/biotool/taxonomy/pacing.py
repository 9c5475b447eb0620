"""NCBI's request pacing, held across processes: a file-locked schedule of contact slots.

NCBI's BLAST URL API rules: contact the server at most once every 10 seconds, and poll one
RID at most once a minute. Every biotool process reserves its next slot in one small JSON
file under an exclusive flock, so the rules hold across processes in a container and, when
the directory is a shared volume (BIOTOOL_NCBI_PACING_DIR), across sandboxes on one host.
The file is world-writable because sandboxes sharing the volume may run as different UIDs.
Wall-clock time is used because monotonic clocks are not comparable across processes.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

STATE = "ncbi-pacing.json"
POLL_MEMORY_S = 86400.0  # NCBI keeps RIDs about a day; older poll records are dropped


class PastDeadline(Exception):
    """The next permitted slot falls after the caller's deadline; nothing was reserved."""

    def __init__(self, slot: float):
        super().__init__(f"next permitted contact at {slot:.1f}")
        self.slot = slot


def pacing_dir() -> Path:
    env = os.environ.get("BIOTOOL_NCBI_PACING_DIR")
    if env:
        return Path(env)
    from biotool.cache import cache_root

    return cache_root() / "ncbi-pacing"


@dataclass
class Pacer:
    directory: Path
    min_interval: float = 10.0
    poll_interval: float = 60.0
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    reserved: list = field(default_factory=list)  # (slot, rid) of this pacer, for reports

    def _state_fd(self) -> int:
        """The one schedule file, opened read-write; any UID sharing the volume may use it."""
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / STATE, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            os.fchmod(fd, 0o666)  # sandboxes may run as different UIDs; umask must not lock them out
        except PermissionError:
            pass
        return fd

    def reserve(self, rid: str | None = None, not_before: float = 0.0,
                deadline: float | None = None) -> float:
        """Reserve the earliest permitted contact slot (a poll of `rid` if given); no waiting."""
        import fcntl

        fd = self._state_fd()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = b""
            while chunk := os.read(fd, 65536):
                raw += chunk
            now = self.clock()
            try:
                state = json.loads(raw) if raw.strip() else {}
                if not isinstance(state, dict):
                    raise ValueError
            except ValueError:
                # A damaged schedule (a writer killed mid-write): assume a contact just happened.
                state = {"last_contact": now}
            polls = {k: float(v) for k, v in state.get("polls", {}).items()
                     if now - float(v) < POLL_MEMORY_S}
            slot = max(now, not_before, float(state.get("last_contact", -1e18)) + self.min_interval)
            if rid is not None and rid in polls:
                slot = max(slot, polls[rid] + self.poll_interval)
            if deadline is not None and slot > deadline:
                raise PastDeadline(slot)
            if rid is not None:
                polls[rid] = slot
            data = json.dumps({"last_contact": slot, "polls": polls}).encode()
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, data)
        finally:
            os.close(fd)  # closing releases the lock
        self.reserved.append((slot, rid))
        return slot

    def wait_turn(self, rid: str | None = None, not_before: float = 0.0,
                  deadline: float | None = None) -> float:
        """Reserve a slot, then sleep until it comes; returns the slot time."""
        slot = self.reserve(rid, not_before, deadline)
        delay = slot - self.clock()
        if delay > 0:
            self.sleep(delay)
        return slot
