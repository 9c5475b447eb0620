"""`biotool-sandbox demo` (what `make demo` runs): a short real agent session in the enforced stack.

up, `biotool --help`, `list`, `references`, `doctor`, then each tool family that has landed in
the image on the demo samples the image stages under /opt/biotool/samples (found, as an agent
would, in `biotool list`; a family missing from `biotool --help` is skipped and said so, a
sample the image lacks fails the demo), a tool the policy refuses (exit 3), one forbidden
egress attempt, the audit, down. A readable transcript goes to stderr; the JSON summary to
stdout.
"""

from __future__ import annotations

import json
import sys

from . import agent
from .backends import compose
from .backends.spec import RunSpec
from .engine import egress_audit

READS = "demo-sarscov2-artic-reads"  # refs/samples.toml: 200 ARTIC nanopore reads
PBMC = "demo-pbmc68k-heldout"  # refs/samples.toml: held-out PBMCs, Matrix Market folder
PROBE = ("import urllib.request\n"
         "try:\n"
         "    urllib.request.urlopen('https://example.com/', timeout=10)\n"
         "    print('reached example.com')\n"
         "except Exception as exc:\n"
         "    print('blocked:', exc)\n")

# (family command, sample it reads, argv with {path} for the staged sample's path).
FAMILY_STEPS = (
    ("align", READS, ["biotool", "align", "--fastq", "{path}", "--reference", "MN908947.3"]),
    ("variants", READS, ["biotool", "variants", "--fastq", "{path}", "--reference", "MN908947.3",
                         "--top", "5", "--timeout", "120"]),
    ("breakpoints", READS, ["biotool", "breakpoints", "--fastq", "{path}", "--reference",
                            "MN908947.3", "--top", "5", "--timeout", "120"]),
    ("taxonomy", READS, ["biotool", "taxonomy", "--fastq", "{path}", "--local", "--sample", "20",
                         "--timeout", "120"]),
    ("celltype", PBMC, ["biotool", "celltype", "--matrix", "{path}", "--model", "celltypist"]),
    # The annotation tools read the staged gene table: D614G in the S gene of MN908947.3.
    ("call", None, ["biotool", "call", "variant_annotate",
                    '{"reference": "MN908947.3", "position": 23403, "ref": "A", "alt": "G"}']),
)
# A literature look-up the tool policy must refuse (exit 3): the demo shows the rule's answer.
FORBIDDEN_TOOL = ["biotool", "call", "pubmed_search", '{"query": "SARS-CoV-2 D614G"}']


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


def staged_samples(list_stdout: str) -> dict[str, str]:
    """{sample name: path} of the usable samples in `biotool list`'s JSON."""
    try:
        items = json.loads(list_stdout).get("items", [])
    except (ValueError, AttributeError):
        return {}
    return {i["name"]: i["path"] for i in items
            if i.get("kind") == "sample" and i.get("usable") and i.get("path")}


def plan(help_stdout: str, list_stdout: str) -> tuple[list[tuple[str, list[str]]], list[dict]]:
    """The family steps to run (label, argv) and the ones skipped, with why."""
    present, samples = _commands(help_stdout), staged_samples(list_stdout)
    todo, skipped = [], []
    for family, sample, argv in FAMILY_STEPS:
        if family not in present:
            skipped.append({"family": family, "why": "not in this image's `biotool --help`"})
        elif sample is not None and sample not in samples:
            # The demo image stages every sample: a missing one is a broken build, not a skip.
            skipped.append({"family": family, "why": f"sample {sample} not staged in this image",
                            "missing_sample": sample})
        else:
            path = samples.get(sample, "")
            todo.append((family, [a.replace("{path}", path) for a in argv]))
    return todo, skipped


def demo(*, image: str | None = None, egress_image: str | None = None,
         compose_file: str | None = None, keep: bool = False) -> dict:
    steps: list[dict] = []
    _say("== biotool-sandbox demo: up")
    up = compose.up(RunSpec(image=image, egress_image=egress_image, compose=compose_file))
    run = up["run"]
    _say(f"run {run}: containers {up['containers']}, networks {up['networks']}")

    def step(label: str, argv: list[str], timeout: float = 300, expect: int = 0) -> dict:
        _say(f"\n$ {' '.join(argv)}")
        res = agent.exec_(run, argv, timeout=timeout)
        _say(f"  exit {res['exit_code']} in {res['duration_s']}s: {_gist(res['stdout'])}")
        if res["exit_code"] != 0 and res["stderr"].strip():  # the one-line error
            _say(f"  stderr: {res['stderr'].strip().splitlines()[-1][:300]}")
        steps.append({"step": label, "command": argv, "exit_code": res["exit_code"],
                      "expected": expect, "duration_s": res["duration_s"]})
        return res

    try:
        help_res = step("help", ["biotool", "--help"])
        list_res = step("list", ["biotool", "list"])
        for label in ("references", "doctor"):
            step(label, ["biotool", label])
        todo, skipped = plan(help_res["stdout"], list_res["stdout"])
        for family, argv in todo:
            step(family, argv)
        for s in skipped:
            _say(f"\n(skipped {s['family']}: {s['why']})")
        if "call" in _commands(help_res["stdout"]):
            step("forbidden tool", FORBIDDEN_TOOL, expect=3)
        blocked = step("forbidden egress", ["python3", "-c", PROBE], timeout=60)
        audit = egress_audit.audit(run)
        _say(f"\n== egress audit of {run}: {audit['counts']}")
        for rec in audit["records"]:
            _say(f"  {rec['decision']:7} {rec['method'] or '-'} {rec['url'] or '-'} "
                 f"sni={rec['sni'] or '-'} {rec['status']}: {rec['reason']}")
    finally:
        if not keep:
            _say(f"\n== down {run}")
            down = compose.down(run, quiet=True)
    failed = [s["step"] for s in steps if s["exit_code"] != s["expected"]]
    failed += [f"{s['family']} (sample {s['missing_sample']} missing)" for s in skipped
               if s.get("missing_sample")]
    example_denied = any(r["host"] == "example.com" and r["decision"] == "denied" for r in audit["records"])
    return {"run": run, "ok": not failed and example_denied, "failed_steps": failed,
            "steps": steps, "skipped": skipped, "forbidden_egress": {
                "output": blocked["stdout"].strip(), "denied_in_audit": example_denied},
            "audit_counts": audit["counts"], "kept": keep,
            "down": None if keep else down["left"]}
