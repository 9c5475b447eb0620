"""`biotool celltype`: cell populations of a sample from pretrained models, limits stated.

Partial answers are answers: with `--model all`, a model that is not staged or fails is listed
under `errors` and the other's result is returned; in a CellTypist panel, a reference that
cannot be loaded is skipped as not evidence either way, and listed. Output is bounded: at most
MAX_COMPOSITION cell types and MAX_INLINE_CELLS per-cell answers inline; every cell's labels
go to --cells-out when asked for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from biotool.arms import Hedges, declared, hedge
from biotool.competence import bounded, not_applicable
from biotool.deadline import UNBOUNDED, BudgetRefusal, Deadline
from biotool.output import InputError, ProgramError, ToolFailure
from biotool.provenance import provenance, used
from biotool.singlecell import celltypist_panel as ctp
from biotool.singlecell import models as mdl
from biotool.singlecell import species as sp

MODELS = ("celltypist", "c2s-celltype", "all")
MAX_COMPOSITION = 30   # cell types listed; the rest are counted in composition_other
MAX_INLINE_CELLS = 20  # Cell2Sentence per-cell answers listed inline
# The celltypist block's judgement of its reference (a skipped row's why restates its coverage
# or its load error); ranking, fit and coverage are the answer, in both arms.
CELLTYPIST_HEDGES = Hedges.of("competence", "margin", "reference_is_conclusive", "caveat",
                              "ranking[].skipped")
MATRIX_HEDGES = (sp.HEDGES.under("species") | CELLTYPIST_HEDGES.under("celltypist")
                 | Hedges.of("c2s.competence", "agreement.competence"))
GENES_HEDGES = sp.HEDGES.under("species") | Hedges.of("competence")
# No reference labelled a cell: a failure, listed in `errors` in both arms, never a hedge.
NO_REFERENCE_KEY = "celltypist"
NO_REFERENCE = "no CellTypist reference could be scored"


def _species(symbols, organism: str, min_informative: int = sp.MIN_INFORMATIVE) -> dict:
    """The species used: the one the gene names show, even over an --organism that disagrees
    (a mouse sample scored as human is noise); --organism decides only when they show none."""
    if organism not in ("auto", "human", "mouse"):
        raise InputError(f"--organism {organism}: expected auto, human or mouse")
    found = sp.detect(symbols, min_informative)
    if organism == "auto":
        found["source"] = "gene-name conventions"
        return found
    detected = found["species"]
    if detected in ("human", "mouse") and detected != organism:
        ev = found["evidence"]
        found["source"] = "gene-name conventions (overrides --organism)"
        found["organism_given"] = organism
        found["note"] = (f"--organism {organism} was given, but the gene names read as {detected} "
                         f"({found['share']:.0%} of {ev['informative']} informative genes): "
                         f"{detected} is used")
        return found
    return {"species": organism, "source": "--organism", "detected": detected}


def _bounded_composition(rows: list[dict]) -> dict:
    """{"composition": the first MAX_COMPOSITION rows, "composition_other": the rest, counted}."""
    out = {"composition": rows[:MAX_COMPOSITION]}
    rest = rows[MAX_COMPOSITION:]
    if rest:
        out["composition_other"] = {"cell_types": len(rest),
                                    "cells": sum(r["cells"] for r in rest),
                                    "fraction": round(sum(r["fraction"] for r in rest), 4)}
    return out


@dataclass(frozen=True)
class CellLabels:
    """CellTypist's label and probability of every cell, in the matrix's order: what the
    agreement and --cells-out read, never printed."""

    labels: object  # numpy arrays
    prob: object


def _celltypist(adata, species: str, reference: str, explicit: tuple | None,
                seed: int = 0) -> tuple[dict, list, dict, CellLabels | None]:
    """(celltypist block, provenance items, errors by model name, every cell's labels when a
    reference answered)."""
    if explicit is not None:
        path, item, rec = explicit
        # A file the agent named is bad input when it is not a model; a staged one is a
        # broken image.
        model = ctp.load_model(path, InputError if rec is None else ToolFailure, "--reference")
        cov = ctp.coverage(model, adata.var_names)
        ctp.require_coverage(reference, cov)
        s = ctp.score(adata, model)
        tissue = rec.tissue if rec and rec.tissue is not None else "unknown tissue"
        spots = [f"{item['name']} was trained on {tissue}; cells of types it never saw are "
                 "still given one of its labels (out-of-domain cells are not flagged)"]
        if cov["fraction"] < 0.5:
            spots.append(f"the data cover {cov['covered']} of {cov['model_features']} model genes")
        comp = bounded(s["fit"], 0.0, blind_spots=spots,
                       remedy="use --reference auto to see how this reference fits against the "
                              "species' panel")
        return ({"reference": item["name"], "fit": round(s["fit"], 4), "coverage": cov,
                 **_bounded_composition(ctp.composition(s["labels"], s["max_prob"])),
                 "competence": comp.explain()}, [item], {},
                CellLabels(s["labels"], s["max_prob"]))
    panel = mdl.celltypist_panel(species)
    errors: dict[str, str] = {}
    loaded = []
    for rec in panel:
        try:
            loaded.append((rec, ctp.load_model(rec.path())))
        except ToolFailure as exc:
            errors[rec.name] = f"{exc}" + hedge("; skipped: not evidence either way")
    unloadable = [{"reference": name, "fit": None, "skipped": "could not be loaded: not "
                   "evidence either way (see errors)"} for name in errors]
    if not loaded:
        reason = (f"no staged CellTypist reference for species '{species}' could be loaded"
                  if panel else f"no CellTypist reference for species '{species}' is staged here")
        comp = not_applicable(reason, "see `biotool list`; production images stage the "
                                      "CellTypist panels")
        errors[NO_REFERENCE_KEY] = f"{NO_REFERENCE}: {reason}"
        return {"reference": None, "ranking": unloadable, "composition": [],
                "reference_is_conclusive": False, "competence": comp.explain(),
                "caveat": comp.blind_spots[0]}, [], errors, None
    scored_on, cells_note = ctp.subsample(adata, ctp.PANEL_MAX_CELLS, seed)
    rows, scores = ctp.rank(scored_on, [(rec.name, model) for rec, model in loaded])
    scored = [r for r in rows if r["fit"] is not None]
    items = [used("model", rec.name, rec.sha256, framework="celltypist") for rec, _ in loaded]
    tissues = {rec.name: rec.tissue or "" for rec, _ in loaded}
    ranking = [r | {"tissue": tissues[r["reference"]]} for r in rows] + unloadable
    panel_cells = {**cells_note, "basis": (
        f"every panel model scored the same {cells_note['scored']} cells" +
        (f" (a seeded subsample of {cells_note['cells']}; at most {ctp.PANEL_MAX_CELLS} per "
         f"model); the winner's composition covers every cell"
         if cells_note["scored"] < cells_note["cells"] else ""))}
    if not scored:
        comp = not_applicable("the data cover too few genes of every staged reference",
                              "check the species and that genes are symbols, not ids")
        errors[NO_REFERENCE_KEY] = f"{NO_REFERENCE}: {comp.blind_spots[0]}"
        return {"reference": None, "ranking": ranking, "panel_cells": panel_cells,
                "composition": [], "reference_is_conclusive": False,
                "competence": comp.explain(), "caveat": comp.blind_spots[0]}, items, errors, None
    win = scored[0]
    fit = win["fit"]
    margin = fit - scored[1]["fit"] if len(scored) > 1 else None
    conclusive = (fit >= ctp.CONCLUSIVE_FIT and margin is not None
                  and margin >= ctp.CONCLUSIVE_MARGIN)
    spots = []
    caveat = None
    # A model scored on a sliver of its genes answers from noise, whatever its fit.
    thin = (f"the data cover only {win['coverage']['covered']} of {win['reference']}'s "
            f"{win['coverage']['model_features']} genes"
            if win["coverage"]["fraction"] < 0.5 else None)
    if thin and conclusive:
        spots.append(thin)
    if not conclusive:
        reasons = []
        if fit < ctp.CONCLUSIVE_FIT:
            reasons.append(f"best fit {fit:.2f} < {ctp.CONCLUSIVE_FIT}: no staged reference fits "
                           "these cells well")
        if thin:
            reasons.append(thin)
        if len(scored) < 2:
            reasons.append("only one reference could be scored, so there is no margin to judge "
                           "fit by")
        elif margin < ctp.CONCLUSIVE_MARGIN:
            reasons.append(f"margin {margin:.3f} < {ctp.CONCLUSIVE_MARGIN} over "
                           f"{scored[1]['reference']}: the panel cannot tell these references apart")
        # By design: when the panel cannot name the reference, the per-cell labels still carry
        # the signal; the winner's name is what is unreliable.
        caveat = ("; ".join(reasons) + f". Read the per-cell composition (the more reliable "
                  f"evidence), not this reference name ({win['reference']})")
        spots.append(caveat)
    if errors:
        spots.append(f"{len(errors)} staged reference(s) could not be loaded and were skipped "
                     f"(not evidence either way): {', '.join(errors)}")
    if species == "unknown":
        spots.append("species unknown: references of every species were scored")
    ties = sum(1 for r in scored[1:] if fit - r["fit"] < 1e-3)
    comp = bounded(fit, margin or 0.0, alternatives=len(scored) - 1, ties=ties, blind_spots=spots,
                   remedy="" if conclusive else "read the composition, not the reference name; "
                                                "for a conclusive reference, stage one for this "
                                                "tissue or check the species")
    if cells_note["scored"] < cells_note["cells"]:
        model = dict((rec.name, m) for rec, m in loaded)[win["reference"]]
        s = ctp.score(adata, model)
    else:
        s = scores[win["reference"]]
    out = {"reference": win["reference"], "tissue": tissues[win["reference"]], "fit": fit,
           "margin": None if margin is None else round(margin, 4),
           "reference_is_conclusive": conclusive, "coverage": win["coverage"],
           "ranking": ranking, "panel_cells": panel_cells,
           **_bounded_composition(ctp.composition(s["labels"], s["max_prob"])),
           "competence": comp.explain()}
    if caveat:
        out["caveat"] = caveat
    return out, items, errors, CellLabels(s["labels"], s["max_prob"])


def _spent(deadline: Deadline, stage: str) -> BudgetRefusal:
    return BudgetRefusal(
        f"--timeout {deadline.seconds:g} s ran out while {stage} ({deadline.elapsed():.1f} s since "
        f"the command started, start-up and imports included): nothing answered; raise "
        f"--timeout (its floor is start-up, the matrix load, the panel and, for Cell2Sentence, "
        f"the model load and one cell)")


def _c2s(cells: list[dict], organism: str, spec: mdl.C2SModel, deadline: Deadline,
         batch_size: int) -> tuple[dict, list]:
    from biotool import budget
    from biotool.singlecell import c2s

    # What an earlier run on this machine measured: a load that cannot finish in what is left
    # is refused before it starts, naming the measured time.
    key = f"c2s-load:{spec.weights}:{c2s.pick_device(None)}"
    seen = budget.measured(key)
    left = deadline.left()
    fresh = not c2s.loaded_already(spec.weights, spec.tokenizer)
    if fresh and seen.get("load_s") is not None and \
            seen["load_s"] + seen.get("per_cell_s", 0.0) > left:
        need = deadline.elapsed() + seen["load_s"] + seen.get("per_cell_s", 0.0)
        raise BudgetRefusal(
            f"Cell2Sentence not started: loading {spec.name} took "
            f"{seen['load_s']:.1f} s on this machine (measured by an earlier run"
            + (f"; one cell {seen['per_cell_s']:.1f} s" if seen.get("per_cell_s") else "")
            + f") and {max(0.0, left):.1f} s of --timeout {deadline.seconds:g} s are left; give "
            f"--timeout {budget.advised(need)} or more")
    t0 = time.monotonic()
    try:
        with budget.alarm(deadline):
            loaded = c2s.load(spec.weights, spec.tokenizer)
    except budget.BudgetSpent:
        cut = time.monotonic() - t0
        if fresh:  # the load takes longer than this: a faster figure kept from before is stale
            budget.record_at_least(key, load_s=cut)
        raise _spent(deadline, f"loading the Cell2Sentence model "
                                     f"({cut:.1f} s into the load)") from None
    load_s = time.monotonic() - t0
    if fresh:  # a model this process already held says nothing of a load's cost
        budget.record(key, load_s=load_s)
    prompts = [c2s.prompt(c["genes"], sp.ORGANISM_NAMES[organism]) for c in cells]
    gen = c2s.generate(loaded, prompts, batch_size=batch_size, deadline=deadline,
                       per_cell_estimate=seen.get("per_cell_s"))
    if gen["per_cell_s"]:
        budget.record(key, per_cell_s=gen["per_cell_s"])
    if not gen["done"]:
        raise BudgetRefusal(
            f"--timeout {deadline.seconds:g} s left no time for one Cell2Sentence cell after the "
            f"model load ({load_s:.1f} s; {deadline.elapsed():.1f} s since the command "
            f"started): no cell answered; raise --timeout")
    per_cell = [{"cell": c["cell"], "cell_type": a, "genes_in_sentence": len(c["genes"])}
                for c, a in zip(cells, gen["answers"])]
    spots = [f"composition from {gen['done']} sampled cells, not the whole sample"]
    if gen["truncated"]:
        spots.append(f"time budget reached: {gen['done']} of {gen['requested']} cells answered")
    top = c2s.composition(gen["answers"])
    share = top[0]["fraction"] if top else 0.0
    second = top[1]["fraction"] if len(top) > 1 else 0.0
    comp = bounded(share, share - second, alternatives=max(0, len(top) - 1), blind_spots=spots,
                   remedy="raise --sample or --timeout for a finer composition"
                          if gen["truncated"] or gen["done"] < 32 else "")
    return ({"model": spec.name, "device": loaded.device,
             "dtype": loaded.dtype, "organism": sp.ORGANISM_NAMES[organism],
             "cells_requested": gen["requested"], "cells_answered": gen["done"],
             "truncated": gen["truncated"], **_bounded_composition(top), "cells": per_cell,
             "competence": comp.explain()}, list(spec.provenance))


def _c2s_organism(species: dict) -> str:
    if species["species"] not in ("human", "mouse"):
        raise InputError("--organism: the species could not be read from the gene names "
                         "(Cell2Sentence's prompt names it); pass --organism human or mouse")
    return species["species"]


def _agreement(ct: dict, labels: CellLabels | None, c2s_res: dict, cell_index: dict) -> dict:
    """Whether the two models say the same thing, cell by cell; never a merged label."""
    def norm(s: str) -> str:
        return " ".join(s.lower().replace("-", " ").replace(",", " ").split())

    pairs = [(labels.labels[cell_index[c["cell"]]], c["cell_type"]) for c in c2s_res["cells"]
             if labels is not None and c["cell"] in cell_index]
    same = sum(norm(a) == norm(b) for a, b in pairs)
    dom_ct = ct["composition"][0]["cell_type"] if ct.get("composition") else None
    dom_c2s = c2s_res["composition"][0]["cell_type"] if c2s_res["composition"] else None
    agree = bool(dom_ct and dom_c2s and norm(dom_ct) == norm(dom_c2s))
    comp = bounded(same / len(pairs) if pairs else 0.0, 0.0, blind_spots=(
        "labels are compared as text; the two models name cell types in different "
        "vocabularies, so different wording is not necessarily different biology",))
    return {"dominant_celltypist": dom_ct, "dominant_c2s": dom_c2s, "dominant_agree": agree,
            "cells_compared": len(pairs), "cells_agreeing": same, "competence": comp.explain()}


def _write_cells(path, norm, celltypist: CellLabels | None, c2s_res: dict | None) -> None:
    """Every cell's labels as TSV: CellTypist's label and probability, Cell2Sentence's answer
    for the cells it was asked about."""
    from biotool.files import published

    answers = {c["cell"]: c["cell_type"] for c in (c2s_res or {}).get("cells", [])}
    labels, prob = ((celltypist.labels, celltypist.prob) if celltypist is not None
                    else (None, None))
    with published(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write("cell\tcelltypist_label\tcelltypist_probability\tc2s_cell_type\n")
            for i, name in enumerate(str(n) for n in norm.obs_names):
                lab = str(labels[i]) if labels is not None else ""
                pr = f"{float(prob[i]):.4f}" if prob is not None else ""
                fh.write(f"{name}\t{lab}\t{pr}\t{answers.get(name, '')}\n")


def celltype_matrix(matrix_path: str, model: str = "celltypist", reference: str = "auto",
                    organism: str = "auto", n_cells: int = 8, deadline: Deadline = UNBOUNDED,
                    c2s_model: str = mdl.DEFAULT_C2S, batch_size: int = 8, seed: int = 0,
                    cells_out: str | None = None) -> dict:
    """`deadline`: the command line's counts from the process's start, so start-up and
    imports count."""
    from biotool.files import output_file
    from biotool.singlecell import c2s, matrix

    from biotool import budget

    if model not in MODELS:
        raise InputError(f"--model {model}: expected one of {', '.join(MODELS)}")
    if model == "c2s-celltype" and reference != "auto":
        raise InputError(f"--reference {reference}: names a CellTypist model, which --model "
                         "c2s-celltype does not use; add --model all or celltypist")
    cells_path = output_file(cells_out, "--cells-out") if cells_out is not None else None
    errors: dict[str, str] = {}
    # Resolve the models before any work: a model this image lacks fails at once, except that
    # `all` answers with what it has when the default C2S model is not staged.
    spec = None
    if model in ("c2s-celltype", "all"):
        try:
            spec = mdl.c2s_model(c2s_model)
        except ProgramError as exc:
            if model != "all" or c2s_model != mdl.DEFAULT_C2S:
                raise
            errors["c2s-celltype"] = str(exc)
    explicit = (mdl.celltypist_model(reference)
                if model in ("celltypist", "all") and reference != "auto" else None)
    try:
        with budget.alarm(deadline):
            adata = matrix.load(matrix_path)
            norm, note = matrix.normalise(adata)
            species = _species(norm.var_names, organism)
    except budget.BudgetSpent:
        raise _spent(deadline, "loading the matrix") from None
    out = {"matrix": {"path": str(matrix_path), "cells": int(adata.n_obs),
                      "genes": int(adata.n_vars), "read_as": adata.uns.get("biotool_source", {}),
                      "normalisation": note},
           "species": species, "model": model}
    used_items: list = []
    labels = None
    if model in ("celltypist", "all"):
        try:
            with budget.alarm(deadline):
                out["celltypist"], items, ct_errors, labels = _celltypist(
                    norm, species["species"], reference, explicit, seed)
        except budget.BudgetSpent:
            raise _spent(deadline, "scoring the CellTypist panel") from None
        errors.update(ct_errors)
        used_items += items
    if spec is not None:
        try:
            organism_c2s = _c2s_organism(species)
            # The stage's first costs (the sentences, torch's import) count against the
            # deadline too: past it, C2S is left out at once instead of after them.
            try:
                with budget.alarm(deadline):
                    cells = c2s.cell_sentences(norm, n_cells, seed=seed)
                    c2s.pick_device(None)
            except budget.BudgetSpent:
                raise _spent(deadline, "preparing Cell2Sentence's prompts") from None
            res, items = _c2s(cells, organism_c2s, spec, deadline, batch_size)
        except ProgramError as exc:
            if model != "all":
                raise
            errors["c2s-celltype"] = str(exc)
            if isinstance(exc, BudgetRefusal):
                out["truncated"] = True  # the budget, not the model, left C2S out
        except Exception as exc:  # noqa: BLE001 - a model failing mid-generation under `all`
            if model != "all":
                raise
            errors["c2s-celltype"] = (f"Cell2Sentence failed while generating "
                                      f"({type(exc).__name__}: {str(exc)[:200]})"
                                      + hedge("; the CellTypist answer stands alone"))
        else:
            out["c2s"] = res
            used_items += items
            out["truncated"] = res["truncated"]
    if model == "all" and "c2s" in out:
        index = {str(n): i for i, n in enumerate(norm.obs_names)}
        out["agreement"] = _agreement(out["celltypist"], labels, out["c2s"], index)
    if cells_path is not None:
        _write_cells(cells_path, norm, labels, out.get("c2s"))
        out["cells_file"] = str(cells_path)
    if "c2s" in out and len(out["c2s"]["cells"]) > MAX_INLINE_CELLS:
        out["c2s"]["cells_not_listed"] = len(out["c2s"]["cells"]) - MAX_INLINE_CELLS
        out["c2s"]["cells"] = out["c2s"]["cells"][:MAX_INLINE_CELLS]
    if errors:
        out["errors"] = errors
    out.setdefault("truncated", False)
    # Cells count as covered only when a scored reference labelled them.
    covered = {"celltypist": int(adata.n_obs)} if labels is not None else {}
    if "c2s" in out:
        covered["c2s"] = out["c2s"]["cells_answered"]
    out["timing"] = {"timeout_s": deadline.seconds, "elapsed_s": round(deadline.elapsed(), 2),
                     "cells_covered": covered}
    out["provenance"] = provenance(*used_items)
    return declared(out, MATRIX_HEDGES)


def celltype_genes(genes: str, organism: str = "auto", c2s_model: str = mdl.DEFAULT_C2S,
                   deadline: Deadline = UNBOUNDED) -> dict:
    ranked = [g.strip() for g in genes.split(",") if g.strip()]
    if not ranked:
        raise InputError("--genes: no gene names given (comma-separated, highest expression first)")
    species = _species(ranked, organism, min_informative=5)
    org = _c2s_organism(species)
    spec = mdl.c2s_model(c2s_model)
    res, items = _c2s([{"cell": "genes", "genes": ranked}], org, spec, deadline, 1)
    answer = res["cells"][0]["cell_type"] if res["cells"] else None
    spots = ["one ranked gene list: a single cell's answer, with no composition to weigh it"]
    # Confidence is measured: the model's probability of its own answer (no constant).
    certainty = 0.0
    if answer:
        from biotool import budget
        from biotool.singlecell import c2s

        try:
            with budget.alarm(deadline):
                loaded = c2s.load(spec.weights, spec.tokenizer)  # held: costs nothing
                certainty = c2s.answer_probability(
                    loaded, c2s.prompt(ranked, sp.ORGANISM_NAMES[org]), answer)
            spots.append(f"confidence is the model's probability of this answer "
                         f"({certainty:.4f}); a model can be sure and wrong")
        except budget.BudgetSpent:
            spots.append("confidence not measured: --timeout ran out after the answer")
    comp = bounded(certainty, 0.0, blind_spots=spots,
                   remedy="run on a matrix with --sample to see the spread of answers")
    return declared({"genes": len(ranked), "species": species, "cell_type": answer,
                     "model": res["model"], "device": res["device"], "truncated": res["truncated"],
                     "competence": comp.explain(), "provenance": provenance(*items)}, GENES_HEDGES)
