"""What gVisor costs: the sandbox under runsc against runc, in one run, interleaved.

    python bench/runtime_bench.py [--rounds 3] [--skip-toolbox]

Three measures, each as runsc's median over runc's:
- start-up: `docker run --rm IMAGE true` in the agent's shape (uid 12345, read-only root, no
  network), wall time from the host;
- first calls: `biotool --help`, `biotool list` and `biotool version` each in a fresh
  container, timed inside it (timing.py's own text), so start-up is not counted twice;
- the toolbox's real-data tasks (tests/image/test_toolbox_in_image.py, one pytest run per
  runtime and round), each task's call time from pytest's JUnit report, as a ratio per task.

Prints one JSON object and writes out/bench-runtime.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import timing

REPO = Path(__file__).resolve().parents[1]
IMAGE = os.environ.get("BIOTOOL_IMAGE", "biotool-sandbox:latest")
RUNTIMES = ("runc", "runsc")
AGENT = {"user": "12345:12345", "read_only": True, "network_mode": "none",
         "tmpfs": {"/tmp": "rw,exec,mode=1777"}}
FIRST_CALLS = {"biotool --help": ["biotool", "--help"], "biotool list": ["biotool", "list"],
               "biotool version": ["biotool", "version"]}
# Runs inside the container after timing.py's own text (the image holds no bench/).
TIMER = timing.source() + """
import json, subprocess, sys
cmd = json.loads(sys.argv[1])
seconds, _ = timed(lambda: subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
print(json.dumps({"s": round(seconds, 3)}))
"""


def startup(client, runtime: str) -> float:
    seconds, _ = timing.timed(lambda: client.containers.run(IMAGE, ["true"], remove=True,
                                                            runtime=runtime, **AGENT))
    return seconds


def first_call(client, runtime: str, cmd: list[str]) -> float:
    out = client.containers.run(IMAGE, ["python3", "-c", TIMER, json.dumps(cmd)], remove=True,
                                runtime=runtime, stderr=False, **AGENT)
    return json.loads(out)["s"]


def toolbox_tasks(runtime: str) -> dict[str, float]:
    """Each toolbox task's call time in one pytest run of the toolbox tier under `runtime`."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        env = {**os.environ, "BIOTOOL_RUNTIME": runtime, "BIOTOOL_TEST_BUILD": "0"}
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        f"--junitxml={report}", "tests/image/test_toolbox_in_image.py"],
                       cwd=REPO, env=env, stdout=subprocess.DEVNULL, check=False)
        cases = ET.parse(report).getroot().iter("testcase")
        return {c.get("name"): float(c.get("time")) for c in cases
                if c.find("failure") is None and c.find("error") is None
                and c.find("skipped") is None}


def ratio(samples: dict[str, list[float]]) -> dict:
    runc, runsc = (statistics.median(samples[r]) for r in RUNTIMES)
    return {"runc_s": round(runc, 3), "runsc_s": round(runsc, 3),
            "runsc_over_runc": round(runsc / runc, 2) if runc else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-toolbox", action="store_true", help="start-up and first calls only")
    a = ap.parse_args()
    import docker

    client = docker.from_env()
    if "runsc" not in (client.info().get("Runtimes") or {}):
        sys.exit("runtime_bench: the engine has no runtime runsc (image/runtime/register-runsc.sh)")
    starts = {r: [] for r in RUNTIMES}
    calls = {name: {r: [] for r in RUNTIMES} for name in FIRST_CALLS}
    tasks: dict[str, dict[str, list[float]]] = {}
    for _ in range(a.rounds):
        for runtime in RUNTIMES:  # interleaved, so load on the host falls on both alike
            starts[runtime].append(startup(client, runtime))
            for name, cmd in FIRST_CALLS.items():
                calls[name][runtime].append(first_call(client, runtime, cmd))
            if not a.skip_toolbox:
                for name, s in toolbox_tasks(runtime).items():
                    tasks.setdefault(name, {r: [] for r in RUNTIMES})[runtime].append(s)
    result = {"image": IMAGE, "rounds": a.rounds, "startup": ratio(starts),
              "first_calls": {n: ratio(s) for n, s in calls.items()}}
    if tasks:
        both = {n: s for n, s in tasks.items() if all(s[r] for r in RUNTIMES)}
        result["toolbox_tasks"] = {n: ratio(s) for n, s in sorted(both.items())}
        total = {r: [sum(statistics.median(s[r]) for s in both.values())] for r in RUNTIMES}
        result["toolbox_total"] = ratio(total)
    out = REPO / "out" / "bench-runtime.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
