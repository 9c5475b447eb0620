"""`molperceive`: the MolPerceive field contract, labeler, corruptor, corpus builder, gate, scorer.

A thin layer: parse arguments, call one domain function, emit one JSON object on stdout.
Conventions as biotool: one-line errors on stderr, exit 0 ok, 2 bad input (and a failing
gate), 3 refused (an excluded field), 4 a failure (and a failing selftest).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from biotool.output import (EXIT_FAILED, EXIT_INPUT, BiotoolError, InputError, ToolFailure,
                            UsageParser, fail_line)

PROG = "molperceive"

DESCRIPTION = """MolPerceive: does a language model perceive molecular structure from SMILES?
Every label is recomputed from a pinned RDKit call (rdkit==2026.3.4); `molperceive contract`
prints the fields, the exact call behind each, reason codes, scope and the request phrasings.

Every command prints one JSON object on stdout. Errors are one line on stderr.
Exit codes: 0 success; 2 bad input (unreadable file, malformed JSONL with line numbers, empty
file, unknown field, a malformed corpus row) and a failing gate; 3 an excluded field was
requested (inchikey, canonical_smiles, monoisotopic_mass, logp, tpsa, iupac_name, in any
letter case); 4 an internal failure or a failing selftest.

Typical use:
  molperceive build molecules.smi --out rows.jsonl     # corpus from a SMILES list
  molperceive gate rows.jsonl                          # every row re-checked; names failures
  molperceive score rows.jsonl predictions.jsonl       # headline, slices, abstention"""

EPILOG_SCORE = """Prediction file: one JSON object per line, either
  {"id": "mp-000001", "answers": {"formula": "C6H6O", "atom_at_index": "O"}}
or, to abstain on an invalid structure,
  {"id": "mp-000002", "abstain": true, "reason": "valence_error"}.
Fields: element_counts (a map symbol -> count, hydrogen included), formula (Hill notation with
charge suffix), heavy_atom_count, bond_count, atom_at_index (element symbol), path_len (bonds),
smiles_from_graph (any SMILES; scored by InChIKey identity). Reported fields (ring_count, hbd,
...) may be answered too; they are scored apart, never in the headline. The headline pools the
headline fields of the eval slice; chemistry-reason abstention is the headline abstention
number, syntax and scope reasons are reported on their own lines. Rows of the scored slices
with no prediction count as wrong. Field selection is scored: a row answered with a
headline field its request did not ask loses every field it asked (--lenient-fields: only
counted, as before). `molperceive prompts` writes what a model is shown: id, request, input.

A prediction line or answer that cannot be scored (unknown row id, a second prediction for a
row, an unknown field, an excluded field such as inchikey/InChIKey, a line that is not JSON)
is left out and listed in invalid_predictions as {line, row, key, why}, with counts, and the
rest is scored (exit 0, one warning line). --strict restores refusal: exit 2, or 3 for an
excluded field. A file with no valid prediction line at all is refused (exit 2)."""




def _fields(text: str | None, option: str = "--fields"):
    if text is None:
        return None
    names = [f.strip() for f in text.split(",") if f.strip()]
    if not names:
        raise InputError(f"{option} {text!r}: no names given (leave the option out for the default)")
    return names


def _bounded(low: int, high: int, what: str):
    """An argparse type: an integer from low to high (argparse names the option on error)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:20]!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text[:20]}{'...' if len(text) > 20 else ''} is "
                                             f"out of range: {what} is {low} to {high:,}")
        return value
    return parse


def _emit(result: dict | str) -> None:
    # A str is the result already encoded (label: molperceive.label_json, the same bytes).
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _fail(message: str, code: int):
    fail_line(PROG, message, code)


def cmd_contract(a):
    from molperceive import contract
    return contract.describe()


def cmd_selftest(a):
    from molperceive import contract, corrupt, label
    checks = contract.selftest() + label.selftest()
    made = corrupt.corrupt_all("OC(=O)c1ccccc1O")   # salicylic acid reaches every reason
    for reason in contract.REASONS:
        ok = any(m["reason"] == reason for m in made["mutants"])
        checks.append({"check": f"corrupt_reaches_{reason}", "ok": ok,
                       "detail": next((m["smiles"] for m in made["mutants"] if m["reason"] == reason), "")})
    failed = [c["check"] for c in checks if not c["ok"]]
    result = {"passed": not failed, "checks": checks, "rdkit": label.rdkit_info()}
    return result, (None if not failed else (EXIT_FAILED, "selftest failed: " + ", ".join(failed)))


def cmd_label(a):
    import gc

    from molperceive import label
    smiles = list(a.smiles)
    if any(not s.strip() for s in smiles):
        raise InputError("SMILES argument is empty")
    if a.file:
        from molperceive.build import read_smiles
        smiles += [s for _, s, _ in read_smiles(a.file)]
    if not smiles:
        raise InputError("give at least one SMILES or --file")
    # The labels are acyclic dicts and lists: the collector's passes over the growing list
    # cost 3-5% of labelling (measured with gc.callbacks) and would free nothing.
    gc.disable()
    try:
        out = label.label_many(smiles, _fields(a.fields), k=a.k, i=a.i, j=a.j)
    finally:
        gc.enable()
    info = label.rdkit_info()
    from molperceive import label_json
    return label_json.dumps({"molecules": out,
                             "rdkit": {k: info[k] for k in ("version", "pinned", "matches_pin")}})


def cmd_corrupt(a):
    from molperceive import corrupt
    if a.reason:
        import random
        return corrupt.corrupt(a.smiles, a.reason, random.Random(a.seed) if a.seed is not None else None)
    return corrupt.corrupt_all(a.smiles, seed=a.seed)


def cmd_build(a):
    from molperceive import build
    return build.build(a.smiles_file, a.out, seed=a.seed, eval_fraction=a.eval_fraction,
                       rows_per_molecule=a.rows_per_molecule, graph_fraction=a.graph_fraction,
                       invalid_fraction=a.invalid_fraction, para_fraction=a.para_fraction,
                       limit=a.limit, fields=_fields(a.fields))


def cmd_gate(a):
    from molperceive import gate
    result = gate.gate(a.rows)
    if result["passed"]:
        return result
    named = [f"{f['id'] or 'corpus'} ({f['check']})" for f in result["failures"]]
    shown = ", ".join(named[:8]) + (f" and {len(named) - 8} more" if len(named) > 8 else "")
    return result, (EXIT_INPUT, f"gate failed on {a.rows}: {shown}")


def cmd_prompts(a):
    from molperceive import score
    return score.prompts(a.rows, a.out)


def cmd_score(a):
    from molperceive import score
    report = score.score(a.rows, a.predictions, slices=_fields(a.slices, "--slices"),
                         recompute=not a.no_recompute, strict=a.strict,
                         lenient_fields=a.lenient_fields)
    invalid = report["invalid_predictions"]
    warnings = list(report.get("warnings", []))
    if invalid["count"]:
        warnings.append(f"{invalid['count']} prediction line(s) or answer(s) in {a.predictions} "
                        f"not scored ({', '.join(f'{k}: {n}' for k, n in invalid['by_why'].items())}); "
                        "listed in invalid_predictions")
    for w in warnings:
        sys.stderr.write(f"{PROG}: warning: {' '.join(w.split())}\n")
    return report


def parser() -> argparse.ArgumentParser:
    p = UsageParser(prog=PROG, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=UsageParser)

    def add(name, fn, help_, desc=None, epilog=None):
        sp = sub.add_parser(name, help=help_, description=desc or help_, epilog=epilog,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        sp.set_defaults(fn=fn)
        return sp

    add("contract", cmd_contract, "Print the field contract: groups, pinned calls, reasons, scope, "
        "triggers, phrasing families (as a document: docs/molperceive-contract.md).")
    add("selftest", cmd_selftest, "Check the contract's invariants and the labeler on known molecules "
        "(phenol, cubane, glycine, Hill cases, every reason code reachable). Exit 4 if any fails.")
    sp = add("label", cmd_label, "Label SMILES through the pinned RDKit calls: status, reason and fields.",
             "Label SMILES through the pinned RDKit calls. Status is ok, invalid_structure or "
             "out_of_scope, with a reason code (valence_error, kekulization_failure, "
             "unbalanced_parenthesis, unclosed_ring_bond, unknown_element, element_not_supported, "
             "size_out_of_range). Atom indices are RDKit's, 0-based. By default every headline field "
             "whose arguments are given and every reported field are labelled.")
    sp.add_argument("smiles", nargs="*", help="SMILES strings")
    sp.add_argument("--file", help="a SMILES list, one per line (SMILES first, name optional)")
    sp.add_argument("--fields", help="comma-separated field names (see `molperceive contract`)")
    index = _bounded(0, 9999, "an atom index")
    sp.add_argument("-k", type=index, help="atom index for atom_at_index")
    sp.add_argument("-i", type=index, help="first atom index for path_len")
    sp.add_argument("-j", type=index, help="second atom index for path_len")
    sp = add("corrupt", cmd_corrupt, "Mutate a valid SMILES into one verified to yield a reason code.",
             "Mutate a valid in-scope SMILES so that the labeler yields exactly the given reason "
             "(all reachable reasons when --reason is omitted; unreachable ones are listed).")
    sp.add_argument("smiles", help="a valid SMILES")
    sp.add_argument("--reason", help="one reason code")
    sp.add_argument("--seed", type=int, help="shuffle mutation sites with this seed")
    sp = add("build", cmd_build, "Build corpus rows (JSONL) from a SMILES list.",
             "Build corpus rows from a SMILES list: dedup by InChIKey, train/eval split with no "
             "InChIKey across it, slices train, eval, mp_para (reserved phrasing families 9-12, eval "
             "molecules only) and diag (41-70 heavy atoms), smiles_from_graph rows that show the "
             "graph, invalid rows from verified mutations. Molecules out of scope are skipped and "
             "counted. Deterministic for a given --seed.")
    sp.add_argument("smiles_file", help="SMILES list, one per line (SMILES first, name optional)")
    sp.add_argument("--out", required=True, help="output JSONL path (written atomically)")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--eval-fraction", type=float, default=0.2)
    sp.add_argument("--rows-per-molecule", type=int, default=1, help="SMILES rows per molecule")
    sp.add_argument("--graph-fraction", type=float, default=0.25, help="share of molecules with a graph row")
    sp.add_argument("--invalid-fraction", type=float, default=0.1, help="share with an invalid row")
    sp.add_argument("--para-fraction", type=float, default=0.3, help="share of eval molecules with an mp_para row")
    sp.add_argument("--limit", type=_bounded(1, 100_000_000, "--limit"),
                    help="use at most this many molecules (1 to 100,000,000)")
    sp.add_argument("--fields", help="comma-separated headline fields to ask (default all); must "
                    "include a graph-determined one; excluded fields are refused (exit 3)")
    sp = add("gate", cmd_gate, "Re-check every corpus row against the contract; exit 2 naming each failing row.",
             "Re-check every row: no excluded field requested (any letter case); fields recovered "
             "from the prose equal the claimed fields (so no other field's trigger is present); "
             "reserved families only in mp_para (prose that is not the table's phrasing, a "
             "rewrite, is listed in report_items, not failed); a "
             "graph-determined field on every scored row; status, reason and labels recompute to "
             "the stored values; slice matches size; no InChIKey shared by train and an evaluation "
             "slice; per-field label entropy (near-constant headline fields fail, reported ones "
             "are flagged). The JSON report lists every failure with row id and line; on failure "
             "stderr names the rows and the exit code is 2. A file with a malformed row (wrong "
             "JSON types, a predictions file) is refused whole: exit 2, one line.")
    sp.add_argument("rows", help="corpus JSONL")
    sp = add("prompts", cmd_prompts, "Write the model-facing rows: id, request and input only.",
             "Write what a model is shown of each corpus row: its id, the request prose and the "
             "input (SMILES or graph). The fields a request asks, its families, arguments, "
             "labels and status stay with the grader: recovering the fields is part of the task.")
    sp.add_argument("rows", help="corpus JSONL")
    sp.add_argument("--out", required=True, help="output JSONL path (written atomically)")
    sp = add("score", cmd_score, "Score predictions (JSONL) against corpus rows.", epilog=EPILOG_SCORE)
    sp.add_argument("rows", help="corpus JSONL")
    sp.add_argument("predictions", help="predictions JSONL")
    sp.add_argument("--slices", help="comma-separated slices to score (default eval,mp_para,diag)")
    sp.add_argument("--no-recompute", action="store_true",
                    help="skip recomputing labels under this RDKit (no label_drift)")
    sp.add_argument("--strict", action="store_true",
                    help="refuse the whole file on the first prediction that cannot be scored "
                         "(exit 2; exit 3 for an excluded field) instead of listing it")
    sp.add_argument("--lenient-fields", action="store_true",
                    help="count answers to fields a request did not ask without penalising "
                         "the row (the old behaviour)")
    return p


def main(argv=None) -> None:
    p = parser()
    args = p.parse_args(argv)
    if not getattr(args, "fn", None):
        p.print_help(sys.stdout)
        raise SystemExit(0)
    try:
        out = args.fn(args)
    except BiotoolError as exc:
        _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", EXIT_FAILED)
    except Exception as exc:  # noqa: BLE001 - the contract forbids tracebacks on stderr
        if os.environ.get("BIOTOOL_DEBUG"):
            raise
        _fail(str(ToolFailure(f"internal error: {type(exc).__name__}: {exc}")), EXIT_FAILED)
    result, failure = out if isinstance(out, tuple) else (out, None)
    _emit(result)
    if failure:
        _fail(failure[1], failure[0])
    raise SystemExit(0)


if __name__ == "__main__":
    main()
