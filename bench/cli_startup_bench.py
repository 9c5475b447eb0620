"""Start-up CPU of biotool's command line on this host: this checkout against another (the
layer before a change), each call a fresh process, the two interleaved call by call so a
loaded host's drift falls on both alike.

    python bench/cli_startup_bench.py OTHER_CHECKOUT [--rounds 15] [--home STAGED_HOME]
    python bench/cli_startup_bench.py OTHER_CHECKOUT --image biotool-sandbox:latest [--runtime runsc]

CPU seconds (user + system of the child) are counted, not wall time: the host may be loaded.
Prints one JSON object: per case, the median CPU seconds of each side, their ratio and their
difference in ms. With --image, every call runs inside one container of the image, in the
sandbox's shape (uid 12345, read-only root, tmpfs /tmp, no network; on --runtime, e.g. gVisor),
with the image's Python and staged home; both trees' `entrypoints/` are copied to the tmpfs and
compiled there first, as the image's own modules are (PYTHONPYCACHEPREFIX would not do: it
makes every site-package's bytecode be looked for there, tripling `import typer`).
bench/firstcall_bench.py measures each command's first call against its warm call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = {
    "--help": ["--help"],
    "list": ["list"],
    "command help": ["taxonomy", "--help"],
    "unknown command": ["taxonomy-x"],
    "command with a value": ["align", "--fastq", "missing.fastq", "--reference", "MN908947.3"],
    "its usage error": ["align", "--fastq", "missing.fastq", "--sample", "0"],
}


def cpu_of(tree: Path, args: list[str], env: dict) -> float:
    """CPU seconds of one `biotool ARGS` process run from `tree`."""
    proc = subprocess.Popen([sys.executable, "-m", "biotool", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            env={**env, "PYTHONPATH": str(tree / "entrypoints")})
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime


def in_image(a: argparse.Namespace) -> None:
    """This script run inside one container of a.image (this tree at /bench/this, the other at
    /bench/other), its JSON printed with the image and runtime it ran on."""
    docker = ["docker", "run", "--rm", "--network", "none", "--user", "12345:12345",
              "--read-only", "--tmpfs", "/tmp:size=256m", "--entrypoint", "bash"]
    if a.runtime:
        docker += ["--runtime", a.runtime]
    for tree, at in ((REPO, "/bench/this"), (a.other.resolve(), "/bench/other")):
        docker += ["-v", f"{tree / 'entrypoints'}:{at}/entrypoints:ro"]
    inside = ("cp -r /bench/this /bench/other /tmp/ && python3 -m compileall -q "
              "/tmp/this/entrypoints /tmp/other/entrypoints >/dev/null && exec python3 "
              f"/tmp/this/bench/cli_startup_bench.py /tmp/other --rounds {a.rounds}")
    docker += ["-v", f"{REPO / 'bench'}:/bench/this/bench:ro", a.image, "-c", inside]
    ran = subprocess.run(docker, capture_output=True, text=True)
    if ran.returncode != 0:
        sys.exit(f"cli_startup_bench: the run in {a.image} failed: {ran.stderr.strip()[-500:]}")
    print(json.dumps({"image": a.image, "runtime": a.runtime or "default",
                      "cases": json.loads(ran.stdout)}, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("other", type=Path, help="the checkout to compare with (the baseline)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--home", default=os.environ.get("BIOTOOL_HOME", ""))
    ap.add_argument("--image", default="", help="run inside one container of this image")
    ap.add_argument("--runtime", default="", help="with --image: the engine runtime (runsc)")
    a = ap.parse_args()
    if a.image:
        return in_image(a)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BIOTOOL_CONFIDENT")}
    if a.home:
        env["BIOTOOL_HOME"] = a.home
    trees = {"this": REPO, "other": a.other.resolve()}
    times = {case: {side: [] for side in trees} for case in CASES}
    for n in range(a.rounds):
        for case, args in CASES.items():
            for side in (("this", "other") if n % 2 else ("other", "this")):
                tree = trees[side]
                times[case][side].append(cpu_of(tree, args, env))
    out = {}
    for case, sides in times.items():
        this, other = (statistics.median(sides[s]) for s in ("this", "other"))
        out[case] = {"this_s": round(this, 4), "other_s": round(other, 4),
                     "ratio": round(this / other, 2), "added_ms": round(1000 * (this - other))}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
