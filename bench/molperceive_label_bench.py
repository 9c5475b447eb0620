"""`molperceive label --file` end to end: molecules/s after start-up, against peers in one run.

    python bench/molperceive_label_bench.py [--where image|host] [--cpus 1] [--rounds 3]
                                            [--mount-source] [--sets nci,chembl,stereo]

Subject: `molperceive label --file F` as a subprocess (read, label every default field, write
the JSON), minus the start-up measured next to it (`molperceive label Oc1ccccc1`, same
process shape). Peers, in the same process and alternating with the subject round by round:
a bare `Chem.MolFromSmiles` over the same SMILES (the floor every label pays) and the pinned
reference call chain (`molperceive.reference.label`, every label by its literal call, the
same fields). A third peer bounds what any implementation of that chain can reach: the
pinned RDKit calls alone (sanitised parse, InChIKey, every pinned descriptor call, one Kekulé
form) with no Python per atom and no output. Each figure is the median over --rounds of
wall seconds; the same from CPU seconds (the subprocess's rusage, the peers' process time) is
under "cpu", which load from other processes on a shared host inflates less. The run also
checks that the command's labels equal the reference's on every molecule (`labels_identical`).

Sets, all shipped in the pinned RDKit wheel, so the image has them: `nci`, the 4,999 NCI
SMILES (rdkit/Data/NCI/first_5K.smi); `chembl`, 1,017 drug-like ChEMBL SMILES
(rdkit/Contrib/FreeWilson/data/CHEMBL2321810.smi, 33 heavy atoms on average); `stereo`, one
assigned stereoisomer of each NCI and ChEMBL molecule with potential stereo (written with @
and / marks, as drug SMILES are).

--where image (default) runs it inside `docker run --cpus N --network none` of
$BIOTOOL_IMAGE (biotool-sandbox:latest), with the image's own molperceive unless
--mount-source mounts this tree's entrypoints/molperceive over it (measuring a change before
`make image`; the output says which). --where host runs the same script with this Python.
Prints one JSON object and writes out/bench-molperceive-label.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import timing

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "out"
IMAGE = os.environ.get("BIOTOOL_IMAGE", "biotool-sandbox:latest")
SITE = "/opt/venv/lib/python3.11/site-packages/molperceive"

# Runs where the command runs (host or container), after timing.py's own text (the image holds
# no bench/): writes the sets, then alternates subject and peers round by round so load changes
# fall on both sides of each ratio.
INNER = timing.source() + r'''
import json, os, resource, statistics, subprocess, sys, tempfile, time
from pathlib import Path
from rdkit import Chem, RDConfig, RDLogger
RDLogger.DisableLog("rdApp.*")
from molperceive import contract, label, reference

sets_wanted, rounds = sys.argv[1].split(","), int(sys.argv[2])
tmp = Path(tempfile.mkdtemp())

def lines(path):
    return [l.split()[0] for l in Path(path).read_text().splitlines() if l.strip()]

def stereo_forms(smiles):
    from rdkit.Chem.EnumerateStereoisomers import EnumerateStereoisomers, StereoEnumerationOptions
    opts = StereoEnumerationOptions(onlyUnassigned=True, maxIsomers=1)
    out = []
    for s in smiles:
        mol = Chem.MolFromSmiles(s)
        if mol is not None and list(Chem.FindPotentialStereo(mol)):
            out.append(Chem.MolToSmiles(next(EnumerateStereoisomers(mol, options=opts))))
    return out

nci = lines(Path(RDConfig.RDDataDir) / "NCI" / "first_5K.smi")
chembl = lines(Path(RDConfig.RDContribDir) / "FreeWilson" / "data" / "CHEMBL2321810.smi")
sets = {"nci": nci, "chembl": chembl}
if "stereo" in sets_wanted:
    sets["stereo"] = stereo_forms(nci + chembl)
fields = label.default_fields({})

def cli(args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, proc = timed(lambda: subprocess.run(["molperceive", "label", *args],
                                              capture_output=True, text=True))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"molperceive label {args[:2]} exited {proc.returncode}: {proc.stderr[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout

def wall_and_cpu(fn):
    def run():
        fn()  # its result is freed inside the timing: part of the work
    # timing.timed twice: the wall clock inside the CPU one
    cpu, (wall, _) = timed(lambda: timed(run), time.process_time)
    return wall, cpu

from rdkit.Chem import Descriptors, rdMolDescriptors as rd
STRICT = rd.NumRotatableBondsOptions.Strict
PINNED = (lambda m: m.GetRingInfo().NumRings(), rd.CalcNumAromaticRings,
          lambda m: rd.CalcNumRotatableBonds(m, STRICT), rd.CalcNumHBD, rd.CalcNumHBA,
          Chem.FindPotentialStereo, Descriptors.MolWt, rd.CalcMolFormula, Chem.MolToInchiKey)

def pinned_calls_only(smiles):
    # The RDKit work no implementation of the pinned chain avoids: the sanitised parse, the
    # InChIKey, each pinned descriptor call and one Kekulé form, each over 64 molecules at a
    # time (the cheapest order measured), and nothing else: no Python per atom, no output.
    for start in range(0, len(smiles), 64):
        mols = [m for m in (Chem.MolFromSmiles(s) for s in smiles[start:start + 64]) if m is not None]
        for call in PINNED:
            for m in mols:
                call(m)
        for m in mols:
            Chem.Kekulize(Chem.Mol(m), clearAromaticFlags=True)

def same(got, want):
    keys = ("status", "reason", "inchikey", "labels", "reported", "graph")
    return all(got.get(k) == want.get(k) for k in keys if k in want)

result = {"rdkit": __import__("rdkit").__version__, "molperceive": label.__file__,
          "cpu_count": os.cpu_count(), "sets": {}}
for name in sets_wanted:
    smiles = sets[name]
    path = tmp / f"{name}.smi"
    path.write_text("\n".join(smiles) + "\n")
    t = {k: [] for k in ("startup", "full", "parse", "pinned_calls_only", "reference")}
    c = {k: [] for k in t}
    out = None
    for r in range(rounds):
        for k, fn in (("startup", lambda: cli(["Oc1ccccc1"])),
                      ("full", lambda: cli(["--file", str(path)]))):
            wall, cpu, text = fn()
            t[k].append(wall)
            c[k].append(cpu)
        out = out or json.loads(text)["molecules"]
        refs = []
        for k, fn in (("parse", lambda: [Chem.MolFromSmiles(s) for s in smiles]),
                      ("pinned_calls_only", lambda: pinned_calls_only(smiles)),
                      ("reference", lambda: refs.extend(reference.label(s, fields, {}) for s in smiles))):
            wall, cpu = wall_and_cpu(fn)
            t[k].append(wall)
            c[k].append(cpu)
    med = {k: statistics.median(v) for k, v in t.items()}
    mcpu = {k: statistics.median(v) for k, v in c.items()}
    n = len(smiles)
    label_s, label_cpu = med["full"] - med["startup"], mcpu["full"] - mcpu["startup"]
    ok = [m for m in out if m["status"] == "ok"]
    result["sets"][name] = {
        "molecules": n, "in_scope": len(ok),
        "mean_heavy_atoms_in_scope": round(sum(m["heavy_atom_count"] for m in ok) / max(len(ok), 1), 1),
        "labels_identical": len(out) == len(refs) and all(same(g, w) for g, w in zip(out, refs)),
        "startup_s": round(med["startup"], 3),
        "label_molecules_per_s": round(n / label_s),
        "peer_bare_parse_molecules_per_s": round(n / med["parse"]),
        "peer_reference_chain_molecules_per_s": round(n / med["reference"]),
        "peer_pinned_calls_only_molecules_per_s": round(n / med["pinned_calls_only"]),
        "ratio_label_time_to_bare_parse": round(label_s / med["parse"], 2),
        "ratio_reference_time_to_label": round(med["reference"] / label_s, 2),
        "ratio_label_time_to_pinned_calls_only": round(label_s / med["pinned_calls_only"], 2),
        "cpu": {"label_molecules_per_s": round(n / label_cpu),
                "peer_bare_parse_molecules_per_s": round(n / mcpu["parse"]),
                "peer_pinned_calls_only_molecules_per_s": round(n / mcpu["pinned_calls_only"]),
                "ratio_label_time_to_pinned_calls_only": round(label_cpu / mcpu["pinned_calls_only"], 2),
                "peer_reference_chain_molecules_per_s": round(n / mcpu["reference"]),
                "ratio_label_time_to_bare_parse": round(label_cpu / mcpu["parse"], 2),
                "ratio_reference_time_to_label": round(mcpu["reference"] / label_cpu, 2)},
        "rounds_wall_s": {k: [round(x, 3) for x in v] for k, v in t.items()},
        "rounds_cpu_s": {k: [round(x, 3) for x in v] for k, v in c.items()},
    }
print(json.dumps(result))
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--where", choices=("image", "host"), default="image")
    ap.add_argument("--cpus", default="1", help="docker run --cpus (image only)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sets", default="nci,chembl,stereo")
    ap.add_argument("--mount-source", action="store_true",
                    help="mount this tree's molperceive over the image's (image only)")
    a = ap.parse_args()
    args = [a.sets, str(a.rounds)]
    if a.where == "host":
        cmd = [sys.executable, "-c", INNER, *args]
        where = {"where": "host", "python": sys.executable}
    else:
        mount = ["-v", f"{REPO / 'entrypoints' / 'molperceive'}:{SITE}:ro"] if a.mount_source else []
        cmd = ["docker", "run", "--rm", "--network", "none", "--cpus", a.cpus, "--user", "12345:12345",
               "--read-only", "--tmpfs", "/tmp", *mount, "--entrypoint", "python3", IMAGE,
               "-c", INNER, *args]
        where = {"where": "image", "image": IMAGE, "cpus": a.cpus,
                 "code": "this tree, mounted over the image's" if a.mount_source else "the image's own"}
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bench failed ({proc.returncode}): {proc.stderr[-2000:]}")
    result = {**where, "load_1min": round(os.getloadavg()[0], 2), **json.loads(proc.stdout)}
    OUT.mkdir(exist_ok=True)
    (OUT / "bench-molperceive-label.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
