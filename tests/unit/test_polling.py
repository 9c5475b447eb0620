"""biotool_testing.polling.until, the image tier's one way to wait for a state: on a clock and
a sleep the test drives, so no verdict here depends on the host."""

from __future__ import annotations

import pytest

from biotool_testing import polling
from biotool_testing.polling import until


class FakeTime:
    """A clock that moves only when slept on (or when a probe says it took time)."""

    def __init__(self):
        self.now, self.slept = 100.0, []

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def test_returns_the_first_value_that_is_done_without_sleeping_after_it():
    t, values = FakeTime(), iter([0, 0, 3, 4])
    got = until("three", lambda: next(values), lambda v: v >= 3, limit_s=10, every_s=1,
                clock=t.clock, sleep=t.sleep)
    assert got == 3 and t.slept == [1, 1]


def test_a_state_that_never_comes_fails_naming_it_and_the_last_value():
    t = FakeTime()
    with pytest.raises(AssertionError, match=r"the store's flush: not within 5 s \(last seen: 7\)"):
        until("the store's flush", lambda: 7, lambda v: v > 7, limit_s=5, every_s=1,
              clock=t.clock, sleep=t.sleep)
    assert t.now == 105.0  # polled up to the limit, not past it


def test_a_probe_slower_than_the_limit_is_judged_by_what_it_saw_not_by_the_clock():
    t, calls = FakeTime(), []

    def slow(value):  # each look costs 20 s of the test's clock, four times the limit
        def probe():
            t.now += 20
            calls.append(value)
            return value
        return probe

    assert until("a slow look", slow(1), limit_s=5, clock=t.clock, sleep=t.sleep) == 1
    with pytest.raises(AssertionError, match="a slow miss: not within 5 s"):
        until("a slow miss", slow(0), limit_s=5, clock=t.clock, sleep=t.sleep)
    assert calls == [1, 0] and t.slept == []


def test_within_answers_whether_the_state_came():
    now = [0.0]

    def sleep(dt):
        now[0] += dt

    seen = []
    assert polling.within(lambda: seen.append(1) or len(seen) >= 3, 10, 1.0,
                          clock=lambda: now[0], sleep=sleep)
    assert not polling.within(lambda: False, 10, 1.0, clock=lambda: now[0], sleep=sleep)
