"""`molperceive`: the MolPerceive field contract, labeler, corruptor, corpus builder, gate, scorer.

A thin layer: parse arguments, call one domain function, emit one JSON object on stdout.
Conventions as biotool: one-line errors on stderr, exit 0 ok, 2 bad input (and a failing
gate), 3 refused (an excluded field), 4 a failure (and a failing selftest).
"""

from __future__ import annotations

import sys

from biotool.output import InputError, ToolFailure
from commandline import program
from commandline.kinds import count, fraction
from commandline.ladder import run_process
from commandline.spec import Argument, Command, Option

PROG = "molperceive"

DESCRIPTION = """MolPerceive: does a language model perceive molecular structure from SMILES?
Every label is recomputed from a pinned RDKit call (rdkit==2026.3.4); `molperceive contract`
prints the fields, the exact call behind each, reason codes, scope and the request phrasings.

Every command prints one JSON object on stdout. Errors are one line on stderr.
Exit codes: 0 success; 2 bad input (unreadable file, malformed JSONL with line numbers, empty
file, unknown field, a malformed corpus row) and a failing gate; 3 an excluded field was
requested (inchikey, canonical_smiles, monoisotopic_mass, logp, tpsa, iupac_name, in any
letter case); 4 an internal failure or a failing selftest; 130 interrupted (Ctrl-C).

\b
Typical use:
  molperceive build molecules.smi --out rows.jsonl     # corpus from a SMILES list
  molperceive gate rows.jsonl                          # every row re-checked; names failures
  molperceive score rows.jsonl predictions.jsonl       # headline, slices, abstention"""

EPILOG_SCORE = """Prediction file: one JSON object per line, either

\b
  {"id": "mp-3f9a0c2b71de", "answers": {"formula": "C6H6O", "atom_at_index": "O"}}
or, to abstain on an invalid structure,
  {"id": "mp-08c4e1b9a6f2", "abstain": true, "reason": "valence_error"}.

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


def cmd_contract():
    from molperceive import contract
    return contract.describe()


def cmd_selftest():
    from molperceive import contract, corrupt, label, selftest
    checks = contract.selftest() + selftest.selftest()
    made = corrupt.corrupt_all("OC(=O)c1ccccc1O")   # salicylic acid reaches every reason
    for reason in contract.REASONS:
        ok = any(m["reason"] == reason for m in made["mutants"])
        checks.append({"check": f"corrupt_reaches_{reason}", "ok": ok,
                       "detail": next((m["smiles"] for m in made["mutants"] if m["reason"] == reason), "")})
    failed = [c["check"] for c in checks if not c["ok"]]
    result = {"passed": not failed, "checks": checks, "rdkit": label.rdkit_info()}
    if failed:
        raise ToolFailure("selftest failed: " + ", ".join(failed), result=result)
    return result


def cmd_label(smiles, file, fields, k, i, j):
    import gc

    from molperceive import label
    smiles = list(smiles)
    if any(not s.strip() for s in smiles):
        raise InputError("SMILES argument is empty")
    if file:
        from molperceive.build import read_smiles
        smiles += [s for _, s, _ in read_smiles(file)]
    if not smiles:
        raise InputError("give at least one SMILES or --file")
    # The labels are acyclic dicts and lists: the collector's passes over the growing list
    # cost 3-5% of labelling (measured with gc.callbacks) and would free nothing.
    gc.disable()
    try:
        out = label.label_many(smiles, _fields(fields), k=k, i=i, j=j)
    finally:
        gc.enable()
    info = label.rdkit_info()
    from molperceive import label_json
    return label_json.dumps({"molecules": out,
                             "rdkit": {k: info[k] for k in ("version", "pinned", "matches_pin")}})


def cmd_corrupt(smiles, reason, seed):
    from molperceive import corrupt
    if reason:
        import random
        return corrupt.corrupt(smiles, reason, random.Random(seed) if seed is not None else None)
    return corrupt.corrupt_all(smiles, seed=seed)


def cmd_build(smiles_file, out, seed, eval_fraction, rows_per_molecule, graph_fraction,
              invalid_fraction, para_fraction, limit, fields):
    from molperceive import build
    return build.build(smiles_file, out, seed=seed, eval_fraction=eval_fraction,
                       rows_per_molecule=rows_per_molecule, graph_fraction=graph_fraction,
                       invalid_fraction=invalid_fraction, para_fraction=para_fraction,
                       limit=limit, fields=_fields(fields))


def cmd_gate(rows):
    from molperceive import gate
    result = gate.gate(rows)
    if result["passed"]:
        return result
    named = [f"{f['id'] or 'corpus'} ({f['check']})" for f in result["failures"]]
    shown = ", ".join(named[:8]) + (f" and {len(named) - 8} more" if len(named) > 8 else "")
    raise InputError(f"gate failed on {rows}: {shown}", result=result)


def cmd_prompts(rows, out, seed):
    from molperceive import score
    return score.prompts(rows, out, seed=seed)


def cmd_score(rows, predictions, slices, no_recompute, strict, lenient_fields):
    from molperceive import score
    report = score.score(rows, predictions, slices=_fields(slices, "--slices"),
                         recompute=not no_recompute, strict=strict,
                         lenient_fields=lenient_fields)
    invalid = report["invalid_predictions"]
    warnings = list(report.get("warnings", []))
    if invalid["count"]:
        warnings.append(f"{invalid['count']} prediction line(s) or answer(s) in {predictions} "
                        f"not scored ({', '.join(f'{k}: {n}' for k, n in invalid['by_why'].items())}); "
                        "listed in invalid_predictions")
    from biotool.progress import quiet

    for w in warnings if not quiet() else ():
        sys.stderr.write(f"{PROG}: warning: {' '.join(w.split())}\n")
    return report


INDEX = count(0, 9999)  # an atom index
# Rows per molecule beyond this repeat the same few fields and phrasings: more rows, no more
# information, and an unbounded value would let one argument fill the disk.
MAX_ROWS_PER_MOLECULE = 100


def _label_options() -> tuple[Option, ...]:
    return (Option(("--file",), "a SMILES list, one per line (SMILES first, name optional)"),
            Option(("--fields",), "comma-separated field names (see `molperceive contract`)"),
            Option(("-k",), "atom index for atom_at_index", kind=INDEX),
            Option(("-i",), "first atom index for path_len", kind=INDEX),
            Option(("-j",), "second atom index for path_len", kind=INDEX))


def commands() -> list[Command]:
    """Every subcommand; each `run` takes the parsed values as keywords."""
    rows = Argument("rows", "corpus JSONL", required=True)
    out = Option(("--out",), "output JSONL path (written atomically)", required=True)
    return [
        Command("contract", cmd_contract, short_help="Print the field contract: groups, pinned "
                "calls, reasons, scope, triggers, phrasing families (as a document: "
                "docs/molperceive-contract.md)."),
        Command("selftest", cmd_selftest, short_help="Check the contract's invariants and the "
                "labeler on known molecules (phenol, cubane, glycine, Hill cases, every reason "
                "code reachable). Exit 4 if any fails."),
        Command("label", cmd_label, short_help="Label SMILES through the pinned RDKit calls: "
                "status, reason and fields.",
                help="Label SMILES through the pinned RDKit calls. Status is ok, "
                "invalid_structure or out_of_scope, with a reason code (valence_error, "
                "kekulization_failure, unbalanced_parenthesis, unclosed_ring_bond, "
                "unknown_element, element_not_supported, size_out_of_range). Atom indices are "
                "RDKit's, 0-based. By default every headline field whose arguments are given "
                "and every reported field are labelled.",
                arguments=(Argument("smiles", "SMILES strings", many=True),),
                options=_label_options()),
        Command("corrupt", cmd_corrupt, short_help="Mutate a valid SMILES into one verified to "
                "yield a reason code.",
                help="Mutate a valid in-scope SMILES so that the labeler yields exactly the "
                "given reason (all reachable reasons when --reason is omitted; unreachable ones "
                "are listed).",
                arguments=(Argument("smiles", "a valid SMILES", required=True),),
                options=(Option(("--reason",), "one reason code"),
                         Option(("--seed",), "shuffle mutation sites with this seed", kind=int))),
        Command("build", cmd_build, short_help="Build corpus rows (JSONL) from a SMILES list.",
                help="Build corpus rows from a SMILES list: dedup by InChIKey, train/eval split "
                "with no InChIKey across it, slices train, eval, mp_para (reserved phrasing "
                "families 9-12, eval molecules only) and diag (41-70 heavy atoms), "
                "smiles_from_graph rows that show the graph, invalid rows from verified "
                "mutations. Molecules out of scope are skipped and counted. Deterministic for a "
                "given --seed.",
                arguments=(Argument("smiles_file", "SMILES list, one per line (SMILES first, "
                                    "name optional)", required=True),),
                options=(out, Option(("--seed",), kind=int, default=0),
                         Option(("--eval-fraction",), kind=fraction(), default=0.2),
                         Option(("--rows-per-molecule",), "SMILES rows per molecule",
                                kind=count(1, MAX_ROWS_PER_MOLECULE), default=1),
                         Option(("--graph-fraction",), "share of molecules with a graph row",
                                kind=fraction(), default=0.25),
                         Option(("--invalid-fraction",), "share with an invalid row",
                                kind=fraction(), default=0.1),
                         Option(("--para-fraction",), "share of eval molecules with an mp_para "
                                "row", kind=fraction(), default=0.3),
                         Option(("--limit",), "use at most this many molecules",
                                kind=count(1, 100_000_000)),
                         Option(("--fields",), "comma-separated headline fields to ask (default "
                                "all); must include a graph-determined one; excluded fields are "
                                "refused (exit 3)"))),
        Command("gate", cmd_gate, short_help="Re-check every corpus row against the contract; "
                "exit 2 naming each failing row.",
                help="Re-check every row: no excluded field requested (any letter case); fields "
                "recovered from the prose equal the claimed fields (so no other field's trigger "
                "is present); reserved families only in mp_para (prose that is not the table's "
                "phrasing, a rewrite, is listed in report_items, not failed); a graph-determined "
                "field on every scored row; status, reason and labels recompute to the stored "
                "values; slice matches size; no InChIKey shared by train and an evaluation "
                "slice; per-field label entropy (near-constant headline fields fail, reported "
                "ones are flagged). The JSON report lists every failure with row id and line; on "
                "failure stderr names the rows and the exit code is 2. A file with a malformed "
                "row (wrong JSON types, a predictions file) is refused whole: exit 2, one line.",
                arguments=(rows,)),
        Command("prompts", cmd_prompts, short_help="Write the model-facing rows: id, request and "
                "input only.",
                help="Write what a model is shown of each corpus row: its id, the request prose "
                "and the input (SMILES or graph). The fields a request asks, its families, "
                "arguments, labels and status stay with the grader: recovering the fields is "
                "part of the task. Rows come shuffled with --seed (recorded in the answer as "
                "seed) and their ids carry no molecule order: a molecule's SMILES, graph and "
                "invalid-mutant rows are all in the file, so present every row to the model on "
                "its own, never batched with its neighbours or with other rows as context.",
                arguments=(rows,), options=(out, Option(("--seed",), "shuffle seed", kind=int,
                                                        default=0))),
        Command("score", cmd_score, short_help="Score predictions (JSONL) against corpus rows.",
                epilog=EPILOG_SCORE,
                arguments=(rows, Argument("predictions", "predictions JSONL", required=True)),
                options=(Option(("--slices",), "comma-separated slices to score (default "
                                "eval,mp_para,diag)"),
                         Option(("--no-recompute",), "skip recomputing labels under this RDKit "
                                "(no label_drift)", flag=True),
                         Option(("--strict",), "refuse the whole file on the first prediction "
                                "that cannot be scored (exit 2; exit 3 for an excluded field) "
                                "instead of listing it", flag=True),
                         Option(("--lenient-fields",), "count answers to fields a request did "
                                "not ask without penalising the row (the old behaviour)",
                                flag=True))),
    ]


def main(argv=None) -> None:
    from biotool import options

    # -q/--quiet as biotool's, before or after the command: no warning lines on stderr.
    program.main(PROG, commands(), help=DESCRIPTION, argv=argv, options=(options.QUIET,),
                 setup=options.apply_program_flags)


def run() -> None:
    """The `molperceive` process: main, then out without the interpreter's teardown."""
    run_process(main)


if __name__ == "__main__":
    run()
