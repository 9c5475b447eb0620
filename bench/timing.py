"""The one timer of the bench scripts: a figure is the ratio of two times taken in the same run
(biotool's and its peer's), so both sides go through the same clock and the same summary.

    seconds, result = timed(fn)                    # one call
    seconds, result = repeated(fn, runs)           # the median of `runs` calls, the last result
    seconds, result = repeated(fn, runs, min)      # the fastest of them
"""

from __future__ import annotations

import statistics
import time
from typing import Callable, TypeVar

T = TypeVar("T")


def timed(fn: Callable[[], T], clock: Callable[[], float] = time.perf_counter) -> tuple[float, T]:
    """(seconds, result) of one call of `fn`; `clock=time.process_time` counts CPU time only."""
    t0 = clock()
    out = fn()
    return clock() - t0, out


def repeated(fn: Callable[[], T], runs: int,
             summary: Callable[[list[float]], float] = statistics.median,
             clock: Callable[[], float] = time.perf_counter) -> tuple[float, T]:
    """(summary of the seconds of `runs` calls, the last call's result)."""
    times, out = [], None
    for _ in range(runs):
        seconds, out = timed(fn, clock)
        times.append(seconds)
    return summary(times), out
