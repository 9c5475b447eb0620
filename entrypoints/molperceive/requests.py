"""Requests in natural language: which fields a row asks, its arguments, and the prose.

A row's request is prose built from the contract's phrasing families; recovering the fields
from it (contract.recover_fields) is part of the task, and the gate asserts the round trip.
Families 9-12 are reserved for the mp_para slice; every other slice draws from 1-8.
"""

from __future__ import annotations

import random

from molperceive import contract

# Fields a SMILES row may ask (smiles_from_graph rows present a graph instead of a SMILES).
SMILES_FIELDS = tuple(f for f in contract.HEADLINE if f != "smiles_from_graph")
SMILES_GRAPH_FIELDS = tuple(f for f in SMILES_FIELDS if f in contract.GRAPH_DETERMINED)


def families_for(slice_name: str) -> tuple[int, ...]:
    return contract.RESERVED_FAMILIES if slice_name == "mp_para" else contract.OPEN_FAMILIES


def compose(fields, families: dict, args: dict) -> str:
    """The prose of a request: one phrasing per field, in the order given."""
    return " ".join(contract.phrasing(f, families[f], **args) for f in fields)


def pick_args(mol, fields, rng: random.Random) -> dict:
    """k for atom_at_index; i != j in one connected component for path_len."""
    from rdkit import Chem
    args = {}
    n = mol.GetNumAtoms()
    if "atom_at_index" in fields:
        args["k"] = rng.randrange(n)
    if "path_len" in fields:
        frags = [f for f in Chem.GetMolFrags(mol) if len(f) > 1]
        frag = rng.choice(frags)
        i, j = rng.sample(list(frag), 2)
        args["i"], args["j"] = i, j
    return args


def smiles_request(molecule, slice_name: str, rng: random.Random, allowed=SMILES_FIELDS) -> dict:
    """1-3 fields about a SMILES (a label.Molecule), at least one graph-determined, with
    families and arguments."""
    mol = molecule.mol
    count = rng.choice((1, 1, 2, 2, 3))
    fields = [rng.choice([f for f in SMILES_GRAPH_FIELDS if f in allowed])]
    # Never ask a formula whose pinned label departs from the published Hill rule.
    skip = {"formula"} if molecule.formula_conflict() else set()
    others = [f for f in SMILES_FIELDS if f in allowed and f not in fields and f not in skip]
    fields += rng.sample(others, min(count - 1, len(others)))
    rng.shuffle(fields)
    if not any(len(f) > 1 for f in _frags(mol)) and "path_len" in fields:
        fields = [f for f in fields if f != "path_len"] or ["element_counts"]
    fam = families_for(slice_name)
    families = {f: rng.choice(fam) for f in fields}
    args = pick_args(mol, fields, rng)
    return {"fields": fields, "families": families, "args": args,
            "request": compose(fields, families, args)}


def graph_request(slice_name: str, rng: random.Random) -> dict:
    families = {"smiles_from_graph": rng.choice(families_for(slice_name))}
    return {"fields": ["smiles_from_graph"], "families": families, "args": {},
            "request": compose(["smiles_from_graph"], families, {})}


def _frags(mol):
    from rdkit import Chem
    return Chem.GetMolFrags(mol)
