"""First call in a fresh sandbox against the warm call, and start-up against `biotool --help`.

    python bench/firstcall_bench.py [--rounds 5] [--calls 3] [--only celltype,list]

Every command runs in fresh containers of the image in the shape Apptainer and the enforced
stack give it (an arbitrary UID, a read-only root, an empty tmpfs /tmp, no network): one
container per command and round, in which a small timer (the image's python) runs the
command --calls times in a row and times each call from inside, so the engine's own
container start is not in the figure (the timer also waits --settle seconds first: on a
loaded host the engine's work right after a start, not the command, delayed first calls by
up to seconds). Call 1 is the first call in that container; the later
ones are warm (what the first left in /tmp/.cache: numba, matplotlib). Each call gets a
fresh BIOTOOL_CACHE, so a warm call redoes the command's own work instead of reading its
cached result: only start-up costs differ between first and warm. Right before each such
container, another runs the command once, so the host's page cache holds its files (the
blocks the first call still read from disk are reported: the host's, not the command's).

Ratios, each against a peer measured in the same run:
  first / warm                   every command (goal: <= 1.2; celltype <= 1.5)
  list, doctor / --help          warm and first (goal: <= 3)
  celltype warm / (import scanpy, celltypist + CellTypist's own annotate on the same cells,
                   the same model; timed in the celltype containers after its calls) (goal <= 2)
  doctor / its floor             the CPU seconds doctor and the tools it starts take, spread
                                 over every core: no schedule of the same work is faster
Also per command: CPU seconds of the first call and of a warm one (the work done, whatever
the host's load does to wall time), and the files its first call wrote into the libraries'
caches under /tmp/.cache (a JIT or index cache filled at run time; what was seeded from the
image's copy, a link or an identical copy, does not count).

Prints one JSON object and writes out/bench-firstcall.json. Medians over --rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import timing

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "out"
IMAGE = os.environ.get("BIOTOOL_IMAGE", "biotool-sandbox:latest")

SAMPLES = "/opt/biotool/samples"
READS = f"{SAMPLES}/demo-sarscov2-artic-reads/MT007544.fastq"
PBMC = f"{SAMPLES}/demo-pbmc68k-heldout"
REF = "MN908947.3"
COMMANDS = {
    "--help": ["biotool", "--help"],
    "list": ["biotool", "list"],
    "references": ["biotool", "references"],
    "version": ["biotool", "version"],
    "doctor": ["biotool", "doctor"],
    "doctor --no-sha": ["biotool", "doctor", "--no-sha"],
    "align": ["biotool", "align", "--fastq", READS, "--reference", REF],
    "variants": ["biotool", "variants", "--fastq", READS, "--reference", REF],
    "breakpoints": ["biotool", "breakpoints", "--fastq", READS, "--reference", REF],
    "index": ["biotool", "index", "--reference", REF, "--kind", "bwa"],
    "taxonomy": ["biotool", "taxonomy", "--fastq", READS, "--sample", "30"],
    "call": ["biotool", "call", "variant_annotate",
             '{"reference": "MN908947.3", "position": 23403, "ref": "A", "alt": "G"}'],
    "celltype": ["biotool", "celltype", "--matrix", PBMC, "--model", "celltypist"],
}
FIRST_GOAL = {"celltype": 1.5}  # every other command: 1.2
DEFAULT_FIRST_GOAL = 1.2
STARTUP_GOAL = 3.0  # list and doctor against --help
CELLTYPE_PEER_GOAL = 2.0
SHAPE = {"user": "12345:12345", "read_only": True, "network_mode": "none",
         "tmpfs": {"/tmp": ""}, "environment": {"HOME": "/nonexistent"}}

# Runs in the container after timing.py's own text (the image holds no bench/): each call of
# the command, timed; what it wrote under /tmp/.cache.
TIMER = timing.source() + r"""
import json, os, resource, subprocess, sys, time
cmd, calls, peer = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
settle = float(sys.argv[4])
LIBS, IMAGE_COPY = "/tmp/.cache", "/opt/biotool-caches"

def seeded(path):
    # a copy of the image's own (biotool.libcaches seeds matplotlib's font list by copy)
    twin = os.path.join(IMAGE_COPY, os.path.relpath(path, LIBS))
    try:
        with open(path, "rb") as a, open(twin, "rb") as b:
            return a.read() == b.read()
    except OSError:
        return False

def usage():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime, r.ru_inblock

def written():
    out = set()
    for d, _, files in os.walk(LIBS):
        out |= {os.path.join(d, f) for f in files if not os.path.islink(os.path.join(d, f))
                and not seeded(os.path.join(d, f))}
    return out

time.sleep(settle)  # the engine's own work starting the container is not the command's
rows = []
for i in range(calls):
    env = dict(os.environ, BIOTOOL_CACHE=f"/tmp/bench-biotool-cache-{i}")
    before = written()
    c0, b0 = usage()
    wall, p = timed(lambda: subprocess.run(cmd, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.PIPE, env=env))
    c1, b1 = usage()
    rows.append({"wall_s": wall, "cpu_s": c1 - c0, "disk_reads": b1 - b0, "rc": p.returncode,
                 "stderr": p.stderr.decode(errors="replace")[-300:] if p.returncode else "",
                 "cache_files_written": sorted(f[len(LIBS) + 1:] for f in written() - before)})
peers = []
if peer:
    for _ in range(calls):
        p = subprocess.run([sys.executable, "-c", peer], capture_output=True, text=True,
                           env=dict(os.environ, NUMBA_CPU_NAME="generic"))
        if p.returncode:
            sys.exit("peer failed: " + p.stderr[-2000:])
        peers.append(json.loads(p.stdout.strip().splitlines()[-1]))
print(json.dumps({"calls": rows, "peer": peers, "cores": os.cpu_count(),
                  "load": os.getloadavg()[0]}))
"""

# The peer of celltype: what an agent's own script does with the same libraries, cells and
# model, after timing.py's own text. Import and CellTypist's annotate are timed; reading and
# normalising are not (biotool does both inside its own figure, so leaving them out only makes
# the peer faster).
PEER = timing.source() + r"""
import contextlib, gzip, importlib, json, sys, warnings
warnings.simplefilter("ignore")
import_s, (sc, celltypist) = timed(lambda: (importlib.import_module("scanpy"),
                                            importlib.import_module("celltypist")))

def prepare():
    from biotool import staging
    model = staging.find("model", "demo-pbmc68k-celltypist").path()
    folder = "%(pbmc)s"
    adata = sc.read_mtx(folder + "/counts.mtx.gz").T
    adata.var_names = [l.strip() for l in gzip.open(folder + "/genes.tsv.gz", "rt")]
    adata.obs_names = [l.strip() for l in gzip.open(folder + "/cells.tsv.gz", "rt")]
    sc.pp.normalize_total(adata, target_sum=1e4)
    sc.pp.log1p(adata)
    return model, adata

prepare_s, (model, adata) = timed(prepare)
with contextlib.redirect_stdout(sys.stderr):
    annotate_s, pred = timed(lambda: celltypist.annotate(adata, model=str(model)))
assert pred.predicted_labels.shape[0] == adata.n_obs == 209
print(json.dumps({"import_s": import_s, "annotate_s": annotate_s, "prepare_s": prepare_s}))
""" % {"pbmc": PBMC}


def in_container(client, cmd: list[str], calls: int, peer: str = "", settle: float = 0.0) -> dict:
    out = client.containers.run(IMAGE, ["python3", "-c", TIMER, json.dumps(cmd), str(calls), peer,
                                        str(settle)], remove=True, stderr=False, **SHAPE)
    return json.loads(out)


def med(values) -> float:
    return round(statistics.median(values), 3)


def summarise(name: str, rounds: list[dict]) -> dict:
    for r in rounds:
        bad = [c for c in r["calls"] if c["rc"] != 0]
        if bad:
            raise SystemExit(f"{name}: exit {bad[0]['rc']}: {bad[0]['stderr']}")
    first = [r["calls"][0]["wall_s"] for r in rounds]
    warm = [statistics.median(c["wall_s"] for c in r["calls"][1:]) for r in rounds]
    out = {"first_s": med(first), "warm_s": med(warm),
           "first_s_each": [round(v, 3) for v in first], "warm_s_each": [round(v, 3) for v in warm],
           "first_over_warm": round(statistics.median(first) / statistics.median(warm), 2),
           "first_cpu_s": med(r["calls"][0]["cpu_s"] for r in rounds),
           "warm_cpu_s": med(statistics.median(c["cpu_s"] for c in r["calls"][1:])
                             for r in rounds),
           # 512-byte blocks read from disk: the host's page cache, not the command's work
           "first_disk_reads": [r["calls"][0]["disk_reads"] for r in rounds],
           "first_call_wrote": sorted({f for r in rounds
                                       for f in r["calls"][0]["cache_files_written"]})}
    out["first_cpu_over_warm"] = round(out["first_cpu_s"] / out["warm_cpu_s"], 2)
    goal = FIRST_GOAL.get(name, DEFAULT_FIRST_GOAL)
    out["goal_first_over_warm"] = goal
    out["met"] = out["first_over_warm"] <= goal
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=3, help="calls per container (>= 2)")
    ap.add_argument("--only", default="", help="comma-separated command names")
    ap.add_argument("--settle", type=float, default=1.0,
                    help="seconds the timer waits in a fresh container before the first call")
    args = ap.parse_args()
    if args.calls < 2:
        raise SystemExit("--calls must be at least 2 (a first call and a warm one)")
    names = [n for n in COMMANDS if not args.only or n in args.only.split(",")
             or n == "--help"]

    import docker

    client = docker.from_env()
    t0 = time.perf_counter()
    raw: dict[str, list] = {n: [] for n in names}
    for _ in range(args.rounds):
        for name in names:
            # The host's page cache warm for this command's files, right before its figure
            # (other work on a shared host evicts them), in a container of its own.
            in_container(client, COMMANDS[name], 1)
            raw[name].append(in_container(client, COMMANDS[name], args.calls,
                                          PEER if name == "celltype" else "", args.settle))
    result = {"image": IMAGE, "rounds": args.rounds, "calls_per_container": args.calls,
              "settle_s": args.settle,
              "cores": raw["--help"][0]["cores"],
              "load_average": med(r["load"] for rs in raw.values() for r in rs),
              "commands": {n: summarise(n, raw[n]) for n in names}}
    cmds = result["commands"]
    help_ = cmds["--help"]
    result["startup_vs_help"] = {
        n: {"warm_over_help": round(cmds[n]["warm_s"] / help_["warm_s"], 2),
            "first_over_help": round(cmds[n]["first_s"] / help_["first_s"], 2),
            "goal": STARTUP_GOAL,
            "met": cmds[n]["warm_s"] / help_["warm_s"] <= STARTUP_GOAL
            and cmds[n]["first_s"] / help_["first_s"] <= STARTUP_GOAL}
        for n in ("list", "doctor", "doctor --no-sha") if n in cmds}
    for n in ("doctor", "doctor --no-sha"):
        if n in cmds:
            floor = cmds[n]["warm_cpu_s"] / result["cores"]
            result["startup_vs_help"][n].update(
                cpu_floor_s=round(floor, 3),
                warm_over_floor=round(cmds[n]["warm_s"] / floor, 2),
                floor_over_help=round(floor / help_["warm_s"], 2))
    if "celltype" in cmds:
        peers = [p for r in raw["celltype"] for p in r["peer"]]
        imp, ann = med(p["import_s"] for p in peers), med(p["annotate_s"] for p in peers)
        peer = imp + ann
        result["celltype_vs_celltypist"] = {
            "celltype_warm_s": cmds["celltype"]["warm_s"], "import_scanpy_celltypist_s": imp,
            "celltypist_annotate_s": ann, "peer_s": round(peer, 3),
            "prepare_s_untimed_in_peer": med(p["prepare_s"] for p in peers),
            "warm_over_peer": round(cmds["celltype"]["warm_s"] / peer, 2),
            "goal": CELLTYPE_PEER_GOAL,
            "met": cmds["celltype"]["warm_s"] / peer <= CELLTYPE_PEER_GOAL}
    result["first_call_goals_met"] = {n: c["met"] for n, c in cmds.items()}
    result["bench_s"] = round(time.perf_counter() - t0, 1)
    OUT.mkdir(exist_ok=True)
    (OUT / "bench-firstcall.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    sys.exit(main())
