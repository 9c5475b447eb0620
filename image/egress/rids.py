"""The RIDs one run created, and NCBI's poll rule per RID.

A RID may be polled or fetched only by the run that created it: each run has its own gate,
and its RIDs live in that gate (saved on the run's own state volume, so a restarted gate
keeps them and their poll times). NCBI allows one poll per RID per minute
(biotool/ncbirule.py); until a RID is seen READY, fetching its report asks what a poll asks,
so it counts as one. And what a RID is: NCBI's one grammar, which a request may name
(blastrequest.py), a reply may hand out (blastreply.py) and the saved file may hold.
Standard library only, and biotool/ncbirule.py beside it.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from biotool import ncbirule

MAX_RIDS = 1000          # RIDs remembered per run (oldest first out)
RIDS_FILE = "rids.json"  # in the run's state dir
RID = re.compile(r"[A-Z0-9]{6,32}")  # NCBI's RIDs, e.g. 7N3KZ0XP016
RID_INFO = re.compile(rb"RID\s*=\s*(" + RID.pattern.encode() + rb")\s")  # a QBlastInfo line


def handed_out(page: bytes) -> str | None:
    """The RID a Put's answer (a QBlastInfo page) hands out, None when it names none."""
    m = RID_INFO.search(page)
    return m.group(1).decode() if m else None


def load(path: Path | None, limit: int = MAX_RIDS) -> dict[str, dict]:
    """RIDs a previous start of this run's gate saved; what does not parse is dropped, since
    the file is the gate's own and anything odd in it means damage."""
    if path is None or not path.is_file():
        return {}
    try:
        raw = json.loads(path.read_text()[:(limit * 300)])
    except (OSError, ValueError):
        return {}
    out = {}
    for rid, info in (raw.items() if isinstance(raw, dict) else ()):
        if RID.fullmatch(str(rid)) and isinstance(info, dict) \
                and isinstance(info.get("created"), (int, float)):
            last = info.get("last_poll")
            owner = info.get("owner")
            out[rid] = {"created": float(info["created"]),
                        "last_poll": float(last) if isinstance(last, (int, float)) else None,
                        **({"ready": True} if info.get("ready") is True else {}),
                        **({"owner": owner[:160]} if isinstance(owner, str) else {})}
    return dict(list(out.items())[-limit:])


def counts_as_poll(info: dict | None, what: str) -> bool:
    """Whether a request of kind `what` about a RID (`info`: its entry) is one NCBI's poll
    rule counts: a poll, or a fetch before the RID was seen READY."""
    return what != "put" and info is not None and (what == "poll" or not info.get("ready"))


def poll_wait(info: dict | None, what: str, now: float, poll_interval: float) -> float:
    """Seconds from `now` until a request of kind `what` about the RID may go (0: now)."""
    if not counts_as_poll(info, what) or info["last_poll"] is None:
        return 0.0
    return max(0.0, info["last_poll"] + poll_interval - now)


@dataclass(frozen=True)
class TooEarly:
    """A poll of a RID sooner than NCBI's rule allows: the one refusal the gate and the site
    relay send (429, Retry-After: wait)."""

    wait: float   # seconds until the RID may be asked again
    reason: str


class Rids:
    """This run's RIDs: {rid: {"created", "last_poll", "ready"?}}, saved after each change."""

    def __init__(self, state_dir: str | None, poll_interval: float, limit: int = MAX_RIDS,
                 clock: Callable[[], float] = time.time):
        self.clock = clock
        self.path = Path(state_dir) / RIDS_FILE if state_dir else None
        self.limit = limit
        self.known: dict[str, dict] = load(self.path, limit)
        self.poll_interval = poll_interval
        self.lock = threading.Lock()

    def get(self, rid: str | None) -> dict | None:
        with self.lock:
            info = self.known.get(rid) if rid else None
            return dict(info) if info is not None else None

    def counts_as_poll(self, rid: str | None, what: str) -> bool:
        """Whether this request of `rid` is one NCBI's poll rule counts."""
        return counts_as_poll(self.get(rid) if what != "put" else None, what)

    def poll_wait(self, rid: str, what: str) -> float:
        """Seconds until `rid` may be asked again by a request of kind `what` (0: now)."""
        return poll_wait(self.get(rid), what, self.clock(), self.poll_interval)

    def too_early(self, rid: str, what: str) -> TooEarly | None:
        """The refusal of this request of `rid` when NCBI's poll rule holds it back, else None."""
        wait = self.poll_wait(rid, what)
        if wait <= 0:
            return None
        return TooEarly(wait, f"RID {rid} was asked about {self.poll_interval - wait:.1f} s ago; "
                              f"NCBI allows one poll per RID every "
                              f"{ncbirule.POLL_INTERVAL_S:.0f} s (a fetch before READY counts as "
                              f"one)")

    def remember(self, rid: str, owner: str | None = None) -> None:
        """A new RID; `owner`: who may ask about it (the site relay's gate and run)."""
        with self.lock:
            self.known[rid] = {"created": self.clock(), "last_poll": None,
                               **({"owner": owner} if owner else {})}
            while len(self.known) > self.limit:
                self.known.pop(next(iter(self.known)))
            self._save()

    def mark(self, rid: str, **fields) -> None:
        with self.lock:
            if rid in self.known:
                self.known[rid].update(fields)
                self._save()

    def _save(self) -> None:
        """The run's RIDs on its state volume (caller holds the lock), replaced atomically."""
        if self.path is None:
            return
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(self.known, separators=(",", ":")))
            os.replace(tmp, self.path)
        except OSError as exc:  # the RIDs still work in memory; a restart would lose them
            print(f"egress gate: cannot save RIDs ({exc})", file=sys.stderr, flush=True)
