"""Issue 47, item 2: NCBI's interval holds across every boundary of the host-wide schedule.

The schedule's volume is a tmpfs: Docker empties it when the host's last egress stops, and a
reboot or a crash mid-write can leave it empty or missing. Whoever reads it (a run's gate, the
site's relay) takes empty as "a contact made now", never "no contact yet", and a gate that
starts writes that down (Schedule.begin, as the relay does). Every clock here is injected:
`sleep` moves it, so no verdict depends on the host's speed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biotool_testing import certificates, scripts

REPO = Path(__file__).resolve().parents[3]
EGRESS = REPO / "image" / "egress"
schedule = scripts.module(EGRESS / "schedule.py")
gate_mod = scripts.module(EGRESS / "gate.py")
relay_mod = scripts.module(EGRESS / "relay.py")

INTERVAL = 10.5  # the gate's: NCBI's 10 s and its jitter margin
HOST = "blast.ncbi.nlm.nih.gov"


class Clock:
    def __init__(self, t: float = 1_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


def sched(directory: Path, clock: Clock) -> "schedule.Schedule":
    return schedule.Schedule(directory, INTERVAL, clock=clock, sleep=clock.sleep, tick=0.2)


def contact(s: "schedule.Schedule", clock: Clock, run: str, hold: float = 60.0) -> float:
    """One request's turn and its write at once: the time it reaches NCBI."""
    slot = s.acquire(run, hold)
    s.stamp(slot, clock())
    return clock()


@pytest.mark.parametrize("damage", ["empty", "missing", "blank"])
def test_an_emptied_schedule_reads_as_a_contact_now(tmp_path, damage):
    clock = Clock()
    s = sched(tmp_path, clock)
    state = tmp_path / schedule.STATE
    if damage == "empty":
        state.write_bytes(b"")
    elif damage == "blank":
        state.write_bytes(b" \n")
    assert s._step("r") is None                 # not "no contact yet": one interval first
    clock.sleep(INTERVAL - 0.1)
    assert s._step("r") is None
    clock.sleep(0.1)
    assert s._step("r") == clock()


def test_read_is_the_one_rule_for_empty_and_damaged():
    s = schedule.Schedule(Path("/nonexistent"), INTERVAL)
    for raw in (b"", b"  ", b"{", b"x" * (schedule.MAX_STATE_BYTES + 1)):
        assert s.read(raw, 500.0)["last_contact"] == 500.0, raw


def test_begin_writes_a_contact_now_only_over_an_empty_schedule(tmp_path):
    clock = Clock()
    s = sched(tmp_path, clock)
    s.begin()
    assert json.loads((tmp_path / schedule.STATE).read_text())["last_contact"] == clock()
    first = clock()
    clock.sleep(5)
    s.begin()  # another egress starting beside a live schedule changes nothing
    assert json.loads((tmp_path / schedule.STATE).read_text())["last_contact"] == first


def test_back_to_back_episodes_keep_the_interval_at_the_wire(tmp_path):
    # The Slurm template's shape: an episode's egress starts, sends at once, stops (the last
    # egress: Docker empties the volume), and the next episode's starts a moment later. Also a
    # gate killed and restarted mid-run, and a crash that left the file empty mid-write.
    clock = Clock()
    state = tmp_path / schedule.STATE
    sent = []
    for episode in range(12):
        s = sched(tmp_path, clock)
        s.begin()                                   # the egress's gate starting
        sent.append(contact(s, clock, f"run{episode}"))
        if episode % 3 == 1:                        # a crash mid-write: an empty file
            state.write_bytes(b"")
            s = sched(tmp_path, clock)
            sent.append(contact(s, clock, f"run{episode}"))
        clock.sleep(0.3)                            # down, then the volume is emptied
        state.unlink()
        clock.sleep(0.5)                            # up again
    gaps = [b - a for a, b in zip(sent, sent[1:])]
    assert len(gaps) == 15 and min(gaps) >= INTERVAL, gaps


def test_a_gate_starting_on_an_emptied_volume_counts_from_its_start(tmp_path):
    cas = certificates.server_ca(tmp_path / "ca", HOST, ca_name="run CA")
    state = tmp_path / "schedule"
    state.mkdir()
    (state / schedule.STATE).write_bytes(b"")
    import time

    before = time.time()
    g = gate_mod.Gate([(HOST, 443)], cas["cert"], cas["key"], str(state))
    after = time.time()
    last = json.loads((state / schedule.STATE).read_text())["last_contact"]
    assert before <= last <= after
    assert g.schedule.read(b"", 7.0)["last_contact"] == 7.0


def test_the_relay_and_the_gate_share_the_rule(tmp_path):
    # One implementation: the relay's schedule is the same class, so empty reads alike.
    assert relay_mod.schedule_mod.Schedule is gate_mod.schedule_mod.Schedule


def _rounds(directory: Path, clock: Clock, askers: dict, until: float) -> list[tuple[float, str]]:
    """Every run in `askers` (name -> first time it asks) asks at every 0.2 s tick of the
    injected clock from then on, as a flood and a client re-asking after its 429 do; the
    grants in order."""
    s = sched(directory, clock)
    s.reserve = 0.0  # each grant is its contact: the write's stamp is not what is tested here
    grants = []
    while clock.t < until:
        for run, start in askers.items():
            if clock.t >= start and s._step(run) is not None:
                grants.append((clock.t, run))
        clock.sleep(0.2)
    return grants


@pytest.mark.parametrize("flooders", [1, 2, 3])
def test_runs_flooding_puts_cannot_push_an_honest_run_past_its_turn(tmp_path, flooders):
    # Issue 48 item 3: per-run fairness, not first come. Flooders ask at every tick from the
    # start; the honest run joins later and asks on. Its first slot comes within one round of
    # the interval (a grant to each run served before it at most), and then it gets one slot
    # in every (flooders + 1) grants, whatever the flood's rate.
    clock = Clock()
    start = clock.t
    honest_from = start + 3 * INTERVAL + 1.0
    askers = {**{f"flood{i}": start for i in range(flooders)}, "honest": honest_from}
    grants = _rounds(tmp_path, clock, askers, start + 40 * INTERVAL)
    mine = [t for t, run in grants if run == "honest"]
    assert mine and mine[0] - honest_from <= INTERVAL + 0.2 + 1e-6, grants[:12]
    after = [run for t, run in grants if t >= mine[0]]
    for i in range(0, len(after) - flooders, flooders + 1):
        window = after[i:i + flooders + 1]
        assert sorted(window) == sorted(askers), (i, window)
    assert all(b - a >= INTERVAL - 1e-6 for (a, _), (b, _) in zip(grants, grants[1:]))
