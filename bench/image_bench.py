"""Image benchmark: `biotool --help` start-up inside the container, image size, build time.

    python bench/image_bench.py [--runs 21] [--rebuild]

Start-up is timed inside one container (no docker exec overhead in the figure), alternating
`biotool --help` with its peer `python3 -c pass` in the same container, and reported as
medians and their ratio. Image size comes from the engine. Build time is read from
out/last-build.json and out/builds.jsonl, which `make image` writes; --rebuild times a fresh `make image` first
(a cached rebuild unless sources changed). Prints one JSON object and writes
out/bench-image.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

import timing

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "out"
IMAGE = os.environ.get("BIOTOOL_IMAGE", "biotool-sandbox:latest")
EGRESS = os.environ.get("BIOTOOL_EGRESS_IMAGE", "biotool-egress:latest")

# Runs inside the container with the image's python, after timing.py's own text (the image
# holds no bench/): prints per-command wall times.
TIMER = timing.source() + """
import json, statistics, subprocess, sys
runs = int(sys.argv[1])
cmds = {"biotool --help": ["biotool", "--help"], "python3 -c pass": ["python3", "-c", "pass"],
        "biotool version": ["biotool", "version"]}
times = {k: [] for k in cmds}
for cmd in cmds.values():  # one warm-up each: page cache, not interpreter state
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
for _ in range(runs):
    for name, cmd in cmds.items():
        seconds, _proc = timed(lambda: subprocess.run(cmd, stdout=subprocess.DEVNULL,
                                                      stderr=subprocess.DEVNULL, check=True))
        times[name].append(seconds)
print(json.dumps({k: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v)}
                  for k, v in times.items()}))
"""


def startup(client, runs: int) -> dict:
    # The Apptainer shape, so the figure includes the read-only, arbitrary-UID start-up path.
    out = client.containers.run(IMAGE, ["python3", "-c", TIMER, str(runs)], remove=True,
                                network_mode="none", user="12345:12345", read_only=True,
                                tmpfs={"/tmp": ""}, stderr=False)
    times = json.loads(out)
    help_s = times["biotool --help"]["median_s"]
    peer_s = times["python3 -c pass"]["median_s"]
    return {"runs": runs, "times": times,
            "help_over_bare_python": round(help_s / peer_s, 2)}


def sizes(client) -> dict:
    out = {}
    for name in (IMAGE, EGRESS):
        img = client.images.get(name)
        out[name] = {"bytes": img.attrs["Size"], "gib": round(img.attrs["Size"] / 2**30, 2),
                     "layers": len(img.history())}
    return out


def rebuild() -> dict:
    seconds, proc = timing.timed(lambda: subprocess.run(["make", "image"], cwd=REPO,
                                                        capture_output=True, text=True))
    if proc.returncode != 0:
        raise SystemExit(f"make image failed: {proc.stderr[-2000:]}")
    return {"make_image_s": round(seconds, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--rebuild", action="store_true", help="time a `make image` first")
    args = ap.parse_args()

    import docker

    client = docker.from_env()
    result = {"image": IMAGE}
    if args.rebuild:
        result["rebuild"] = rebuild()
    last = OUT / "last-build.json"
    result["last_build"] = json.loads(last.read_text()) if last.exists() else None
    history = OUT / "builds.jsonl"
    if history.exists():
        builds = [json.loads(ln) for ln in history.read_text().splitlines() if ln.strip()]
        # The longest recorded build is the one that rebuilt the dependency layers.
        result["builds"] = {"recorded": len(builds),
                            "longest_sandbox_build_s": max(b["sandbox_build_s"] for b in builds),
                            "last_sandbox_build_s": builds[-1]["sandbox_build_s"]}
    result["size"] = sizes(client)
    result["startup"] = startup(client, args.runs)
    OUT.mkdir(exist_ok=True)
    (OUT / "bench-image.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
