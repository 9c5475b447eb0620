"""The shape of a corpus row: which keys it must hold and of what JSON type.

The gate and the scorer both read corpus rows written by someone else; a row of the wrong
shape (labels a string, fields a number, a predictions line given as a corpus) is named with
its line and never reaches the labeler.
"""

from __future__ import annotations

from pathlib import Path

from biotool.output import InputError

from molperceive import contract, jsonl, smiles_syntax


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# Every key a corpus row may hold (what `molperceive build` writes): a row carrying another is
# not a corpus row, whatever its other keys say.
ROW_KEYS = frozenset({"id", "slice", "status", "reason", "input", "request", "fields",
                      "families", "args", "labels", "reported", "inchikey", "heavy_atom_count",
                      "source", "mutation"})
INPUT_KEYS = frozenset({"smiles", "graph"})


def _keys(found, allowed, where: str) -> list[str]:
    extra = sorted(set(found) - allowed)
    if not extra:
        return []
    shown = ", ".join(repr(k[:40]) for k in extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
    return [f"{where} key(s) not in the contract: {shown}"]


def shape_problems(row: dict) -> list[str]:
    """What is wrong with the row's shape, one phrase per key; empty when it is well formed."""
    out = _keys(row, ROW_KEYS, "row")
    if isinstance(row.get("input"), dict):
        out += _keys(row["input"], INPUT_KEYS, "input")
    if not isinstance(row.get("id"), str) or not row.get("id"):
        out.append("id must be a non-empty string")
    if row.get("slice") not in contract.SLICES:
        out.append(f"slice must be one of {', '.join(contract.SLICES)}")
    if row.get("status") not in contract.STATUSES:
        out.append(f"status must be one of {', '.join(contract.STATUSES)}")
    reason = row.get("reason")
    if reason is not None and reason not in contract.REASONS:
        out.append("reason must be null or a reason code")
    fields = row.get("fields")
    if not isinstance(fields, list) or not fields or not all(isinstance(f, str) for f in fields):
        out.append("fields must be a non-empty list of field names")
    if not isinstance(row.get("request"), str):
        out.append("request must be prose (a string)")
    families = row.get("families")
    if not isinstance(families, dict) or not all(_int(n) for n in families.values()):
        out.append("families must be an object of field: family number")
    args = row.get("args", {})
    if not isinstance(args, dict) or not all(_int(v) for v in args.values()):
        out.append("args must be an object of integer atom indices")
    inp = row.get("input")
    if not isinstance(inp, dict):
        out.append("input must be an object holding smiles or graph")
    elif isinstance(inp.get("smiles"), str):
        why = smiles_syntax.unbounded(inp["smiles"])
        if why:
            out.append(f"input.smiles: {why}")
    elif not isinstance(inp.get("graph"), dict):
        out.append("input must hold a smiles string or a graph object")
    if not isinstance(row.get("labels"), dict):
        out.append("labels must be an object of field: label")
    if row.get("reported") is not None and not isinstance(row.get("reported"), dict):
        out.append("reported must be an object of field: label")
    if row.get("heavy_atom_count") is not None and not _int(row.get("heavy_atom_count")):
        out.append("heavy_atom_count must be an integer")
    if row.get("inchikey") is not None and not isinstance(row.get("inchikey"), str):
        out.append("inchikey must be a string")
    if out and ("answers" in row or "abstain" in row):
        out.append("this line looks like a prediction: is a predictions file given as the corpus?")
    return out


def read(path: str | Path) -> list[tuple[int, dict]]:
    """(line number, row) of a corpus whose every row is well formed; otherwise one InputError
    naming the first malformed rows by line and id (the file is not a corpus to judge)."""
    corpus = jsonl.read(path, "corpus")
    malformed = []
    for line, r in corpus:
        shape = shape_problems(r)
        if shape:
            rid = r.get("id") if isinstance(r.get("id"), str) else None
            malformed.append(f"line {line}{f' (id {rid[:40]})' if rid else ''}: " + "; ".join(shape))
    if malformed:
        raise InputError(f"{path}: malformed corpus row(s): " + " | ".join(malformed[:3])
                         + (f" and {len(malformed) - 3} more" if len(malformed) > 3 else ""))
    return corpus
