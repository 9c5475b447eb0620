"""molperceive benchmark: labelling throughput and gate time, each as a ratio against a peer.

Molecules: the NCI excerpt shipped in the pinned RDKit wheel (rdkit/Data/NCI/first_5K.smi,
4999 SMILES; provenance in tests/unit/molperceive/data/PROVENANCE.md).

1. Labelling, all fields (status and reason, every headline field with its arguments, the
   smiles_from_graph reference, every reported field), molecules per second, through
   `label.label_many` (what `molperceive label` runs); peers in the same run: a bare
   `Chem.MolFromSmiles` (the floor every label pays), the reference path (every label by its
   literal pinned call, `molperceive.reference`) and RDKit's all-descriptors call
   `Descriptors.CalcMolDescriptors`.
2. Gate on a 10,000-row corpus built from the same list; peer: labelling the corpus's distinct
   molecules once with every field (what the gate must at least recompute).

Times are CPU seconds of this process (time.process_time): every measured call is
single-threaded, so load from other processes on a shared host does not count in them.

Run: python bench/molperceive_bench.py [--rows 10000] [--peer-sample 500] [--profile 12].
Prints one JSON object; --profile adds the top cProfile items of labelling the whole list.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import timing


def nci_list() -> Path:
    from rdkit import RDConfig
    return Path(RDConfig.RDDataDir) / "NCI" / "first_5K.smi"


CHUNK = 250


def timed(fn):
    """CPU seconds: both sides run in this one process."""
    return timing.timed(fn, clock=time.process_time)


def molecule_args(smiles: list[str]) -> list[dict]:
    """Per molecule: k the last atom; i 0 and j the farthest index of atom 0's component."""
    from rdkit import Chem
    out = []
    for s in smiles:
        mol = Chem.MolFromSmiles(s)
        a = {}
        if mol is not None and mol.GetNumAtoms() > 1:
            frag = next(f for f in Chem.GetMolFrags(mol) if 0 in f)
            a = {"k": mol.GetNumAtoms() - 1, "i": 0, "j": max(frag) if len(frag) > 1 else None}
        out.append(a)
    return out


def _reference_all(smiles: list[str], args: list[dict]) -> list[dict]:
    from molperceive import contract, reference
    out = []
    for s, a in zip(smiles, args):
        a = {k: v for k, v in a.items() if v is not None}
        fields = [f for f in contract.ALL_FIELDS if all(x in a for x in contract.FIELD_ARGS.get(f, ()))]
        out.append(reference.label(s, fields, a))
    return out


def bench_labelling(smiles: list[str], peer_sample: int) -> dict:
    from rdkit import Chem
    from rdkit.Chem import Descriptors

    from molperceive import label
    args = molecule_args(smiles)   # untimed

    # Subject and peers alternate chunk by chunk, so a change of machine state during the run
    # falls on both sides of each ratio alike.
    t_label = t_parse = t_desc = t_label_sample = t_ref = 0.0
    n_ok = 0
    sample = smiles[:peer_sample]
    for start in range(0, len(smiles), CHUNK):
        chunk, chunk_args = smiles[start:start + CHUNK], args[start:start + CHUNK]
        dt, out = timed(lambda: label.label_many(chunk, args_of=chunk_args))
        t_label += dt
        n_ok += sum(1 for r in out if r["status"] == "ok")
        t_parse += timed(lambda: [Chem.MolFromSmiles(s) for s in chunk])[0]
    step = CHUNK // 5
    for start in range(0, len(sample), step):
        chunk, chunk_args = sample[start:start + step], args[start:start + step]
        t_label_sample += timed(lambda: label.label_many(chunk, args_of=chunk_args))[0]
        t_ref += timed(lambda: _reference_all(chunk, chunk_args))[0]
        mols = [Chem.MolFromSmiles(s) for s in chunk]
        t_desc += timed(lambda: [Descriptors.CalcMolDescriptors(m) for m in mols if m is not None])[0]
    return {
        "molecules": len(smiles),
        "in_scope": n_ok,
        "label_all_fields_cpu_s": round(t_label, 3),
        "label_molecules_per_s": round(len(smiles) / t_label, 1),
        "peer_bare_parse_molecules_per_s": round(len(smiles) / t_parse, 1),
        "ratio_label_time_to_bare_parse": round(t_label / t_parse, 2),
        "peer_sample": len(sample),
        "label_sample_molecules_per_s": round(len(sample) / t_label_sample, 1),
        "peer_reference_path_molecules_per_s": round(len(sample) / t_ref, 1),
        "ratio_reference_time_to_label": round(t_ref / t_label_sample, 2),
        "peer_CalcMolDescriptors_molecules_per_s": round(len(sample) / t_desc, 1),
        "ratio_CalcMolDescriptors_time_to_label": round(t_desc / t_label_sample, 2),
    }


def profile_labelling(smiles: list[str], top: int) -> list[dict]:
    """The top cProfile items (by own time) of labelling the whole list once."""
    import cProfile
    import pstats

    from molperceive import label
    args = molecule_args(smiles)
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    label.label_many(smiles, args_of=args)
    prof.disable()
    stats = pstats.Stats(prof)
    total = sum(v[2] for v in stats.stats.values())
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]
    return [{"function": f"{Path(file).name}:{line}({name})" if file != "~" else name,
             "calls": v[1], "own_s": round(v[2], 3), "own_share": round(v[2] / total, 3)}
            for (file, line, name), v in rows]


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
    t_peer1, _ = timed(lambda: label.label_many(distinct))
    t_gate, report = timed(lambda: gate.gate(corpus))
    t_peer2, _ = timed(lambda: label.label_many(distinct))
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
    ap.add_argument("--profile", type=int, default=0, help="also print this many top profile items")
    a = ap.parse_args()
    import rdkit
    src = nci_list()
    smiles = [line.split()[0] for line in src.read_text().splitlines() if line.strip()]
    out = {"rdkit": rdkit.__version__, "cpu_count": os.cpu_count(), "source": str(src)}
    out["labelling"] = bench_labelling(smiles, a.peer_sample)
    if a.profile:
        out["profile_top"] = profile_labelling(smiles, a.profile)
    with tempfile.TemporaryDirectory() as tmp:
        out["gate"] = bench_gate(src, a.rows, Path(tmp))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
