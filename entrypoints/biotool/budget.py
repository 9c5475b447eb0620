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
from collections.abc import Callable, Iterator
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


def left(deadline: float | None, clock: Callable[[], float] = time.monotonic) -> float:
    return float("inf") if deadline is None else deadline - clock()


CHECK_EVERY_S = 5.0  # a budgeted loop looks at the clock at least this often


def next_batch(left_s: float, per_item: float | None, estimate: float | None, most: int,
               check_every: float = CHECK_EVERY_S) -> int:
    """How many items the next batch may take with `left_s` seconds left (0: not one more fits).

    Before anything is measured (`per_item` None) a batch is one item, which measures an
    item's cost; after, a batch is sized to take about `check_every` and at most `most`. The
    first item runs only when `estimate` (what an earlier run measured for one) fits, or, with
    no estimate, when any time is left; every later batch only holds as many items as fit."""
    size = 1 if per_item is None else max(1, min(most, int(check_every / per_item)))
    if left_s == float("inf"):
        return size
    cost = per_item or estimate
    fits = int(left_s / cost) if cost else int(left_s > 0)
    return max(0, min(size, fits))


class Batches:
    """`n` items in batches that fit before `deadline` (a `clock()` value; None: no bound):
    iterating gives (first index, size) per batch and times each batch by `clock` from the
    moment it is handed out to the moment the next one is asked for. When not one more item
    fits, the iteration ends with `truncated` set; `done` and `per_item` say what ran.

    The plan is a function of the deadline, the clock and what each item cost, so a test
    drives it with a clock of its own; the product passes time.monotonic."""

    def __init__(self, n: int, deadline: float | None, most: int,
                 estimate: float | None = None, check_every: float = CHECK_EVERY_S,
                 clock: Callable[[], float] = time.monotonic):
        self.n, self.deadline, self.most, self.estimate = n, deadline, max(1, most), estimate
        self.check_every, self.clock = check_every, clock
        self.done, self.per_item, self.truncated = 0, None, False

    def __iter__(self) -> Iterator[tuple[int, int]]:
        while self.done < self.n:
            size = min(self.n - self.done,
                       next_batch(left(self.deadline, self.clock), self.per_item,
                                  self.estimate, self.most, self.check_every))
            if size < 1:
                self.truncated = True
                return
            t0 = self.clock()
            yield self.done, size
            self.per_item = max(1e-6, (self.clock() - t0) / size)
            self.done += size


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
