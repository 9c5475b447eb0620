"""The output contract asserted on one command's result (docs/contract.md), through the one
contract check the bad-input tier uses (tests/badinput/contract.py), so a test that expects a
refusal asserts the same thing the corpus does."""

from __future__ import annotations

import json

from badinput.contract import problems

from biotool_testing.ran import Ran


def judged(ran: Ran) -> dict:
    """`ran` in the shape the contract check reads (a corpus driver's result for one case)."""
    out = ran.stdout.strip()
    try:
        kind = "empty" if not out else ("object" if isinstance(json.loads(out), dict) else "other")
    except ValueError:
        kind = "text"
    return {"rc": ran.code, "timed_out": False, "elapsed": 0, "stdout": ran.stdout,
            "stdout_kind": kind, "stderr": ran.stderr, "outputs_present": [], "leftovers": []}


def error_line(ran: Ran, *needles: object, code: int = 2, prog: str = "biotool",
               alone: bool = False) -> str:
    """The `PROG: error:` line of a refusal on contract: exit `code`, nothing on stdout, no
    traceback, only the program's own lines on stderr with the error line last (its only line
    when `alone`), no raw control character in it (`commandline.errors.one_line` escapes an ESC),
    naming every one of `needles` (a path as its text)."""
    case = {"argv": [prog], "expect": code, "culprit": None}
    bad = problems(case, judged(ran))
    assert not bad, (bad, ran)
    assert ran.stdout == "", ran
    line = ran.stderr.splitlines()[-1]
    assert "\x1b" not in line, ran
    if alone:
        assert ran.stderr == line + "\n", ran
    for needle in map(str, needles):
        assert needle in line, (needle, ran)
    return line
