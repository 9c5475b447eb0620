"""Toolbox benchmark: how long an agent waits to learn an install is impossible, what
`biotool doctor` pays to start every tool, and what the toolbox adds to the image.

    python bench/toolbox_bench.py [--runs 5]

Timed inside one container in the agent's shape (uid 12345, read-only root, no network), each
attempt against its peer in the same run: a shell looking up a command that does not exist.
Layer sizes come from the engine's history of the image. Prints one JSON object and writes
out/bench-toolbox.json.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import timing

REPO = Path(__file__).resolve().parents[1]
IMAGE = os.environ.get("BIOTOOL_IMAGE", "biotool-sandbox:latest")

ATTEMPTS = {
    "peer: a command that does not exist": "no-such-command-here",
    "pip install numpy": "pip install numpy",
    "python -m pip install pysradb": "python -m pip install pysradb",
    "apt-get install -y bowtie": "apt-get install -y bowtie",
    "conda install -c bioconda trinity": "conda install -c bioconda trinity",
    "Rscript -e install.packages('Seurat')": "Rscript -e 'install.packages(\"Seurat\")'",
    "curl https://example.org/ (no network)": "curl -sS https://example.org/",
    "biotool doctor --no-sha (starts every tool)": "biotool doctor --no-sha",
    "biotool --help": "biotool --help",
}
# Runs inside the container after timing.py's own text (the image holds no bench/).
TIMER = timing.source() + """
import json, statistics, subprocess, sys
attempts, runs = json.loads(sys.argv[1]), int(sys.argv[2])
out = {}
for name, cmd in attempts.items():
    codes = set()
    summary, _ = repeated(
        lambda: codes.add(subprocess.run(["bash", "-c", cmd], stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL).returncode), runs,
        lambda times: {"median_s": round(statistics.median(times), 3),
                       "max_s": round(max(times), 3)})
    out[name] = {**summary, "exit": sorted(codes)}
print(json.dumps(out))
"""


def attempts(client, runs: int) -> dict:
    out = client.containers.run(IMAGE, ["python3", "-c", TIMER, json.dumps(ATTEMPTS), str(runs)],
                                remove=True, network_mode="none", user="12345:12345",
                                read_only=True, tmpfs={"/tmp": "rw,exec"}, stderr=False)
    times = json.loads(out)
    peer = times["peer: a command that does not exist"]["median_s"]
    for t in times.values():
        t["over_peer"] = round(t["median_s"] / peer, 1) if peer else None
    return times


def layers(client) -> dict:
    """Sizes of the toolbox's layers and of the venv, from the image's history."""
    out = {}
    for layer in client.api.history(IMAGE):
        made = layer.get("CreatedBy", "")
        if "bowtie2=" in made:
            out["command-line tools"] = layer["Size"]
        elif "r-base-core=" in made:
            out["R + FastQC/Trimmomatic (headless Java)"] = layer["Size"]
        elif "COPY dir:" in made and layer["Size"] > 1e9:
            out["Python venv"] = layer["Size"]
    image = client.images.get(IMAGE).attrs["Size"]
    return {"image_bytes": image, "layers_bytes": out}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    import docker

    client = docker.from_env()
    result = {"image": IMAGE, "attempts": attempts(client, a.runs), **layers(client)}
    (REPO / "out").mkdir(exist_ok=True)
    (REPO / "out" / "bench-toolbox.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
