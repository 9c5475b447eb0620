"""docs/molperceive-contract.md, generated from contract.py so that the two cannot drift.

    python3 -m molperceive.contract_doc > docs/molperceive-contract.md   # regenerate
    python3 -m molperceive.contract_doc --check docs/molperceive-contract.md   # exit 1 if stale

A unit test (tests/unit/molperceive/test_mp_contract_doc.py) asserts that the committed file
equals render(). No RDKit here, like the contract itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

from molperceive import contract, smiles_syntax

GENERATED = ("<!-- Generated from entrypoints/molperceive/contract.py by "
             "`python3 -m molperceive.contract_doc`; do not edit by hand. -->")


def _code(text: str) -> str:
    return "`" + text.replace("|", "\\|") + "`"


def _table(header: tuple[str, ...], rows) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c).replace("\n", " ") for c in row) + " |" for row in rows]
    return out


def render() -> str:
    c = contract
    lines = [GENERATED, "", "# MolPerceive field contract", "",
             "MolPerceive measures whether a language model perceives a molecule's structure from "
             "its SMILES: counts, formula, graph distances, and rebuilding SMILES from a graph. The "
             "contract was fixed before any corpus row existed. One module owns it "
             "(`entrypoints/molperceive/contract.py`, printed by `molperceive contract`); the "
             "generator draws fields from it, the gate re-checks every row against it, the scorer "
             "scores by it, and nothing else may invent a field.", ""]

    lines += ["## Pinned RDKit, and the exact call behind every label", "",
              f"Pinned build: **{c.PINNED_RDKIT}** (pip: `{c.PINNED_RDKIT_PIP}`). {c.PINNED_WHY}", "",
              "`s` is the SMILES, `mol` is `Chem.MolFromSmiles(s)`.", ""]
    lines += _table(("label", "exact expression"), ((k, _code(v)) for k, v in c.CALLS.items()))
    lines += [""] + [f"- {t}" for t in c.KNOWN_BEHAVIOUR] + [""]

    lines += ["## Field groups", "", "No field sits in two groups (checked by `molperceive selftest`).", "",
              f"**Headline (scored).** {c.HEADLINE_WHY}", ""]
    lines += _table(("field", "arguments", "label"),
                    ((f, ", ".join(c.FIELD_ARGS.get(f, ())) or "-", c.HEADLINE_MEANING[f])
                     for f in c.HEADLINE))
    lines += ["", "Graph-determined (at least one per scored row, so composition statistics alone "
              "cannot pass): " + ", ".join(f for f in c.HEADLINE if f in c.GRAPH_DETERMINED) + ".", "",
              "**Reported separately** (computed and published on every row, never pooled into "
              "the headline), with why:", ""]
    lines += _table(("field", "why not in the headline"), c.REPORTED.items())
    lines += ["", "**Excluded by construction** (never a model output, in any slice; the generator, "
              "the gate and the scorer refuse them, whatever the letter case: `InChIKey`, `LogP` "
              "and `TPSA` are refused as `inchikey`, `logp` and `tpsa`, with the reason):", ""]
    lines += _table(("field", "why"), c.EXCLUDED.items())

    lines += ["", "## Row status and reason codes", "",
              "Statuses: " + ", ".join(f"`{s}`" for s in c.STATUSES) + ". Judged in this order: "
              "syntax (the independent parser), then chemistry (RDKit on the unsanitised parse), "
              "then scope (elements, then size).", ""]
    rows = []
    for cls, codes in (("chemistry", c.CHEMISTRY_REASONS), ("syntax", c.SYNTAX_REASONS),
                       ("scope", c.SCOPE_REASONS)):
        status = "out_of_scope" if cls == "scope" else "invalid_structure"
        rows += [(f"`{r}`", cls, status, c.REASON_MEANING[r]) for r in codes]
    lines += _table(("reason", "class", "status", "meaning"), rows)
    lines += [""] + [f"- {cls.capitalize()} reasons: {why}." for cls, why in c.REASON_CLASS_WHY.items()]
    lines += ["- RDKit problem types mapped to reasons: "
              + ", ".join(f"`{t}` -> `{r}`" for t, r in c.RDKIT_PROBLEM_REASON.items()) + "."]
    lines += ["- Deleted on purpose, never re-added: "
              + "; ".join(f"`{r}` ({c.DELETED_WHY[r]})" for r in c.DELETED_REASONS) + ".", ""]

    lines += ["## Scope", "",
              "Supported elements: " + " ".join(c.SUPPORTED_ELEMENTS) + ". Heavy atoms "
              f"{c.HEADLINE_SIZE[0]} to {c.HEADLINE_SIZE[1]} for training and headline evaluation; "
              f"{c.DIAGNOSTIC_SIZE[0]} to {c.DIAGNOSTIC_SIZE[1]} is the diagnostic slice only "
              "(`diag`), so the accuracy-versus-size curve shows where a model breaks. Slices: "
              + ", ".join(f"`{s}`" for s in c.SLICES) + "; scored by default: "
              + ", ".join(f"`{s}`" for s in c.EVALUATION_SLICES) + ".", "",
              f"Input bounds (a usage error, exit 2, before any parsing): a SMILES longer than "
              f"{smiles_syntax.MAX_SMILES_CHARS:,} characters, or a bracket atom whose isotope has "
              "more than 3 digits, hydrogen count more than one digit, charge more than 2 digits "
              "or atom class more than 5 digits.", ""]

    lines += ["## Hill notation", "",
              "Carbon first, hydrogen second, the rest alphabetical; with no carbon, every element, "
              "hydrogen included, alphabetical. Charge suffix as RDKit writes it, none at charge 0. "
              "Checked cases:", ""]
    lines += _table(("element counts", "charge", "formula"),
                    ((", ".join(f"{el} {n}" for el, n in counts.items()), q, f"`{want}`")
                     for counts, q, want in c.HILL_CASES))

    lines += ["", "## Requests in natural language", "",
              "A row's request is prose; recovering which fields it asks for is part of the task, "
              "so the trigger table is released. A field is asked when one of its triggers occurs "
              f"in the prose ({c.describe()['trigger_matching']}). No trigger of one field is a "
              "substring of a trigger of another (checked). The gate asserts on every row that the "
              "set recovered from the prose equals the set the row claims, so no other field's "
              "trigger may be present; the prose may be rewritten (paraphrased) as long as each "
              "field's trigger survives: prose that is not the table's phrasing of its families is "
              "a report item (`phrasing_not_in_table`), not a failure.", ""]
    lines += _table(("field", "triggers"), ((f, ", ".join(t)) for f, t in c.TRIGGERS.items()))
    lines += ["", f"Twelve phrasing families per headline field. Families "
              f"{', '.join(map(str, c.RESERVED_FAMILIES))} are reserved: never in training, they are "
              f"the whole of the `mp_para` slice; every other slice draws from families "
              f"{', '.join(map(str, c.OPEN_FAMILIES))}. Atom indices are RDKit's, 0-based.", ""]
    for field, texts in c.PHRASINGS.items():
        lines += [f"### {field}", ""]
        lines += _table(("family", "phrasing"),
                        ((f"{n}{' (reserved)' if n in c.RESERVED_FAMILIES else ''}", t)
                         for n, t in enumerate(texts, 1)))
        lines += [""]

    lines += ["## Findings recorded while building it", ""]
    lines += [f"{n}. **{title}.** {text}" for n, (title, text) in enumerate(c.FINDINGS, 1)]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--check"] and len(argv) == 2:
        path = Path(argv[1])
        ok = path.is_file() and path.read_text(encoding="utf-8") == render()
        if not ok:
            sys.stderr.write(f"molperceive: error: {path} is not the document generated from "
                             "contract.py; regenerate it with python3 -m molperceive.contract_doc\n")
        return 0 if ok else 1
    if argv:
        sys.stderr.write("molperceive: error: usage: python3 -m molperceive.contract_doc [--check PATH]\n")
        return 2
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
