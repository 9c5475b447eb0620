"""A command's one time value: its --timeout as a `Deadline`, made once where the command is
called and counted from the process's start (start-up and imports count, as an agent's step
limit counts them), then passed down as the only thing any stage asks about time.

The clock is a field, so budget logic is tested with a clock the test owns (docs/tests.md,
Time in tests); the product's is time.monotonic. A local budget spent before any result is
refused the one way, `BudgetRefusal` (exit 2, docs/contract.md).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from biotool.output import InputError


class BudgetRefusal(InputError):
    """--timeout ran out before any result of local work, or left no room for a stage that
    must run whole. Exit 2: the work is local and deterministic, so the same budget fails the
    same way again, and the remedy (a longer --timeout) is the caller's."""


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


@dataclass(frozen=True)
class Deadline:
    """`seconds` (the --timeout; None: no bound) counted from `start`, a `clock()` value."""

    seconds: Optional[float]
    start: float
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)

    @classmethod
    def of_process(cls, seconds: Optional[float]) -> Deadline:
        """The command's deadline: --timeout counted from when the kernel started this
        process, on time.monotonic."""
        return cls(seconds or None, process_started())

    @classmethod
    def from_now(cls, seconds: Optional[float],
                 clock: Callable[[], float] = time.monotonic) -> Deadline:
        """A deadline counted from this moment: a library caller's, or a test's own clock."""
        return cls(seconds or None, clock(), clock)

    @property
    def bounded(self) -> bool:
        return self.seconds is not None

    @property
    def at(self) -> Optional[float]:
        """The moment it passes, a `clock()` value (None: never): what a process watcher or
        a lock's wait is given."""
        return None if self.seconds is None else self.start + self.seconds

    def share(self, fraction: float) -> Optional[float]:
        """The moment `fraction` of the budget is spent (None: never)."""
        return None if self.seconds is None else self.start + self.seconds * fraction

    def left(self) -> float:
        """Seconds left (negative once passed; infinity without a bound)."""
        return float("inf") if self.seconds is None else self.start + self.seconds - self.clock()

    def passed(self) -> bool:
        return self.left() <= 0

    def elapsed(self) -> float:
        """Seconds since the budget began."""
        return self.clock() - self.start


UNBOUNDED = Deadline(None, 0.0)  # a library caller's default: no --timeout
