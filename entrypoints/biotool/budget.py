"""Working within a command's `Deadline` (biotool.deadline): how many items fit in what is
left (`next_batch`, `Batches`), and what earlier runs measured.

`alarm` turns the deadline into an exception raised in the main thread between Python
bytecodes, so a stage that is not checking the clock (a matrix load, a model load, a
generation loop) still stops within a moment of it.
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
from collections.abc import Iterator
from pathlib import Path

from biotool.deadline import Deadline


class BudgetSpent(BaseException):
    """The --timeout deadline passed while a stage was running. A BaseException, like
    KeyboardInterrupt, so the `except Exception` of a loader that turns a library's error into
    an input error does not swallow it."""


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
    """`n` items in batches that fit before `deadline`: iterating gives (first index, size)
    per batch and times each batch by the deadline's clock from the moment it is handed out
    to the moment the next one is asked for. When not one more item fits, the iteration ends
    with `truncated` set; `done` and `per_item` say what ran.

    The plan is a function of the deadline, its clock and what each item cost, so a test
    drives it with a clock of its own; the product's deadline reads time.monotonic."""

    def __init__(self, n: int, deadline: Deadline, most: int,
                 estimate: float | None = None, check_every: float = CHECK_EVERY_S):
        self.n, self.deadline, self.most, self.estimate = n, deadline, max(1, most), estimate
        self.check_every, self.clock = check_every, deadline.clock
        self.done, self.per_item, self.truncated = 0, None, False

    def __iter__(self) -> Iterator[tuple[int, int]]:
        while self.done < self.n:
            size = min(self.n - self.done,
                       next_batch(self.deadline.left(), self.per_item,
                                  self.estimate, self.most, self.check_every))
            if size < 1:
                self.truncated = True
                return
            t0 = self.clock()
            yield self.done, size
            self.per_item = max(1e-6, (self.clock() - t0) / size)
            self.done += size


@contextlib.contextmanager
def alarm(deadline: Deadline) -> Iterator[None]:
    """Raise BudgetSpent in the main thread when `deadline` passes inside the block (a real
    timer, so the deadline's clock must be time.monotonic); no-op without a bound or off the
    main thread."""
    import threading

    if not deadline.bounded or threading.current_thread() is not threading.main_thread():
        yield
        return
    if deadline.passed():
        raise BudgetSpent()

    def ring(_sig, _frame):
        raise BudgetSpent()

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(1e-3, deadline.left()))
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
