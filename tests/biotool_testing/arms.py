"""The two arms of the experiment checked against their declarations: a command run marked
(`BIOTOOL_ARMS=marked`: hedge text still marked, the answer's declared hedge fields listed),
as the tool and as the control (`BIOTOOL_CONFIDENT=1`); both arms must be what the marked run
declares, and nothing else."""

from __future__ import annotations

import json
import re

from biotool.arms import HEDGE_CLOSE, HEDGE_OPEN, MARKED_KEY, Hedges, for_arm, text_for_arm

MODES = {"marked": {"BIOTOOL_ARMS": "marked"}, "tool": {}, "control": {"BIOTOOL_CONFIDENT": "1"}}
# Values that differ between any two runs of one command, whatever the arm.
VOLATILE = ("timing.elapsed_s",)
# The lessons the tool teaches, written out here rather than taken from the declarations, so a
# hedge left undeclared in the control arm is caught by its words (each a phrase, lower case).
LESSONS = ("blind_spot", "blind spot", "caveat", "detection floor", "detection_floor",
           "unobserved, not absent", "not evidence either way", "not nt", "deplete",
           "can_see_minority", "p_minority_seen", "n_below_floor", "fraction_assessed",
           "other_indels_nearby", "reference_is_conclusive", "no_hit_caveat", "competence",
           "biotool_confident", "with the limits stated", "types it never saw",
           "the subtype may be missing", "stands alone", "trusting")

# Findings: sentences that report what happened (what was searched, what a check found, why a
# floor is where it is, what could not be scored), not doubt about it. Each is a phrase, lower
# case; wherever the tool's answer says one, the control's must too (a failure or a reason is
# not a hedge, so declaring it one would strip it from the control).
FINDINGS = ("indistinguishable from sequencing", "is not the md5 of",
            "positions are read as --reference's", "no celltypist reference could be scored",
            "whole_input",
            "cannot load", "failed while generating")


def findings_lost(tool, control) -> list[str]:
    """The findings the tool's answer states and the control's does not."""
    have = json.dumps(control, ensure_ascii=False).lower()
    said = json.dumps(tool, ensure_ascii=False).lower()
    return [w for w in FINDINGS if w in said and w not in have]


def marks_left(obj) -> list[str]:
    """Every string (or help text) that still carries a hedge mark."""
    text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return [m.group(0) for m in re.finditer(f".{{0,60}}[{HEDGE_OPEN}{HEDGE_CLOSE}].{{0,60}}",
                                            text)]


def present(obj, path: str) -> bool:
    """Whether the field at a declared path (dots, `[]` for each list item, `*` for each
    value) exists anywhere in `obj`."""
    step, _, rest = path.partition(".")
    each = step.endswith("[]")
    key = step[:-2] if each else step
    if not isinstance(obj, dict):
        return False
    for k in (list(obj) if key == "*" else [key] if key in obj else []):
        if not rest and not each:
            return True
        values = obj[k] if each and isinstance(obj[k], list) else [] if each else [obj[k]]
        if not rest and values:
            return True
        if any(present(v, rest) for v in values):
            return True
    return False


def _without(obj, path: str):
    step, _, rest = path.partition(".")
    if isinstance(obj, dict) and step in obj:
        if rest:
            _without(obj[step], rest)
        else:
            obj.pop(step)
    return obj


def settled(answer: dict) -> dict:
    for path in VOLATILE:
        _without(answer, path)
    return answer


def lessons_in(text: str) -> list[str]:
    low = text.lower()
    return [w for w in LESSONS if w in low]


def check_answer(name: str, marked: dict, tool: dict, control: dict) -> Hedges:
    """Both arms are the marked answer rendered by its own declaration, and nothing else; the
    control carries no declared field, no mark and no lesson. Returns the declaration."""
    marked = dict(marked)
    hedges = Hedges.of(*marked.pop(MARKED_KEY))
    assert not marks_left(tool), (name, marks_left(tool))
    assert not marks_left(control), (name, marks_left(control))
    want_tool = settled(for_arm(marked, hedges, False))
    want_control = settled(for_arm(marked, hedges, True))
    assert settled(dict(tool)) == want_tool, f"{name}: the tool arm is not its declaration"
    assert settled(dict(control)) == want_control, \
        f"{name}: the control arm differs from the tool by more than its declared hedges"
    left = [p for p in hedges.paths if present(control, p)]
    assert not left, (name, left)
    said = lessons_in(json.dumps({k: v for k, v in control.items() if k != "provenance"}))
    assert not said, f"{name}: the control arm still teaches {said}"
    lost = findings_lost(tool, control)
    assert not lost, f"{name}: the control arm lost findings, declared as hedges: {lost}"
    return hedges


def words(text: str) -> str:
    """A help page's words in order: wrapping and indentation aside."""
    return re.sub(r"-\s+", "-", " ".join(text.split()))


def check_help(name: str, marked: str, tool: str, control: str) -> None:
    """Both arms of a help page are the marked page with its marks dropped, or with what they
    mark dropped, word for word; the control page teaches no lesson."""
    assert not marks_left(tool) and not marks_left(control), name
    assert words(tool) == words(text_for_arm(marked, False)), name
    assert words(control) == words(text_for_arm(marked, True)), \
        f"{name}: the control's help differs from the tool's by more than its declared hedges"
    said = lessons_in(control)
    assert not said, f"{name}: the control's help still teaches {said}"


def run_arms(biotool, args: tuple[str, ...], env: dict | None = None) -> dict[str, dict]:
    """One command run marked, as the tool and as the control with `biotool` (the unit tier's
    runner), checked against the marked run's declaration; the tool's and the control's
    answers."""
    runs = {mode: biotool(*args, env={**(env or {}), **extra}) for mode, extra in MODES.items()}
    assert {r.code for r in runs.values()} == {0}, [r.stderr for r in runs.values()]
    check_answer(" ".join(args), runs["marked"].json, runs["tool"].json, runs["control"].json)
    return {"tool": runs["tool"].json, "control": runs["control"].json}
