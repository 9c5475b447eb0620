"""The one timer of the bench scripts: a figure is the ratio of two times taken in the same run
(biotool's and its peer's), so both sides go through the same clock and the same summary.

    seconds, result = timed(fn)                    # one call
    seconds, result = repeated(fn, runs)           # the median of `runs` calls, the last result
    seconds, result = repeated(fn, runs, min)      # the fastest of them
    figures, result = repeated(fn, runs, lambda s: {"median_s": median(s), "max_s": max(s)})

A script that runs where bench/ is not (inside the image) starts with this module's own text,
`timing.source() + SCRIPT`, and times with these same functions: standard library only.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

T = TypeVar("T")


def timed(fn: Callable[[], T], clock: Callable[[], float] = time.perf_counter) -> tuple[float, T]:
    """(seconds, result) of one call of `fn`; `clock=time.process_time` counts CPU time only."""
    t0 = clock()
    out = fn()
    return clock() - t0, out


def repeated(fn: Callable[[], T], runs: int,
             summary: Callable[[list[float]], Any] = statistics.median,
             clock: Callable[[], float] = time.perf_counter) -> tuple[Any, T]:
    """(summary of the seconds of `runs` calls, the last call's result); `summary` is any
    function of that list, one figure (the median by default) or several."""
    times, out = [], None
    for _ in range(runs):
        seconds, out = timed(fn, clock)
        times.append(seconds)
    return summary(times), out


def source() -> str:
    """This module's text, to put before a script that runs inside a container."""
    return Path(__file__).read_text()
