"""NCBI's pacing rules held by the file-locked schedule, on a controllable clock and across
real processes."""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from pathlib import Path

import pytest

from biotool.output import ToolFailure
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
    got = sorted(q.get(timeout=120) for _ in range(9))  # drained first: a queue's rule
    for pr in procs:
        pr.join(60)
        assert pr.exitcode == 0
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


def test_the_schedule_file_is_private_to_the_user(tmp_path, clock):
    # Politeness within one sandbox only: no other UID (no other run) shares or can edit it.
    Pacer(tmp_path / "p", clock=clock.now, sleep=clock.sleep).reserve()
    assert (tmp_path / "p").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "p" / "ncbi-pacing.json").stat().st_mode & 0o777 == 0o600


def test_a_held_lock_is_waited_on_only_until_its_deadline(tmp_path, clock, monkeypatch):
    import fcntl

    from biotool.taxonomy import pacing

    monkeypatch.setattr(pacing, "LOCK_WAIT_S", 0.3)
    Pacer(tmp_path, clock=clock.now, sleep=clock.sleep).reserve()
    got: list = []

    def reserve():
        try:
            Pacer(tmp_path, clock=clock.now, sleep=clock.sleep).reserve()
        except ToolFailure as exc:
            got.append(exc)

    with open(tmp_path / "ncbi-pacing.json", "a") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        # In a thread: without a deadline it would block for ever; this fails instead.
        waiter = threading.Thread(target=reserve, daemon=True)
        waiter.start()
        waiter.join(60)
        assert not waiter.is_alive()
    assert len(got) == 1 and "still locked" in str(got[0])


def test_an_oversized_schedule_is_read_as_damage_not_parsed(tmp_path, clock):
    from biotool.taxonomy import pacing

    (tmp_path / "ncbi-pacing.json").write_text('{"last_contact": 0, "polls": {}}' + " " * pacing.MAX_STATE_BYTES)
    p = Pacer(tmp_path, clock=clock.now, sleep=clock.sleep)
    assert p.reserve() == clock.now() + 10.0


@pytest.mark.parametrize("text", [
    '{"last_contact": "soon", "polls": {}}',
    '{"last_contact": 5, "polls": ["R1"]}',
    '{"last_contact": Infinity}',
    '{"last_contact": NaN}',
    '[1, 2]',
    '\x00\x00\x00',
])
def test_any_damage_to_the_schedule_still_paces(tmp_path, clock, text):
    (tmp_path / "ncbi-pacing.json").write_text(text)
    p = Pacer(tmp_path, clock=clock.now, sleep=clock.sleep)
    start = clock.now()
    assert p.wait_turn() == start + 10.0  # damage reads as "a contact just happened"
    assert p.wait_turn() == start + 20.0  # and the repaired file paces the next one


def test_a_forged_far_future_slot_does_not_stall_every_sandbox(tmp_path, clock):
    (tmp_path / "ncbi-pacing.json").write_text('{"last_contact": 1e300, "polls": {"R": 1e300}}')
    p = Pacer(tmp_path, clock=clock.now, sleep=clock.sleep)
    start = clock.now()
    assert p.wait_turn() == start + 10.0
    assert p.wait_turn(rid="R") <= start + 3600 + 60


def test_a_removed_schedule_is_read_as_a_contact_just_made(tmp_path, clock):
    shared = tmp_path / "shared"
    p = Pacer(shared, clock=clock.now, sleep=lambda dt: None)
    first = p.reserve()                       # a fresh directory: no wait
    assert first == clock.now()
    (shared / "ncbi-pacing.json").unlink()    # someone removed the schedule
    assert p.reserve() == first + 10.0        # still at least 10 s after the last contact
    (shared / "ncbi-pacing.json").unlink()
    with pytest.raises(PastDeadline):         # a caller out of time reserves nothing...
        p.reserve(deadline=clock.now() + 1)
    assert p.reserve() == clock.now() + 10.0  # ...but the assumption it made is kept


def test_a_killed_writer_never_leaves_an_empty_schedule(tmp_path, clock):
    # Overwrite-then-truncate: a longer old record under a shorter new one leaves junk, which
    # reads as damage (wait), whereas truncate-then-write could leave "" (read as "never").
    path = tmp_path / "ncbi-pacing.json"
    p = Pacer(tmp_path, clock=clock.now, sleep=lambda dt: None)
    p.reserve(rid="A" * 200)
    before = path.stat().st_size
    p.reserve()
    assert 0 < path.stat().st_size <= before


def test_an_unusable_schedule_stops_before_any_contact(tmp_path, clock):
    import os

    from biotool.output import ToolFailure

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ToolFailure, match=r"cannot open it for writing.*BIOTOOL_NCBI_PACING_DIR"):
        Pacer(blocker / "pacing", clock=clock.now).reserve()   # the directory cannot exist
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    links = tmp_path / "links"
    links.mkdir()
    (links / "ncbi-pacing.json").symlink_to(victim)           # a link planted in a shared dir
    with pytest.raises(ToolFailure, match="cannot open it for writing"):
        Pacer(links, clock=clock.now).reserve()
    assert victim.read_text() == "keep me"
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "ncbi-pacing.json")                     # would block a plain open()
    with pytest.raises(ToolFailure, match="not a regular file"):
        Pacer(fifo, clock=clock.now).reserve()


def test_the_default_schedule_does_not_depend_on_the_cache_setting(monkeypatch, tmp_path):
    from biotool.taxonomy.pacing import pacing_dir

    monkeypatch.delenv("BIOTOOL_NCBI_PACING_DIR", raising=False)
    monkeypatch.setenv("BIOTOOL_CACHE", str(tmp_path / "one"))
    first = pacing_dir()
    monkeypatch.setenv("BIOTOOL_CACHE", str(tmp_path / "two"))
    assert pacing_dir() == first  # two processes with different caches share one schedule
    monkeypatch.setenv("BIOTOOL_NCBI_PACING_DIR", str(tmp_path / "shared"))
    assert pacing_dir() == tmp_path / "shared"
