"""The demo samples (refs/samples.toml) staged through the real staging code: where agents find
them, the PBMC sample held out from the demo model's training, and the demo session that runs
every family on them."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from biotool.cache import sha256_file, sha256_tree

REFS = Path(__file__).resolve().parents[3] / "refs"
READS, PBMC = "demo-sarscov2-artic-reads", "demo-pbmc68k-heldout"


@pytest.fixture(scope="module")
def manifest() -> dict:
    return {e["name"]: e for e in tomllib.loads((REFS / "samples.toml").read_text())["sample"]}


@pytest.fixture(scope="module")
def split_cells():
    from biotool.singlecell.demo_model import pbmc_counts, split

    return split(pbmc_counts())


def test_samples_are_staged_under_samples_and_listed(biotool, staged_home, manifest):
    r = biotool("list")
    assert r.code == 0, r.stderr
    # Items of a set left out of the build carry no kind (list stays under 8 KB): staged ones do.
    assert all("kind" in i for i in r.json["items"] if i["staged"])
    samples = {i["name"]: i for i in r.json["items"] if i.get("kind") == "sample"}
    assert set(samples) == {READS, PBMC} and all(s["usable"] for s in samples.values())
    reads = Path(samples[READS]["path"])
    assert reads == staged_home / "samples" / READS / "MT007544.fastq"
    assert sha256_file(reads) == manifest[READS]["sha256"] == samples[READS]["sha256"]
    folder = Path(samples[PBMC]["path"])
    assert folder == staged_home / "samples" / PBMC
    assert sorted(p.name for p in folder.iterdir()) == ["cells.tsv.gz", "counts.mtx.gz",
                                                        "genes.tsv.gz"]


def test_pbmc_sample_is_the_held_out_cells_as_counts(staged_home, split_cells, manifest):
    import numpy as np

    from biotool.singlecell import matrix

    train, held = split_cells
    adata = matrix.load(staged_home / "samples" / PBMC)
    assert adata.uns["biotool_source"]["genes"] == "genes.tsv.gz"
    assert list(adata.obs_names) == list(held.obs_names)
    assert list(adata.var_names) == list(held.var_names)
    assert np.array_equal(adata.X.toarray(), held.X.toarray())
    assert not set(adata.obs_names) & set(train.obs_names)
    # Every label keeps cells on both sides, and the titles' numbers are the real ones.
    assert set(held.obs["bulk_labels"]) == set(train.obs["bulk_labels"])
    assert manifest[PBMC]["title"].startswith(f"{held.n_obs} human PBMCs x {held.n_vars} genes")
    models = tomllib.loads((REFS / "models.toml").read_text())["model"]
    demo = next(m for m in models if m["name"] == "demo-pbmc68k-celltypist")
    assert f"{train.n_obs} of its {train.n_obs + held.n_obs} PBMCs" in demo["title"]


def test_demo_model_labels_its_held_out_sample(biotool, staged_home, split_cells):
    """The demo model on cells it never saw: most get their curated label back."""
    import numpy as np

    from biotool import staging
    from biotool.singlecell import celltypist_panel as ctp
    from biotool.singlecell import matrix

    norm, note = matrix.normalise(matrix.load(staged_home / "samples" / PBMC))
    assert note["input"] == "counts"
    model = ctp.load_model(staging.find("model", "demo-pbmc68k-celltypist").path())
    labels = ctp.score(norm, model)["labels"]
    truth = split_cells[1].obs["bulk_labels"].loc[list(norm.obs_names)].to_numpy()
    # 177 of 209 (85%, as docs/singlecell.md says) on the pinned stack; a little slack for solvers.
    assert float(np.mean(labels == truth)) >= 0.8


def test_sample_builder_is_byte_for_byte_reproducible(tmp_path, staged_home):
    from biotool.singlecell.demo_model import build_sample

    out = build_sample(tmp_path / "again", tmp_path)
    assert sha256_tree(out) == sha256_tree(staged_home / "samples" / PBMC)


def test_demo_session_runs_every_family_on_the_staged_samples(biotool):
    """biotool-sandbox demo's plan, built from this home's --help and list, run as planned."""
    from biotool_sandbox import demo

    todo, skipped = demo.plan(biotool("--help").stdout, biotool("list").stdout)
    planned = dict(todo)
    assert {"align", "variants", "breakpoints", "taxonomy", "celltype"} <= set(planned)
    assert not any(s.get("missing_sample") for s in skipped)
    for family, argv in todo:
        r = biotool("--quiet", *argv[1:])
        assert r.code == 0, f"{family}: {r.stderr}"
        if family == "celltype":
            ct = r.json["celltypist"]
            assert ct["reference"] == "demo-pbmc68k-celltypist" and ct["fit"] > 0.5
            assert r.json["matrix"]["cells"] == 209


def test_demo_session_fails_when_a_sample_is_not_staged(biotool):
    import json

    from biotool_sandbox import demo

    listed = biotool("list").json
    listed["items"] = [i for i in listed["items"] if i["name"] != PBMC]
    todo, skipped = demo.plan(biotool("--help").stdout, json.dumps(listed))
    assert "celltype" not in dict(todo) and "align" in dict(todo)
    assert {"family": "celltype", "why": f"sample {PBMC} not staged in this image",
            "missing_sample": PBMC} in skipped

