"""Apptainer against docker on this host, in one run (docs/hpc.md's figures):

    python3 bench/apptainer_bench.py [--runs 7] [--no-stack]

- the SIF: build time and size against the docker image (from out/biotool-sandbox.sif.json,
  which image/hpc/build-sif.sh writes);
- an episode's start: `apptainer exec` of `true` in the offline shape, and an instance's start,
  exec and stop, on the HPC node (tests/biotool_testing/hpc_node.py), against `docker run --rm`
  of `true` in hpc/run-docker.sh's shape and (once) the compose stack's up, exec and down;
- every family's first call (biotool_sandbox.demo's steps), each in a fresh container under
  Apptainer and under docker, interleaved.

Apptainer is timed inside the node (no `docker exec` in its figure), docker from the host. Prints
one JSON object and writes out/bench-apptainer.json.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import repo_paths  # first: tests/ on sys.path
from biotool_sandbox import demo
from biotool_testing import hpc_node
from biotool_testing.images import SANDBOX_IMAGE

OUT = repo_paths.REPO / "out"
DOCKER_SHAPE = ["--network", "none", "--user", "12345:12345", "--read-only", "--tmpfs", "/tmp",
                "-e", "HOME=/home/agent"]
# Run by the node's python3: each command line timed as a whole, in order.
NODE_TIMER = """
import json, subprocess, sys, time
out = []
for line in json.loads(sys.argv[1]):
    t0 = time.perf_counter()
    p = subprocess.run(["bash", "-c", line], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out.append([time.perf_counter() - t0, p.returncode])
print(json.dumps(out))
"""


def _exec(line: str, episode: str) -> str:
    return (f"mkdir -p {episode}/w {episode}/t && apptainer --quiet exec "
            f"{' '.join(hpc_node.OFFLINE)} --workdir {episode}/t --bind {episode}/w:/work "
            f"--pwd /work {hpc_node.NODE_SIF} bash -c {shlex.quote(line)}; rm -rf {episode}")


def on_node(node, lines: list[str]) -> list[tuple[float, int]]:
    ran = node.sh(f"python3 -c {shlex.quote(NODE_TIMER)} {shlex.quote(json.dumps(lines))}")
    assert ran.code == 0, ran
    return [tuple(x) for x in json.loads(ran.stdout)]


def docker_run(argv: list[str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    p = subprocess.run(["docker", "run", "--rm", *DOCKER_SHAPE, SANDBOX_IMAGE, *argv],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, p.returncode


def stack_once() -> float:
    t0 = time.perf_counter()
    launcher = [sys.executable, "-m", "biotool_sandbox"]
    up = subprocess.run([*launcher, "up", "--image", SANDBOX_IMAGE], capture_output=True, text=True)
    run = json.loads(up.stdout)["run"]
    try:
        subprocess.run([*launcher, "exec", run, "--", "true"], check=True, capture_output=True)
    finally:
        subprocess.run([*launcher, "down", run], capture_output=True)
    return time.perf_counter() - t0


def median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-stack", action="store_true", help="leave out the compose stack")
    args = parser.parse_args()
    record = hpc_node.sif_record()
    report: dict = {"image": SANDBOX_IMAGE, "sif": {
        k: record.get(k) for k in ("size", "image_size", "save_seconds", "build_seconds",
                                   "mksquashfs_args", "apptainer")}}
    report["sif"]["size_over_image"] = round(record["size"] / record["image_size"], 3)
    node = hpc_node.start(Path(tempfile.mkdtemp(prefix="apptainer-bench-")) / "results")
    try:
        ep = f"{node.results}/ep"
        # One warm-up of each: the SIF's and the image's pages in the cache, as on a busy node.
        on_node(node, [_exec("true", ep)])
        docker_run(["true"])
        start = {"apptainer_exec": [], "instance_start_exec_stop": [], "docker_run": []}
        instance = (f"apptainer instance start {' '.join(hpc_node.OFFLINE)} {hpc_node.NODE_SIF} b && "
                    "apptainer --quiet exec instance://b true && apptainer instance stop b")
        for _ in range(args.runs):
            (a, _), (i, _) = on_node(node, [_exec("true", ep), instance])
            start["apptainer_exec"].append(a)
            start["instance_start_exec_stop"].append(i)
            start["docker_run"].append(docker_run(["true"])[0])
        report["start_s"] = {k: median(v) for k, v in start.items()}
        report["start_s"]["apptainer_exec_over_docker_run"] = round(
            report["start_s"]["apptainer_exec"] / report["start_s"]["docker_run"], 3)
        if not args.no_stack:
            report["start_s"]["compose_stack_up_exec_down"] = round(stack_once(), 3)

        help_text = on_node_stdout(node, "biotool --help")
        listing = on_node_stdout(node, "biotool list")
        steps, _ = demo.plan(help_text, listing)
        families = {}
        for family, argv in steps:
            (a, a_rc), = on_node(node, [_exec(shlex.join(argv), ep)])
            d, d_rc = docker_run(argv)
            families[family] = {"apptainer_s": round(a, 3), "docker_s": round(d, 3),
                                "ratio": round(a / d, 3), "exit": [a_rc, d_rc]}
        report["first_call"] = families
    finally:
        hpc_node.stop(node)
    OUT.mkdir(exist_ok=True)
    (OUT / "bench-apptainer.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


def on_node_stdout(node, line: str) -> str:
    ran = node.apptainer(line)
    assert ran.code == 0, ran
    return ran.stdout


if __name__ == "__main__":
    main()
