"""doctor's two slow checks overlap without changing either: the staged items are re-hashed
one at a time while the toolbox's tools run (procs.run_each_bounded's `meanwhile`)."""

from __future__ import annotations

from biotool.procs import run_each_bounded


def test_meanwhile_steps_run_while_the_commands_run_and_change_no_result(tmp_path):
    started, done = tmp_path / "started", tmp_path / "done"
    cmds = [["sh", "-c", f"touch {started}; sleep 0.5; touch {done}; echo ok >&2"],
            ["sh", "-c", "echo nope >&2; exit 3"]]
    seen = []

    def step() -> bool:
        seen.append((started.exists(), done.exists()))
        return len(seen) < 5

    ran = run_each_bounded(cmds, seconds=10, width=2, meanwhile=step)
    assert ran == [(0, "ok"), (3, "nope")]
    assert len(seen) == 5  # every step taken, then none after it said there is no more
    assert (True, False) in seen  # ... while the first command was running


def test_doctor_reports_every_staged_item_in_order_whether_or_not_it_overlaps(biotool_env):
    from biotool.system import doctor

    whole = doctor.check_staged()
    assert whole and all(c["ok"] for c in whole)
    assert [c["check"] for c in whole] == sorted(c["check"] for c in whole)
    stepped = doctor.StagedChecks()
    steps = 0
    while stepped.step():
        steps += 1
    assert steps == len(whole) - 1 and stepped.checks == whole
    assert stepped.finish() == whole and not stepped.step()


def test_a_changed_staged_file_still_fails_doctor_when_checked_in_steps(biotool_env):
    from biotool import staging
    from biotool.system import doctor

    item = next(i for i in staging.inventory().items.values() if not i.error)
    path = item.path()
    target = path if path.is_file() else next(p for p in path.rglob("*") if p.is_file())
    original = target.read_bytes()
    try:
        target.write_bytes(original + b"\n")
        checks = doctor.StagedChecks()
        checks.finish()
        bad = [c for c in checks.checks if not c["ok"]]
        assert [c["check"] for c in bad] == [f"staged:{item.kind}/{item.name}"]
        assert "does not match its recorded sha256" in bad[0]["detail"]
    finally:
        target.write_bytes(original)
