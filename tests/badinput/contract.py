"""The output contract every bad-input case is held to (docs/contract.md: exit codes and errors).

stdout empty or exactly one JSON object; stderr only lines of the program's own prefix, the
last of them the one `PROG: error:` line, naming the culprit; the documented exit code; no
hang; no traceback; nothing half-written (outputs absent, nothing left in the cache).
"""

from __future__ import annotations


def problems(case: dict, result: dict) -> list[str]:
    """What in `result` breaks the contract for `case`; empty when it behaved."""
    out = []
    prog = case["argv"][0]
    if result["timed_out"]:
        return [f"hung: killed after {result['elapsed']:.0f} s"]
    if result["rc"] != case["expect"]:
        out.append(f"exit {result['rc']}, expected {case['expect']}")
    kind = result["stdout_kind"]
    if kind not in ("empty", "object"):
        out.append(f"stdout is {kind}, not one JSON object: {result['stdout'][:120]!r}")
    if "Traceback" in result["stderr"]:
        out.append("traceback on stderr")
    lines = [ln for ln in result["stderr"].splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith(f"{prog}: error:")]
    if case["expect"] != 0:
        if len(errors) != 1:
            out.append(f"{len(errors)} '{prog}: error:' lines on stderr")
        elif lines[-1] != errors[0]:
            out.append("the error line is not the last line on stderr")
        foreign = [ln for ln in lines if not ln.startswith(f"{prog}: ")]
        if foreign:
            out.append(f"stderr line not from {prog}: {foreign[0][:120]!r}")
        culprit = case.get("culprit")
        if errors and culprit and culprit.lower() not in errors[0].lower():
            out.append(f"error line does not name {culprit!r}")
    elif errors:
        out.append("error line on stderr with exit 0")
    if result["outputs_present"]:
        out.append(f"left behind: {', '.join(result['outputs_present'])}")
    if result["leftovers"] and result["rc"] != 0:
        out.append(f"half-written in the cache: {', '.join(result['leftovers'][:3])}")
    return out


def summary(cases: list[dict], results: list[dict]) -> dict:
    """Counts on contract overall and per family, and the failing cases with what they did."""
    by_id = {c["id"]: c for c in cases}
    fams: dict[str, list[int]] = {}
    failing = []
    for r in results:
        case = by_id[r["id"]]
        bad = problems(case, r)
        fam = fams.setdefault(case["family"], [0, 0])
        fam[1] += 1
        if bad:
            failing.append({"id": r["id"], "problems": bad, "rc": r["rc"],
                            "stderr": r["stderr"].strip().splitlines()[-1:] if r["stderr"].strip() else []})
        else:
            fam[0] += 1
    ok = sum(f[0] for f in fams.values())
    return {"cases": len(results), "on_contract": ok,
            "families": {k: {"on_contract": v[0], "cases": v[1]} for k, v in sorted(fams.items())},
            "failing": failing}
