"""Expression matrices in every shape agents meet, and their normalisation to log1p-10k.

A matrix is found by what it is, not by what it is called: in a folder, the Matrix Market
file is the matrix and the two labelling files are assigned to its axes by their lengths
(`counts.mtx.gz` + `genes.tsv.gz` + `cells.tsv.gz` loads like a 10x `matrix/features/barcodes`).
"""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

from biotool.output import InputError

MATRIX_SUFFIXES = (".mtx", ".mtx.gz")
LABEL_SUFFIXES = (".tsv", ".tsv.gz", ".txt", ".txt.gz", ".csv", ".csv.gz")
TABLE_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt", ".txt.gz")
TARGET_SUM = 1e4
_ENSEMBL = re.compile(r"^ENS[A-Z]*G\d{6,}")
_GENE_HINT = re.compile(r"gene|feature", re.I)
_CELL_HINT = re.compile(r"cell|barcode|obs", re.I)
_BARCODE = re.compile(r"^[ACGTN]{8,}([-_.]?\d+)?$")  # 10x-style cell barcodes: AAACATACAACCAC-1


def _name(p: Path) -> str:
    return p.name.lower()


def _open_text(path: Path):
    """Text handle over a plain or gzipped file; a corrupt gzip is the caller's InputError."""
    if _name(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def _corrupt(path: Path, exc: Exception) -> InputError:
    return InputError(f"{path}: cannot be read ({type(exc).__name__}: {exc}); "
                      "is the file complete and, if .gz, a valid gzip stream?")


_READ_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error, UnicodeDecodeError, ValueError, OSError)


def _read_lines(path: Path) -> list[list[str]]:
    try:
        with _open_text(path) as fh:
            text = fh.read()
    except _READ_ERRORS as exc:
        raise _corrupt(path, exc) from None
    sep = "," if ".csv" in _name(path) else "\t"
    # Quoted fields ("CD3E", as R's write.csv writes them) are the same names unquoted.
    return [[f.strip().strip('"') for f in line.split(sep)]
            for line in text.splitlines() if line.strip()]


def _mostly_barcodes(names) -> bool:
    head = [str(n) for n in list(names)[:200]]
    return bool(head) and sum(bool(_BARCODE.match(n)) for n in head) > len(head) / 2


def _read_mtx(path: Path):
    import scipy.io
    import scipy.sparse as sp

    try:
        if _name(path).endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                m = scipy.io.mmread(fh)
        else:
            m = scipy.io.mmread(str(path))
    except _READ_ERRORS as exc:
        raise _corrupt(path, exc) from None
    return sp.csr_matrix(m)


def _looks_like_header(row: list[str]) -> bool:
    first = row[0].strip().lower()
    return first in {"gene", "genes", "gene_id", "gene_ids", "feature", "features", "symbol",
                     "barcode", "barcodes", "cell", "cells", "cell_id", "id", "name", ""}


def _symbols(rows: list[list[str]]) -> list[str]:
    """Gene labels: the symbol column when the first column holds Ensembl ids (10x features)."""
    first = [r[0].strip() for r in rows]
    head = first[:200]
    if len(rows[0]) > 1 and sum(bool(_ENSEMBL.match(x)) for x in head) > len(head) / 2:
        return [r[1].strip() if len(r) > 1 else r[0].strip() for r in rows]
    return first


def _label_rows_for(rows: list[list[str]], n: int) -> list[list[str]] | None:
    """The file's rows as a labelling of an axis of length n (allowing one header line), or None."""
    if len(rows) == n:
        return rows
    if len(rows) == n + 1 and _looks_like_header(rows[0]):
        return rows[1:]
    return None


def read_mtx_folder(folder: Path, matrix_file: Path | None = None):
    """A Matrix Market folder under any names: the matrix (the one named, else the folder's
    only .mtx) plus two labellings assigned by length."""
    import anndata as ad

    files = sorted(p for p in folder.iterdir() if p.is_file())
    mtx = [matrix_file] if matrix_file else [p for p in files if _name(p).endswith(MATRIX_SUFFIXES)]
    if len(mtx) != 1:
        raise InputError(f"{folder}: expected one Matrix Market file (.mtx or .mtx.gz), "
                         f"found {len(mtx)}")
    labels = [p for p in files if _name(p).endswith(LABEL_SUFFIXES)]
    m = _read_mtx(mtx[0])
    n_rows, n_cols = m.shape
    if n_rows == 0 or n_cols == 0 or m.nnz == 0:
        raise InputError(f"{mtx[0]}: the matrix is empty ({n_rows} x {n_cols}, "
                         f"{m.nnz} non-zero entries)")
    read = {p: _read_lines(p) for p in labels}
    fits = {p: {ax: _label_rows_for(rows, n) for ax, n in (("rows", n_rows), ("cols", n_cols))}
            for p, rows in read.items() if rows}
    row_files = [p for p, f in fits.items() if f["rows"] is not None]
    col_files = [p for p, f in fits.items() if f["cols"] is not None]
    if not row_files or not col_files:
        seen = ", ".join(f"{p.name} ({len(r)} lines)" for p, r in read.items()) or "none"
        raise InputError(f"{mtx[0]}: is {n_rows} x {n_cols} but no pair of labelling files "
                         f"matches those lengths (files: {seen})")
    row_file, col_file = _assign_axes(row_files, col_files)
    row_rows, col_rows = fits[row_file]["rows"], fits[col_file]["cols"]
    # Which axis holds genes: the file whose name says so, else the one holding Ensembl ids or
    # several columns (10x features), else 10x's convention of genes as rows.
    genes_are_rows = _genes_axis_is_rows(row_file, col_file, row_rows, col_rows)
    if genes_are_rows:
        genes, cells, x = _symbols(row_rows), [r[0].strip() for r in col_rows], m.T.tocsr()
        gene_file, cell_file = row_file, col_file
    else:
        genes, cells, x = _symbols(col_rows), [r[0].strip() for r in row_rows], m
        gene_file, cell_file = col_file, row_file
    adata = ad.AnnData(x.astype("float32"))
    adata.obs_names, adata.var_names = cells, genes
    adata.var_names_make_unique()
    adata.uns["biotool_source"] = {"matrix": mtx[0].name, "genes": gene_file.name,
                                   "cells": cell_file.name}
    return adata


def _assign_axes(row_files: list[Path], col_files: list[Path]) -> tuple[Path, Path]:
    for r in row_files:
        for c in col_files:
            if r != c:
                return r, c
    raise InputError(f"{row_files[0].parent}: one labelling file fits both axes and no second "
                     "file labels the other axis")


def _genes_axis_is_rows(row_file, col_file, row_rows, col_rows) -> bool:
    rn, cn = row_file.name, col_file.name
    if _GENE_HINT.search(rn) and not _GENE_HINT.search(cn):
        return True
    if _GENE_HINT.search(cn) and not _GENE_HINT.search(rn):
        return False
    if _CELL_HINT.search(cn) and not _CELL_HINT.search(rn):
        return True
    if _CELL_HINT.search(rn) and not _CELL_HINT.search(cn):
        return False
    ens_r = sum(bool(_ENSEMBL.match(r[0])) for r in row_rows[:100])
    ens_c = sum(bool(_ENSEMBL.match(r[0])) for r in col_rows[:100])
    if ens_r != ens_c:
        return ens_r > ens_c
    return True


def read_table(path: Path):
    """A cell-by-gene CSV/TSV: first column cell names, header gene names."""
    import anndata as ad
    import numpy as np
    import pandas as pd

    sep = "," if ".csv" in _name(path) else "\t"
    try:
        df = pd.read_csv(path, sep=sep, index_col=0)
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: the table is empty") from None
    except pd.errors.ParserError as exc:
        why = " ".join(str(exc).split()).removeprefix("Error tokenizing data. C error: ")
        raise InputError(f"{path}: rows of different lengths ({why}); every row needs one "
                         "field per header column") from None
    except _READ_ERRORS as exc:
        raise _corrupt(path, exc) from None
    if df.shape[0] == 0 or df.shape[1] == 0:
        raise InputError(f"{path}: the table is empty ({df.shape[0]} cells x {df.shape[1]} genes)")
    bad = [c for c in df.columns if not np.issubdtype(df[c].dtype, np.number)]
    if bad:
        raise InputError(f"{path}: column {bad[0]!r} is not numeric; expected a cell-by-gene "
                         "table (cell names in the first column, gene names in the header)")
    orientation = "cells x genes"
    if _mostly_barcodes(df.columns) and not _mostly_barcodes(df.index):
        # Gene-by-cell tables are common too; cell barcodes in the header give them away.
        df, orientation = df.T, "genes x cells (header holds cell barcodes): transposed"
    adata = ad.AnnData(df.to_numpy(dtype="float32"))
    adata.obs_names = [str(i) for i in df.index]
    adata.var_names = [str(c) for c in df.columns]
    adata.var_names_make_unique()
    adata.uns["biotool_source"] = {"table": orientation}
    return adata


def _read_h5ad(path: Path):
    import anndata as ad
    import numpy as np

    try:
        adata = ad.read_h5ad(path)
    except Exception as exc:  # noqa: BLE001 - h5py/anndata raise many types for a bad file
        raise _corrupt(path, exc) from None
    x = adata.X
    if x is not None and adata.n_obs and adata.n_vars and _min(x) < 0 and adata.raw is not None:
        # Scaled (centred) data cannot be renormalised; .raw keeps what came before scaling.
        raw = adata.raw.to_adata()
        raw.uns["biotool_source"] = {"layer": ".raw (X is scaled)"}
        adata = raw
    if adata.X is None:
        raise InputError(f"{path}: the AnnData file has no expression matrix in X")
    adata.X = adata.X.astype(np.float32) if hasattr(adata.X, "astype") else adata.X
    adata.var_names_make_unique()
    return adata


def _read_10x_h5(path: Path):
    import scanpy as sc

    try:
        adata = sc.read_10x_h5(str(path))
    except Exception as exc:  # noqa: BLE001
        raise _corrupt(path, exc) from None
    adata.var_names_make_unique()
    return adata


def _min(x) -> float:
    import scipy.sparse as sp

    return float(x.min()) if not sp.issparse(x) else float(min(0.0, x.min()))


def load(path: str | Path):
    """Any supported matrix as AnnData (cells x genes), with `uns['biotool_source']` saying how."""
    from biotool.files import input_file

    # stat before any open: a FIFO, device or unreadable folder is refused, never read.
    path = input_file(path, "--matrix", allow_dir=True)
    name = _name(path)
    if path.is_dir():
        inner = [p for p in path.iterdir() if p.is_file()]
        if any(_name(p).endswith(MATRIX_SUFFIXES) for p in inner):
            adata = read_mtx_folder(path)
        else:
            single = [p for p in inner if _name(p).endswith((".h5ad", ".h5") + TABLE_SUFFIXES)]
            # Cell Ranger's outs/ holds the matrix one folder down (filtered_feature_bc_matrix/).
            nested = [d for d in path.iterdir() if d.is_dir() and _holds_mtx(d)]
            if len(single) == 1:
                return load(single[0])
            if not single and len(nested) == 1:
                return load(nested[0])
            raise InputError(f"{path}: holds no Matrix Market file and not exactly one "
                             ".h5ad/.h5/.csv/.tsv matrix" + (
                                 f" (subfolders with one: {', '.join(sorted(d.name for d in nested))}"
                                 "; name one)" if nested else ""))
    elif name.endswith(".h5ad"):
        adata = _read_h5ad(path)
    elif name.endswith(".h5"):
        adata = _read_10x_h5(path)
    elif name.endswith(MATRIX_SUFFIXES):
        adata = read_mtx_folder(path.parent, path)
    elif name.endswith(TABLE_SUFFIXES):
        adata = read_table(path)
    else:
        raise InputError(f"{path}: unsupported matrix format (use .h5ad, 10x .h5, a folder with "
                         ".mtx(.gz) and two labelling files, or a cell-by-gene .csv/.tsv)")
    if adata.n_obs == 0 or adata.n_vars == 0:
        raise InputError(f"{path}: the matrix is empty "
                         f"({adata.n_obs} cells x {adata.n_vars} genes)")
    _require_finite(adata, path)
    if _nnz(adata.X) == 0:
        raise InputError(f"{path}: the matrix holds no non-zero value")
    adata.uns.setdefault("biotool_source", {})
    adata.uns["biotool_source"]["path"] = str(path)
    return adata


def _holds_mtx(folder: Path) -> bool:
    """Whether a subfolder holds a Matrix Market file; an unreadable one holds none we can use."""
    try:
        return any(_name(p).endswith(MATRIX_SUFFIXES) for p in folder.iterdir() if p.is_file())
    except OSError:
        return False


def _require_finite(adata, path: Path) -> None:
    """Every value a finite number: NaN and inf (a missing entry, a short row) poison the
    normalisation and every model's answer."""
    import numpy as np
    import scipy.sparse as sp

    x = adata.X
    values = x.data if sp.issparse(x) else np.asarray(x)
    bad = ~np.isfinite(values)
    if not bad.any():
        return
    where = ""
    if not sp.issparse(x):
        r, c = (int(i[0]) for i in np.nonzero(bad))
        where = f" (first: cell {adata.obs_names[r]}, gene {adata.var_names[c]})"
    raise InputError(f"{path}: {int(bad.sum())} value(s) are NaN or infinite{where}: a missing "
                     "or non-numeric entry, or a row shorter than the header; every entry must "
                     "be a finite number")


def _nnz(x) -> int:
    import numpy as np
    import scipy.sparse as sp

    return int(x.count_nonzero() if sp.issparse(x) else np.count_nonzero(x))


def detect_scale(adata, sample: int = 500) -> str:
    """What the values are: "counts", "log1p", "normalised" (not log) or "scaled"."""
    import numpy as np
    import scipy.sparse as sp

    x = adata.X[: min(sample, adata.n_obs)]
    x = x.toarray() if sp.issparse(x) else np.asarray(x)
    if x.min() < 0:
        return "scaled"
    nz = x[x > 0]
    if nz.size and np.allclose(nz, np.rint(nz), atol=1e-3):
        return "counts"
    # log1p of even a million counts is under 14; larger non-integer values are not logged.
    return "log1p" if x.max() < 30 else "normalised"


def normalise(adata):
    """log1p expression normalised to 10k counts per cell, and a note of what was done.

    CellTypist was trained on exactly this; log data normalised to another total are brought
    back to counts-per-10k (expm1, rescale, log1p) so every model sees the same scale.
    """
    import numpy as np
    import scanpy as sc
    import scipy.sparse as sp

    kind = detect_scale(adata)
    out = adata.copy()
    if kind == "scaled":
        raise InputError(f"{adata.uns.get('biotool_source', {}).get('path', 'matrix')}: values "
                         "are scaled/centred (negative values) and no .raw layer holds the "
                         "unscaled data; give counts or log-normalised expression")
    if kind == "log1p":
        out.X = out.X.expm1() if sp.issparse(out.X) else np.expm1(out.X)
        sums = np.asarray(out.X.sum(axis=1)).ravel()
        already = bool(np.allclose(sums[sums > 0], TARGET_SUM, rtol=1e-3))
        note = ("input already log1p-normalised to 10k counts per cell; used as is" if already
                else "input log1p-normalised to another total; rescaled to 10k counts per cell")
    elif kind == "normalised":
        note = "input normalised but not log-transformed; rescaled to 10k and log1p applied"
    else:
        note = "input raw counts; normalised to 10k counts per cell and log1p applied"
    empty = np.asarray(out.X.sum(axis=1)).ravel() == 0
    if empty.all():
        raise InputError("matrix: every cell has zero total expression")
    if empty.any():
        out = out[~empty].copy()
    sc.pp.normalize_total(out, target_sum=TARGET_SUM)
    sc.pp.log1p(out)
    out.X = sp.csr_matrix(out.X, dtype=np.float32)
    return out, {"input": kind, "action": note,
                 "cells_without_expression_dropped": int(empty.sum())}
