"""NCBI's pacing rules held by the file-locked schedule, on a controllable clock and across
real processes."""

from __future__ import annotations

import multiprocessing as mp
import time

import pytest

from biotool.taxonomy.pacing import Pacer, PastDeadline


def test_contacts_are_at_least_ten_seconds_apart(tmp_path, clock):
    p = Pacer(tmp_path, clock=clock.now, sleep=clock.sleep)
    slots = [p.wait_turn() for _ in range(4)]
    assert [b - a for a, b in zip(slots, slots[1:])] == [10.0, 10.0, 10.0]
    assert clock.now() == slots[-1]  # the caller really waited (on the fake clock)


def test_one_rid_is_polled_at_most_once_a_minute(tmp_path, clock):
    p = Pacer(tmp_path, clock=clock.now, sleep=clock.sleep)
    first = p.wait_turn(rid="R1")
    other = p.wait_turn(rid="R2")      # another RID only waits the 10 s contact interval
    again = p.wait_turn(rid="R1")
    assert other - first == 10.0
    assert again - first == 60.0


def test_the_schedule_is_shared_through_the_directory(tmp_path, clock):
    a = Pacer(tmp_path, clock=clock.now, sleep=lambda dt: None)
    b = Pacer(tmp_path, clock=clock.now, sleep=lambda dt: None)
    s1 = a.reserve()
    s2 = b.reserve()
    s3 = a.reserve(rid="X")
    s4 = b.reserve(rid="X")
    assert (s2 - s1, s3 - s2, s4 - s3) == (10.0, 10.0, 60.0)


def test_a_slot_past_the_deadline_is_not_reserved(tmp_path, clock):
    p = Pacer(tmp_path, clock=clock.now, sleep=clock.sleep)
    first = p.wait_turn()
    with pytest.raises(PastDeadline):
        p.wait_turn(deadline=first + 5)
    assert p.wait_turn() == first + 10  # the refused attempt took no slot


def _take(directory: str, n: int, q) -> None:
    p = Pacer(__import__("pathlib").Path(directory), min_interval=0.15, poll_interval=1.0)
    for _ in range(n):
        slot = p.wait_turn()
        q.put((slot, time.time()))


def test_the_pacing_holds_across_processes(tmp_path):
    q = mp.get_context("fork").Queue()
    procs = [mp.get_context("fork").Process(target=_take, args=(str(tmp_path), 3, q))
             for _ in range(3)]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join(30)
    got = sorted(q.get(timeout=5) for _ in range(9))
    slots = [s for s, _ in got]
    gaps = [b - a for a, b in zip(slots, slots[1:])]
    # 9 contacts from 3 processes on one schedule: never closer, and each waited its slot.
    assert min(gaps) >= 0.15 - 1e-6, gaps
    assert all(woke >= slot for slot, woke in got)


def test_a_damaged_schedule_errs_on_the_side_of_waiting(tmp_path, clock):
    (tmp_path / "ncbi-pacing.json").write_text('{"last_contact": 12')  # a writer died mid-write
    p = Pacer(tmp_path, clock=clock.now, sleep=clock.sleep)
    start = clock.now()
    assert p.wait_turn() == start + 10.0


def test_the_schedule_file_is_usable_by_other_uids(tmp_path, clock):
    Pacer(tmp_path, clock=clock.now, sleep=clock.sleep).reserve()
    assert (tmp_path / "ncbi-pacing.json").stat().st_mode & 0o777 == 0o666
