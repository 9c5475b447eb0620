"""The labeler: known molecules, every reason code, scope, arguments, pinned calls."""

from pathlib import Path

import pytest
from biotool.output import InputError, RefusedError

from molperceive import contract, label, reference, selftest

NCI = Path(__file__).parent / "data" / "nci_first_400.smi"


def test_phenol():
    out = label.label("Oc1ccccc1")
    assert out["status"] == "ok"
    assert out["labels"]["formula"] == "C6H6O"
    assert out["labels"]["heavy_atom_count"] == 7
    assert out["labels"]["bond_count"] == 7
    assert out["labels"]["element_counts"] == {"C": 6, "H": 6, "O": 1}


def test_cubane_ring_count_is_six_under_the_pinned_call():
    assert label.label("C12C3C4C1C5C2C3C45", fields=["ring_count"])["reported"]["ring_count"] == 6


def test_glycine_hbd_is_calcnumhbd_not_lipinski():
    from rdkit import Chem
    from rdkit.Chem import rdMolDescriptors
    gly = Chem.MolFromSmiles("NCC(=O)O")
    assert rdMolDescriptors.CalcNumHBD(gly) != rdMolDescriptors.CalcNumLipinskiHBD(gly)
    assert label.label("NCC(=O)O", fields=["hbd"])["reported"]["hbd"] == rdMolDescriptors.CalcNumHBD(gly) == 2


def test_labeler_selftest_passes():
    assert all(c["ok"] for c in selftest.selftest())


@pytest.mark.parametrize("smiles,status,reason", [
    ("CC(C)(C)(C)(C)CC", "invalid_structure", "valence_error"),
    ("c1cccc1CCC", "invalid_structure", "kekulization_failure"),
    ("CC(CCC", "invalid_structure", "unbalanced_parenthesis"),
    ("C1CCCC", "invalid_structure", "unclosed_ring_bond"),
    ("CCQCC", "invalid_structure", "unknown_element"),
    ("CC[Se]CC", "out_of_scope", "element_not_supported"),
    ("CCC", "out_of_scope", "size_out_of_range"),
    ("C" * 71, "out_of_scope", "size_out_of_range"),
])
def test_each_reason_code(smiles, status, reason):
    out = label.label(smiles)
    assert (out["status"], out["reason"]) == (status, reason)
    assert "labels" not in out


def test_diagnostic_band_is_ok_but_flagged():
    out = label.label("C" * 50, fields=["heavy_atom_count"])
    assert out["status"] == "ok" and out["size_band"] == "diagnostic"
    assert label.label("C" * 40, fields=["heavy_atom_count"])["size_band"] == "headline"


def test_dot_disconnection_is_valid():
    out = label.label("CCCCO.CCN", fields=["heavy_atom_count"])
    assert out["status"] == "ok" and out["labels"]["heavy_atom_count"] == 8


def test_arguments_and_their_errors():
    out = label.label("OCCCCN", fields=["atom_at_index", "path_len"], k=5, i=0, j=5)
    assert out["labels"] == {"atom_at_index": "N", "path_len": 5}
    with pytest.raises(InputError, match="k=9"):
        label.label("OCCCCN", fields=["atom_at_index"], k=9)
    with pytest.raises(InputError, match="itself"):
        label.label("OCCCCN", fields=["path_len"], i=2, j=2)
    with pytest.raises(InputError, match="different components"):
        label.label("CCC.CCO", fields=["path_len"], i=0, j=4)
    with pytest.raises(InputError, match="argument k is required for atom_at_index"):
        label.label("OCCCCN", fields=["atom_at_index"])
    with pytest.raises(InputError, match="argument j is required for path_len"):
        label.label("OCCCCN", fields=["path_len"], i=0)


def test_excluded_field_is_refused():
    with pytest.raises(RefusedError, match="inchikey"):
        label.label("CCO", fields=["inchikey"])


def test_smiles_from_graph_reference_rebuilds_the_same_molecule():
    out = label.label("c1ccncc1CC(=O)[O-]", fields=["smiles_from_graph"])
    rebuilt = label.mol_from_graph(out["graph"])
    assert label.inchikey(rebuilt) == out["labels"]["smiles_from_graph"] == out["inchikey"]


def test_hill_formula_equals_calcmolformula_on_a_real_list_but_for_carbon_free_ones():
    from rdkit import Chem
    from rdkit.Chem import rdMolDescriptors
    conflicts = []
    for line in NCI.read_text().splitlines():
        mol = Chem.MolFromSmiles(line.split()[0])
        counts = reference.element_counts(mol)
        ours = contract.formula_with_charge(counts, Chem.GetFormalCharge(mol))
        if ours != rdMolDescriptors.CalcMolFormula(mol):
            # RDKit writes H first with no carbon; the Hill rule puts B, Br, Cl, F before H.
            assert "C" not in counts and "H" in counts and min(counts) < "H", line
            assert label.formula_conflict(mol)
            conflicts.append(line.split()[0])
    assert conflicts == ["OP(O)(F)=O", "NN.OB1OB(O1)OB2OB(O)O2"]


def test_formula_conflict_cases():
    from rdkit import Chem
    assert label.formula_conflict(Chem.MolFromSmiles("OP(O)(F)=O")) == "Hill FH2O3P != CalcMolFormula H2FO3P"
    assert label.formula_conflict(Chem.MolFromSmiles("OP(O)(O)=O")) is None   # H3O4P both ways


def test_label_json_writes_the_bytes_json_dumps_writes():
    import json

    from molperceive import label_json
    smiles = [line.split()[0] for line in NCI.read_text().splitlines() if line.strip()]
    smiles += ["C[C@H](N)C(=O)O", "CC(C", "[Na+].[Cl-]", "Cé", "c1ccccc1\u00b7"]
    for kw in ({}, {"k": 0, "i": 0, "j": 1}, {"fields": ["formula", "hba"]}):
        result = {"molecules": label.label_many(smiles, **kw), "rdkit": label.rdkit_info()}
        same = label_json.dumps(result) == json.dumps(result, ensure_ascii=False)
        assert same, f"label_json differs from json.dumps with {kw}"   # no diff of MBs
    assert sum("graph" in m for m in label.label_many(smiles)) > 350
    assert label_json.dumps({"molecules": [], "rdkit": {}}) == '{"molecules": [], "rdkit": {}}'
