"""The demo image's CellTypist model, trained at build time on real PBMC data from scanpy's wheel.

scanpy ships `pbmc68k_reduced` (700 PBMCs x 765 genes, `bulk_labels`). Its `.raw` is
log1p-normalised, not counts; counts come back as rint(expm1(raw) / the cell's smallest
non-zero value), since the smallest non-zero value is one count (refs/demo/PROVENANCE.md).
"""

from __future__ import annotations

from pathlib import Path

MODEL_FILE = "demo_pbmc68k_celltypist.pkl"


def pbmc_counts():
    """pbmc68k_reduced as integer counts (cells x genes) with `bulk_labels` in obs."""
    import anndata as ad
    import numpy as np
    import scanpy as sc
    import scipy.sparse as sp

    pbmc = sc.datasets.pbmc68k_reduced()
    raw = pbmc.raw.X
    raw = raw.toarray() if sp.issparse(raw) else np.asarray(raw)
    expr = np.expm1(raw.astype(np.float64))
    smallest = np.array([row[row > 0].min() for row in expr])
    counts = np.rint(expr / smallest[:, None]).astype(np.float32)
    out = ad.AnnData(sp.csr_matrix(counts), obs=pbmc.obs[["bulk_labels"]].copy())
    out.obs_names = list(pbmc.obs_names)
    out.var_names = list(pbmc.raw.var_names)
    out.obs["bulk_labels"] = out.obs["bulk_labels"].astype(str)
    return out


def train(counts, labels: str = "bulk_labels", out: Path | None = None, details: str = ""):
    """A CellTypist model trained on counts (normalised here as CellTypist expects)."""
    import contextlib
    import logging
    import sys

    import scanpy as sc

    logging.getLogger("celltypist").setLevel(logging.WARNING)
    import celltypist

    norm = counts.copy()
    sc.pp.normalize_total(norm, target_sum=1e4)
    sc.pp.log1p(norm)
    with contextlib.redirect_stdout(sys.stderr):
        model = celltypist.train(norm, labels=labels, check_expression=False, n_jobs=1,
                                 max_iter=200, details=details)
        if out is not None:
            model.write(str(out))
    return model


def build(dest_dir: Path, refs_dir: Path) -> Path:
    """Staging builder: writes the demo model into dest_dir and returns its path."""
    out = Path(dest_dir) / MODEL_FILE
    train(pbmc_counts(), out=out,
          details="demo: trained at build time on scanpy's pbmc68k_reduced (bulk_labels)")
    return out
