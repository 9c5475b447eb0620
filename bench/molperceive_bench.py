"""molperceive benchmark: labelling throughput and gate time, each as a ratio against a peer.

Molecules: the NCI excerpt shipped in the pinned RDKit wheel (rdkit/Data/NCI/first_5K.smi,
4999 SMILES; provenance in tests/unit/molperceive/data/PROVENANCE.md).

1. Labelling, all fields (status and reason, every headline field with its arguments, the
   smiles_from_graph reference, every reported field), molecules per second; peers in the same
   run: a bare `Chem.MolFromSmiles` (the floor every label pays) and RDKit's own all-descriptors
   call `Descriptors.CalcMolDescriptors`.
2. Gate on a 10,000-row corpus built from the same list; peer: labelling the corpus's distinct
   molecules once with every field (what the gate must at least recompute).

Run: python bench/molperceive_bench.py [--rows 10000] [--peer-sample 500]. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path


def nci_list() -> Path:
    from rdkit import RDConfig
    return Path(RDConfig.RDDataDir) / "NCI" / "first_5K.smi"


CHUNK = 250


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def bench_labelling(smiles: list[str], peer_sample: int) -> dict:
    from rdkit import Chem, RDLogger
    from rdkit.Chem import Descriptors

    from molperceive import label
    RDLogger.DisableLog("rdApp.*")

    # Arguments per molecule (untimed): last atom for k; 0 and the farthest index in its component.
    args = {}
    for s in smiles:
        mol = Chem.MolFromSmiles(s)
        if mol is not None and mol.GetNumAtoms() > 1:
            frag = next(f for f in Chem.GetMolFrags(mol) if 0 in f)
            args[s] = {"k": mol.GetNumAtoms() - 1, "i": 0, "j": max(frag) if len(frag) > 1 else None}

    # Subject and peers alternate chunk by chunk, so load from other processes on a shared
    # machine falls on both sides of each ratio alike.
    t_label = t_parse = t_desc = t_label_sample = 0.0
    n_ok = 0
    sample = smiles[:peer_sample]
    for start in range(0, len(smiles), CHUNK):
        chunk = smiles[start:start + CHUNK]
        dt, out = timed(lambda: [label.label(s, **args.get(s, {})) for s in chunk])
        t_label += dt
        n_ok += sum(1 for r in out if r["status"] == "ok")
        t_parse += timed(lambda: [Chem.MolFromSmiles(s) for s in chunk])[0]
    for start in range(0, len(sample), CHUNK // 5):
        chunk = sample[start:start + CHUNK // 5]
        t_label_sample += timed(lambda: [label.label(s, **args.get(s, {})) for s in chunk])[0]
        mols = [Chem.MolFromSmiles(s) for s in chunk]
        t_desc += timed(lambda: [Descriptors.CalcMolDescriptors(m) for m in mols if m is not None])[0]
    return {
        "molecules": len(smiles),
        "in_scope": n_ok,
        "label_all_fields_s": round(t_label, 3),
        "label_molecules_per_s": round(len(smiles) / t_label, 1),
        "peer_bare_parse_molecules_per_s": round(len(smiles) / t_parse, 1),
        "ratio_label_time_to_bare_parse": round(t_label / t_parse, 2),
        "peer_sample": len(sample),
        "peer_CalcMolDescriptors_molecules_per_s": round(len(sample) / t_desc, 1),
        "label_sample_molecules_per_s": round(len(sample) / t_label_sample, 1),
        "ratio_CalcMolDescriptors_time_to_label": round(t_desc / t_label_sample, 2),
    }


def bench_gate(src: Path, rows_wanted: int, workdir: Path) -> dict:
    from molperceive import build, gate, label
    full = workdir / "full.jsonl"
    t_build, summary = timed(lambda: build.build(src, full, seed=0, rows_per_molecule=2))
    lines = full.read_text().splitlines()[:rows_wanted]
    corpus = workdir / "rows.jsonl"
    corpus.write_text("\n".join(lines) + "\n")
    rows = [json.loads(line) for line in lines]
    distinct = sorted({r["input"]["smiles"] for r in rows if "smiles" in r["input"]})
    # Peer before and after the gate, averaged, so a load change mid-run hits both sides.
    t_peer1, _ = timed(lambda: [label.label(s) for s in distinct])
    t_gate, report = timed(lambda: gate.gate(corpus))
    t_peer2, _ = timed(lambda: [label.label(s) for s in distinct])
    t_peer = (t_peer1 + t_peer2) / 2
    return {
        "build_rows": summary["rows"],
        "build_s": round(t_build, 3),
        "gate_rows": len(rows),
        "gate_passed": report["passed"],
        "gate_s": round(t_gate, 3),
        "gate_rows_per_s": round(len(rows) / t_gate, 1),
        "peer_label_distinct_smiles": len(distinct),
        "peer_label_s": round(t_peer, 3),
        "ratio_gate_time_to_labelling_distinct_molecules": round(t_gate / t_peer, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--peer-sample", type=int, default=500)
    a = ap.parse_args()
    import rdkit
    src = nci_list()
    smiles = [line.split()[0] for line in src.read_text().splitlines() if line.strip()]
    out = {"rdkit": rdkit.__version__, "cpu_count": os.cpu_count(), "source": str(src)}
    out["labelling"] = bench_labelling(smiles, a.peer_sample)
    with tempfile.TemporaryDirectory() as tmp:
        out["gate"] = bench_gate(src, a.rows, Path(tmp))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
