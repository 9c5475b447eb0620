"""Score predictions (JSONL) against corpus rows by the contract.

Exact match per field; element_counts as a map; smiles_from_graph by InChIKey identity, never
string equality. Invalid rows score abstention: chemistry reasons are the headline abstention
number, syntax and scope reasons each on their own line. The headline pools only headline
fields over the eval slice; reported fields are scored apart when predicted; mp_para and diag
are their own slices, and diag also by heavy-atom count. Labels are recomputed under the RDKit
in use and any drift from the stored labels is counted per field, so a reviewer on another
RDKit version sees which fields moved.

Prediction line: {"id": ROW_ID, "answers": {FIELD: VALUE, ...}} or {"id": ROW_ID, "abstain":
true, "reason": REASON}. A grader scores what it can: a line or an answer that cannot be
scored (unknown row id, a second prediction for a row, an unknown field, an excluded field in
any letter case, a line that is not JSON) is left out, counted and listed in
`invalid_predictions` as {line, row, key, why}; `strict` makes the first of them an error.
The corpus itself must be well formed (rows.shape_problems), or nothing is scored.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

from biotool.output import InputError, ProgramError, RefusedError

from molperceive import contract, gate, jsonl, label, rows, smiles_syntax

BIN = 5   # heavy-atom bins for the accuracy-versus-size curve


def _as_int(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    # ASCII digits only: str.isdigit() also accepts superscripts ("¹⁴") that int() refuses.
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
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
        if not isinstance(predicted, str) or not predicted.strip() \
                or smiles_syntax.unbounded(predicted.strip()):
            return False
        Chem = label._rdkit()
        try:
            mol = Chem.MolFromSmiles(predicted.strip())
            return mol is not None and Chem.MolToInchiKey(mol) == stored
        except RuntimeError:   # RDKit pre-condition failures: not this molecule, so wrong
            return False
    if field in contract.REPORTED and not isinstance(stored, int):
        # bond_count_by_type is a map, mw and degree_unsaturation may be decimals: exact.
        if isinstance(stored, dict):
            return _counts(predicted) == _counts(stored)
        return isinstance(predicted, (int, float)) and not isinstance(predicted, bool) \
            and float(predicted) == float(stored)
    got = _as_int(predicted)
    return got is not None and got == stored


def _why_not_prediction(obj: dict) -> str | None:
    """Why a line with a known id cannot be scored at all, or None."""
    if "answers" not in obj and "abstain" not in obj:
        hint = ("; it looks like a corpus row: are rows and predictions swapped?"
                if "labels" in obj or "fields" in obj else "")
        return f"neither answers nor abstain{hint}"
    if not isinstance(obj.get("abstain", False), bool):
        return f"abstain must be true or false, not {str(obj.get('abstain'))[:40]!r}"
    reason = obj.get("reason")
    if reason is not None and reason not in contract.REASONS:
        return (f"unknown reason {str(reason)[:40]!r} (reasons: {', '.join(contract.REASONS)})")
    if not isinstance(obj.get("answers", {}), dict):
        return "answers must be an object of field: value"
    return None


def read_predictions(path: str | Path, rows_by_id: dict, strict: bool = False) -> tuple[dict, list]:
    """({row id: prediction}, invalid items as {line, row, key, why}).

    Lenient (the default): every line and every answer that cannot be scored is left out and
    listed; the rest is scored. Strict: the first such problem is an error, as a gate would want
    (exit 2; exit 3 for an excluded field).
    """
    if strict:
        lines, unreadable = jsonl.read(path, "predictions"), []
    else:
        lines, unreadable = jsonl.read_lines(path, "predictions")
    invalid = [{"line": n, "row": None, "key": None, "why": f"not a JSON object line ({why})"}
               for n, why in unreadable]
    preds: dict[str, dict] = {}
    first_line: dict[str, int] = {}
    for line, obj in lines:
        rid = obj.get("id")
        if not isinstance(rid, str):
            invalid.append({"line": line, "row": None, "key": None, "why": "no string id"})
            continue
        if rid not in rows_by_id:
            invalid.append({"line": line, "row": rid[:80], "key": None, "why": "unknown row id"})
            continue
        if rid in preds:
            invalid.append({"line": line, "row": rid, "key": None,
                            "why": f"second prediction for this row (line {first_line[rid]} is scored)"})
            continue
        why = _why_not_prediction(obj)
        if why:
            invalid.append({"line": line, "row": rid, "key": None, "why": why})
            continue
        answers = {}
        for f, value in obj.get("answers", {}).items():
            excluded = contract.excluded_why(f)
            if excluded:
                invalid.append({"line": line, "row": rid, "key": f[:80],
                                "why": f"excluded field, never a model output: {excluded}"})
            elif f not in contract.ALL_FIELDS:
                invalid.append({"line": line, "row": rid, "key": f[:80], "why": "unknown field name"})
            else:
                answers[f] = value
        preds[rid] = {"answers": answers, "abstain": obj.get("abstain", False),
                      "reason": obj.get("reason")}
        first_line[rid] = line
    if strict and invalid:
        _raise_strict(path, invalid)
    if invalid and not preds:
        shown = "; ".join(f"line {i['line']}: {i['why']}"
                          + (f" {i['row']}" if i["why"] == "unknown row id" else "")
                          for i in invalid[:3])
        raise InputError(f"{path}: no valid prediction line ({shown}"
                         + (f" and {len(invalid) - 3} more" if len(invalid) > 3 else "") + ")")
    return preds, invalid


def _raise_strict(path, invalid: list) -> None:
    excluded = [i for i in invalid if i["why"].startswith("excluded field")]
    if excluded:
        raise RefusedError(f"{path}: line {excluded[0]['line']}: {excluded[0]['why']}")
    unknown = [f"{i['row']} (line {i['line']})" for i in invalid if i["why"] == "unknown row id"]
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise InputError(f"{path}: predictions for unknown row ids: {shown}")
    problems = [f"line {i['line']}: " + (
        f"unknown field name(s) {i['key']}" if i["why"] == "unknown field name"
        else f"second prediction for {i['row']}" if i["why"].startswith("second prediction")
        else i["why"]) for i in invalid]
    raise InputError(f"{path}: " + "; ".join(problems[:5])
                     + (f" and {len(problems) - 5} more" if len(problems) > 5 else ""))


def _summary(invalid: list) -> dict:
    """Counts of invalid predictions by why (the why without its per-row detail), and the items."""
    def kind(why: str) -> str:
        return why.split(":")[0].split(" (")[0].split(";")[0]
    return {"count": len(invalid), "by_why": dict(Counter(kind(i["why"]) for i in invalid)),
            "items": invalid[:MAX_LISTED], "listed": min(len(invalid), MAX_LISTED)}


MAX_LISTED = 200   # invalid predictions listed in the report; all are counted


def read_corpus(rows_path: str | Path) -> dict:
    """{row id: row} of a well-formed corpus; InputError naming malformed or duplicated rows."""
    rows_by_id, line_of, duplicated = {}, {}, []
    for line, r in rows.read(rows_path):
        rid = r["id"]
        if rid in rows_by_id:
            # Two rows under one id: a prediction for it could be scored against either.
            duplicated.append(f"{rid} (lines {line_of[rid]} and {line})")
            continue
        rows_by_id[rid], line_of[rid] = r, line
    if duplicated:
        raise InputError(f"{rows_path}: duplicated row id(s) {', '.join(duplicated[:5])}"
                         + (f" and {len(duplicated) - 5} more" if len(duplicated) > 5 else "")
                         + "; run `molperceive gate` first")
    return rows_by_id


def _rate(correct_n: int, total: int) -> dict:
    return {"correct": correct_n, "total": total,
            "accuracy": round(100.0 * correct_n / total, 2) if total else None}


def _bin(heavy) -> str:
    if not isinstance(heavy, int) or heavy < 1:
        return "unknown"
    lo = (heavy - 1) // BIN * BIN + 1
    return f"{lo}-{lo + BIN - 1}"


def prompts(rows_path: str | Path, out_path: str | Path, seed: int = 0) -> dict:
    """The model-facing projection of a corpus: per row its id, request prose and input
    (SMILES or graph) only. Which fields a request asks is part of the task, so `fields`,
    `families`, `args`, labels and status stay with the grader.

    Rows are shuffled (seeded; the seed is in the answer): the corpus keeps each molecule's
    rows together (its SMILES row, its graph row, the invalid mutant of its SMILES), and a
    harness that batched neighbours or used them as few-shot context would let a graph or an
    abstention row be answered by look-up. Row ids carry no order either (build.row_id)."""
    import random

    from molperceive import jsonl

    out = jsonl.check_output(out_path)
    rows = list(read_corpus(rows_path).values())
    random.Random(seed).shuffle(rows)
    n = jsonl.write(out, ({"id": r["id"], "request": r["request"], "input": r["input"]}
                          for r in rows))
    return {"prompts": str(out), "rows": n, "keys": ["id", "request", "input"],
            "order": "shuffled", "seed": seed,
            "presentation": "present each row on its own (no batching of neighbours, no other "
                            "row as context): rows of one molecule are in the file"}


def score(rows_path: str | Path, predictions_path: str | Path, slices=None,
          recompute: bool = True, strict: bool = False, lenient_fields: bool = False) -> dict:
    """The score report: headline, per slice and field, abstention, size curve, drift, and the
    invalid predictions left out (strict: any of them is an error instead).

    Field selection is scored, as the contract says recovering the asked fields is part of
    the task: a row answered with a headline field it did not ask loses every field it asked
    (`lenient_fields`: the old count-only behaviour)."""
    from biotool.cache import sha256_file
    rows_by_id = read_corpus(rows_path)
    rows = list(rows_by_id.values())
    slices = tuple(slices or contract.EVALUATION_SLICES)
    bad = [s for s in slices if s not in contract.SLICES]
    if bad:
        raise InputError(f"unknown slice(s) {', '.join(bad)}; slices: {', '.join(contract.SLICES)}")
    preds, invalid = read_predictions(predictions_path, rows_by_id, strict=strict)

    field_hits = defaultdict(lambda: defaultdict(lambda: [0, 0]))      # slice -> field -> [c, n]
    reported_hits = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    size_hits = defaultdict(lambda: defaultdict(lambda: [0, 0]))       # slice -> bin -> [c, n]
    abst = {c: {"rows": 0, "abstained": 0, "reason_correct": 0} for c in ("chemistry", "syntax", "scope")}
    by_reason = Counter()
    false_abstentions = missing = unrequested = rows_over = 0
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
        extra = [f for f in answers if f not in (row.get("fields") or []) and f in contract.HEADLINE]
        unrequested += len(extra)
        rows_over += bool(extra)
        lost = bool(extra) and not lenient_fields
        for f in row.get("fields") or []:
            ok = not lost and correct(f, answers.get(f), stored.get(f))
            hit = field_hits[row["slice"]][f]
            hit[0] += ok
            hit[1] += 1
            size = size_hits[row["slice"]][_bin(row.get("heavy_atom_count"))]
            size[0] += ok
            size[1] += 1
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
        "field_selection": {"rows_answering_unrequested_fields": rows_over,
                            "penalised": not lenient_fields,
                            "rule": ("a row answered with a headline field it did not ask "
                                     "loses every field it asked" if not lenient_fields else
                                     "unrequested answers counted, not penalised "
                                     "(--lenient-fields)")},
        "invalid_predictions": _summary(invalid),
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
        if isinstance(inp.get("smiles"), str):
            m = mols.classify(inp["smiles"])["molecule"]
        else:
            m = mols.graph(inp["graph"])
    except ProgramError:
        m = None
    if m is None:
        out["_unparseable"] += 1
        return out
    for f in row.get("fields") or []:
        try:
            now = m.headline(f, row.get("args") or {})
        except ProgramError:
            out[f] += 1
            continue
        if gate._key(now) != gate._key((row.get("labels") or {}).get(f)):
            out[f] += 1
    return out
