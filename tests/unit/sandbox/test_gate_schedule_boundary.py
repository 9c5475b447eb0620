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


def _rounds(directory: Path, clock: Clock, askers: dict, until: float,
            declared: tuple[str, ...] = ()) -> list[tuple[float, str]]:
    """Every run in `askers` (name -> first time it asks) asks at every 0.2 s tick of the
    injected clock from then on, as a flood and a client re-asking after its 429 do; the
    grants in order. Each `declared` run holds its place, renewed as its gate does."""
    s = sched(directory, clock)
    s.reserve = 0.0  # each grant is its contact: the write's stamp is not what is tested here
    grants = []
    renewed = -1e18
    while clock.t < until:
        if declared and clock.t - renewed >= schedule.RENEW_S:
            for run in declared:
                s.declare(run, 30.0)
            renewed = clock.t
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


# ---- issue 48 item 3c: declared BLAST runs, counted at their start and served first

def test_declared_runs_are_counted_against_the_shortest_hold_among_them(tmp_path):
    clock = Clock()
    s = sched(tmp_path, clock)
    # A round of n runs takes n slots of ncbirule.SLOT_S: two fit in a 30 s hold, 22 in 240 s.
    assert [s.declare(f"r{i}", 30.0) for i in range(2)] == [1, 2]
    with pytest.raises(schedule.Full, match="serves 2 run.*sustains 2 at a hold of 30 s"):
        s.declare("r2", 240.0)
    assert s.declare("r1", 30.0) == 2             # a place already held is only renewed
    s.release("r0")
    assert s.declare("r2", 240.0) == 2
    # A run with a shorter hold is refused where the round would outlast it.
    with pytest.raises(schedule.Full, match="at a hold of 12 s"):
        s.declare("short", 12.0)


def test_a_place_not_renewed_is_free_again_after_its_lease(tmp_path):
    clock = Clock()
    s = sched(tmp_path, clock)
    s.declare("a", 21.0)
    s.declare("b", 21.0)
    clock.sleep(schedule.LEASE_S - 1)
    s.declare("a", 21.0)                          # a renews; b's gate went quiet
    with pytest.raises(schedule.Full):
        s.declare("c", 21.0)
    clock.sleep(1.5)
    assert s.declare("c", 21.0) == 2


@pytest.mark.parametrize("raw", [
    {"blast": {"x": [1e9, 1_000_000.0]}},          # a hold no gate accepts
    {"blast": {"x": [30.0, 9e18]}},                # renewed in the far future
    {"blast": {"x": "forever"}},                   # not a place at all
])
def test_a_damaged_place_reads_as_no_place(tmp_path, raw):
    clock = Clock()
    s = sched(tmp_path, clock)
    (tmp_path / schedule.STATE).write_text(json.dumps({"last_contact": clock.t, **raw}))
    assert s.declare("a", 21.0) == 1 and s.declare("b", 21.0) == 2


@pytest.mark.parametrize("flooders", [2, 4])
def test_a_declared_run_is_served_before_any_undeclared_flooder(tmp_path, flooders):
    # Undeclared runs ask at every tick. A declared run that asks again right after each
    # grant waits at most the slot a flooder took in between, whatever the flood's size
    # (fair turns alone would make it wait a whole round of flooders + 1 slots).
    clock = Clock()
    start = clock.t
    askers = {**{f"flood{i}": start for i in range(flooders)}, "honest": start + 25.0}
    grants = _rounds(tmp_path, clock, askers, start + 30 * INTERVAL, declared=("honest",))
    mine = [t for t, run in grants if run == "honest"]
    assert mine and mine[0] - askers["honest"] <= INTERVAL + 0.2 + 1e-6
    assert len(mine) >= 10 and all(b - a <= 2 * INTERVAL + 0.2 + 1e-6
                                   for a, b in zip(mine, mine[1:])), mine
    # Undeclared, the same run gets only its fair turn in each round.
    clock = Clock()
    (tmp_path / "fair").mkdir()
    fair = _rounds(tmp_path / "fair", clock, askers | {"honest": clock.t + 25.0},
                   clock.t + 30 * INTERVAL)
    theirs = [t for t, run in fair if run == "honest"]
    assert max(b - a for a, b in zip(theirs, theirs[1:])) >= (flooders + 1) * INTERVAL - 1e-6


def test_a_gate_that_declares_blast_past_what_the_host_sustains_does_not_start(tmp_path, capsys):
    # The egress then never becomes ready: `up` reports the line, a Harbor trial's healthcheck
    # (doctor: the proxy does not answer) fails its environment, never the agent.
    gatekeeper = scripts.module(EGRESS / "gatekeeper.py")
    cas = certificates.server_ca(tmp_path / "ca", HOST, ca_name="run CA")
    state = tmp_path / "schedule"
    state.mkdir()
    s = schedule.Schedule(state, INTERVAL)
    s.declare("a", 30.0)
    s.declare("b", 30.0)
    ready = tmp_path / "ready"
    args = ["--rules", str(REPO / "image" / "rules.toml"), "--cert", cas["cert"],
            "--key", cas["key"], "--state-dir", str(state), "--ready-file", str(ready),
            "--listen", "127.0.0.1:0", "--hold", "240", "--blast"]
    assert gatekeeper.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("egress gate: refused: this host's NCBI schedule "
                                               "already serves 2 run(s) that declared BLAST"), err
    import time

    places = s.read((state / schedule.STATE).read_bytes(), time.time())["blast"]
    assert not ready.exists() and set(places) == {"a", "b"}


def test_the_launchers_down_frees_a_declared_runs_place_before_the_kill(tmp_path):
    # `down` kills the egress at once (no SIGTERM reaches the gate), so it first runs the
    # gate's --release in it: the run's place is free for the next run without the lease.
    gatekeeper = scripts.module(EGRESS / "gatekeeper.py")
    state, run_state = tmp_path / "schedule", tmp_path / "run"
    state.mkdir()
    run_state.mkdir()
    run = gatekeeper.stable_run_id(str(run_state))
    s = schedule.Schedule(state, INTERVAL)
    s.declare(run, 30.0)
    s.declare("other", 30.0)
    assert gatekeeper.main(["--release", "--state-dir", str(state),
                            "--run-state", str(run_state)]) == 0
    import time

    assert set(s.read((state / schedule.STATE).read_bytes(), time.time())["blast"]) == {"other"}
