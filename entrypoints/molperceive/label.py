"""Labels for a SMILES through the pinned RDKit calls of the contract, with status and reason.

Order of judgement: syntax (the independent parser, no RDKit), then chemistry (RDKit's
DetectChemistryProblems on the unsanitised parse), then scope (elements, then size). Every
label is the value of the expression printed in contract.CALLS (see docs/molperceive-contract.md);
reference.py evaluates those expressions literally, and this module computes the same values
from one parsed molecule with each shared intermediate made once (one sanitised mol, one pass
over atoms and bonds, one InChI): a test compares the two on every field of real molecules.
"""

from __future__ import annotations

import re
from collections import Counter

from rdkit import Chem, RDLogger
from rdkit.Chem import Descriptors, rdinchi, rdMolDescriptors

from biotool.output import InputError

from molperceive import contract, inchi_layers, smiles_syntax

# stderr carries our one-line errors only.
RDLogger.DisableLog("rdApp.*")

_Atom, _Bond = Chem.Atom, Chem.Bond
_STRICT = rdMolDescriptors.NumRotatableBondsOptions.Strict
_AROMATIC = Chem.BondType.AROMATIC
_TETRAHEDRAL = Chem.StereoType.Atom_Tetrahedral
_PLAIN_BONDS = frozenset({"SINGLE", "DOUBLE", "TRIPLE", "AROMATIC"})
_SUPPORTED = frozenset(contract.SUPPORTED_ELEMENTS)
_MARKS = re.compile(r"[@/\\]|\[\d")
# A bracket hydrogen atom ([H], [2H], [H+]; also [Hg], [He], kept on the slow path too).
_HYDROGEN_ATOM = re.compile(r"\[\d*H")
# GetBondTypeAsDouble names the bond as str(Chem.BondType) would: one float per bond is the
# cheapest read through boost (the enum costs about 1 us a bond). The orders are unambiguous
# for the types a SMILES of in-scope elements can reach after sanitisation (no dative bond:
# the syntax checker refuses "->", and RDKit makes dative bonds only towards metals).
_NAME_OF_ORDER = {1.0: "SINGLE", 1.5: "AROMATIC", 2.0: "DOUBLE", 3.0: "TRIPLE", 4.0: "QUADRUPLE"}


def _rdkit():
    """The RDKit Chem module (kept for callers that need a call outside the contract)."""
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
    return Chem.MolToInchiKey(mol)


def check_index(n_atoms: int, name: str, value) -> int:
    if value is None:
        field = next((f for f, names in contract.FIELD_ARGS.items() if name in names), "this field")
        raise InputError(f"argument {name} is required for {field} (molperceive label -{name} N; "
                         f"in a corpus row, args.{name})")
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"argument {name}={str(value)[:40]!r} is not an integer atom index")
    if not 0 <= value < n_atoms:
        raise InputError(f"argument {name}={str(value)[:40]} is outside atom indices 0-{n_atoms - 1}")
    return value


# ---------------------------------------------------------------------------------------------
# The molecular graph given to smiles_from_graph requests, and the reference rebuilt from it.

_ORDERS = {1: "SINGLE", 2: "DOUBLE", 3: "TRIPLE"}


def mol_from_graph(graph: dict):
    """The reference built atom by atom with Chem.RWMol, then Chem.SanitizeMol (the pinned way)."""
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
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError, RuntimeError) as exc:
        raise InputError(f"graph: cannot build the molecule: {type(exc).__name__}: "
                         f"{str(exc)[:200]}") from None
    return mol


# ---------------------------------------------------------------------------------------------
# One molecule and its shared intermediates.

class cached_property:  # noqa: N801 - used as a decorator, like functools.cached_property
    """functools.cached_property without its per-first-access lock (Python 3.11 takes one,
    and the profile showed it): computed on first access, then a plain instance attribute."""

    def __init__(self, fn):
        self.fn, self.name = fn, fn.__name__

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


class Molecule:
    """A sanitised molecule with every intermediate the labels share, each computed once.

    `plain` says the molecule carries no stereo mark, isotope or bond other than single,
    double, triple and aromatic: its graph then rebuilds to the same InChI, so the
    smiles_from_graph label is its own InChIKey. With stereo or isotopes (and plain bonds) the
    label is the key of its InChI cut before the stereo and isotopic layers
    (inchi_layers); only an unusual bond type rebuilds the graph as the pinned call says.
    `by_order` says bond types may be read as orders (a SMILES or graph of in-scope elements).
    """

    def __init__(self, mol, plain: bool, by_order: bool = False, directed: bool = True):
        self.mol = mol
        self.plain = plain
        self.by_order = by_order
        self.directed = directed   # may hold a bond direction (/ or \ in its SMILES)
        self.rebuilds_alike = True   # until the Kekulé graph says otherwise (see graph)

    @classmethod
    def from_smiles_mol(cls, smiles: str, mol) -> "Molecule":
        # Stereo comes only from @ / \ in a SMILES, isotopes only from a number after "[".
        return cls(mol, _MARKS.search(smiles) is None, directed="/" in smiles or "\\" in smiles)

    @cached_property
    def _atoms(self):
        # Atoms fetched once, each property mapped over them by its unbound method: the
        # cheapest way through boost measured (GetAtoms() iteration costs twice as much).
        atoms = list(map(self.mol.GetAtomWithIdx, range(self.mol.GetNumAtoms())))
        return (list(map(_Atom.GetSymbol, atoms)), list(map(_Atom.GetFormalCharge, atoms)),
                list(map(_Atom.GetTotalNumHs, atoms)), list(map(_Atom.GetTotalValence, atoms)))

    @property
    def symbols(self) -> list[str]:
        return self._atoms[0]

    @cached_property
    def _bonds(self):
        """(ends, type names, orders as doubles), one read of each bond."""
        bonds = list(map(self.mol.GetBondWithIdx, range(self.mol.GetNumBonds())))
        ends = list(zip(map(_Bond.GetBeginAtomIdx, bonds), map(_Bond.GetEndAtomIdx, bonds)))
        orders = list(map(_Bond.GetBondTypeAsDouble, bonds))
        names = [_NAME_OF_ORDER.get(o) for o in orders] if self.by_order else [None]
        if None in names:
            names = [str(b.GetBondType()) for b in bonds]
        if self.plain and not _PLAIN_BONDS.issuperset(names):
            self.plain = False
        return ends, names, orders

    @cached_property
    def element_counts(self) -> dict[str, int]:
        symbols, _, hydrogens, _ = self._atoms
        counts = Counter(symbols)
        h = sum(hydrogens)
        if h:
            counts["H"] += h
        return dict(sorted(counts.items()))

    @cached_property
    def graph(self) -> dict:
        """Atoms (element, formal charge, hydrogens) and Kekulé bonds [i, j, order]."""
        symbols, charges, hydrogens, valences = self._atoms
        ends, names, orders = self._bonds
        aromatic = [n for n, name in enumerate(names) if name == "AROMATIC"]
        orders = [int(o) for o in orders]
        if aromatic:
            for n, order in zip(aromatic, _kekule_orders(self.mol, aromatic, self.directed)):
                orders[n] = int(order)
            # Each atom's valence in the graph (orders plus hydrogens) must be its valence in
            # the molecule for the rebuild to be this molecule again: a triple bond in an
            # aromatic ring ("c#1ccccc1") breaks it, and then the rebuild is done (and fails)
            # as the pinned call does.
            kekule = list(hydrogens)
            for (i, j), o in zip(ends, orders):
                kekule[i] += o
                kekule[j] += o
            self.rebuilds_alike = kekule == valences
        return {"atoms": [{"element": s, "charge": c, "hydrogens": h}
                          for s, c, h in zip(symbols, charges, hydrogens)],
                "bonds": [[i, j, o] for (i, j), o in zip(ends, orders)]}

    @cached_property
    def _inchi(self) -> str:
        # Chem.MolToInchiKey(mol) is InchiToInchiKey(MolToInchi(mol, "")) inside RDKit; keeping
        # the InChI gives the smiles_from_graph key of a stereo molecule without a second one.
        return rdinchi.MolToInchi(self.mol, "")[0]

    @cached_property
    def inchikey(self) -> str:
        inchi = self._inchi
        return rdinchi.InchiToInchiKey(inchi) if inchi else Chem.MolToInchiKey(self.mol)

    @cached_property
    def graph_inchikey(self) -> str:
        """The smiles_from_graph label: the InChIKey of the molecule rebuilt from its graph."""
        self._bonds   # settles `plain` for unusual bond types
        graph = self.graph   # settles `rebuilds_alike`
        if not self.rebuilds_alike:
            return Chem.MolToInchiKey(mol_from_graph(graph))
        if self.plain:
            return self.inchikey
        names = self._bonds[1]
        inchi = self._inchi
        if inchi and _PLAIN_BONDS.issuperset(names):
            core = inchi_layers.without_stereo_and_isotopes(inchi)
            return self.inchikey if core == inchi else rdinchi.InchiToInchiKey(core)
        return Chem.MolToInchiKey(mol_from_graph(self.graph))

    @cached_property
    def formula(self) -> str:
        return rdMolDescriptors.CalcMolFormula(self.mol)

    def headline(self, field: str, args: dict):
        """One headline label, equal to its pinned call (contract.CALLS[field])."""
        mol = self.mol
        if field == "element_counts":
            return dict(self.element_counts)
        if field == "formula":
            return self.formula
        if field == "heavy_atom_count":
            return mol.GetNumHeavyAtoms()
        if field == "bond_count":
            return mol.GetNumBonds()
        if field == "atom_at_index":
            return self.symbols[check_index(mol.GetNumAtoms(), "k", args.get("k"))]
        if field == "path_len":
            i, j = (check_index(mol.GetNumAtoms(), n, args.get(n)) for n in ("i", "j"))
            if i == j:
                raise InputError(f"path_len of atom {i} to itself is 0 by definition and never asked")
            path = Chem.GetShortestPath(mol, i, j)
            if not path:
                raise InputError(f"atoms {i} and {j} are in different components: no path")
            return len(path) - 1
        if field == "smiles_from_graph":
            return self.graph_inchikey
        raise InputError(f"unknown headline field {field!r}")

    @cached_property
    def reported(self) -> dict:
        """Every separately reported field, each equal to its pinned call."""
        return {name: call(self) for name, call in _REPORTED_CALLS}

    def formula_conflict(self) -> str | None:
        """Why the pinned formula call departs from the contract's Hill rule here, or None.

        CalcMolFormula writes hydrogen first when there is no carbon (H2FO3P, HCl), where the
        contract's Hill rule puts every element alphabetically (FH2O3P, ClH). Rows never ask the
        formula of such a molecule, so the published rule and the recomputable label agree on
        every row that is scored.
        """
        hill = contract.formula_with_charge(self.element_counts, Chem.GetFormalCharge(self.mol))
        return None if hill == self.formula else f"Hill {hill} != CalcMolFormula {self.formula}"


def _kekule_orders(mol, aromatic: list[int], directed: bool) -> list[float]:
    """The Kekulé orders of the aromatic bonds `aromatic`, as the pinned graph_of copy has them.

    Kekulize assigns the same orders on the molecule itself (clearAromaticFlags only decides
    whether the flags go afterwards), so it runs in place and the aromatic bond types are put
    back: half the cost of copying the molecule first (measured). It also clears the direction
    of an aromatic bond written with / or \\, so a molecule that may have one (`directed`) is
    copied as graph_of does; atom and bond flags are never touched, and the property cache is
    recomputed from the restored bonds.
    """
    if directed:
        kek = Chem.Mol(mol)
        Chem.Kekulize(kek, clearAromaticFlags=True)
        return [kek.GetBondWithIdx(n).GetBondTypeAsDouble() for n in aromatic]
    bonds = list(map(mol.GetBondWithIdx, aromatic))
    try:
        Chem.Kekulize(mol, clearAromaticFlags=False)
        return list(map(_Bond.GetBondTypeAsDouble, bonds))
    finally:
        for b in bonds:
            b.SetBondType(_AROMATIC)
        mol.UpdatePropertyCache(strict=False)


def _stereocenters(m: Molecule) -> int:
    # Most molecules have no potential stereo at all: the empty result is not iterated.
    found = Chem.FindPotentialStereo(m.mol)
    return [si.type for si in found].count(_TETRAHEDRAL) if len(found) else 0


# The reported fields in contract order, each by its pinned call (contract.CALLS).
_REPORTED_CALLS = (
    ("ring_count", lambda m: m.mol.GetRingInfo().NumRings()),
    ("aromatic_ring_count", lambda m: rdMolDescriptors.CalcNumAromaticRings(m.mol)),
    ("bond_count_by_type", lambda m: dict(sorted(Counter(m._bonds[1]).items()))),
    ("rotatable_bonds", lambda m: rdMolDescriptors.CalcNumRotatableBonds(m.mol, _STRICT)),
    ("hbd", lambda m: rdMolDescriptors.CalcNumHBD(m.mol)),
    ("hba", lambda m: rdMolDescriptors.CalcNumHBA(m.mol)),
    ("stereocenters", _stereocenters),
    ("formal_charge", lambda m: sum(m._atoms[1])),
    ("degree_unsaturation", lambda m: contract.degree_unsaturation(m.element_counts)),
    ("mw", lambda m: round(Descriptors.MolWt(m.mol), 3)),
)
_REPORTED_NAMES = tuple(name for name, _ in _REPORTED_CALLS)


def fill_reported(molecules: list[Molecule]) -> None:
    """Molecule.reported of each, one pinned call at a time over all of them: a descriptor's
    code stays in the CPU caches across molecules (interleaving the calls per molecule
    measured up to 1.5x slower on the same calls)."""
    try:
        columns = [[call(m) for m in molecules] for _, call in _REPORTED_CALLS]
    except Exception:  # noqa: BLE001 - re-raised below, molecule by molecule as before
        for m in molecules:
            m.reported
        raise
    for m, values in zip(molecules, zip(*columns)):
        m.__dict__["reported"] = dict(zip(_REPORTED_NAMES, values))


def from_graph(graph: dict) -> Molecule:
    """The Molecule of a smiles_from_graph row: rebuilt from the graph, stereo- and isotope-free."""
    mol = mol_from_graph(graph)
    m = Molecule(mol, plain=True, directed=False)
    m.by_order = _SUPPORTED.issuperset(m.symbols)
    return m


def formula_conflict(mol) -> str | None:
    return (mol if isinstance(mol, Molecule) else Molecule(mol, plain=False)).formula_conflict()


# ---------------------------------------------------------------------------------------------
# Status and reason.

def _invalid(reason, detail):
    return {"status": "invalid_structure", "reason": reason, "detail": detail, "mol": None,
            "molecule": None}


def classify(smiles: str) -> dict:
    """{status, reason, detail, mol, molecule}: mol (RDKit) and molecule (its Molecule) are set
    when the SMILES sanitises. InputError for a string refused before parsing (too long, a
    bracket number out of bounds) or one RDKit cannot process at all."""
    return classify_many([smiles])[0]


def classify_many(smiles_list: list) -> list[dict]:
    """classify() of each SMILES, one step at a time over the whole list (syntax, parse, judge):
    each step's code stays in the CPU caches across molecules. The InputError raised is the
    first molecule's, in order, as if they were classified one by one."""
    verdicts: list = [None] * len(smiles_list)
    errors: dict[int, InputError] = {}
    parsed = []
    for n, smiles in enumerate(smiles_list):
        try:
            problem = _syntax_problem(smiles)
        except InputError as exc:
            errors[n] = exc
            continue
        if problem is not None:
            verdicts[n] = _invalid(problem["reason"], problem["detail"])
        else:
            parsed.append(n)
    mols = [_parse(smiles_list[n]) for n in parsed]
    for n, mol in zip(parsed, mols):
        try:
            verdicts[n] = _judge(smiles_list[n], mol)
        except InputError as exc:
            errors[n] = exc
    if errors:
        raise errors[min(errors)]
    return verdicts


def _syntax_problem(smiles) -> dict | None:
    """The independent checker's first problem; InputError for what is refused before it."""
    if not isinstance(smiles, str):
        raise InputError(f"SMILES must be a string, not {type(smiles).__name__}")
    why = smiles_syntax.unbounded(smiles)
    if why:
        raise InputError(why)
    return smiles_syntax.first_problem(smiles)


def _parse(smiles: str):
    """Chem.MolFromSmiles(smiles), None for one whose parse raises (_judge takes the pinned
    order for it, which raises the same error where it belongs)."""
    try:
        return Chem.MolFromSmiles(smiles)
    except RuntimeError:
        return None


def _judge(smiles: str, mol) -> dict:
    """Chemistry and scope of a syntactically clean SMILES whose sanitised parse is `mol`.

    When the sanitised parse succeeds on in-scope elements with no bracket hydrogen atom,
    DetectChemistryProblems on the unsanitised parse finds nothing (it runs cleanUp, the strict
    valence check and Kekulize, steps sanitisation has just passed; only the metal cleanup and
    MolFromSmiles' removal of [H] atoms run before them there), so the unsanitised parse and
    the detection are skipped. Anything else takes the pinned order.
    """
    m = None
    if mol is not None:
        m = Molecule.from_smiles_mol(smiles, mol)
        if not _SUPPORTED.issuperset(m.symbols) or _HYDROGEN_ATOM.search(smiles):
            m = None
    if m is None:
        invalid = _chemistry_problem(smiles)
        if invalid is not None:
            return invalid
        try:
            mol = Chem.MolFromSmiles(smiles)
        except RuntimeError as exc:
            raise _unprocessable(smiles, exc) from None
        if mol is None:
            return _invalid(None, "RDKit sanitisation failed without a detected problem")
        m = Molecule.from_smiles_mol(smiles, mol)
    unsupported = [] if _SUPPORTED.issuperset(m.symbols) else \
        sorted(set(m.symbols) - _SUPPORTED)
    verdict = {"status": "ok", "reason": None, "detail": None, "mol": mol, "molecule": m}
    if unsupported:
        return {**verdict, "status": "out_of_scope", "reason": "element_not_supported",
                "detail": "elements outside scope: " + ", ".join(unsupported)}
    m.by_order = True
    heavy = mol.GetNumHeavyAtoms()
    if contract.size_band(heavy) is None:
        return {**verdict, "status": "out_of_scope", "reason": "size_out_of_range",
                "detail": f"{heavy} heavy atoms; scope is {contract.HEADLINE_SIZE[0]}-"
                          f"{contract.DIAGNOSTIC_SIZE[1]}"}
    return verdict


def _unprocessable(smiles: str, exc: RuntimeError) -> InputError:
    return InputError(f"SMILES {smiles[:60]!r}: RDKit cannot process it: "
                      f"{str(exc).splitlines()[0][:120]}")


def _chemistry_problem(smiles: str) -> dict | None:
    """The pinned chemistry judgement: the invalid verdict DetectChemistryProblems gives on the
    unsanitised parse, or None when it finds nothing."""
    try:
        raw = Chem.MolFromSmiles(smiles, sanitize=False)
        if raw is None:
            # The independent parser found nothing RDKit objects to: no contract reason applies.
            return _invalid(None, "RDKit cannot parse it; the syntax checker found no listed problem")
        types = [p.GetType() for p in Chem.DetectChemistryProblems(raw)]
    except RuntimeError as exc:
        raise _unprocessable(smiles, exc) from None
    if types:
        reasons = [contract.RDKIT_PROBLEM_REASON.get(t) for t in types]
        return _invalid(next((r for r in reasons if r), None), "RDKit problems: " + ", ".join(types))
    return None


# ---------------------------------------------------------------------------------------------
# Labels.

def default_fields(args: dict) -> list[str]:
    """All headline fields whose arguments are given, then every reported field."""
    return [f for f in contract.HEADLINE
            if all(args.get(a) is not None for a in contract.FIELD_ARGS.get(f, ()))] + list(contract.REPORTED)


# Molecules are labelled a chunk at a time, one phase (parse, InChI, descriptors) over the whole
# chunk before the next: the profile showed each RDKit call running up to twice as slow when
# the InChI library had just evicted its code from the CPU caches.
CHUNK = 64


def label_many(smiles_list, fields=None, k: int | None = None, i: int | None = None,
               j: int | None = None, args_of: list[dict] | None = None) -> list[dict]:
    """label() of each SMILES, in order; the same values, computed phase by phase per chunk.

    `args_of`, when given, holds each molecule's own {k, i, j} in place of the shared k, i, j.
    """
    smiles_list = list(smiles_list)
    shared = {n: v for n, v in (("k", k), ("i", i), ("j", j)) if v is not None}
    args_list = [{n: v for n, v in a.items() if v is not None} for a in args_of] \
        if args_of is not None else [shared] * len(smiles_list)
    plans = {}
    for a in args_list:
        key = tuple(sorted(a))
        if key not in plans:
            chosen = list(fields) if fields else default_fields(a)
            contract.refuse_excluded(chosen)
            plans[key] = ([f for f in chosen if f in contract.HEADLINE],
                          [f for f in chosen if f in contract.REPORTED])
    if not smiles_list and fields:
        contract.refuse_excluded(fields)
    out = []
    for start in range(0, len(smiles_list), CHUNK):
        chunk = smiles_list[start:start + CHUNK]
        verdicts = classify_many(chunk)
        ok = [v["molecule"] for v in verdicts if v["status"] == "ok"]
        for m in ok:
            m.inchikey
        for m in ok:
            m._bonds
        if any(p[1] for p in plans.values()):
            fill_reported(ok)
        if any("smiles_from_graph" in p[0] for p in plans.values()):
            _warm(ok, "graph")
            _warm(ok, "graph_inchikey")
        for s, v, a in zip(chunk, verdicts, args_list[start:start + CHUNK]):
            headline, wanted = plans[tuple(sorted(a))]
            out.append(_assemble(s, v, headline, wanted, a))
    return out


def _warm(molecules: list[Molecule], name: str) -> None:
    """Compute one cached property over the chunk; a molecule it fails on is left for its
    own turn in _assemble, so errors surface in input order as before."""
    for m in molecules:
        try:
            getattr(m, name)
        except Exception:  # noqa: BLE001 - raised again by _assemble, in order
            pass


def _assemble(smiles: str, verdict: dict, headline: list, wanted: list, args: dict) -> dict:
    out = {"smiles": smiles, "status": verdict["status"], "reason": verdict["reason"],
           "detail": verdict["detail"]}
    if verdict["status"] != "ok":
        return out
    m = verdict["molecule"]
    heavy = m.mol.GetNumHeavyAtoms()
    out["heavy_atom_count"] = heavy
    out["size_band"] = contract.size_band(heavy)
    out["inchikey"] = m.inchikey   # the dedup/leak key: metadata, never a model output
    out["labels"] = {f: m.headline(f, args) for f in headline}
    if args:
        out["args"] = args
    if "smiles_from_graph" in out["labels"]:
        out["graph"] = m.graph
    if wanted:
        rep = m.reported
        out["reported"] = {f: rep[f] for f in wanted}
    return out


def label(smiles: str, fields=None, k: int | None = None, i: int | None = None,
          j: int | None = None) -> dict:
    """Status, reason and the requested labels of one SMILES (all applicable fields by default)."""
    return label_many([smiles], fields, k=k, i=i, j=j)[0]


def full_label(smiles: str, args: dict | None = None) -> dict:
    """Every field of one SMILES in the reference labeler's shape (the fast path under test)."""
    args = args if args is not None else {"k": 1, "i": 0, "j": 4}
    verdict = classify(smiles)
    out = {"status": verdict["status"], "reason": verdict["reason"]}
    if verdict["status"] != "ok":
        return out
    m = verdict["molecule"]
    out["inchikey"] = m.inchikey
    out["graph"] = m.graph
    out["labels"] = {f: m.headline(f, args) for f in contract.HEADLINE}
    out["reported"] = dict(m.reported)
    return out
