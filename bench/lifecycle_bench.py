"""Episode lifecycle: `biotool-sandbox up` to ready, the first `exec`, and `down`, against peers.

    python bench/lifecycle_bench.py [--runs 3]

Peers in the same run: a bare compose project of two `sleep infinity` containers of the same
image on the same two networks (internal and outside) brought up and down by compose, and a
plain `docker run --rm --network none IMAGE true`. Each figure is the median of --runs, and
the lifecycle's ratios to its peers are printed beside it. Prints one JSON object and writes
out/bench-lifecycle.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import timed

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "out"
IMAGE = os.environ.get("BIOTOOL_IMAGE", "biotool-sandbox:latest")

PEER_COMPOSE = """
services:
  a:
    image: {image}
    command: ["sleep", "infinity"]
    init: true
    networks: [internal]
  b:
    image: {image}
    command: ["sleep", "infinity"]
    init: true
    networks: [internal, outside]
networks:
  internal:
    internal: true
  outside: {{}}
"""


def checked(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} exited {proc.returncode}: {proc.stderr[-500:]}")
    return proc


def launcher(*args: str) -> subprocess.CompletedProcess:
    return checked([sys.executable, "-m", "biotool_sandbox", *args], cwd=REPO)


def launcher_round() -> dict:
    up_s, proc = timed(lambda: launcher("up"))
    run = json.loads(proc.stdout)["run"]
    exec_s, _ = timed(lambda: launcher("exec", run, "--", "true"))
    exec2_s, _ = timed(lambda: launcher("exec", run, "--", "true"))
    down_s, _ = timed(lambda: launcher("down", run))
    return {"up_s": up_s, "first_exec_s": exec_s, "second_exec_s": exec2_s, "down_s": down_s}


def peer_round(compose: Path, n: int) -> dict:
    project = f"bench-peer-{os.getpid()}-{n}"
    base = ["docker", "compose", "-p", project, "-f", str(compose)]
    up_s, _ = timed(lambda: checked([*base, "up", "-d", "--wait"]))
    down_s, _ = timed(lambda: checked([*base, "down", "--volumes", "--timeout", "2"]))
    run_s, _ = timed(lambda: checked(["docker", "run", "--rm", "--network", "none", IMAGE,
                                      "true"]))
    return {"peer_compose_up_s": up_s, "peer_compose_down_s": down_s, "docker_run_true_s": run_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        compose = Path(tmp) / "compose.yaml"
        compose.write_text(PEER_COMPOSE.format(image=IMAGE))
        for n in range(args.runs):  # alternated, so load drifts touch both sides alike
            rounds.append({**launcher_round(), **peer_round(compose, n)})
    med = {k: round(statistics.median(r[k] for r in rounds), 2) for k in rounds[0]}
    result = {"runs": args.runs, "image": IMAGE, "median_s": med,
              "ratios": {"up_vs_peer_compose_up": round(med["up_s"] / med["peer_compose_up_s"], 2),
                         "down_vs_peer_compose_down": round(med["down_s"] / med["peer_compose_down_s"], 2),
                         "up_vs_docker_run_true": round(med["up_s"] / med["docker_run_true_s"], 2)},
               "rounds": rounds, "load": os.getloadavg()}
    OUT.mkdir(exist_ok=True)
    (OUT / "bench-lifecycle.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
