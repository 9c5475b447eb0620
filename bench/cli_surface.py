"""The command-line surface of the three programs as JSON, to compare two builds of the layer.

For each program: its help page and every command's (biotool's in both arms), the usage
probes below, and each case of the bad-input corpus (tests/badinput) with its exit code and
last stderr line. Run it on two trees and diff the two files:

    PYTHONPATH=$PWD/entrypoints:$PWD/tests python3 bench/cli_surface.py OUT.json \
        [--tree OTHER_CHECKOUT] [--no-corpus]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TREE = REPO  # the checkout whose programs run (--tree)
MODULES = {"biotool": "biotool", "molperceive": "molperceive",
           "biotool-sandbox": "biotool_sandbox"}
# Usage errors the corpus leaves out: the parser's own refusals, for each program.
PROBES = [
    [], ["--nope"], ["nope"], ["-q"], ["--quiet", "--help"], ["-h"], ["--help", "x"],
    ["list", "--nope"], ["list", "extra"], ["list", "-h"], ["list", "--help=1"],
    ["taxonomy", "--top"], ["taxonomy", "--top", "0"], ["taxonomy", "--top", "1e99"],
    ["taxonomy", "--top", "x"], ["taxonomy", "--timeout", "nan"], ["taxonomy", "--timeout=-1"],
    ["taxonomy", "--fasta", ""], ["taxonomy", "--fasta", "a", "--fasta", "b"],
    ["taxonomy", "--local=1"], ["taxonomy", "--seed", "99999999999999999999"],
    ["taxonomy", "--fasta", "x" * 10_001], ["taxonomy", "--fast", "a"],
    ["taxonomy", "--fasta", "-", "--", "x"], ["call"], ["call", "--", "-x"],
    ["align", "--fastq", "R1", "R2", "--reference", "-"], ["align", "--bam"],
    ["breakpoints", "--bam", "a.bam", "b.bam", "--reference", "nope"],
    ["celltype", "--matrix"], ["celltype", "--n-cells", "0"],
    ["contract", "--nope"], ["label", "--nope"], ["label", "C", "--top", "0"],
    ["exec", "--timeout", "-1", "--", "true"], ["exec", "--", "--help"], ["exec"],
    ["exec", "--memory", "0"], ["k8s-values", "--nope"], ["run", "--timeout", "x"],
    ["-qh"], ["list", "-qh"], ["align", "--fastq", "x.fq", "--n-reads"],
    ["align", "--fastq", "x.fq", "--n-reads", "5", "--sample", "5"],
    ["align", "--fastq", "-odd.fq", "--reference", "MN908947.3"],
    ["variants", "--reference", "MN908947.3", "--bam", "a.bam", "--top", "3", "b.bam"],
    ["call", "gene_lookup", "--max-chars", "500", "{}"], ["call", "--", "gene_lookup", "{}"],
    ["label", "--fields", "formula", "CCO"], ["label", "--", "-C"],
    ["exec", "--", "true"], ["exec", "bts-1a2b3c4d", "--timeout", "5", "--", "ls", "-l"],
]


def _env(arm: str = "") -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (
        "COLUMNS", "BIOTOOL_CONFIDENT", "BIOTOOL_ARMS", "BIOTOOL_DEBUG", "BIOTOOL_QUIET",
        "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")}
    env["PYTHONPATH"] = os.pathsep.join([str(TREE / "entrypoints"), str(TREE / "tests")])
    env["PYTHONIOENCODING"] = "utf-8"
    if arm:
        env["BIOTOOL_CONFIDENT"] = "1"
    return env


def call(program: str, args: list[str], arm: str = "", home: str = "") -> dict:
    env = _env(arm)
    if home:
        env.update(BIOTOOL_HOME=home, BIOTOOL_CACHE=tempfile.mkdtemp(prefix="surface-cache-"))
    proc = subprocess.run([sys.executable, "-m", MODULES[program], *args], env=env,
                          capture_output=True, text=True, errors="replace",
                          stdin=subprocess.DEVNULL, timeout=120)
    return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


def commands_of(help_page: str) -> list[str]:
    """The command names a program's help page lists under Commands:."""
    lines = help_page.split("Commands:\n", 1)[1].splitlines()
    return [ln.split()[0] for ln in lines if ln.startswith("  ") and not ln.startswith("   ")]


def help_pages() -> dict:
    out = {}
    for program in MODULES:
        for arm in ("", "confident") if program == "biotool" else ("",):
            top = call(program, ["--help"], arm)
            out[f"{program} --help {arm}".strip()] = top
            for name in commands_of(top["stdout"]):
                out[f"{program} {name} --help {arm}".strip()] = call(program, [name, "--help"], arm)
    return out


def probes(home: str) -> dict:
    out = {}
    for program in MODULES:
        for args in PROBES:
            got = call(program, args, home=home)
            lines = got["stderr"].strip().splitlines()
            out[f"{program} {' '.join(args)[:120]}"] = {
                "rc": got["rc"], "last": lines[-1] if lines else "",
                "stderr_lines": len(lines), "stdout_start": got["stdout"][:80]}
    return out


def corpus(home: str) -> dict:
    from badinput import cases as badinput

    base = Path(tempfile.mkdtemp(prefix="surface-corpus-"))
    root = badinput.materialise(base / "corpus")
    selected = [c for c in badinput.cases() if not (os.geteuid() == 0 and c["nonroot"])]
    (root / "cases.json").write_text(json.dumps({"cases": selected}))
    subprocess.run([sys.executable, str(TREE / "tests" / "badinput" / "driver.py"),
                    str(root / "cases.json"), str(base / "results.json"), "--home", home,
                    "--cache", str(base / "cache"), "--jobs", "2"], env=_env(), check=True)
    out = {}
    for r in json.loads((base / "results.json").read_text()):
        lines = r["stderr"].strip().splitlines()
        out[r["id"]] = {"rc": r["rc"], "last": (lines[-1] if lines else "").replace(
            str(base), "{base}").replace(home, "{home}")}
    return out


def staged_home() -> str:
    from biotool.stagebuild.build import stage
    from biotool_testing.paths import REFS

    home = tempfile.mkdtemp(prefix="surface-home-")
    stage(REFS, Path(home), ["demo"])
    return home


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--no-corpus", action="store_true", help="help pages and probes only")
    ap.add_argument("--home", help="a staged demo home (default: stage one)")
    ap.add_argument("--tree", type=Path, default=REPO, help="the checkout to run")
    a = ap.parse_args()
    global TREE
    TREE = a.tree.resolve()
    home = a.home or staged_home()
    surface = {"help": help_pages(), "probes": probes(home)}
    if not a.no_corpus:
        surface["corpus"] = corpus(home)
    Path(a.out).write_text(json.dumps(surface, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
