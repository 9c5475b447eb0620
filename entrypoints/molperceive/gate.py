"""The gate: re-assert the contract on every corpus row and name each row that breaks it.

A file with a malformed row (rows.shape_problems: wrong JSON types, a predictions file) is
not a corpus and is refused whole. Checks per row: no excluded (in any letter case) or
unknown field; the fields recovered from the prose equal the fields claimed, so no other
field's trigger is present; reserved families only in mp_para; at least one graph-determined
field on a scored row; status, reason and every label recompute to the stored values under
the pinned calls; the slice matches the size band. Prose that is not the table's phrasing of
its families (a rewrite) is a report item, not a failure: only the triggers must survive.
Across rows: unique ids, no InChIKey shared between train and an evaluation slice, and
per-field label entropy (a near-constant headline field fails; reported ones are flagged).
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path

from biotool.output import InputError, ProgramError

from molperceive import contract, label, requests, rows

NEAR_CONSTANT_TOP_SHARE = 0.9
NEAR_CONSTANT_BITS = 0.5
MIN_JUDGED = 20   # fewer labels than this say nothing about a field's entropy


def _key(value) -> str:
    return json.dumps(value, sort_keys=True)


def entropy(values) -> dict:
    counts = Counter(_key(v) for v in values)
    n = sum(counts.values())
    if not n:
        return {"n": 0, "entropy_bits": None, "top_share": None, "near_constant": None}
    bits = -sum(c / n * math.log2(c / n) for c in counts.values())
    top = max(counts.values()) / n
    judged = n >= MIN_JUDGED
    return {"n": n, "distinct": len(counts), "entropy_bits": round(bits, 4),
            "top_share": round(top, 4),
            "near_constant": (top >= NEAR_CONSTANT_TOP_SHARE or bits < NEAR_CONSTANT_BITS)
            if judged else None}


class Molecules:
    """Perceived molecules (label.Molecule), once per distinct SMILES or graph."""

    def __init__(self):
        self.smiles: dict[str, dict] = {}
        self.graphs: dict[str, object] = {}

    def classify(self, smiles: str) -> dict:
        if smiles not in self.smiles:
            self.smiles[smiles] = label.classify(smiles)
        return self.smiles[smiles]

    def graph(self, graph: dict) -> label.Molecule:
        k = _key(graph)
        if k not in self.graphs:
            self.graphs[k] = label.from_graph(graph)
        return self.graphs[k]


def check_row(row: dict, mols: Molecules) -> tuple[list[tuple[str, str]], str | None, str | None,
                                                   list[tuple[str, str]]]:
    """(failures as (check, detail), leak key, slice, report items as (check, detail))."""
    fails: list[tuple[str, str]] = []
    notes: list[tuple[str, str]] = []
    slice_name = row["slice"]
    fields, status, prose = row["fields"], row["status"], row["request"]
    for f in fields:
        why = contract.excluded_why(f)
        if why:
            fails.append(("excluded_field", why))
    unknown = [f for f in fields if f not in contract.HEADLINE and not contract.excluded_name(f)]
    if unknown:
        fails.append(("unknown_field", "not a requestable field: " + ", ".join(unknown)))
    recovered = contract.recover_fields(prose)
    if recovered != set(fields):
        fails.append(("prose_claim_mismatch",
                      f"prose asks {sorted(recovered)}, row claims {sorted(fields)}"))
    args = row.get("args") or {}
    families = row["families"]
    allowed = requests.families_for(slice_name)
    off = {f: n for f, n in families.items() if n not in allowed}
    if off:
        fails.append(("reserved_family", f"families {off} not allowed in slice {slice_name}"))
    if not fails:
        # Rewritten prose passes when its triggers survive; the verbatim table is only reported.
        try:
            expected = requests.compose(fields, families, args)
        except (KeyError, IndexError, TypeError, ValueError):
            expected = None
        if expected != prose:
            notes.append(("phrasing_not_in_table",
                          "request is not the table phrasing of its families (a rewrite whose "
                          "triggers recover the claimed fields)"))
    if any(c in ("excluded_field", "unknown_field") for c, _ in fails):
        return fails, None, slice_name, notes

    inp, stored = row["input"], row["labels"]
    try:
        if "graph" in inp and not isinstance(inp.get("smiles"), str):
            verdict = {"status": "ok", "reason": None, "molecule": mols.graph(inp["graph"])}
        else:
            if "smiles_from_graph" in fields:
                fails.append(("input_mismatch", "smiles_from_graph asked of a row that shows the SMILES"))
            verdict = mols.classify(inp["smiles"])
    except InputError as exc:
        return fails + [("label_mismatch", str(exc))], None, slice_name, notes

    if (verdict["status"], verdict["reason"]) != (status, row.get("reason")):
        fails.append(("status_mismatch", f"stored {status}/{row.get('reason')}, recomputed "
                                         f"{verdict['status']}/{verdict['reason']}"))
        return fails, None, slice_name, notes
    if status != "ok":
        if stored:
            fails.append(("label_mismatch", "an invalid row carries labels"))
        return fails, None, slice_name, notes

    m = verdict["molecule"]
    if not set(fields) & contract.GRAPH_DETERMINED:
        fails.append(("no_graph_determined_field", f"fields {fields} are all composition-level"))
    heavy = m.mol.GetNumHeavyAtoms()
    band = contract.size_band(heavy)
    if (slice_name == "diag") != (band == "diagnostic"):
        fails.append(("size_slice_mismatch", f"{heavy} heavy atoms ({band}) in slice {slice_name}"))
    if row.get("heavy_atom_count") != heavy:
        fails.append(("label_mismatch", f"heavy_atom_count metadata {row.get('heavy_atom_count')} != {heavy}"))
    for f in fields:
        try:
            value = m.headline(f, args)
        except ProgramError as exc:
            fails.append(("label_mismatch", f"{f}: cannot recompute: {exc}"))
            continue
        if f not in stored or _key(stored[f]) != _key(value):
            fails.append(("label_mismatch", f"{f}: stored {_short(stored.get(f))}, recomputed {value!r}"))
    if "formula" in fields:
        conflict = m.formula_conflict()
        if conflict:
            fails.append(("formula_notation_conflict", conflict))
    extra = sorted(set(stored) - set(fields))
    if extra:
        fails.append(("label_mismatch", f"labels for unrequested fields: {', '.join(extra)}"))
    reported = row.get("reported")
    if reported is not None:
        now = m.reported
        for f, value in reported.items():
            if f not in now:
                why = contract.excluded_why(f)
                fails.append(("excluded_field" if why else "unknown_field",
                              f"reported {why or f + ': not a reported field'}"))
            elif _key(value) != _key(now[f]):
                fails.append(("label_mismatch", f"reported {f}: stored {_short(value)}, recomputed {now[f]!r}"))
    key = m.inchikey
    if row.get("inchikey") != key:
        fails.append(("inchikey_mismatch", f"stored {row.get('inchikey')}, recomputed {key}"))
    return fails, key, slice_name, notes


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def gate(rows_path: str | Path) -> dict:
    """Every failure as {id, line, check, detail}; `passed` only when there is none."""
    from biotool.cache import sha256_file
    corpus = rows.read(rows_path)
    mols = Molecules()
    failures, notes = [], []
    ids: dict[str, int] = {}
    keys: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    values: dict[str, list] = defaultdict(list)
    reported_values: dict[str, list] = defaultdict(list)
    for line, row in corpus:
        rid = row["id"]
        if rid in ids:
            failures.append({"id": rid, "line": line, "check": "duplicate_id",
                             "detail": f"id also on line {ids[rid]}"})
        ids.setdefault(rid, line)
        fails, key, slice_name, row_notes = check_row(row, mols)
        failures.extend({"id": rid, "line": line, "check": c, "detail": d} for c, d in fails)
        notes.extend({"id": rid, "line": line, "check": c, "detail": d} for c, d in row_notes)
        if key:
            keys[key][slice_name].append(rid)
        if row.get("status") == "ok" and not fails:
            for f, v in (row.get("labels") or {}).items():
                values[f].append(v)
            for f, v in (row.get("reported") or {}).items():
                reported_values[f].append(v)
    for key, by_slice in keys.items():
        train = by_slice.get("train", [])
        if not train:
            continue
        for s in contract.EVALUATION_SLICES:
            for rid in by_slice.get(s, []):
                failures.append({"id": rid, "line": ids[rid], "check": "inchikey_leak",
                                 "detail": f"{key} in {s} also in train rows {', '.join(train[:5])}"})
    ent = {f: entropy(values.get(f, [])) for f in contract.HEADLINE}
    rep = {f: entropy(reported_values.get(f, [])) for f in contract.REPORTED}
    for f, e in ent.items():
        if e["near_constant"]:
            failures.append({"id": None, "line": None, "check": "near_constant_field",
                             "detail": f"{f}: top value share {e['top_share']}, {e['entropy_bits']} bits"})
    failing = sorted({f["id"] for f in failures if f["id"]}, key=lambda r: ids.get(r, 0))
    out = {
        "passed": not failures,
        "rows": len(corpus),
        "failing_rows": failing,
        "failures_by_check": dict(Counter(f["check"] for f in failures)),
        "failures": failures,
        "report_items_by_check": dict(Counter(n["check"] for n in notes)),
        "report_items": notes,
        "label_entropy": {"headline": ent, "reported": rep},
        "flags": [f"{f} is near constant (top share {e['top_share']}): never pooled, free points"
                  for f, e in rep.items() if e["near_constant"]],
        "input_sha256": sha256_file(rows_path),
        "rdkit": label.rdkit_info(),
    }
    warning = label.version_warning()
    if warning:
        out["warnings"] = [warning]
    return out
