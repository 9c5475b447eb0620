"""Single-cell draws: subsamples of the held-out PBMC cells, labelled by the staged CellTypist
model exactly as `biotool celltype` labels them (log1p of counts per 10k, float32, CellTypist's
per-cell best match, no majority voting)."""

from __future__ import annotations

import gzip
import random
import warnings
from pathlib import Path

SAMPLE = "demo-pbmc68k-heldout"
MODEL = "demo-pbmc68k-celltypist"
TARGET_SUM = 1e4           # biotool's normalisation (biotool.singlecell.matrix.TARGET_SUM)
MIN_DOMINANT = 10          # the dominant type's fewest cells
OTHERS_SHARE = 0.7         # every other type holds at most 70% of the dominant type's cells
FILES = ("counts.mtx.gz", "genes.tsv.gz", "cells.tsv.gz")


def _lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [line.rstrip("\n").split("\t")[0] for line in fh if line.strip()]


def read_sample(folder: Path):
    """(cells x genes integer CSR counts, gene names, cell names) of a counts.mtx.gz folder
    (genes as rows, as 10x writes it)."""
    import scipy.io

    with gzip.open(folder / "counts.mtx.gz", "rb") as fh:
        counts = scipy.io.mmread(fh).T.tocsr()
    return counts, _lines(folder / "genes.tsv.gz"), _lines(folder / "cells.tsv.gz")


def _gzip_text(path: Path, text: str) -> None:
    """Gzip with no name or time in the header: the same draw writes the same bytes."""
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                                mtime=0) as fh:
        fh.write(text.encode("utf-8"))


def write_sample(folder: Path, counts, genes: list[str], cells: list[str]) -> None:
    """The sample's three files in the staged sample's format: Matrix Market integer counts,
    genes as rows, one gene symbol and one cell barcode a line."""
    coo = counts.T.tocoo()  # genes x cells
    entries = sorted(zip(coo.col.tolist(), coo.row.tolist(), coo.data.tolist()))
    body = "".join(f"{g + 1} {c + 1} {int(v)}\n" for c, g, v in entries)
    _gzip_text(folder / "counts.mtx.gz",
               "%%MatrixMarket matrix coordinate integer general\n%\n"
               f"{len(genes)} {len(cells)} {len(entries)}\n{body}")
    _gzip_text(folder / "genes.tsv.gz", "".join(f"{g}\n" for g in genes))
    _gzip_text(folder / "cells.tsv.gz", "".join(f"{c}\n" for c in cells))


def model_path() -> Path:
    from biotool import staging

    return staging.require("model", MODEL, "the task's draw").path("main")


def labels(counts, genes: list[str], cells: list[str], model) -> list[str]:
    """Each cell's CellTypist label (best match) on counts normalised as biotool does."""
    import contextlib
    import io
    import logging

    import anndata as ad
    import numpy as np
    import scipy.sparse as sp

    with warnings.catch_warnings():  # celltypist's import warns about scanpy's __version__
        warnings.simplefilter("ignore", FutureWarning)
        import celltypist
        import scanpy as sc

    adata = ad.AnnData(sp.csr_matrix(counts, dtype=np.float32))
    adata.obs_names, adata.var_names = list(cells), list(genes)
    adata.var_names_make_unique()
    sc.pp.normalize_total(adata, target_sum=TARGET_SUM)
    sc.pp.log1p(adata)
    adata.X = sp.csr_matrix(adata.X, dtype=np.float32)
    logging.getLogger().setLevel(logging.WARNING)  # celltypist logs every step at INFO
    with contextlib.redirect_stdout(io.StringIO()):
        result = celltypist.annotate(adata, model=model, majority_voting=False)
    return result.predicted_labels["predicted_labels"].astype(str).tolist()


def choices(sizes: dict[str, int]) -> list[tuple[str, int, int]]:
    """Every (dominant type, its cells k, other cells m) the draw may pick, given how many cells
    of each type the sample holds: k from MIN_DOMINANT up, m from k/4 up to what the other types
    hold within OTHERS_SHARE of k each. Drawn uniformly, no answer is likelier than 1/len."""
    out = []
    for dominant, n in sorted(sizes.items()):
        for k in range(MIN_DOMINANT, n + 1):
            cap = int(OTHERS_SHARE * k)
            room = sum(min(v, cap) for t, v in sizes.items() if t != dominant)
            out += [(dominant, k, m) for m in range(k // 4, room + 1)]
    return out


def subsample(rng: random.Random, public: Path) -> dict:
    """A subsample of the held-out PBMC cells in which one type the staged model calls clearly
    dominates (every other type at most 70% of it), shuffled, written as /task/sample/
    (counts.mtx.gz, genes.tsv.gz, cells.tsv.gz); the truth is its cell count and the model's
    dominant type and its cell count, recomputed from the written files."""
    from biotool import libcaches, staging

    libcaches.seed()  # the image's compiled numba normalisation, before scanpy is imported
    with warnings.catch_warnings():  # celltypist's import warns about scanpy's __version__
        warnings.simplefilter("ignore", FutureWarning)
        from celltypist.models import Model

    folder = staging.require("sample", SAMPLE, "the task's draw").path("main")
    model = Model.load(str(model_path()))
    counts, genes, cells = read_sample(folder)
    by_type: dict[str, list[int]] = {}
    for i, label in enumerate(labels(counts, genes, cells, model)):
        by_type.setdefault(label, []).append(i)
    dominant, k, m = rng.choice(choices({t: len(v) for t, v in by_type.items()}))
    cap = int(OTHERS_SHARE * k)
    pool = []
    for label in sorted(by_type):
        if label != dominant:
            pool += rng.sample(by_type[label], min(cap, len(by_type[label])))
    picked = rng.sample(by_type[dominant], k) + rng.sample(pool, m)
    rng.shuffle(picked)
    out = public / "sample"
    out.mkdir(parents=True, exist_ok=True)
    write_sample(out, counts[picked], genes, [cells[i] for i in picked])
    # The truth is what the model says of the files as written, not the plan above.
    counts2, genes2, cells2 = read_sample(out)
    called = labels(counts2, genes2, cells2, model)
    tally = {t: called.count(t) for t in set(called)}
    top = max(sorted(tally), key=tally.get)
    return {"cells": len(cells2), "dominant": top, "dominant_cells": tally[top]}
