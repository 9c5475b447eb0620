"""Matrices are found by shape whatever they are called, normalised once, and bad ones refused."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from biotool.output import InputError
from biotool.singlecell import matrix


@pytest.fixture(scope="module")
def small(pbmc):
    return pbmc[:40].copy()


def _write(path: Path, text: str, gz: bool) -> None:
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)


def _mtx(path: Path, m, gz: bool) -> None:
    if gz:
        with gzip.open(path, "wb") as fh:
            scipy.io.mmwrite(fh, sp.coo_matrix(m))
    else:
        scipy.io.mmwrite(str(path), sp.coo_matrix(m))


def _ids(n):
    return [f"ENSG{i:011d}" for i in range(n)]


def _dense(x):
    return x.toarray() if sp.issparse(x) else np.asarray(x)


def _same(adata, small):
    assert adata.shape == small.shape
    assert list(adata.var_names) == list(small.var_names)
    assert list(adata.obs_names) == list(small.obs_names)
    assert np.allclose(_dense(adata.X), _dense(small.X))


@pytest.mark.parametrize("gz", [True, False])
def test_10x_v3_folder_gzipped_or_not(small, tmp_path, gz):
    ext = ".gz" if gz else ""
    _mtx(tmp_path / f"matrix.mtx{ext}", small.X.T, gz)
    feats = "".join(f"{i}\t{s}\tGene Expression\n" for i, s in zip(_ids(small.n_vars), small.var_names))
    _write(tmp_path / f"features.tsv{ext}", feats, gz)
    _write(tmp_path / f"barcodes.tsv{ext}", "\n".join(small.obs_names) + "\n", gz)
    _same(matrix.load(tmp_path), small)


def test_10x_v2_folder_genes_tsv(small, tmp_path):
    _mtx(tmp_path / "matrix.mtx", small.X.T, False)
    (tmp_path / "genes.tsv").write_text("".join(f"{i}\t{s}\n" for i, s in zip(_ids(small.n_vars), small.var_names)))
    (tmp_path / "barcodes.tsv").write_text("\n".join(small.obs_names) + "\n")
    _same(matrix.load(tmp_path / "matrix.mtx"), small)


def test_benchmark_names_and_cells_as_rows_are_assigned_by_length(small, tmp_path):
    # The real-run failure: counts.mtx.gz + genes.tsv.gz + cells.tsv.gz, here cells x genes.
    _mtx(tmp_path / "counts.mtx.gz", small.X, True)
    _write(tmp_path / "genes.tsv.gz", "\n".join(small.var_names) + "\n", True)
    _write(tmp_path / "cells.tsv.gz", "\n".join(small.obs_names) + "\n", True)
    adata = matrix.load(tmp_path)
    _same(adata, small)
    assert adata.uns["biotool_source"]["genes"] == "genes.tsv.gz"


def test_unhelpful_names_fall_back_to_lengths(small, tmp_path):
    _mtx(tmp_path / "data.mtx", small.X.T, False)
    (tmp_path / "a.txt").write_text("\n".join(small.var_names) + "\n")
    (tmp_path / "b.txt").write_text("barcode\n" + "\n".join(small.obs_names) + "\n")  # header line
    _same(matrix.load(tmp_path), small)


def test_10x_h5(small, tmp_path):
    import h5py

    path = tmp_path / "filtered_feature_bc_matrix.h5"
    m = sp.csc_matrix(small.X.T)  # genes x cells, stored by cell
    with h5py.File(path, "w") as f:
        g = f.create_group("matrix")
        g["data"], g["indices"], g["indptr"] = m.data.astype("int32"), m.indices, m.indptr
        g["shape"] = np.array(m.shape)
        g["barcodes"] = np.array(small.obs_names, dtype="S")
        feats = g.create_group("features")
        feats["id"] = np.array(_ids(small.n_vars), dtype="S")
        feats["name"] = np.array(small.var_names, dtype="S")
        feats["feature_type"] = np.array(["Gene Expression"] * small.n_vars, dtype="S")
        feats["genome"] = np.array(["GRCh38"] * small.n_vars, dtype="S")
    adata = matrix.load(path)
    assert adata.shape == small.shape
    assert list(adata.var_names) == list(small.var_names)


def test_cell_by_gene_csv_and_h5ad(small, tmp_path):
    import pandas as pd

    df = pd.DataFrame(small.X.toarray(), index=small.obs_names, columns=small.var_names)
    df.to_csv(tmp_path / "cells.csv")
    _same(matrix.load(tmp_path / "cells.csv"), small)
    small.write_h5ad(tmp_path / "x.h5ad")
    _same(matrix.load(tmp_path / "x.h5ad"), small)


def test_h5ad_with_scaled_x_uses_raw(tmp_path):
    import scanpy as sc

    pb = sc.datasets.pbmc68k_reduced()  # X is scaled (negative values); .raw is log-normalised
    pb.write_h5ad(tmp_path / "pb.h5ad")
    adata = matrix.load(tmp_path / "pb.h5ad")
    assert adata.n_vars == pb.raw.n_vars and adata.X.min() >= 0
    norm, note = matrix.normalise(adata)
    assert note["input"] == "log1p" and "another total" in note["action"]
    assert np.allclose(np.expm1(norm.X.toarray()).sum(axis=1), 1e4, rtol=1e-3)


def test_normalisation_detects_counts_and_already_normalised(small):
    norm, note = matrix.normalise(small)
    assert note["input"] == "counts"
    assert np.allclose(np.expm1(norm.X.toarray()).sum(axis=1), 1e4, rtol=1e-3)
    again, note2 = matrix.normalise(norm)
    assert note2["input"] == "log1p" and "already" in note2["action"]
    assert np.allclose(again.X.toarray(), norm.X.toarray(), atol=1e-4)
    # Counts per 10k without the log: non-integer, too large to be log1p; only the log is added.
    per10k = norm.copy()
    per10k.X = per10k.X.expm1()
    assert matrix.detect_scale(per10k) == "normalised"
    unlogged, note3 = matrix.normalise(per10k)
    assert note3["input"] == "normalised"
    assert np.allclose(unlogged.X.toarray(), norm.X.toarray(), atol=1e-4)


def test_empty_matrix_is_refused(tmp_path):
    (tmp_path / "empty.csv").write_text("cell,CD3E,MS4A1\n")
    with pytest.raises(InputError, match="empty"):
        matrix.load(tmp_path / "empty.csv")
    (tmp_path / "zeros.csv").write_text("cell,CD3E\nc1,0\n")
    with pytest.raises(InputError, match="no non-zero"):
        matrix.load(tmp_path / "zeros.csv")


def test_labellings_matching_neither_axis_are_refused(small, tmp_path):
    _mtx(tmp_path / "m.mtx", small.X.T, False)
    (tmp_path / "genes.tsv").write_text("\n".join(small.var_names[:-3]) + "\n")
    (tmp_path / "cells.tsv").write_text("\n".join(small.obs_names) + "\n")
    with pytest.raises(InputError, match=r"no pair of labelling files matches.*genes.tsv \(762 lines\)"):
        matrix.load(tmp_path)


def test_corrupt_gzip_names_the_file(small, tmp_path):
    _mtx(tmp_path / "matrix.mtx.gz", small.X.T, True)
    data = (tmp_path / "matrix.mtx.gz").read_bytes()
    (tmp_path / "matrix.mtx.gz").write_bytes(data[: len(data) // 2])  # truncated download
    (tmp_path / "features.tsv").write_text("\n".join(small.var_names) + "\n")
    (tmp_path / "barcodes.tsv").write_text("\n".join(small.obs_names) + "\n")
    with pytest.raises(InputError, match="matrix.mtx.gz: cannot be read"):
        matrix.load(tmp_path)


def test_cli_bad_input_is_one_line_exit_2(biotool, tmp_path):
    (tmp_path / "x.tsv.gz").write_bytes(b"not gzip at all")
    r = biotool("celltype", "--matrix", str(tmp_path / "x.tsv.gz"))
    assert r.code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "x.tsv.gz: cannot be read" in r.stderr


def test_gene_by_cell_csv_with_barcode_header_is_transposed(small, tmp_path):
    import pandas as pd

    df = pd.DataFrame(small.X.toarray().T, index=small.var_names, columns=small.obs_names)
    df.to_csv(tmp_path / "genes_by_cells.csv")
    adata = matrix.load(tmp_path / "genes_by_cells.csv")
    _same(adata, small)
    assert adata.uns["biotool_source"]["table"].startswith("genes x cells")


def test_quoted_labelling_files_load_as_unquoted_names(small, tmp_path):
    _mtx(tmp_path / "m.mtx", small.X.T, False)
    (tmp_path / "genes.csv").write_text("".join(f'"{g}"\n' for g in small.var_names))
    (tmp_path / "cells.csv").write_text("".join(f'"{c}"\n' for c in small.obs_names))
    _same(matrix.load(tmp_path), small)


def test_a_named_mtx_file_is_used_among_several(small, tmp_path):
    _mtx(tmp_path / "matrix.mtx", small.X.T, False)
    _mtx(tmp_path / "spliced.mtx", small.X.T[:, :5], False)
    (tmp_path / "features.tsv").write_text("\n".join(small.var_names) + "\n")
    (tmp_path / "barcodes.tsv").write_text("\n".join(small.obs_names) + "\n")
    _same(matrix.load(tmp_path / "matrix.mtx"), small)
    with pytest.raises(InputError, match="expected one Matrix Market file.*found 2"):
        matrix.load(tmp_path)


def test_an_outs_folder_finds_the_one_matrix_folder_inside(small, tmp_path):
    inner = tmp_path / "outs" / "filtered_feature_bc_matrix"
    inner.mkdir(parents=True)
    _mtx(inner / "matrix.mtx.gz", small.X.T, True)
    _write(inner / "features.tsv.gz", "\n".join(small.var_names) + "\n", True)
    _write(inner / "barcodes.tsv.gz", "\n".join(small.obs_names) + "\n", True)
    _same(matrix.load(tmp_path / "outs"), small)
    (tmp_path / "outs" / "raw_feature_bc_matrix").mkdir()
    _mtx(tmp_path / "outs" / "raw_feature_bc_matrix" / "matrix.mtx", small.X.T, False)
    with pytest.raises(InputError, match="subfolders with one: filtered_feature_bc_matrix, "
                                         "raw_feature_bc_matrix; name one"):
        matrix.load(tmp_path / "outs")
