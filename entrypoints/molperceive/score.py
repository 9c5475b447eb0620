"""Score predictions (JSONL) against corpus rows by the contract.

Exact match per field; element_counts as a map; smiles_from_graph by InChIKey identity, never
string equality. Invalid rows score abstention: chemistry reasons are the headline abstention
number, syntax and scope reasons each on their own line. The headline pools only headline
fields over the eval slice; reported fields are scored apart when predicted; mp_para and diag
are their own slices, and diag also by heavy-atom count. Labels are recomputed under the RDKit
in use and any drift from the stored labels is counted per field, so a reviewer on another
RDKit version sees which fields moved.

Prediction line: {"id": ROW_ID, "answers": {FIELD: VALUE, ...}} or {"id": ROW_ID, "abstain":
true, "reason": REASON}.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from biotool.output import BiotoolError, InputError, RefusedError

from molperceive import contract, gate, jsonl, label

BIN = 5   # heavy-atom bins for the accuracy-versus-size curve


def _as_int(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def _counts(value):
    if not isinstance(value, dict):
        return None
    out = {}
    for el, n in value.items():
        n = _as_int(n)
        if n is None:
            return None
        if n:
            out[str(el).strip()] = n
    return out


def correct(field: str, predicted, stored) -> bool:
    """Exact match by the contract's rule for `field`."""
    if predicted is None:
        return False
    if field == "element_counts":
        return _counts(predicted) == _counts(stored)
    if field in ("formula", "atom_at_index"):
        return isinstance(predicted, str) and predicted.strip() == stored
    if field == "smiles_from_graph":
        if not isinstance(predicted, str) or not predicted.strip():
            return False
        Chem = label._rdkit()
        mol = Chem.MolFromSmiles(predicted.strip())
        return mol is not None and Chem.MolToInchiKey(mol) == stored
    if field in contract.REPORTED and not isinstance(stored, int):
        # bond_count_by_type is a map, mw and degree_unsaturation may be decimals: exact.
        if isinstance(stored, dict):
            return _counts(predicted) == _counts(stored)
        return isinstance(predicted, (int, float)) and not isinstance(predicted, bool) \
            and float(predicted) == float(stored)
    got = _as_int(predicted)
    return got is not None and got == stored


def read_predictions(path: str | Path, rows_by_id: dict) -> dict[str, dict]:
    preds: dict[str, dict] = {}
    unknown_ids, problems = [], []
    for line, obj in jsonl.read(path, "predictions"):
        rid = obj.get("id")
        if not isinstance(rid, str):
            problems.append(f"line {line}: no string id")
            continue
        if rid not in rows_by_id:
            unknown_ids.append(f"{rid} (line {line})")
            continue
        if rid in preds:
            problems.append(f"line {line}: second prediction for {rid}")
            continue
        if "answers" not in obj and "abstain" not in obj:
            hint = ("; it looks like a corpus row: are rows and predictions swapped?"
                    if "labels" in obj or "fields" in obj else "")
            problems.append(f"line {line}: neither answers nor abstain{hint}")
            continue
        answers = obj.get("answers", {})
        abstain = obj.get("abstain", False)
        if not isinstance(abstain, bool):
            problems.append(f"line {line}: abstain must be true or false, not {abstain!r}")
            continue
        reason = obj.get("reason")
        if reason is not None and reason not in contract.REASONS:
            problems.append(f"line {line}: unknown reason {reason!r} (reasons: "
                            f"{', '.join(contract.REASONS)})")
            continue
        if not isinstance(answers, dict):
            problems.append(f"line {line}: answers must be an object of field: value")
            continue
        excluded = [f for f in answers if f in contract.EXCLUDED]
        if excluded:
            raise RefusedError(f"{path}: line {line}: excluded field(s), never a model output: "
                               + "; ".join(f"{f} ({contract.EXCLUDED[f]})" for f in excluded))
        unknown = [f for f in answers if f not in contract.ALL_FIELDS]
        if unknown:
            problems.append(f"line {line}: unknown field name(s) {', '.join(map(str, unknown))}")
            continue
        preds[rid] = {"answers": answers, "abstain": abstain, "reason": reason}
    if unknown_ids:
        shown = ", ".join(unknown_ids[:5]) + (f" and {len(unknown_ids) - 5} more"
                                               if len(unknown_ids) > 5 else "")
        raise InputError(f"{path}: predictions for unknown row ids: {shown}")
    if problems:
        raise InputError(f"{path}: " + "; ".join(problems[:5])
                         + (f" and {len(problems) - 5} more" if len(problems) > 5 else ""))
    return preds


def _rate(correct_n: int, total: int) -> dict:
    return {"correct": correct_n, "total": total,
            "accuracy": round(100.0 * correct_n / total, 2) if total else None}


def _bin(heavy) -> str:
    if not isinstance(heavy, int) or heavy < 1:
        return "unknown"
    lo = (heavy - 1) // BIN * BIN + 1
    return f"{lo}-{lo + BIN - 1}"


def score(rows_path: str | Path, predictions_path: str | Path, slices=None,
          recompute: bool = True) -> dict:
    """The score report: headline, per slice and field, abstention, size curve, drift."""
    from biotool.cache import sha256_file
    rows = jsonl.read(rows_path, "corpus")
    rows_by_id, line_of, duplicated = {}, {}, []
    for line, r in rows:
        rid = r.get("id")
        if not isinstance(rid, str):
            raise InputError(f"{rows_path}: line {line}: corpus row has no string id; run "
                             "`molperceive gate` first", culprit=str(rows_path))
        if rid in rows_by_id:
            # Two rows under one id: a prediction for it could be scored against either.
            duplicated.append(f"{rid} (lines {line_of[rid]} and {line})")
            continue
        rows_by_id[rid], line_of[rid] = r, line
    if duplicated:
        raise InputError(f"{rows_path}: duplicated row id(s) {', '.join(duplicated[:5])}"
                         + (f" and {len(duplicated) - 5} more" if len(duplicated) > 5 else "")
                         + "; run `molperceive gate` first", culprit=str(rows_path))
    rows = list(rows_by_id.values())
    slices = tuple(slices or contract.EVALUATION_SLICES)
    bad = [s for s in slices if s not in contract.SLICES]
    if bad:
        raise InputError(f"unknown slice(s) {', '.join(bad)}; slices: {', '.join(contract.SLICES)}")
    preds = read_predictions(predictions_path, rows_by_id)

    field_hits = defaultdict(lambda: defaultdict(lambda: [0, 0]))      # slice -> field -> [c, n]
    reported_hits = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    size_hits = defaultdict(lambda: defaultdict(lambda: [0, 0]))       # slice -> bin -> [c, n]
    abst = {c: {"rows": 0, "abstained": 0, "reason_correct": 0} for c in ("chemistry", "syntax", "scope")}
    by_reason = Counter()
    false_abstentions = missing = unrequested = 0
    drift: Counter = Counter()
    mols = gate.Molecules()
    scored_rows = 0
    for row in rows:
        if row.get("slice") not in slices:
            continue
        scored_rows += 1
        pred = preds.get(row["id"])
        if pred is None:
            missing += 1
        if row.get("status") != "ok":
            cls = contract.reason_class(row.get("reason")) or "syntax"
            abst[cls]["rows"] += 1
            by_reason[row.get("reason")] += 1
            if pred and pred["abstain"]:
                abst[cls]["abstained"] += 1
                abst[cls]["reason_correct"] += pred["reason"] == row.get("reason")
            continue
        answers = pred["answers"] if pred and not pred["abstain"] else {}
        if pred and pred["abstain"]:
            false_abstentions += 1
        stored = row.get("labels") or {}
        if recompute:
            drift.update(_drift(row, mols))
        for f in row.get("fields") or []:
            ok = correct(f, answers.get(f), stored.get(f))
            hit = field_hits[row["slice"]][f]
            hit[0] += ok
            hit[1] += 1
            size = size_hits[row["slice"]][_bin(row.get("heavy_atom_count"))]
            size[0] += ok
            size[1] += 1
        unrequested += sum(1 for f in answers if f not in (row.get("fields") or []) and f in contract.HEADLINE)
        for f, value in answers.items():
            if f in contract.REPORTED and f in (row.get("reported") or {}):
                hit = reported_hits[row["slice"]][f]
                hit[0] += correct(f, value, row["reported"][f])
                hit[1] += 1

    per_slice = {}
    for s in slices:
        fh = field_hits.get(s, {})
        c = sum(v[0] for v in fh.values())
        n = sum(v[1] for v in fh.values())
        per_slice[s] = {
            "headline": _rate(c, n),
            "fields": {f: _rate(*fh[f]) for f in contract.HEADLINE if f in fh},
            "reported": {f: {"correct": v[0], "answered": v[1],
                             "accuracy": round(100.0 * v[0] / v[1], 2)}
                         for f, v in sorted(reported_hits.get(s, {}).items())},
        }
    headline_slice = "eval" if "eval" in slices else slices[0]
    report = {
        "headline": {"slice": headline_slice, **per_slice[headline_slice]["headline"],
                     "pooled_fields": list(contract.HEADLINE)},
        "abstention": {
            "headline_chemistry": _abst(abst["chemistry"]),
            "syntax": _abst(abst["syntax"]),
            "scope": _abst(abst["scope"]),
            "rows_by_reason": dict(by_reason),
            "false_abstentions_on_valid_rows": false_abstentions,
        },
        "slices": per_slice,
        "by_heavy_atoms": {s: [{"heavy_atoms": b, **_rate(*v)} for b, v in
                               sorted(size_hits[s].items(), key=lambda kv: (kv[0] == "unknown", int(kv[0].split("-")[0])
                                                             if kv[0] != "unknown" else 0))]
                           for s in slices if s in size_hits},
        "predictions": {"scored_rows": scored_rows, "given": len(preds),
                        "missing_for_scored_rows": missing,
                        "unrequested_headline_answers": unrequested},
        "label_drift": dict(drift) if recompute else None,
        "rdkit": label.rdkit_info(),
        "corpus_sha256": sha256_file(rows_path),
        "predictions_sha256": sha256_file(predictions_path),
    }
    warning = label.version_warning()
    if warning:
        report["warnings"] = [warning]
    return report


def _abst(a: dict) -> dict:
    n = a["rows"]
    return {"rows": n, "abstained": a["abstained"],
            "rate": round(100.0 * a["abstained"] / n, 2) if n else None,
            "reason_correct": a["reason_correct"]}


def _drift(row: dict, mols: gate.Molecules) -> Counter:
    """Fields whose stored label differs from the label recomputed under this RDKit."""
    out = Counter()
    inp = row.get("input") or {}
    try:
        if "graph" in inp:
            mol = mols.graph(inp["graph"])
        else:
            mol = mols.classify(inp.get("smiles", ""))["mol"]
    except BiotoolError:
        mol = None
    if mol is None:
        out["_unparseable"] += 1
        return out
    for f in row.get("fields") or []:
        try:
            now = label.headline_label(mol, f, row.get("args") or {})
        except BiotoolError:
            out[f] += 1
            continue
        if gate._key(now) != gate._key((row.get("labels") or {}).get(f)):
            out[f] += 1
    return out
