"""`biotool-sandbox demo` (what `make demo` runs): a short real agent session in the enforced stack.

up, copy the demo reads in, `biotool list`, `references`, `doctor`, then each tool family that
has landed in the image on the demo data (families missing from `biotool --help` are skipped
and said so), one forbidden egress attempt, the audit, down. A readable transcript goes to
stderr; the JSON summary to stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import agent, stack

REPO = Path(__file__).resolve().parents[2]
READS = REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"
PROBE = ("import urllib.request\n"
         "try:\n"
         "    urllib.request.urlopen('https://example.com/', timeout=10)\n"
         "    print('reached example.com')\n"
         "except Exception as exc:\n"
         "    print('blocked:', exc)\n")

# (family command, argv): each runs only when `biotool --help` lists the command.
FAMILY_STEPS = (
    ("align", ["biotool", "align", "--fastq", "/work/MT007544.fastq", "--reference", "MN908947.3"]),
    ("variants", ["biotool", "variants", "--fastq", "/work/MT007544.fastq", "--reference", "MN908947.3",
                  "--top", "5", "--timeout", "120"]),
    ("breakpoints", ["biotool", "breakpoints", "--fastq", "/work/MT007544.fastq", "--reference",
                     "MN908947.3", "--top", "5", "--timeout", "120"]),
    ("taxonomy", ["biotool", "taxonomy", "--fastq", "/work/MT007544.fastq", "--local",
                  "--sample", "20", "--timeout", "120"]),
)
NOT_ON_DEMO_DATA = {"celltype": "no single-cell matrix in the demo data",
                    "annotate": "no annotation input in the demo data"}


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _gist(stdout: str, limit: int = 600) -> str:
    """A short view of a command's JSON for the transcript."""
    try:
        obj = json.loads(stdout)
    except ValueError:
        return (stdout.strip().splitlines() or [""])[0][:limit]
    return json.dumps(obj, separators=(",", ":"))[:limit]


def _commands(help_text: str) -> list[str]:
    lines = help_text.split("Commands:", 1)[-1].splitlines()
    return [line.split()[0] for line in lines if line.startswith("  ") and line.split()]


def demo(*, image: str | None = None, egress_image: str | None = None, compose: str | None = None,
         keep: bool = False) -> dict:
    steps: list[dict] = []
    _say("== biotool-sandbox demo: up")
    up = stack.up("default", image=image, egress_image=egress_image, compose=compose)
    run = up["run"]
    _say(f"run {run}: containers {up['containers']}, networks {up['networks']}")

    def step(label: str, argv: list[str], timeout: float = 300) -> dict:
        _say(f"\n$ {' '.join(argv)}")
        res = agent.exec_(run, argv, timeout=timeout)
        _say(f"  exit {res['exit_code']} in {res['duration_s']}s: {_gist(res['stdout'])}")
        if res["exit_code"] != 0 and res["stderr"].strip():
            _say(f"  stderr: {res['stderr'].strip().splitlines()[-1][:300]}")
        steps.append({"step": label, "command": argv, "exit_code": res["exit_code"],
                      "duration_s": res["duration_s"]})
        return res

    try:
        copied = agent.cp(str(READS), f"{run}:/work/")
        _say(f"\ncopied {READS.name} into {copied['destination']}")
        help_res = step("help", ["biotool", "--help"])
        present = _commands(help_res["stdout"])
        for label in ("list", "references", "doctor"):
            step(label, ["biotool", label])
        skipped = []
        for family, argv in FAMILY_STEPS:
            if family in present:
                step(family, argv)
            else:
                skipped.append({"family": family, "why": "not in this image's `biotool --help`"})
        for family, why in NOT_ON_DEMO_DATA.items():
            if family in present:
                skipped.append({"family": family, "why": why})
        for s in skipped:
            _say(f"\n(skipped {s['family']}: {s['why']})")
        blocked = step("forbidden egress", ["python3", "-c", PROBE], timeout=60)
        audit = agent.audit(run)
        _say(f"\n== egress audit of {run}: {audit['counts']}")
        for rec in audit["records"]:
            _say(f"  {rec['decision']:7} {rec['method'] or '-'} {rec['url'] or '-'} "
                 f"sni={rec['sni'] or '-'} {rec['status']}: {rec['reason']}")
    finally:
        if not keep:
            _say(f"\n== down {run}")
            down = stack.down(run, quiet=True)
    failed = [s["step"] for s in steps if s["exit_code"] != 0 and s["step"] != "forbidden egress"]
    example_denied = any(r["host"] == "example.com" and r["decision"] == "denied" for r in audit["records"])
    return {"run": run, "ok": not failed and example_denied, "failed_steps": failed,
            "steps": steps, "skipped": skipped, "forbidden_egress": {
                "output": blocked["stdout"].strip(), "denied_in_audit": example_denied},
            "audit_counts": audit["counts"], "kept": keep,
            "down": None if keep else down["left"]}
