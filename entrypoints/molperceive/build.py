"""Corpus rows from a SMILES list: dedup, leak-free split, slices, requests, invalid rows, JSONL.

Each molecule's choices come from a random generator seeded by (seed, InChIKey), so a build is
reproducible whatever the input order. The split key is the InChIKey of the molecule rebuilt
from its graph (no stereo), so stereoisomers always land on the same side: a graph row of one
can never leak the other across the split.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from pathlib import Path

from biotool import files
from biotool.output import InputError, ToolFailure

from molperceive import contract, corrupt, jsonl, label, requests, smiles_syntax

INVALID_REASONS = contract.CHEMISTRY_REASONS + contract.SYNTAX_REASONS


def read_smiles(path: str | Path) -> list[tuple[int, str, str]]:
    """(line number, SMILES, name) per line; '#' lines and blanks skipped; name optional."""
    text = jsonl.read_text(path, "SMILES list")
    if "\x00" in text:
        raise InputError(f"{path}: line {text[:text.index(chr(0))].count(chr(10)) + 1}: a NUL "
                         "byte: binary data, not a SMILES list")
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        why = smiles_syntax.unbounded(parts[0])
        if why:
            raise InputError(f"{path}: line {number}: {why}")
        out.append((number, parts[0], " ".join(parts[1:])))
    if not out:
        raise InputError(f"{path}: empty SMILES list (no molecules)")
    return out


def _fraction(seed: int, key: str) -> float:
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64


def molecules(path: str | Path, seed: int, eval_fraction: float,
              limit: int | None = None) -> tuple[list[dict], dict]:
    """Valid in-scope molecules, deduplicated by InChIKey and assigned a split; reading stops
    once `limit` of them are found (skipped and duplicate counts cover the lines read)."""
    skipped: Counter = Counter()
    seen: set[str] = set()
    mols = []
    duplicates = 0
    for number, smi, name in read_smiles(path):
        if limit is not None and len(mols) >= limit:
            break
        try:
            verdict = label.classify(smi)
        except InputError as exc:
            raise InputError(f"{path}: line {number}: {exc}") from None
        if verdict["status"] != "ok":
            skipped[f"{verdict['status']}:{verdict['reason'] or 'other'}"] += 1
            continue
        molecule = verdict["molecule"]
        mol = molecule.mol
        if "H" in molecule.symbols:
            # Hydrogen kept as a graph atom ([2H], [3H], [H][H]): mol.GetNumBonds() would count
            # its bond, breaking the contract's "bond_count: bonds between heavy atoms only".
            skipped["hydrogen_atom_in_graph"] += 1
            continue
        key = molecule.inchikey
        if not key:
            skipped["no_inchikey"] += 1
            continue
        if key in seen:
            duplicates += 1
            continue
        seen.add(key)
        graph = molecule.graph
        try:
            split_key = molecule.graph_inchikey
        except InputError:
            # Its Kekulé graph does not sanitise ("c#1ccccc1"): no smiles_from_graph label exists.
            skipped["graph_not_rebuildable"] += 1
            continue
        band = contract.size_band(mol.GetNumHeavyAtoms())
        if band == "diagnostic":
            split = "diag"
        else:
            split = "eval" if _fraction(seed, split_key) < eval_fraction else "train"
        mols.append({"line": number, "smiles": smi, "name": name, "mol": mol, "molecule": molecule,
                     "inchikey": key,
                     "graph": graph, "graph_inchikey": split_key, "split": split})
    return mols, {"skipped": dict(skipped), "duplicates": duplicates}


def _reported(m: dict) -> dict:
    return dict(m["molecule"].reported)


def _ok_row(m: dict, slice_name: str, req: dict, graph: bool) -> dict:
    mol = m["mol"]
    labels = {f: m["molecule"].headline(f, req["args"]) for f in req["fields"]}
    row = {"slice": slice_name, "status": "ok", "reason": None,
           "input": {"graph": m["graph"]} if graph else {"smiles": m["smiles"]},
           "request": req["request"], "fields": req["fields"], "families": req["families"],
           "args": req["args"], "labels": labels, "reported": _reported(m),
           "inchikey": m["graph_inchikey"] if graph else m["inchikey"],
           "heavy_atom_count": mol.GetNumHeavyAtoms(), "source": m["name"] or f"line {m['line']}"}
    return row


def _invalid_row(m: dict, slice_name: str, rng: random.Random, allowed) -> dict | None:
    """A row whose SMILES is a verified mutant of this molecule; None if no reason is reachable."""
    for reason in rng.sample(INVALID_REASONS, len(INVALID_REASONS)):
        try:
            mutant = corrupt.corrupt(m["smiles"], reason, rng)
        except InputError:
            continue
        req = requests.smiles_request(m["molecule"], slice_name, rng, allowed)
        return {"slice": slice_name, "status": mutant["status"], "reason": reason,
                "input": {"smiles": mutant["smiles"]}, "request": req["request"],
                "fields": req["fields"], "families": req["families"], "args": req["args"],
                "labels": {}, "mutation": mutant["mutation"],
                "source": m["name"] or f"line {m['line']}"}
    return None


def rows_for(m: dict, seed: int, rows_per_molecule: int, graph_fraction: float,
             invalid_fraction: float, para_fraction: float,
             fields=contract.HEADLINE) -> list[dict]:
    rng = random.Random(f"{seed}:{m['inchikey']}")
    split = m["split"]
    allowed = tuple(f for f in requests.SMILES_FIELDS if f in fields)
    if "smiles_from_graph" not in fields:
        graph_fraction = 0.0
    rows = []
    if allowed:
        for _ in range(rows_per_molecule):
            rows.append(_ok_row(m, split, requests.smiles_request(m["molecule"], split, rng, allowed),
                                graph=False))
    if rng.random() < graph_fraction:
        rows.append(_ok_row(m, split, requests.graph_request(split, rng), graph=True))
    if split == "eval" and rng.random() < para_fraction:
        # Reserved phrasings, only on molecules never seen in training.
        if rng.random() < graph_fraction or not allowed:
            rows.append(_ok_row(m, "mp_para", requests.graph_request("mp_para", rng), graph=True))
        else:
            rows.append(_ok_row(m, "mp_para", requests.smiles_request(m["molecule"], "mp_para", rng,
                                                                      allowed), graph=False))
    if allowed and split in ("train", "eval") and rng.random() < invalid_fraction:
        bad = _invalid_row(m, split, rng, allowed)
        if bad:
            rows.append(bad)
    return rows


def row_id(row: dict, seed: int, n: int) -> str:
    """An id that carries no molecule order: a hash of the row with its labels (which a model
    never sees, so it cannot recompute the id and sort by it), the seed and its position."""
    blob = json.dumps([seed, n, row], sort_keys=True, default=str)
    return "mp-" + hashlib.sha256(blob.encode()).hexdigest()[:12]


def build(smiles_path: str | Path, out_path: str | Path, seed: int = 0, eval_fraction: float = 0.2,
          rows_per_molecule: int = 1, graph_fraction: float = 0.25, invalid_fraction: float = 0.1,
          para_fraction: float = 0.3, limit: int | None = None, fields=None) -> dict:
    """Build the corpus JSONL from a SMILES list; returns a summary of what went where.

    `fields` restricts the headline fields asked (default all); excluded fields are refused.
    """
    fields = tuple(fields) if fields else contract.HEADLINE
    contract.refuse_excluded(fields)
    not_requestable = [f for f in fields if f not in contract.HEADLINE]
    if not_requestable:
        raise InputError(f"only headline fields are asked in requests, not: {', '.join(not_requestable)} "
                         f"(reported fields are published on every row)")
    if not set(fields) & contract.GRAPH_DETERMINED:
        raise InputError("fields must include a graph-determined field: "
                         + ", ".join(sorted(contract.GRAPH_DETERMINED)))
    jsonl.check_output(out_path)
    if Path(out_path).exists() and files.same_content_key(out_path) == files.same_content_key(smiles_path):
        raise InputError(f"--out {out_path}: is the input SMILES list itself; it would be overwritten")
    from biotool.cache import sha256_file
    mols, stats = molecules(smiles_path, seed, eval_fraction, limit)
    if not mols:
        raise InputError(f"{smiles_path}: no valid in-scope molecule to build from "
                         f"(skipped: {stats['skipped']})")
    rows = []
    for m in mols:
        rows.extend(rows_for(m, seed, rows_per_molecule, graph_fraction, invalid_fraction,
                             para_fraction, fields))
    rows = [{"id": row_id(r, seed, n), **r} for n, r in enumerate(rows, 1)]
    if len({r["id"] for r in rows}) != len(rows):  # 48 bits: never expected, still refused
        raise ToolFailure(f"row ids collided for --seed {seed}; build with another seed")
    jsonl.write(out_path, rows)
    by_slice = Counter(r["slice"] for r in rows)
    by_reason = Counter(r["reason"] for r in rows if r["reason"])
    return {
        "out": str(out_path),
        "rows": len(rows),
        "molecules": len(mols),
        "molecules_by_split": dict(Counter(m["split"] for m in mols)),
        "rows_by_slice": {s: by_slice.get(s, 0) for s in contract.SLICES},
        "invalid_rows_by_reason": dict(by_reason),
        "skipped_molecules": stats["skipped"],
        "duplicate_molecules": stats["duplicates"],
        "params": {"seed": seed, "fields": list(fields), "eval_fraction": eval_fraction,
                   "rows_per_molecule": rows_per_molecule, "graph_fraction": graph_fraction,
                   "invalid_fraction": invalid_fraction, "para_fraction": para_fraction},
        "input_sha256": sha256_file(smiles_path),
        "output_sha256": sha256_file(out_path),
        "rdkit": label.rdkit_info(),
    }
