"""Mutations of valid molecules that produce each reachable reason code on purpose.

Each mutation is a plain edit of the SMILES string at token boundaries (tokens from the
independent syntax checker); a mutant is kept only when the labeler, run on it, yields exactly
the intended status and reason. Candidate sites are tried in order (shuffled by `rng` if given)
until one verifies.
"""

from __future__ import annotations

import random
from typing import Iterator

from biotool.output import InputError

from molperceive import contract, label, smiles_syntax

STATUS_OF = {**{r: "invalid_structure" for r in contract.CHEMISTRY_REASONS + contract.SYNTAX_REASONS},
             **{r: "out_of_scope" for r in contract.SCOPE_REASONS}}

UNKNOWN_SYMBOL = "Q"   # no element symbol starts with Q, so it can never be read as one


def _splice(smiles: str, start: int, end: int, text: str) -> str:
    return smiles[:start] + text + smiles[end:]


def _after_atom(toks, idx: int) -> int:
    """Position just after atom token idx and the ring-bond labels attached to it."""
    pos = toks[idx].start + len(toks[idx].text)
    n = idx + 1
    while n < len(toks):
        if toks[n].kind == "ring":
            pos = toks[n].start + len(toks[n].text)
        elif not (toks[n].kind == "bond" and n + 1 < len(toks) and toks[n + 1].kind == "ring"):
            break
        n += 1
    return pos


def _unused_ring_label(toks) -> str:
    used = {t.ring for t in toks if t.kind == "ring"}
    free = next((str(d) for d in range(1, 10) if str(d) not in used), None)
    return free or next(f"%{d}" for d in range(10, 100) if str(d) not in used)


def candidates(smiles: str, reason: str, heavy_atoms: int, order,
               aromatic: str = "") -> Iterator[tuple[str, str]]:
    """(mutant SMILES, what was done) for `reason`, most natural edit first.

    `aromatic` is the same molecule written with aromatic atoms, for Kekulé-written sources.
    """
    toks = smiles_syntax.tokenize(smiles)
    atoms = [n for n, t in enumerate(toks) if t.kind == "atom"]
    if reason == "unbalanced_parenthesis":
        for n in order([n for n, t in enumerate(toks) if t.kind == "close"]):
            yield _splice(smiles, toks[n].start, toks[n].start + 1, ""), f"deleted ')' at {toks[n].start}"
        yield smiles + ")", "appended ')'"
    elif reason == "unclosed_ring_bond":
        ring = _unused_ring_label(toks)
        for n in order(atoms):
            pos = _after_atom(toks, n)
            yield _splice(smiles, pos, pos, ring), f"opened ring bond {ring} at {pos}, never closed"
    elif reason == "unknown_element":
        for n in order([n for n in atoms if toks[n].text in ("C", "N", "O", "S")]):
            t = toks[n]
            yield (_splice(smiles, t.start, t.start + len(t.text), UNKNOWN_SYMBOL),
                   f"replaced {t.text} at {t.start} with {UNKNOWN_SYMBOL}")
    elif reason == "valence_error":
        for n in order([n for n in atoms if toks[n].text in ("C", "N", "O")]):
            pos = _after_atom(toks, n)
            yield (_splice(smiles, pos, pos, "(C)(C)(C)(C)"),
                   f"gave {toks[n].text} at {toks[n].start} four extra carbon neighbours")
    elif reason == "kekulization_failure":
        for base, note in ((smiles, ""), (aromatic, " of RDKit's aromatic SMILES")):
            if not base or (note and base == smiles):
                continue
            btoks = smiles_syntax.tokenize(base)
            arom = [n for n in range(len(btoks) - 1) if btoks[n].text == "c"
                    and btoks[n + 1].kind == "atom" and btoks[n + 1].text in smiles_syntax.AROMATIC_ORGANIC]
            for n in order(arom):
                pos = btoks[n].start + 1
                yield (_splice(base, pos, pos, "c"),
                       f"inserted an aromatic carbon at {pos}{note} (ring grows by one)")
            for n in order(arom):
                yield (_splice(base, btoks[n].start, btoks[n].start + 1, ""),
                       f"deleted the aromatic carbon at {btoks[n].start}{note}")
    elif reason == "element_not_supported":
        for n in order([n for n in atoms if toks[n].text in ("O", "S")]):
            t = toks[n]
            yield _splice(smiles, t.start, t.start + len(t.text), "[Se]"), f"replaced {t.text} at {t.start} with Se"
        yield smiles + ".[Na+]", "added a sodium counter-ion"
    elif reason == "size_out_of_range":
        copies = contract.DIAGNOSTIC_SIZE[1] // max(heavy_atoms, 1) + 1
        yield ".".join([smiles] * copies), f"{copies} copies as one disconnected structure"
    else:
        raise InputError(f"unknown reason code {reason!r}; reasons: {', '.join(contract.REASONS)}")


def corrupt(smiles: str, reason: str, rng: random.Random | None = None) -> dict:
    """A verified mutant of the valid molecule `smiles` whose label is exactly `reason`."""
    if reason not in contract.REASONS:
        raise InputError(f"unknown reason code {reason!r}; reasons: {', '.join(contract.REASONS)}")
    verdict = label.classify(smiles)
    if verdict["status"] != "ok":
        raise InputError(f"source {smiles!r} is not a valid in-scope molecule "
                         f"({verdict['status']}: {verdict['reason'] or verdict['detail']})")

    def order(items):
        items = list(items)
        if rng is not None:
            rng.shuffle(items)
        return items

    want = STATUS_OF[reason]
    tried = 0
    mol = verdict["mol"]
    aromatic = label._rdkit().MolToSmiles(mol) if reason == "kekulization_failure" else ""
    for mutant, how in candidates(smiles, reason, mol.GetNumHeavyAtoms(), order, aromatic):
        tried += 1
        try:
            got = label.classify(mutant)
        except InputError:   # the edit made a string refused before parsing (too long)
            continue
        if got["status"] == want and got["reason"] == reason:
            return {"source": smiles, "smiles": mutant, "status": want, "reason": reason,
                    "mutation": how, "verified": got["detail"]}
        if tried >= 40:
            break
    raise InputError(f"no verified mutation of {smiles!r} yields {reason} ({tried} tried)")


def corrupt_all(smiles: str, reasons=None, seed: int | None = None) -> dict:
    """One verified mutant per reason (all reachable reasons by default); failures listed apart."""
    rng = random.Random(seed) if seed is not None else None
    verdict = label.classify(smiles)
    if verdict["status"] != "ok":
        raise InputError(f"source {smiles!r} is not a valid in-scope molecule "
                         f"({verdict['status']}: {verdict['reason'] or verdict['detail']})")
    made, failed = [], []
    for reason in reasons or contract.REASONS:
        try:
            made.append(corrupt(smiles, reason, rng))
        except InputError as exc:
            if reason not in contract.REASONS:
                raise
            failed.append({"reason": reason, "error": str(exc)})
    return {"source": smiles, "mutants": made, "unreachable": failed}
