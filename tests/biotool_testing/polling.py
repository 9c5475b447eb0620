"""Waiting for a state a test cannot be told about: poll until it comes, fail if it never does.

A fixed sleep before an assertion is a race that a slow host loses. A poll's limit is only the
point at which a state that never comes is called a failure, so it is set wide (ten times what
a busy host needs, and more) and never decides a verdict otherwise: a faster host only returns
sooner. The clock and the sleep are parameters so that the unit tier tests this with neither.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")

LIMIT_S = 300.0  # the default limit: a container's start, a flush, a restart on a slow host


def until(what: str, probe: Callable[[], T], done: Callable[[T], bool] = bool, *,
          limit_s: float = LIMIT_S, every_s: float = 0.3,
          clock: Callable[[], float] = time.monotonic,
          sleep: Callable[[float], None] = time.sleep) -> T:
    """probe() until done(its value), which is returned; AssertionError naming `what` (and the
    last value seen) once limit_s has passed. The probe runs once more after the limit, so a
    probe slower than the limit is still looked at."""
    end = clock() + limit_s
    while True:
        value = probe()
        if done(value):
            return value
        if clock() >= end:
            raise AssertionError(f"{what}: not within {limit_s:g} s (last seen: {str(value)[:2000]})")
        sleep(every_s)


def within(check: Callable[[], bool], limit_s: float = LIMIT_S, every_s: float = 0.05, *,
           clock: Callable[[], float] = time.monotonic,
           sleep: Callable[[float], None] = time.sleep) -> bool:
    """Whether check() holds within limit_s: `until` for a test that asserts on the answer
    itself (a state that must come, or one that must not)."""
    try:
        until("", check, limit_s=limit_s, every_s=every_s, clock=clock, sleep=sleep)
    except AssertionError:
        return False
    return True
