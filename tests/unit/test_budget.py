"""biotool.budget's batch plan, driven by a clock the test owns: every item costs exactly what
the test says, so which batches run and where the budget stops is the same on any host."""

from __future__ import annotations

import pytest

from biotool import budget
from biotool.deadline import Deadline


class Clock:
    """A clock that only moves when work is done: `work(items)` spends `cost` per item."""

    def __init__(self, cost: float):
        self.now, self.cost = 0.0, cost

    def __call__(self) -> float:
        return self.now

    def work(self, items: int) -> None:
        self.now += self.cost * items


def run(n: int, deadline: float | None, most: int, cost: float, estimate: float | None = None,
        check_every: float = budget.CHECK_EVERY_S) -> tuple[list[tuple[int, int]], budget.Batches]:
    clock = Clock(cost)
    plan = budget.Batches(n, Deadline(deadline, 0.0, clock), most, estimate=estimate,
                          check_every=check_every)
    sizes = []
    for first, size in plan:
        sizes.append((first, size))
        clock.work(size)
    return sizes, plan


def test_the_default_sample_and_batch_stop_at_what_fits():
    # --sample 8 --batch-size 8, one cell costs 1 s and 3.5 s are left: the first batch is one
    # cell (it measures the cost), the next holds the two that still fit, the rest is flagged.
    sizes, plan = run(8, 3.5, 8, cost=1.0)
    assert sizes == [(0, 1), (1, 2)]
    assert (plan.done, plan.truncated, plan.per_item) == (3, True, 1.0)


def test_no_deadline_runs_every_item_in_batches_of_about_check_every():
    sizes, plan = run(20, None, 8, cost=1.0)
    # One to measure, then batches of 5 (5 s at 1 s a cell), cut at what is left.
    assert sizes == [(0, 1), (1, 5), (6, 5), (11, 5), (16, 4)]
    assert (plan.done, plan.truncated) == (20, False)
    cheap, _ = run(20, None, 8, cost=0.01)
    assert cheap == [(0, 1), (1, 8), (9, 8), (17, 3)]  # capped at --batch-size


def test_a_spent_budget_runs_nothing():
    for deadline in (0.0, -1.0):
        sizes, plan = run(8, deadline, 8, cost=1.0)
        assert sizes == [] and plan.truncated and plan.done == 0 and plan.per_item is None


def test_the_first_item_needs_its_estimate_to_fit():
    # An earlier run measured 60 s a cell: 5 s left run none, not even the measuring one.
    assert run(8, 5.0, 1, cost=60.0, estimate=60.0)[0] == []
    # Without an estimate any time left runs the first cell, whatever it then costs.
    sizes, plan = run(8, 5.0, 1, cost=60.0)
    assert sizes == [(0, 1)] and plan.done == 1 and plan.truncated
    # An estimate that fits: the first cell runs, the measured cost decides the rest.
    sizes, plan = run(8, 10.0, 8, cost=2.0, estimate=3.0)
    assert sizes == [(0, 1), (1, 2), (3, 2)] and plan.done == 5 and plan.truncated


def test_the_measured_cost_is_the_last_batch_s():
    clock = Clock(1.0)
    plan = budget.Batches(10, Deadline(100.0, 0.0, clock), 8)
    costs = iter([1.0, 0.5, 2.0])
    for _, size in plan:
        clock.cost = next(costs, 2.0)
        clock.work(size)
        last = clock.cost
    assert plan.per_item == last and plan.done == 10 and not plan.truncated


@pytest.mark.parametrize("left_s,per_item,estimate,most,want", [
    (float("inf"), None, None, 8, 1),   # unmeasured: one item, deadline or not
    (float("inf"), 0.5, None, 8, 8),    # 10 fit in check_every, capped at most
    (float("inf"), 2.0, None, 8, 2),    # a batch takes about check_every
    (float("inf"), 60.0, None, 8, 1),   # one item always, however slow
    (3.0, 1.0, None, 8, 3),             # what is left caps the batch
    (0.5, 1.0, None, 8, 0),             # not one more fits
    (0.1, None, None, 8, 1),            # any time left runs the measuring item
    (0.0, None, None, 8, 0),
    (0.1, None, 0.2, 8, 0),             # the estimate does not fit
    (0.3, None, 0.2, 8, 1),
])
def test_next_batch(left_s, per_item, estimate, most, want):
    assert budget.next_batch(left_s, per_item, estimate, most, check_every=5.0) == want
