"""The fast labelling path equals the reference path (the literal pinned calls) on every field."""

from pathlib import Path

import pytest
from rdkit import Chem

from molperceive import contract, gate, label, reference

NCI = Path(__file__).parent / "data" / "nci_first_400.smi"

# Molecules the NCI list lacks: stereo marks, isotopes, a dative bond, a radical, charges, an
# explicit hydrogen atom; each must take the path that rebuilds the graph where it has to.
EDGE = ["C[C@H](N)C(=O)O", "F/C=C/CCCl", "[2H]C(=O)c1ccccc1", "[13CH3]c1ccccc1O",
        "[NH3]->[B](F)(F)F", "[CH2]CCCCO", "c1cc[nH]c1C[N+](C)(C)CC(=O)[O-]", "[H][H].CCCCCO",
        "O=[N+]([O-])c1ccccc1", "C1=CC=CC=C1C#N", "OB(O)c1ccccc1", "C[Si](C)(C)OCCBr"]


def _smiles():
    return [line.split()[0] for line in NCI.read_text().splitlines() if line.strip()] + EDGE


def _args(smiles: str) -> dict:
    """k the last atom; i, j the ends of the longest index span inside atom 0's component."""
    mol = Chem.MolFromSmiles(smiles)
    if mol is None or mol.GetNumAtoms() < 2:
        return {}
    frag = next(f for f in Chem.GetMolFrags(mol) if 0 in f)
    return {"k": mol.GetNumAtoms() - 1, **({"i": 0, "j": max(frag)} if len(frag) > 1 else {})}


def _reference(smiles: str, args: dict) -> dict:
    fields = [f for f in contract.ALL_FIELDS
              if all(a in args for a in contract.FIELD_ARGS.get(f, ()))]
    return reference.label(smiles, fields, args)


def test_label_many_equals_the_reference_on_every_field_of_every_molecule():
    smiles = _smiles()
    args = [_args(s) for s in smiles]
    fast = label.label_many(smiles, args_of=args)
    compared = 0
    for s, a, got in zip(smiles, args, fast):
        want = _reference(s, a)
        assert (got["status"], got["reason"]) == (want["status"], want["reason"]), s
        if want["status"] != "ok":
            continue
        assert got["inchikey"] == want["inchikey"], s
        assert got["labels"] == want["labels"], s
        assert got["reported"] == want["reported"], s
        assert got["graph"] == want["graph"], s
        compared += 1
    assert compared > 380


def test_every_atom_index_and_every_path_from_atom_0_agree():
    for s in _smiles()[::4] + EDGE:
        verdict = label.classify(s)
        if verdict["status"] != "ok":
            continue
        m, mol = verdict["molecule"], verdict["mol"]
        frag = next(f for f in Chem.GetMolFrags(mol) if 0 in f)
        for k in range(mol.GetNumAtoms()):
            assert m.headline("atom_at_index", {"k": k}) == \
                reference.headline_label(mol, "atom_at_index", {"k": k}), (s, k)
        for j in frag[1:]:
            assert m.headline("path_len", {"i": 0, "j": j}) == \
                reference.headline_label(mol, "path_len", {"i": 0, "j": j}), (s, j)


def test_graph_rows_rebuild_to_the_same_labels_as_the_reference():
    # A smiles_from_graph row's molecule is rebuilt from the graph; its own InChIKey is the label.
    for s in _smiles()[::10] + EDGE:
        verdict = label.classify(s)
        if verdict["status"] != "ok":
            continue
        graph = reference.graph_of(verdict["mol"])
        rebuilt = label.mol_from_graph(graph)
        assert gate.Molecules().graph(graph).headline("smiles_from_graph", {}) == \
            reference.headline_label(rebuilt, "smiles_from_graph", {}), s


def test_non_plain_molecules_take_the_rebuild_path():
    for s in ("C[C@H](N)C(=O)O", "[2H]C(=O)c1ccccc1", "[13CH3]c1ccccc1O"):
        m = label.classify(s)["molecule"]
        m.graph_inchikey
        assert m.plain is False, s
    assert label.classify("Oc1ccccc1")["molecule"].plain is True


@pytest.mark.parametrize("smiles", ["C[C@H](N)C(=O)O", "F/C=C/CCCl"])
def test_stereo_molecules_label_smiles_from_graph_without_stereo(smiles):
    out = label.label(smiles, fields=["smiles_from_graph"])
    assert out["labels"]["smiles_from_graph"] != out["inchikey"]
