"""biotool.deadline: a command's --timeout as one value, on a clock the test owns, so what it
says is the same on any host (docs/tests.md, Time in tests)."""

from __future__ import annotations

import math
import time

from biotool.deadline import UNBOUNDED, BudgetRefusal, Deadline

IMPORTED = time.monotonic()  # this process had started before this module was imported


class Clock:
    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_deadline_counts_its_seconds_from_its_start_on_its_clock():
    clock = Clock()
    d = Deadline.from_now(10.0, clock)
    assert (d.start, d.at, d.share(0.5), d.left(), d.passed()) == (100.0, 110.0, 105.0, 10.0,
                                                                    False)
    clock.now = 107.5
    assert (d.left(), d.elapsed(), d.passed()) == (2.5, 7.5, False)
    clock.now = 110.0
    assert d.passed() and d.left() == 0.0


def test_no_timeout_is_no_bound():
    clock = Clock()
    for d in (Deadline.from_now(None, clock), UNBOUNDED):
        assert not d.bounded and d.at is None and d.share(0.5) is None
        assert math.isinf(d.left()) and not d.passed()


def test_a_commands_deadline_counts_from_the_process_start():
    d = Deadline.of_process(5.0)
    assert d.start <= IMPORTED and d.at == d.start + 5.0 and d.clock is time.monotonic


def test_a_spent_local_budget_is_exit_2():
    assert BudgetRefusal("--timeout 1 s ran out").exit_code == 2
