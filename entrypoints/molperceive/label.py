"""Labels for a SMILES through exactly the pinned RDKit calls of the contract, with status and reason.

Order of judgement: syntax (the independent parser, no RDKit), then chemistry (RDKit's
DetectChemistryProblems on the unsanitised parse), then scope (elements, then size). Every
label expression here is the one printed in contract.CALLS; change both or neither.
"""

from __future__ import annotations

from collections import Counter

from biotool.output import InputError

from molperceive import contract, smiles_syntax

_QUIET = False


def _rdkit():
    """RDKit, imported on first use with its logger silenced (stderr carries our one-line errors)."""
    global _QUIET
    from rdkit import Chem, RDLogger
    if not _QUIET:
        RDLogger.DisableLog("rdApp.*")
        _QUIET = True
    return Chem


def rdkit_info() -> dict:
    """The RDKit build in use, the pin, and the call chain (printed by the scorer and the gate)."""
    import rdkit
    version = rdkit.__version__
    return {"version": version, "pinned": contract.PINNED_RDKIT,
            "matches_pin": version == contract.PINNED_RDKIT, "calls": contract.CALLS}


def version_warning() -> str | None:
    info = rdkit_info()
    if info["matches_pin"]:
        return None
    return (f"RDKit {info['version']} is not the pinned {info['pinned']} "
            f"({contract.PINNED_RDKIT_PIP}); labels recomputed here may differ: see label_drift")


def inchikey(mol) -> str:
    return _rdkit().MolToInchiKey(mol)


# ---------------------------------------------------------------------------------------------
# Status and reason.

def classify(smiles: str) -> dict:
    """{status, reason, detail, mol}: mol is the sanitised RDKit molecule when status is ok."""
    Chem = _rdkit()
    problem = smiles_syntax.first_problem(smiles)
    if problem is not None:
        return {"status": "invalid_structure", "reason": problem["reason"],
                "detail": problem["detail"], "mol": None}
    raw = Chem.MolFromSmiles(smiles, sanitize=False)
    if raw is None:
        # The independent parser found nothing RDKit objects to: no contract reason applies.
        return {"status": "invalid_structure", "reason": None,
                "detail": "RDKit cannot parse it; the syntax checker found no listed problem",
                "mol": None}
    types = [p.GetType() for p in Chem.DetectChemistryProblems(raw)]
    if types:
        reasons = [contract.RDKIT_PROBLEM_REASON.get(t) for t in types]
        reason = next((r for r in reasons if r), None)
        return {"status": "invalid_structure", "reason": reason,
                "detail": "RDKit problems: " + ", ".join(types), "mol": None}
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return {"status": "invalid_structure", "reason": None,
                "detail": "RDKit sanitisation failed without a detected problem", "mol": None}
    symbols = {a.GetSymbol() for a in mol.GetAtoms()}
    unsupported = sorted(symbols - set(contract.SUPPORTED_ELEMENTS))
    if unsupported:
        return {"status": "out_of_scope", "reason": "element_not_supported",
                "detail": "elements outside scope: " + ", ".join(unsupported), "mol": mol}
    heavy = mol.GetNumHeavyAtoms()
    if contract.size_band(heavy) is None:
        return {"status": "out_of_scope", "reason": "size_out_of_range",
                "detail": f"{heavy} heavy atoms; scope is {contract.HEADLINE_SIZE[0]}-"
                          f"{contract.DIAGNOSTIC_SIZE[1]}", "mol": mol}
    return {"status": "ok", "reason": None, "detail": None, "mol": mol}


# ---------------------------------------------------------------------------------------------
# The molecular graph given to smiles_from_graph requests, and the reference rebuilt from it.

def graph_of(mol) -> dict:
    """Atoms (element, formal charge, hydrogens) and Kekulé bonds [i, j, order] of a molecule."""
    Chem = _rdkit()
    kek = Chem.Mol(mol)
    Chem.Kekulize(kek, clearAromaticFlags=True)
    atoms = [{"element": a.GetSymbol(), "charge": a.GetFormalCharge(), "hydrogens": a.GetTotalNumHs()}
             for a in kek.GetAtoms()]
    bonds = [[b.GetBeginAtomIdx(), b.GetEndAtomIdx(), int(b.GetBondTypeAsDouble())]
             for b in kek.GetBonds()]
    return {"atoms": atoms, "bonds": bonds}


_ORDERS = {1: "SINGLE", 2: "DOUBLE", 3: "TRIPLE"}


def mol_from_graph(graph: dict):
    """The reference built atom by atom with Chem.RWMol, then Chem.SanitizeMol (the pinned way)."""
    Chem = _rdkit()
    try:
        rw = Chem.RWMol()
        for a in graph["atoms"]:
            atom = Chem.Atom(str(a["element"]))
            atom.SetFormalCharge(int(a.get("charge", 0)))
            atom.SetNumExplicitHs(int(a.get("hydrogens", 0)))
            atom.SetNoImplicit(True)
            rw.AddAtom(atom)
        for i, j, order in graph["bonds"]:
            rw.AddBond(int(i), int(j), getattr(Chem.BondType, _ORDERS[int(order)]))
        mol = rw.GetMol()
        Chem.SanitizeMol(mol)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise InputError(f"graph: cannot build the molecule: {type(exc).__name__}: {exc}") from None
    return mol


# ---------------------------------------------------------------------------------------------
# Labels.

def _element_counts(mol) -> dict[str, int]:
    Chem = _rdkit()
    return dict(sorted(Counter(a.GetSymbol() for a in Chem.AddHs(mol).GetAtoms()).items()))


def _check_index(mol, name: str, value) -> int:
    if value is None:
        field = next((f for f, names in contract.FIELD_ARGS.items() if name in names), "this field")
        raise InputError(f"argument {name} is required for {field} (molperceive label -{name} N; "
                         f"in a corpus row, args.{name})")
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"argument {name}={value!r} is not an integer atom index")
    if not 0 <= value < mol.GetNumAtoms():
        raise InputError(f"argument {name}={value} is outside atom indices 0-{mol.GetNumAtoms() - 1}")
    return value


def headline_label(mol, field: str, args: dict):
    """One headline label through its pinned call (contract.CALLS[field])."""
    Chem = _rdkit()
    from rdkit.Chem import rdMolDescriptors
    if field == "element_counts":
        return _element_counts(mol)
    if field == "formula":
        return rdMolDescriptors.CalcMolFormula(mol)
    if field == "heavy_atom_count":
        return mol.GetNumHeavyAtoms()
    if field == "bond_count":
        return mol.GetNumBonds()
    if field == "atom_at_index":
        return mol.GetAtomWithIdx(_check_index(mol, "k", args.get("k"))).GetSymbol()
    if field == "path_len":
        i, j = (_check_index(mol, n, args.get(n)) for n in ("i", "j"))
        if i == j:
            raise InputError(f"path_len of atom {i} to itself is 0 by definition and never asked")
        path = Chem.GetShortestPath(mol, i, j)
        if not path:
            raise InputError(f"atoms {i} and {j} are in different components: no path")
        return len(path) - 1
    if field == "smiles_from_graph":
        return inchikey(mol_from_graph(graph_of(mol)))
    raise InputError(f"unknown headline field {field!r}")


def formula_conflict(mol) -> str | None:
    """Why the pinned formula call departs from the contract's Hill rule here, or None.

    CalcMolFormula writes hydrogen first when there is no carbon (H2FO3P, HCl), where the
    contract's Hill rule puts every element alphabetically (FH2O3P, ClH). Rows never ask the
    formula of such a molecule, so the published rule and the recomputable label agree on
    every row that is scored.
    """
    from rdkit.Chem import rdMolDescriptors
    Chem = _rdkit()
    hill = contract.formula_with_charge(_element_counts(mol), Chem.GetFormalCharge(mol))
    pinned = rdMolDescriptors.CalcMolFormula(mol)
    return None if hill == pinned else f"Hill {hill} != CalcMolFormula {pinned}"


def reported_labels(mol) -> dict:
    """Every separately reported field, each through its pinned call."""
    Chem = _rdkit()
    from rdkit.Chem import Descriptors, rdMolDescriptors
    counts = _element_counts(mol)
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
        "degree_unsaturation": contract.degree_unsaturation(counts),
        "mw": round(Descriptors.MolWt(mol), 3),
    }


def default_fields(args: dict) -> list[str]:
    """All headline fields whose arguments are given, then every reported field."""
    return [f for f in contract.HEADLINE
            if all(args.get(a) is not None for a in contract.FIELD_ARGS.get(f, ()))] + list(contract.REPORTED)


def label(smiles: str, fields=None, k: int | None = None, i: int | None = None,
          j: int | None = None) -> dict:
    """Status, reason and the requested labels of one SMILES (all applicable fields by default)."""
    args = {n: v for n, v in (("k", k), ("i", i), ("j", j)) if v is not None}
    fields = list(fields) if fields else default_fields(args)
    contract.refuse_excluded(fields)
    verdict = classify(smiles)
    out = {"smiles": smiles, "status": verdict["status"], "reason": verdict["reason"],
           "detail": verdict["detail"]}
    mol = verdict["mol"]
    if verdict["status"] != "ok":
        return out
    heavy = mol.GetNumHeavyAtoms()
    out["heavy_atom_count"] = heavy
    out["size_band"] = contract.size_band(heavy)
    out["inchikey"] = inchikey(mol)   # the dedup/leak key: metadata, never a model output
    headline = {f: headline_label(mol, f, args) for f in fields if f in contract.HEADLINE}
    out["labels"] = headline
    if args:
        out["args"] = args
    if "smiles_from_graph" in headline:
        out["graph"] = graph_of(mol)
    wanted = [f for f in fields if f in contract.REPORTED]
    if wanted:
        rep = reported_labels(mol)
        out["reported"] = {f: rep[f] for f in wanted}
    return out


# ---------------------------------------------------------------------------------------------
# Known molecules: the labeler's own self-test (needs RDKit).

def selftest() -> list[dict]:
    from rdkit.Chem import rdMolDescriptors
    Chem = _rdkit()
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
        ours = contract.formula_with_charge(_element_counts(mol), Chem.GetFormalCharge(mol))
        if ours != rdMolDescriptors.CalcMolFormula(mol):
            hill.append(f"{smi}: {ours} != {rdMolDescriptors.CalcMolFormula(mol)}")
    check("hill_matches_CalcMolFormula", not hill, "; ".join(hill))
    check("rdkit_is_pinned_build", rdkit_info()["matches_pin"], rdkit_info()["version"])
    return checks
