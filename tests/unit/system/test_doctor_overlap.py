"""doctor's two slow checks overlap without changing either: the staged items are re-hashed
one at a time while the toolbox's tools run (procs.run_each_bounded's `meanwhile`)."""

from __future__ import annotations

from biotool.procs import run_each_bounded


def test_meanwhile_steps_run_while_the_commands_run_and_change_no_result(tmp_path):
    # The first command runs until the fifth step lets it go (a file, not a sleep), so every
    # step is taken while it runs, however fast or loaded the host.
    started, go, done = tmp_path / "started", tmp_path / "go", tmp_path / "done"
    cmds = [["sh", "-c", f"touch {started}; until [ -e {go} ]; do sleep 0.01; done; "
                         f"touch {done}; echo ok >&2"],
            ["sh", "-c", "echo nope >&2; exit 3"]]
    seen = []

    def step() -> bool:
        if not started.exists():
            return True  # the command has not begun yet: nothing to overlap with
        seen.append((started.exists(), done.exists()))
        if len(seen) == 5:
            go.touch()
        return len(seen) < 5

    ran = run_each_bounded(cmds, seconds=300, width=2, meanwhile=step)
    assert ran == [(0, "ok"), (3, "nope")]
    # Every step taken while the first command was running, then none after it said there is
    # no more.
    assert seen == [(True, False)] * 5 and done.exists()


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
