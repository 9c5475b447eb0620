"""Staging against a local fake of the production sources (biotool_testing/fake_sources.py),
with the repository's real manifests; CellTypist models really trained, a tiny real C2S
model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from biotool_testing.fake_sources import FakeSources, populate

REPO = Path(__file__).resolve().parents[3]

# The production items these tests stage (a subset of refs/, so a run takes seconds).
ITEMS = ["Healthy_COVID19_PBMC", "Immune_All_High", "Human_Lung_Atlas",
         "C2S-Pythia-410m-cell-type-prediction", "GRCh38", "human-gene-annotation",
         "ref_viruses_rep_genomes", "human-gtf", "swissprot", "k2_viral"]


@pytest.fixture(scope="session")
def item_names() -> list[str]:
    return list(ITEMS)


@pytest.fixture(scope="session")
def trained_models(tmp_path_factory) -> dict[str, Path]:
    """Real CellTypist models on scanpy's PBMCs: two fitted to the cells, one whose gene names
    were permuted (an unrelated tissue's programme)."""
    import numpy as np

    os.environ.setdefault("CELLTYPIST_FOLDER", str(tmp_path_factory.mktemp("celltypist")))
    from biotool.singlecell.demo_model import pbmc_counts, train

    counts = pbmc_counts()
    sub = counts[np.random.default_rng(0).permutation(counts.n_obs)[:300]].copy()
    d = tmp_path_factory.mktemp("ct")
    out = {}
    for name, seed in (("Healthy_COVID19_PBMC", None), ("Immune_All_High", None),
                       ("Human_Lung_Atlas", 1)):
        data = sub.copy()
        if seed is not None:
            perm = np.random.default_rng(seed).permutation(data.n_vars)
            data.var_names = list(np.asarray(sub.var_names)[perm])
        out[name] = d / f"{name}.pkl"
        train(data, out=out[name])
    return out


@pytest.fixture(scope="session")
def c2s_folder(tmp_path_factory) -> Path:
    from biotool.singlecell import tiny_c2s

    d = tmp_path_factory.mktemp("c2s") / "repo"

    tiny_c2s.build(d, ["MALAT1", "TMSB4X", "B2M", "CD3E", "LYZ", "MS4A1"])
    return d


@pytest.fixture(scope="session")
def world(tmp_path_factory, trained_models, c2s_folder):
    """(served root, truth) for every item in ITEMS, laid out at its real URL's path."""
    root = tmp_path_factory.mktemp("sources")
    truth = populate(root, REPO / "refs", tmp_path_factory.mktemp("work"), trained_models,
                     c2s_folder)
    return root, truth


@pytest.fixture
def server(world, monkeypatch):
    root, _ = world
    monkeypatch.setenv("BIOTOOL_FETCH_BACKOFF", "0.01")
    with FakeSources(root) as srv:
        monkeypatch.setenv("BIOTOOL_SOURCE_MIRROR", srv.url)
        yield srv


@pytest.fixture(scope="session")
def pinned(world, tmp_path_factory):
    """A lock pinned once against the fake sources, for tests that stage from it."""
    from biotool.stagebuild import pins

    root, _ = world
    lock = tmp_path_factory.mktemp("lock") / "pins.lock.toml"
    # A session fixture has no monkeypatch of its own; the mirror is unset again after.
    with FakeSources(root) as srv, pytest.MonkeyPatch.context() as mp:
        mp.setenv("BIOTOOL_SOURCE_MIRROR", srv.url)
        pins.pin(REPO / "refs", ["production"], lock, only=ITEMS)
    return lock


@pytest.fixture(scope="session")
def prod_home(world, pinned, tmp_path_factory):
    """A home with the ITEMS staged from the lock (the fake served them)."""
    from biotool.stagebuild import build

    root, _ = world
    home = tmp_path_factory.mktemp("home")
    # A session fixture has no monkeypatch of its own; the mirror is unset again after.
    with FakeSources(root) as srv, pytest.MonkeyPatch.context() as mp:
        mp.setenv("BIOTOOL_SOURCE_MIRROR", srv.url)
        build.stage(REPO / "refs", home, ["production"], lock=pinned, only=ITEMS)
    return home


@pytest.fixture
def use_home(monkeypatch):
    def use(home: Path, site: Path | None = None) -> None:
        monkeypatch.setenv("BIOTOOL_HOME", str(home))
        monkeypatch.setenv("BIOTOOL_MANIFESTS", str(home / "manifests"))
        if site is not None:
            monkeypatch.setenv("BIOTOOL_SITE_DIR", str(site))
        else:
            monkeypatch.delenv("BIOTOOL_SITE_DIR", raising=False)
    return use
