"""The labeler's own self-test on known molecules (needs RDKit): the fast path in label.py
against the reference labeler (reference.py) and RDKit's own calls, and the pinned build.
Apart from both labelers, so neither imports the other's checker (`molperceive selftest`)."""

from __future__ import annotations

from rdkit import Chem
from rdkit.Chem import rdMolDescriptors

from molperceive import contract, reference
from molperceive.label import Molecule, full_label, label, rdkit_info


def selftest() -> list[dict]:
    checks = []

    def check(name, ok, detail=""):
        checks.append({"check": name, "ok": bool(ok), "detail": detail})

    phenol = label("Oc1ccccc1")
    got = (phenol["labels"]["formula"], phenol["labels"]["heavy_atom_count"],
           phenol["labels"]["bond_count"])
    check("phenol_C6H6O_7_heavy_7_bonds", got == ("C6H6O", 7, 7), str(got))
    cubane = label("C12C3C4C1C5C2C3C45", fields=["ring_count"])["reported"]["ring_count"]
    check("cubane_ring_count_6_symmetrised_sssr", cubane == 6, str(cubane))
    gly = Chem.MolFromSmiles("NCC(=O)O")
    hbd, lip = rdMolDescriptors.CalcNumHBD(gly), rdMolDescriptors.CalcNumLipinskiHBD(gly)
    pinned = label("NCC(=O)O", fields=["hbd"])["reported"]["hbd"]
    check("glycine_hbd_pinned_differs_from_lipinski", pinned == hbd == 2 and lip == 3,
          f"CalcNumHBD {hbd}, CalcNumLipinskiHBD {lip}, label {pinned}")
    hill = []
    for smi in ("Oc1ccccc1", "ClC(Cl)(Cl)Cl", "OP(O)(O)=O", "F[B-](F)(F)F", "Fc1ccc(Br)cc1",
                "C[N+](C)(C)C", "[C-2]"):
        mol = Chem.MolFromSmiles(smi)
        ours = contract.formula_with_charge(Molecule(mol, plain=False).element_counts,
                                            Chem.GetFormalCharge(mol))
        if ours != rdMolDescriptors.CalcMolFormula(mol):
            hill.append(f"{smi}: {ours} != {rdMolDescriptors.CalcMolFormula(mol)}")
    check("hill_matches_CalcMolFormula", not hill, "; ".join(hill))
    differ = []
    for smi in ("Oc1ccccc1", "C[C@H](N)C(=O)O", "F/C=C/F", "[2H]C(=O)c1ccccc1",
                "c1cc[nH]c1CC[N+](C)(C)C"):
        fast = full_label(smi)
        ref = reference.label(smi, contract.ALL_FIELDS, {"k": 1, "i": 0, "j": 4})
        if fast != ref:
            differ.append(smi)
    check("fast_path_equals_reference", not differ, ", ".join(differ))
    check("rdkit_is_pinned_build", rdkit_info()["matches_pin"], rdkit_info()["version"])
    return checks
