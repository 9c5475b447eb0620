"""A command's --timeout as a bound on the whole command, counted from the process's start.

An agent sizes --timeout to its own step limit, so the time spent starting Python, importing
scanpy or torch, loading a matrix or a model counts as much as the work after it. The clock
starts when the kernel started the process (/proc/self/stat), not when the command's function
is called. `alarm` turns the deadline into an exception raised in the main thread between
Python bytecodes, so a stage that is not checking the clock (a matrix load, a model load, a
generation loop) still stops within a moment of it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path


class BudgetSpent(BaseException):
    """The --timeout deadline passed while a stage was running. A BaseException, like
    KeyboardInterrupt, so the `except Exception` of a loader that turns a library's error into
    an input error does not swallow it."""


def process_started() -> float:
    """time.monotonic() at the moment the kernel started this process (interpreter start-up
    included); the first import of this module where /proc is not there."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        since_boot = ticks / os.sysconf("SC_CLK_TCK")
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - since_boot
        if 0 <= age < 86400:
            return time.monotonic() - age
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    return _IMPORTED


_IMPORTED = time.monotonic()


def left(deadline: float | None) -> float:
    return float("inf") if deadline is None else deadline - time.monotonic()


@contextlib.contextmanager
def alarm(deadline: float | None) -> Iterator[None]:
    """Raise BudgetSpent in the main thread when `deadline` (time.monotonic()) passes inside
    the block; no-op without a deadline or off the main thread."""
    import threading

    if deadline is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    if left(deadline) <= 0:
        raise BudgetSpent()

    def ring(_sig, _frame):
        raise BudgetSpent()

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(1e-3, left(deadline)))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _record_path(key: str) -> Path | None:
    from biotool import cache

    try:
        root = cache.ready()
    except Exception:  # noqa: BLE001 - an unwritable cache only costs the measurement
        return None
    import hashlib

    return root / "load-times" / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")


def measured(key: str) -> dict:
    """What an earlier run on this machine measured for `key` ({} when nothing was)."""
    path = _record_path(key)
    try:
        data = json.loads(path.read_text()) if path else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record(key: str, **seconds: float) -> None:
    """Keep a measurement for the next run's up-front check (atomically; best effort)."""
    path = _record_path(key)
    if path is None:
        return
    from biotool.files import published

    data = {**measured(key), **{k: round(float(v), 3) for k, v in seconds.items()}}
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        with published(path) as tmp:
            tmp.write_text(json.dumps(data))


# Advice is for the next run, whose start-up and loads vary: a quarter more than this run's
# measured need, and at least 2 s more (a need of a few seconds varies by whole seconds).
ADVICE_MARGIN = 0.25
ADVICE_SLACK_S = 2.0


def advised(need_s: float) -> int:
    """The --timeout to advise for a run measured to need `need_s` seconds: the need with a
    margin, rounded up (never down), so a run given it has the need and more."""
    return math.ceil(max(0.0, need_s) * (1 + ADVICE_MARGIN) + ADVICE_SLACK_S)


def record_at_least(key: str, **seconds: float) -> None:
    """Raise kept measurements to at least these values: a stage cut short by the budget took
    longer than it ran, so a smaller figure kept from an earlier run is stale."""
    old = measured(key)
    higher = {}
    for name, value in seconds.items():
        try:
            kept = float(old.get(name) or 0.0)
        except (TypeError, ValueError):
            kept = 0.0
        if value > kept:
            higher[name] = value
    if higher:
        record(key, **higher)
