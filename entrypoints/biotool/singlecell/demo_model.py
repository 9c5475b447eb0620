"""The demo image's CellTypist model and single-cell sample, built at staging time from the
real PBMC data that scanpy's wheel ships.

scanpy ships `pbmc68k_reduced` (700 PBMCs x 765 genes, `bulk_labels`). Its `.raw` is
log1p-normalised, not counts; counts come back as rint(expm1(raw) / the cell's smallest
non-zero value), since the smallest non-zero value is one count (refs/demo/PROVENANCE.md).
The cells are split once, seeded and per label: the model is trained on one part, and the
other (held out, never trained on) is the demo sample an agent can run `celltype` on.
"""

from __future__ import annotations

from pathlib import Path

MODEL_FILE = "demo_pbmc68k_celltypist.pkl"
HELD_OUT = 0.3  # share of each label's cells kept out of training for the demo sample
SAMPLE_FILES = ("counts.mtx.gz", "genes.tsv.gz", "cells.tsv.gz")


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


def split(counts, held_out: float = HELD_OUT, seed: int = 0):
    """(train, held-out) cells: the same seeded share of every `bulk_labels` class held out."""
    import numpy as np

    rng = np.random.default_rng(seed)
    labels = counts.obs["bulk_labels"].to_numpy()
    held = np.zeros(counts.n_obs, dtype=bool)
    for lab in sorted(set(labels)):
        idx = rng.permutation(np.flatnonzero(labels == lab))
        held[idx[: max(1, round(held_out * idx.size))]] = True
    return counts[~held].copy(), counts[held].copy()


def build_date() -> str:
    """The model's `date`: SOURCE_DATE_EPOCH's when the build sets it (one commit, one model
    file), else now, as CellTypist writes it (str of a datetime)."""
    import datetime
    import os

    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    when = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).replace(tzinfo=None)
            if epoch.isdigit() else datetime.datetime.now())
    return str(when)


def train(counts, labels: str = "bulk_labels", out: Path | None = None, details: str = ""):
    """A CellTypist model trained on counts (normalised here as CellTypist expects), with
    one thread and a fixed date (build_date), so the same counts give the same file."""
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
                                 max_iter=200, details=details, date=build_date())
        if out is not None:
            model.write(str(out))
    return model


def build(dest_dir: Path, refs_dir: Path) -> Path:
    """Staging builder: writes the demo model into dest_dir and returns its path."""
    out = Path(dest_dir) / MODEL_FILE
    train(split(pbmc_counts())[0], out=out,
          details="demo: trained at build time on scanpy's pbmc68k_reduced (bulk_labels), "
                  "held-out cells excluded")
    return out


def _gzip_write(path: Path, data: bytes) -> None:
    import gzip

    # mtime 0 and no file name in the header: the same cells give the same bytes and sha256.
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                                mtime=0) as fh:
        fh.write(data)


def write_mtx_folder(counts, folder: Path) -> Path:
    """counts (cells x genes) as a benchmark-style Matrix Market folder: counts.mtx.gz (genes x
    cells, integer), genes.tsv.gz and cells.tsv.gz, one name per line, no header."""
    import io

    import scipy.io
    import scipy.sparse as sp

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    scipy.io.mmwrite(buf, sp.coo_matrix(counts.X.T).astype("int64"), field="integer")
    _gzip_write(folder / SAMPLE_FILES[0], buf.getvalue())
    _gzip_write(folder / SAMPLE_FILES[1], "".join(f"{g}\n" for g in counts.var_names).encode())
    _gzip_write(folder / SAMPLE_FILES[2], "".join(f"{c}\n" for c in counts.obs_names).encode())
    return folder


def build_sample(dest_dir: Path, refs_dir: Path) -> Path:
    """Staging builder: the held-out PBMC cells as a Matrix Market folder (dest_dir itself)."""
    return write_mtx_folder(split(pbmc_counts())[1], Path(dest_dir))
