"""The reference labeler: every label through the literal expression printed in contract.CALLS.

Slow on purpose (each field parses, adds hydrogens, rebuilds the graph and hashes on its own);
it is what the fast path in label.py is tested against, field by field, on real molecules
(tests/unit/molperceive/test_mp_fast_path.py). Change a call here and in contract.CALLS together.
"""

from __future__ import annotations

from collections import Counter

from rdkit import Chem
from rdkit.Chem import Descriptors, rdMolDescriptors

from biotool.output import InputError

from molperceive import contract, smiles_syntax
from molperceive.label import check_index, mol_from_graph


def classify(smiles: str) -> dict:
    """{status, reason, mol}: syntax, then chemistry, then scope, one literal call each."""
    problem = smiles_syntax.first_problem(smiles)
    if problem is not None:
        return {"status": "invalid_structure", "reason": problem["reason"], "mol": None}
    raw = Chem.MolFromSmiles(smiles, sanitize=False)
    if raw is None:
        return {"status": "invalid_structure", "reason": None, "mol": None}
    types = [p.GetType() for p in Chem.DetectChemistryProblems(raw)]
    if types:
        reason = next((r for r in (contract.RDKIT_PROBLEM_REASON.get(t) for t in types) if r), None)
        return {"status": "invalid_structure", "reason": reason, "mol": None}
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return {"status": "invalid_structure", "reason": None, "mol": None}
    if {a.GetSymbol() for a in mol.GetAtoms()} - set(contract.SUPPORTED_ELEMENTS):
        return {"status": "out_of_scope", "reason": "element_not_supported", "mol": mol}
    if contract.size_band(mol.GetNumHeavyAtoms()) is None:
        return {"status": "out_of_scope", "reason": "size_out_of_range", "mol": mol}
    return {"status": "ok", "reason": None, "mol": mol}


def graph_of(mol) -> dict:
    kek = Chem.Mol(mol)
    Chem.Kekulize(kek, clearAromaticFlags=True)
    return {"atoms": [{"element": a.GetSymbol(), "charge": a.GetFormalCharge(),
                       "hydrogens": a.GetTotalNumHs()} for a in kek.GetAtoms()],
            "bonds": [[b.GetBeginAtomIdx(), b.GetEndAtomIdx(), int(b.GetBondTypeAsDouble())]
                      for b in kek.GetBonds()]}


def element_counts(mol) -> dict:
    return dict(sorted(Counter(a.GetSymbol() for a in Chem.AddHs(mol).GetAtoms()).items()))


def headline_label(mol, field: str, args: dict):
    if field == "element_counts":
        return element_counts(mol)
    if field == "formula":
        return rdMolDescriptors.CalcMolFormula(mol)
    if field == "heavy_atom_count":
        return mol.GetNumHeavyAtoms()
    if field == "bond_count":
        return mol.GetNumBonds()
    if field == "atom_at_index":
        return mol.GetAtomWithIdx(check_index(mol.GetNumAtoms(), "k", args.get("k"))).GetSymbol()
    if field == "path_len":
        i, j = (check_index(mol.GetNumAtoms(), n, args.get(n)) for n in ("i", "j"))
        return len(Chem.GetShortestPath(mol, i, j)) - 1
    if field == "smiles_from_graph":
        return Chem.MolToInchiKey(mol_from_graph(graph_of(mol)))
    raise InputError(f"unknown headline field {field!r}")


def reported_labels(mol) -> dict:
    return {
        "ring_count": mol.GetRingInfo().NumRings(),
        "aromatic_ring_count": rdMolDescriptors.CalcNumAromaticRings(mol),
        "bond_count_by_type": dict(sorted(Counter(str(b.GetBondType()) for b in mol.GetBonds()).items())),
        "rotatable_bonds": rdMolDescriptors.CalcNumRotatableBonds(
            mol, rdMolDescriptors.NumRotatableBondsOptions.Strict),
        "hbd": rdMolDescriptors.CalcNumHBD(mol),
        "hba": rdMolDescriptors.CalcNumHBA(mol),
        "stereocenters": sum(1 for si in Chem.FindPotentialStereo(mol)
                             if si.type == Chem.StereoType.Atom_Tetrahedral),
        "formal_charge": Chem.GetFormalCharge(mol),
        "degree_unsaturation": contract.degree_unsaturation(element_counts(mol)),
        "mw": round(Descriptors.MolWt(mol), 3),
    }


def label(smiles: str, fields, args: dict) -> dict:
    """Status, reason, InChIKey, graph, headline and reported labels, all by the literal calls."""
    verdict = classify(smiles)
    out = {"status": verdict["status"], "reason": verdict["reason"]}
    mol = verdict["mol"]
    if verdict["status"] != "ok":
        return out
    out["inchikey"] = Chem.MolToInchiKey(mol)
    out["graph"] = graph_of(mol)
    out["labels"] = {f: headline_label(mol, f, args) for f in fields if f in contract.HEADLINE}
    rep = reported_labels(mol)
    out["reported"] = {f: rep[f] for f in fields if f in contract.REPORTED}
    return out
