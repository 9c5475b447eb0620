"""The MolPerceive field contract: the one place that says which fields exist and how each is labelled.

The generator draws fields from here, the gate re-checks every row against it and the scorer
scores by it; nothing else may invent a field. docs/molperceive-contract.md is generated from
this module (python3 -m molperceive.contract_doc) and a unit test fails if the two drift. No
RDKit here: the contract must load anywhere.
"""

from __future__ import annotations

from collections import Counter

from biotool.output import InputError, RefusedError

PINNED_RDKIT = "2026.03.4"
PINNED_RDKIT_PIP = "rdkit==2026.3.4"

# ---------------------------------------------------------------------------------------------
# Field groups. A field sits in exactly one group (checked by selftest()).

HEADLINE = (
    "element_counts", "formula", "heavy_atom_count", "bond_count",
    "atom_at_index", "path_len", "smiles_from_graph",
)

# What each headline field asks, in the words of the specification.
HEADLINE_MEANING = {
    "element_counts": "symbol -> int, hydrogen included",
    "formula": "Hill notation string",
    "heavy_atom_count": "int",
    "bond_count": "int, bonds between heavy atoms only",
    "atom_at_index": "element symbol at RDKit atom index k (0-based)",
    "path_len": "shortest bond path between atom indices i and j (0-based)",
    "smiles_from_graph": "a SMILES string, scored by InChIKey identity",
}
HEADLINE_WHY = (
    "Each has a measured near-zero external floor (ChemIQ, arXiv 2505.07735: GPT-4o carbon "
    "counting from SMILES 4.0% n=50, shortest path 11.1% canonical / 5.6% random n=54, atom "
    "mapping 0.0% n=92; MolBasic, arXiv 2607.03007 Table 1: Qwen3-8B heavy atom counting 6.09%, "
    "total bond counting 3.07%, graph-to-SMILES near zero).")

# At least one of these per scored row, so composition statistics alone cannot pass.
GRAPH_DETERMINED = frozenset({"element_counts", "atom_at_index", "path_len", "smiles_from_graph"})

# Computed and published, never pooled into the headline: each with why.
REPORTED = {
    "ring_count": "GPT-4o already 45.8% on ChemIQ ring counting (n=48, at most six rings); "
                  "symmetrised SSSR (cubane 6) differs from true SSSR (5)",
    "aromatic_ring_count": "ring counting is not near floor (ChemIQ 45.8%)",
    "bond_count_by_type": "Qwen3-8B 45.81% on MolBasic: not near floor",
    "rotatable_bonds": "default and Strict NumRotatableBondsOptions disagree",
    "hbd": "CalcNumHBD and CalcNumLipinskiHBD disagree (glycine 2 vs 3)",
    "hba": "Lipinski.NumHAcceptors delegates to the general CalcNumHBA (rdkit issue 6206)",
    "stereocenters": "FindPotentialStereo and the removed legacy stereo code disagree",
    "formal_charge": "near constant on the corpus: free points (the label-entropy gate flags it)",
    "degree_unsaturation": "near constant on the corpus: free points",
    "mw": "decimal arithmetic: any tolerance would decide the score",
}

# Never a model output, in any slice; the generator, gate and scorer refuse them.
EXCLUDED = {
    "inchikey": "a hash: a chemist who understands the molecule perfectly scores 0; it is the "
                "dedup, leak and smiles_from_graph scoring key instead",
    "canonical_smiles": "string equality measures agreement with one toolkit's atom ranking",
    "monoisotopic_mass": "four-decimal arithmetic",
    "logp": "a fitted parameter sum: no ground truth to recompute",
    "tpsa": "a fitted parameter sum: no ground truth to recompute",
    "iupac_name": "no deterministic permissively licensed implementation to recompute the label",
}

FIELD_ARGS = {"atom_at_index": ("k",), "path_len": ("i", "j")}

# ---------------------------------------------------------------------------------------------
# The exact call behind every label (`s` = SMILES, `mol` = Chem.MolFromSmiles(s)).

CALLS = {
    "parse": "Chem.MolFromSmiles(s)",
    "parse_unsanitised": "Chem.MolFromSmiles(s, sanitize=False)",
    "element_counts": "Counter(a.GetSymbol() for a in Chem.AddHs(mol).GetAtoms())",
    "formula": "rdMolDescriptors.CalcMolFormula(mol)",
    "heavy_atom_count": "mol.GetNumHeavyAtoms()",
    "bond_count": "mol.GetNumBonds()",
    "atom_at_index": "mol.GetAtomWithIdx(k).GetSymbol()",
    "path_len": "len(Chem.GetShortestPath(mol, i, j)) - 1",
    "smiles_from_graph": "Chem.MolToInchiKey(Chem.MolFromSmiles(pred)) == Chem.MolToInchiKey("
                         "reference built atom by atom with Chem.RWMol, then Chem.SanitizeMol)",
    "chemistry_reason": "[p.GetType() for p in Chem.DetectChemistryProblems("
                        "Chem.MolFromSmiles(s, sanitize=False))]",
    "syntax_reason": "molperceive.smiles_syntax.first_problem(s) (independent parser, no RDKit)",
    "leak_key": "Chem.MolToInchiKey(mol)",
    "ring_count": "mol.GetRingInfo().NumRings()",
    "aromatic_ring_count": "rdMolDescriptors.CalcNumAromaticRings(mol)",
    "bond_count_by_type": "Counter(str(b.GetBondType()) for b in mol.GetBonds())",
    "rotatable_bonds": "rdMolDescriptors.CalcNumRotatableBonds(mol, "
                       "rdMolDescriptors.NumRotatableBondsOptions.Strict)",
    "hbd": "rdMolDescriptors.CalcNumHBD(mol)",
    "hba": "rdMolDescriptors.CalcNumHBA(mol)",
    "stereocenters": "sum(1 for si in Chem.FindPotentialStereo(mol) "
                     "if si.type == Chem.StereoType.Atom_Tetrahedral)",
    "formal_charge": "Chem.GetFormalCharge(mol)",
    "degree_unsaturation": "1 + sum(n * (v - 2) for element n in element_counts) / 2, v = 4 C Si, "
                           "3 N P B, 2 O S, 1 H F Cl Br I",
    "mw": "round(Descriptors.MolWt(mol), 3)",
}

# RDKit problem types (DetectChemistryProblems) -> contract reason.
RDKIT_PROBLEM_REASON = {
    "AtomValenceException": "valence_error",
    "AtomKekulizeException": "kekulization_failure",
    "KekulizeException": "kekulization_failure",
}

# ---------------------------------------------------------------------------------------------
# Row status and reason codes.

STATUSES = ("ok", "invalid_structure", "out_of_scope")
CHEMISTRY_REASONS = ("valence_error", "kekulization_failure")
SYNTAX_REASONS = ("unbalanced_parenthesis", "unclosed_ring_bond", "unknown_element")
SCOPE_REASONS = ("element_not_supported", "size_out_of_range")
REASONS = CHEMISTRY_REASONS + SYNTAX_REASONS + SCOPE_REASONS
# Deleted on purpose, never re-added.
DELETED_REASONS = ("atom_label_absent", "multiple_components")

REASON_MEANING = {
    "valence_error": "an atom carries more bonds than its element allows "
                     "(RDKit AtomValenceException)",
    "kekulization_failure": "an aromatic system has no Kekulé structure "
                            "(RDKit AtomKekulizeException, KekulizeException)",
    "unbalanced_parenthesis": "a ')' closes no branch, or a branch is never closed",
    "unclosed_ring_bond": "a ring-bond label is opened and never closed",
    "unknown_element": "a symbol that is no element",
    "element_not_supported": "an element outside the supported set",
    "size_out_of_range": "heavy atoms outside 5-70",
}
REASON_CLASS_WHY = {
    "chemistry": "the headline abstention number; they need sanitisation to establish",
    "syntax": "pure string checks by the independent parser (no RDKit), so they do not depend on "
              "one toolkit's parser; reported on their own line, never pooled into the "
              "abstention headline",
    "scope": "the molecule is valid but outside the benchmark's scope",
}
DELETED_WHY = {
    "atom_label_absent": "no mutation can produce it",
    "multiple_components": "a dot is a valid disconnection, not a parse failure",
}
PINNED_WHY = (
    "RDKit gives several mutually inconsistent answers to the same question inside one release "
    "(CalcNumHBD vs CalcNumLipinskiHBD; Lipinski.NumHAcceptors delegating to the general "
    "CalcNumHBA, rdkit issue 6206; symmetrised SSSR ring counts: cubane 6, true SSSR 5). A "
    "version alone does not make a label reproducible, so the call chain is pinned and printed "
    "by the scorer; on another version the scorer warns and still runs, so a reviewer can see "
    "which fields moved (label_drift).")
KNOWN_BEHAVIOUR = (
    "GetShortestPath(mol, i, i) raises; path_len of an atom to itself is 0 by definition and "
    "never asked.",
    "Labels are computed by molperceive/label.py from one parsed molecule with each shared "
    "intermediate made once (one sanitised molecule, one pass over atoms and bonds, one InChI; "
    "the unsanitised parse and DetectChemistryProblems only when the sanitised parse fails or "
    "holds an element out of scope or a bracket hydrogen atom; the smiles_from_graph key of a "
    "stereo or isotope molecule from its InChI cut before those layers, and the graph rebuilt "
    "only when a bond type is unusual or an atom's valence in the Kekulé graph differs from "
    "the molecule's); molperceive/reference.py evaluates the expressions above literally, and "
    "unit tests compare the two on every field of the shipped NCI molecules, their stereo and "
    "isotope forms and their corrupted forms.",
)
FINDINGS = (
    ("The pinned formula call and the Hill rule disagree on carbon-free molecules",
     "CalcMolFormula writes hydrogen first when there is no carbon (H2FO3P, HCl, H3BO3) where "
     "the rule puts every element alphabetically (FH2O3P, ClH, BH3O3); it matters for "
     "carbon-free molecules holding B, Br, Cl or F. Two of the first 400 NCI molecules hit it. "
     "Labels stay the pinned call; the generator never asks formula of such a molecule and the "
     "gate fails any row that does (formula_notation_conflict), so the published rule and the "
     "recomputable label agree on every scored row."),
    ("Phrasings were written against the known trigger collisions",
     "bond_count says \"hydrogen-suppressed graph\" rather than \"bonds between heavy atoms\"; "
     "path_len says \"how far apart, counted in bonds\" rather than \"how many bonds apart\". "
     "Triggers match case-insensitively with hyphens read as spaces (\"non-hydrogen atoms\" asks "
     "heavy_atom_count). The selftest round-trips all 84 phrasings (7 fields x 12 families) and "
     "fails if any phrasing carries another field's trigger."),
)


def reason_class(reason: str | None) -> str | None:
    if reason in CHEMISTRY_REASONS:
        return "chemistry"
    if reason in SYNTAX_REASONS:
        return "syntax"
    if reason in SCOPE_REASONS:
        return "scope"
    return None


# ---------------------------------------------------------------------------------------------
# Scope.

SUPPORTED_ELEMENTS = ("C", "H", "N", "O", "S", "P", "F", "Cl", "Br", "I", "B", "Si")
HEADLINE_SIZE = (5, 40)      # heavy atoms, training and headline evaluation
DIAGNOSTIC_SIZE = (41, 70)   # the diagnostic slice only: the accuracy-versus-size curve

SLICES = ("train", "eval", "mp_para", "diag")
EVALUATION_SLICES = ("eval", "mp_para", "diag")


def size_band(heavy_atoms: int) -> str | None:
    """'headline' for 5-40 heavy atoms, 'diagnostic' for 41-70, None outside scope."""
    if HEADLINE_SIZE[0] <= heavy_atoms <= HEADLINE_SIZE[1]:
        return "headline"
    if DIAGNOSTIC_SIZE[0] <= heavy_atoms <= DIAGNOSTIC_SIZE[1]:
        return "diagnostic"
    return None


# ---------------------------------------------------------------------------------------------
# Hill notation.

def hill_formula(counts: dict[str, int]) -> str:
    """Carbon first, hydrogen second, the rest alphabetical; with no carbon, all alphabetical."""
    counts = {el: int(n) for el, n in counts.items() if int(n) > 0}
    if "C" in counts:
        order = ["C"] + (["H"] if "H" in counts else []) + sorted(
            el for el in counts if el not in ("C", "H"))
    else:
        order = sorted(counts)
    return "".join(el + (str(counts[el]) if counts[el] != 1 else "") for el in order)


def formula_with_charge(counts: dict[str, int], charge: int) -> str:
    """The Hill formula with the charge suffix as RDKit writes it: C4H12N+, BF4-, C-2."""
    suffix = "" if charge == 0 else ("+" if charge > 0 else "-") + (
        str(abs(charge)) if abs(charge) != 1 else "")
    return hill_formula(counts) + suffix


HILL_CASES = (
    ({"C": 6, "H": 6, "O": 1}, 0, "C6H6O"),
    ({"C": 1, "Cl": 4}, 0, "CCl4"),
    ({"H": 3, "P": 1, "O": 4}, 0, "H3O4P"),
    ({"B": 1, "F": 4}, 0, "BF4"),
    ({"C": 6, "H": 4, "Br": 1, "F": 1}, 0, "C6H4BrF"),
    ({"C": 4, "H": 12, "N": 1}, 1, "C4H12N+"),
    ({"B": 1, "F": 4}, -1, "BF4-"),
    ({"C": 1}, -2, "C-2"),
)

# Standard valences for the degree of unsaturation (elements in scope only).
UNSATURATION_VALENCE = {"C": 4, "Si": 4, "N": 3, "P": 3, "B": 3, "O": 2, "S": 2,
                        "H": 1, "F": 1, "Cl": 1, "Br": 1, "I": 1}


def degree_unsaturation(counts: dict[str, int]) -> int | float:
    """1 + sum(n * (v - 2)) / 2: an int when whole, else the exact half as a float."""
    twice = 2 + sum(n * (UNSATURATION_VALENCE[el] - 2) for el, n in counts.items())
    return twice // 2 if twice % 2 == 0 else twice / 2


# ---------------------------------------------------------------------------------------------
# Requests in natural language: triggers and twelve phrasing families per headline field.

TRIGGERS = {
    "element_counts": ("element count", "element counts", "counts of each element",
                       "count of each element", "how many of each element", "per element",
                       "atoms of each element"),
    "formula": ("molecular formula", "formula", "empirical composition"),
    "heavy_atom_count": ("heavy atom", "non hydrogen atom", "heavy atoms total"),
    "bond_count": ("bond count", "number of bonds", "total bonds", "how many bonds",
                   "bonds are drawn", "bonds present"),
    "atom_at_index": ("which element", "what element", "atom at index", "element at position",
                      "sits at index"),
    "path_len": ("shortest path", "bond distance", "path length", "steps between",
                 "how far apart"),
    "smiles_from_graph": ("smiles", "smiles string", "as smiles"),
}

RESERVED_FAMILIES = (9, 10, 11, 12)   # never in training: the whole of the mp_para slice
OPEN_FAMILIES = (1, 2, 3, 4, 5, 6, 7, 8)
# Atom indices in requests are RDKit's, 0-based: the order heavy atoms are written.
PHRASINGS = {
    "element_counts": (
        "Give the element counts of this molecule, hydrogen included.",
        "List the count of each element in the molecule, counting hydrogens too.",
        "How many of each element does this molecule contain, hydrogen included?",
        "Report the number of atoms per element, implicit hydrogens included.",
        "Count the atoms of each element in this molecule, including every hydrogen.",
        "What are the counts of each element here, with hydrogens counted?",
        "Tally the element counts for this structure, hydrogens included.",
        "Break the molecule down per element: how many atoms of every kind, hydrogen included?",
        "Provide an element count for the whole molecule, hydrogens included.",
        "State how many of each element the structure holds, implicit hydrogens included.",
        "For this compound, give the count of each element, hydrogen among them.",
        "Enumerate the atoms of each element in it, hydrogens too.",
    ),
    "formula": (
        "What is the molecular formula of this molecule?",
        "Give the formula in Hill notation.",
        "Write the molecular formula in Hill order: carbon, then hydrogen, then the rest "
        "alphabetically.",
        "State the empirical composition as a Hill notation formula.",
        "Which formula describes this molecule? Use Hill notation.",
        "Report the molecular formula, with any net charge as a suffix.",
        "Derive the formula of this compound in Hill notation.",
        "Express this structure as a molecular formula.",
        "Condense the structure into its molecular formula (Hill system).",
        "What formula, in Hill notation, does this structure have?",
        "Summarise the empirical composition of this compound in Hill notation.",
        "Give this compound's molecular formula, carbon first and hydrogen second.",
    ),
    "heavy_atom_count": (
        "How many heavy atoms does this molecule have?",
        "Count the heavy atoms (all atoms except hydrogen).",
        "What is the number of non hydrogen atoms in this molecule?",
        "Give the heavy atoms total for this structure.",
        "Report the heavy atom tally for this compound.",
        "How many non hydrogen atoms are in the structure?",
        "State how many heavy atoms the molecule contains.",
        "Excluding hydrogens, what is the heavy atom number?",
        "Tell me the heavy atoms total of this compound.",
        "Ignoring every hydrogen, how many heavy atoms remain?",
        "What is this structure's tally of non hydrogen atoms?",
        "Determine the heavy atom population of the molecule.",
    ),
    "bond_count": (
        "What is the bond count of this molecule, ignoring hydrogens?",
        "How many bonds does the molecule have, not counting bonds to hydrogen?",
        "Give the number of bonds in the hydrogen-suppressed graph.",
        "Report the total bonds in the structure, leaving out hydrogens.",
        "How many bonds are drawn in the hydrogen-suppressed structure?",
        "State the bond count, where bonds to hydrogen do not count.",
        "Count the bonds present, excluding any to hydrogen.",
        "With hydrogens left implicit, what is the number of bonds?",
        "Tell me the total bonds of the hydrogen-suppressed graph.",
        "Ignoring hydrogens, how many bonds join the atoms?",
        "Determine the bond count of this compound, hydrogens excluded.",
        "List how many bonds are drawn in the skeletal structure.",
    ),
    "atom_at_index": (
        "Which element is atom {k} (0-based)?",
        "What element is at atom index {k}, counting from 0?",
        "Give the element symbol of the atom at index {k} (0-based).",
        "Give the element at position {k} in atom order, starting from 0.",
        "Which element sits at index {k} (0-based)?",
        "Identify what element atom number {k} is, with indices starting at 0.",
        "Report the symbol of the atom that sits at index {k} (0-based).",
        "What element occupies index {k} in the 0-based atom list?",
        "Tell me which element is found at 0-based atom index {k}.",
        "Atom at index {k} (0-based): what is its element symbol?",
        "Which element is at position {k} of the atom ordering (0-based)?",
        "Counting atoms from zero in the order written, what element is number {k}?",
    ),
    "path_len": (
        "What is the shortest path, in bonds, between atoms {i} and {j} (0-based)?",
        "Give the bond distance between atom {i} and atom {j} (0-based indices).",
        "How far apart, counted in bonds, are atoms {i} and {j} (0-based)?",
        "Report the path length from atom {i} to atom {j} along bonds (0-based).",
        "How many steps between atom {i} and atom {j} on the shortest route (0-based)?",
        "Find the shortest path length connecting atoms {i} and {j} (0-based).",
        "State the topological bond distance of atoms {i} and {j} (0-based).",
        "Along the bonds, how far apart are atoms {i} and {j} (0-based)?",
        "Measure the bond distance separating atom {i} from atom {j} (0-based).",
        "Count the steps between atoms {i} and {j} along the shortest path (0-based).",
        "What path length links atom {i} with atom {j} (0-based)?",
        "Determine how far apart atoms {i} and {j} sit, in bonds (0-based).",
    ),
    "smiles_from_graph": (
        "Write this graph as SMILES.",
        "Give a SMILES string for the molecule described by these atoms and bonds.",
        "Rebuild the molecule from its graph and report it as SMILES.",
        "Which SMILES encodes this atom and bond list?",
        "Convert the graph into a SMILES string.",
        "Express the described structure as SMILES.",
        "Produce any valid SMILES for this graph.",
        "From the atom and bond table, write the SMILES.",
        "Turn this atom-bond graph into a SMILES string.",
        "Encode the structure given by these atoms and bonds as SMILES.",
        "What SMILES corresponds to this connection table?",
        "Reconstruct the molecule and give it as SMILES.",
    ),
}


def phrasing(field: str, family: int, **args) -> str:
    """Phrasing `family` (1-12) of `field`, with its arguments (k, i, j) filled in."""
    return PHRASINGS[field][family - 1].format(**args)


def normalise_prose(text: str) -> str:
    # Hyphens and runs of space are spelling, not meaning: "non-hydrogen" == "non hydrogen".
    return " ".join(text.lower().replace("-", " ").split())


def recover_fields(prose: str) -> set[str]:
    """The headline fields a request asks for: every field one of whose triggers occurs in it."""
    text = normalise_prose(prose)
    return {field for field, triggers in TRIGGERS.items() if any(t in text for t in triggers)}


# ---------------------------------------------------------------------------------------------
# Field names: validation and refusal.

ALL_FIELDS = HEADLINE + tuple(REPORTED)
_KNOWN = frozenset(ALL_FIELDS)


def excluded_name(name) -> str | None:
    """The excluded field `name` denotes, read case-insensitively with '-' and ' ' as '_'
    ("InChIKey", "LogP", "TPSA", "canonical-smiles"), or None."""
    if not isinstance(name, str):
        return None
    key = "_".join(name.lower().replace("-", " ").replace("_", " ").split())
    return key if key in EXCLUDED else None


def excluded_why(name) -> str | None:
    """'NAME (why it is excluded)' for an excluded field name in any case, or None."""
    key = excluded_name(name)
    if key is None:
        return None
    return f"{name} ({EXCLUDED[key]})" if name == key else f"{name} (= {key}: {EXCLUDED[key]})"


def refuse_excluded(fields) -> None:
    """Raise RefusedError naming each excluded field and why; unknown names are InputError."""
    fields = list(fields)
    excluded = [excluded_why(f) for f in fields if f not in _KNOWN and excluded_name(f)]
    if excluded:
        raise RefusedError("excluded field(s), never a model output: " + "; ".join(excluded))
    unknown = [f for f in fields if f not in ALL_FIELDS]
    if unknown:
        raise InputError(f"unknown field name(s): {', '.join(map(str, unknown))}; "
                         f"known fields: {', '.join(ALL_FIELDS)}")


def describe() -> dict:
    """The whole contract as plain data (the `molperceive contract` output)."""
    return {
        "pinned_rdkit": PINNED_RDKIT,
        "pip": PINNED_RDKIT_PIP,
        "headline": list(HEADLINE),
        "graph_determined": sorted(GRAPH_DETERMINED),
        "reported": REPORTED,
        "excluded": EXCLUDED,
        "field_args": {k: list(v) for k, v in FIELD_ARGS.items()},
        "calls": CALLS,
        "statuses": list(STATUSES),
        "reasons": {"chemistry": list(CHEMISTRY_REASONS), "syntax": list(SYNTAX_REASONS),
                    "scope": list(SCOPE_REASONS), "deleted": list(DELETED_REASONS)},
        "scope": {"elements": list(SUPPORTED_ELEMENTS), "headline_heavy_atoms": list(HEADLINE_SIZE),
                  "diagnostic_heavy_atoms": list(DIAGNOSTIC_SIZE)},
        "slices": list(SLICES),
        "triggers": {k: list(v) for k, v in TRIGGERS.items()},
        "trigger_matching": "case-insensitive substring, hyphens read as spaces, runs of space "
                            "collapsed",
        "phrasings": {k: list(v) for k, v in PHRASINGS.items()},
        "reserved_families": list(RESERVED_FAMILIES),
    }


# ---------------------------------------------------------------------------------------------
# Self-test of the invariants (no RDKit needed).

def selftest() -> list[dict]:
    """Each invariant as {check, ok, detail}; all must hold for the contract to be usable."""
    checks: list[dict] = []

    def check(name: str, ok: bool, detail: str = "") -> None:
        checks.append({"check": name, "ok": bool(ok), "detail": detail})

    groups = {"headline": set(HEADLINE), "reported": set(REPORTED), "excluded": set(EXCLUDED)}
    seen = Counter(f for g in groups.values() for f in g)
    dup = sorted(f for f, n in seen.items() if n > 1)
    check("no_field_in_two_groups", not dup, ", ".join(dup))
    check("graph_determined_are_headline", GRAPH_DETERMINED <= set(HEADLINE),
          ", ".join(sorted(GRAPH_DETERMINED - set(HEADLINE))))
    missing_call = [f for f in HEADLINE + tuple(REPORTED) if f not in CALLS]
    check("every_field_has_a_pinned_call", not missing_call, ", ".join(missing_call))
    few = [f for f in HEADLINE if len(TRIGGERS.get(f, ())) < 3]
    check("every_headline_field_has_three_triggers", not few and set(TRIGGERS) == set(HEADLINE),
          ", ".join(few))
    collisions = [f"{ta!r} ({fa}) in {tb!r} ({fb})"
                  for fa, tas in TRIGGERS.items() for ta in tas
                  for fb, tbs in TRIGGERS.items() if fb != fa for tb in tbs if ta in tb]
    check("no_cross_field_trigger_collision", not collisions, "; ".join(collisions))

    bad_phrasings = []
    for field, texts in PHRASINGS.items():
        if len(texts) != 12:
            bad_phrasings.append(f"{field} has {len(texts)} families")
        for fam in range(1, len(texts) + 1):
            got = recover_fields(phrasing(field, fam, k=3, i=1, j=4))
            if got != {field}:
                bad_phrasings.append(f"{field} family {fam} recovers {sorted(got)}")
    check("phrasing_table_round_trip", not bad_phrasings and set(PHRASINGS) == set(HEADLINE),
          "; ".join(bad_phrasings))

    reserved = {PHRASINGS[f][n - 1] for f in PHRASINGS for n in RESERVED_FAMILIES}
    open_ = {PHRASINGS[f][n - 1] for f in PHRASINGS for n in OPEN_FAMILIES}
    check("reserved_families_disjoint",
          not (reserved & open_) and not (set(RESERVED_FAMILIES) & set(OPEN_FAMILIES))
          and set(RESERVED_FAMILIES) | set(OPEN_FAMILIES) == set(range(1, 13)),
          "; ".join(sorted(reserved & open_)))

    refused = []
    for field in EXCLUDED:
        try:
            refuse_excluded([field])
        except RefusedError as exc:
            if field not in str(exc):
                refused.append(f"{field} not named")
        else:
            refused.append(f"{field} not refused")
    check("refusal_fires_for_each_excluded_field", not refused, "; ".join(refused))

    hill = [f"{counts} charge {q}: {formula_with_charge(counts, q)} != {want}"
            for counts, q, want in HILL_CASES if formula_with_charge(counts, q) != want]
    check("hill_cases", not hill, "; ".join(hill))

    codes = set(REASONS)
    check("reason_codes_disjoint_and_none_deleted",
          len(codes) == len(REASONS) and not codes & set(DELETED_REASONS)
          and set(RDKIT_PROBLEM_REASON.values()) <= set(CHEMISTRY_REASONS), "")
    return checks
