"""CellTypist models scored as a panel: which reference fits the data, and by what margin.

CellTypist models are tissue-specific and always answer; an immune model calls lung cells
thymocytes with confidence. Fit is the mean over cells of the maximum class probability;
the winner's margin over the runner-up says whether the panel can tell references apart.
The data are normalised once and shared by every model (CellTypist's own Classifier is
handed the prepared AnnData, so nothing is re-read or re-normalised per model). Each model of
the panel scores at most PANEL_MAX_CELLS cells (a seeded subsample), so thirteen models on a
34k-cell sample cost what they cost on 3,000 cells; a model that cannot be loaded is skipped
as not evidence either way, and listed.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path

from biotool.output import InputError, ToolFailure

CONCLUSIVE_FIT = 0.5
CONCLUSIVE_MARGIN = 0.05
MIN_COVERED = 10  # fewer shared genes than this and a model's answer is noise
PANEL_MAX_CELLS = 3000  # the design's cap on cells scored per panel model


def _quiet_celltypist():
    """celltypist's import sets the root logger to INFO on stderr (logging.basicConfig), which
    would put every library's info lines (torch's, at exit) on the agent's stderr."""
    logging.getLogger("celltypist").setLevel(logging.WARNING)
    logging.getLogger("celltypist.logger").setLevel(logging.WARNING)
    import celltypist.logger  # noqa: F401 - its basicConfig runs here, once

    logging.getLogger().setLevel(logging.WARNING)


def load_model(path: Path, failure: type = ToolFailure, what: str = "model"):
    """A CellTypist model; `failure` says whose fault a bad file is (InputError for a path the
    agent named, ToolFailure for a staged model)."""
    _quiet_celltypist()
    from celltypist.models import Model

    try:
        # A path with "/" makes celltypist load the file; a bare name would download.
        with contextlib.redirect_stdout(sys.stderr):
            return Model.load(str(Path(path).resolve()))
    except Exception as exc:  # noqa: BLE001 - celltypist wraps every unpickling error
        # celltypist decorates its messages ("🛑 Invalid model: ..."); keep the words.
        why = str(exc).lstrip("🛑 ").strip() or type(exc).__name__
        raise failure(f"{what} {path}: not a loadable CellTypist model ({why})") from None


def coverage(model, var_names) -> dict:
    import numpy as np

    feats = np.asarray(model.features)
    covered = int(np.isin(feats, np.asarray(var_names)).sum())
    return {"covered": covered, "model_features": int(feats.size),
            "fraction": round(covered / max(1, feats.size), 4)}


def too_little_coverage(cov: dict) -> bool:
    return cov["covered"] < min(MIN_COVERED, cov["model_features"])


def score(adata_norm, model) -> dict:
    """Per-cell labels and max probabilities of one model on prepared (log1p-10k) data."""
    import numpy as np

    _quiet_celltypist()
    from celltypist.classifier import Classifier

    with contextlib.redirect_stdout(sys.stderr):
        result = Classifier(adata_norm, model).celltype()
    prob = result.probability_matrix.to_numpy()
    labels = result.predicted_labels["predicted_labels"].astype(str).to_numpy()
    best = prob.max(axis=1)
    return {"labels": labels, "max_prob": best, "fit": float(np.mean(best))}


def composition(labels, max_prob) -> list[dict]:
    import numpy as np

    labels = np.asarray(labels)
    out = []
    for lab in np.unique(labels):
        mask = labels == lab
        out.append({"cell_type": str(lab), "cells": int(mask.sum()),
                    "fraction": round(float(mask.mean()), 4),
                    "mean_probability": round(float(np.mean(max_prob[mask])), 4)})
    return sorted(out, key=lambda r: (-r["cells"], r["cell_type"]))


def subsample(adata_norm, max_cells: int = PANEL_MAX_CELLS, seed: int = 0):
    """(cells to score, note): every cell up to max_cells, else a seeded subsample of them."""
    import numpy as np

    n = adata_norm.n_obs
    note = {"cells": n, "scored": min(n, max_cells), "max_cells": max_cells, "seed": seed}
    if n <= max_cells:
        return adata_norm, note
    idx = np.sort(np.random.default_rng(seed).choice(n, size=max_cells, replace=False))
    return adata_norm[idx].copy(), note


def rank(adata_norm, models: list[tuple[str, object]]) -> tuple[list[dict], dict[str, dict]]:
    """(ranking rows, each scored model's `score` by name): every (name, model) scored on the
    shared data, the rows best fit first and skipped ones last."""
    rows, scores = [], {}
    for name, model in models:
        cov = coverage(model, adata_norm.var_names)
        if too_little_coverage(cov):
            rows.append({"reference": name, "fit": None, "coverage": cov,
                         "skipped": f"the data cover {cov['covered']} of the model's "
                                    f"{cov['model_features']} genes"})
            continue
        scores[name] = score(adata_norm, model)
        rows.append({"reference": name, "fit": round(scores[name]["fit"], 4), "coverage": cov})
    rows.sort(key=lambda r: (r["fit"] is None, -(r["fit"] or 0.0), r["reference"]))
    return rows, scores


def require_coverage(name: str, cov: dict) -> None:
    if too_little_coverage(cov):
        raise InputError(f"--reference {name}: the data cover only {cov['covered']} of the "
                         f"model's {cov['model_features']} genes; wrong species or gene ids "
                         "instead of symbols?")
