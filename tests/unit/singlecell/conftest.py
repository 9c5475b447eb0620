"""Single-cell fixtures: real PBMC counts, CellTypist models trained in seconds, a tiny C2S
model, and homes staged from temporary manifests through the real staging code."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from biotool.cache import sha256_tree


@pytest.fixture(scope="session", autouse=True)
def _celltypist_folder(tmp_path_factory):
    # celltypist creates its model folder at import; never under the real HOME in tests.
    # Session scope so it is set before the session fixtures that train models import it.
    old = os.environ.get("CELLTYPIST_FOLDER")
    os.environ["CELLTYPIST_FOLDER"] = str(tmp_path_factory.getbasetemp() / "celltypist")
    yield
    if old is None:
        os.environ.pop("CELLTYPIST_FOLDER", None)
    else:
        os.environ["CELLTYPIST_FOLDER"] = old


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    # Shared CI cores: torch's default intra-op threads oversubscribe them badly.
    import torch

    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def pbmc():
    """scanpy's pbmc68k_reduced as integer counts, with `bulk_labels`."""
    from biotool.singlecell.demo_model import pbmc_counts

    return pbmc_counts()


@pytest.fixture(scope="session")
def halves(pbmc):
    """(train, query): a seeded split of the PBMC cells, so the query was never trained on."""
    import numpy as np

    order = np.random.default_rng(0).permutation(pbmc.n_obs)
    return pbmc[order[:350]].copy(), pbmc[order[350:]].copy()


def title_case(names):
    """Mouse-style symbols (Cd3e) from human-style ones (CD3E)."""
    return [n[:1].upper() + n[1:].lower() for n in names]


@pytest.fixture(scope="session")
def ct_models(halves, tmp_path_factory) -> dict[str, Path]:
    """CellTypist models trained on the training half: the matching PBMC model, two models
    whose gene names were permuted (expression programmes unrelated to the query, standing in
    for references of other tissues), and a mouse-named copy of the PBMC model."""
    import numpy as np

    from biotool.singlecell.demo_model import train

    train_half, _ = halves
    d = tmp_path_factory.mktemp("ct-models")
    out = {"pbmc-blood": d / "pbmc-blood.pkl"}
    train(train_half, out=out["pbmc-blood"])
    for name, seed in (("unrelated-a", 1), ("unrelated-b", 2)):
        shuffled = train_half.copy()
        perm = np.random.default_rng(seed).permutation(shuffled.n_vars)
        shuffled.var_names = list(np.asarray(train_half.var_names)[perm])
        out[name] = d / f"{name}.pkl"
        train(shuffled, out=out[name])
    mouse = train_half.copy()
    mouse.var_names = title_case(train_half.var_names)
    out["mouse-blood"] = d / "mouse-blood.pkl"
    train(mouse, out=out["mouse-blood"])
    return out


@pytest.fixture(scope="session")
def tiny_c2s(pbmc, tmp_path_factory) -> dict[str, Path]:
    """A tiny C2S-shaped model: weights and tokenizer in separate folders, plus a folder with
    both and a folder with weights only."""
    import shutil

    from biotool.singlecell import tiny_c2s as tiny

    d = tmp_path_factory.mktemp("c2s")
    weights, tok = tiny.build(d / "weights", list(pbmc.var_names), tokenizer_dest=d / "tokenizer")
    both = d / "both"
    shutil.copytree(weights, both)
    shutil.copytree(tok, both, dirs_exist_ok=True)
    return {"weights": weights, "tokenizer": tok, "both": both}


def _toml_value(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.fixture(scope="session")
def stage_models(tmp_path_factory):
    """stage_models(entries) -> env: a manifest of [[model]] entries (source paths pinned by
    their sha256) staged into a fresh home by biotool.stagebuild.build.stage."""
    from biotool.stagebuild.build import stage

    def make(entries: list[dict]) -> dict:
        root = tmp_path_factory.mktemp("sc-home")
        manifests = root / "manifests-src"
        manifests.mkdir()
        lines = []
        for e in entries:
            e = {"set": "test", **e}
            if "source" in e and "sha256" not in e:
                e["sha256"] = sha256_tree(e["source"])
            lines.append("[[model]]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in e.items()]
            lines.append("")
        (manifests / "models.toml").write_text("\n".join(lines))
        home = root / "home"
        stage(manifests, home, ["test"])
        # One torch thread: on shared CI cores, oversubscribed intra-op threads run ~30x slower.
        return {"BIOTOOL_HOME": str(home), "BIOTOOL_MANIFESTS": str(manifests),
                "CELLTYPIST_FOLDER": str(root / "celltypist"), "OMP_NUM_THREADS": "1"}

    return make


@pytest.fixture(scope="session")
def query_h5ad(halves, tmp_path_factory) -> Path:
    """The held-out PBMC half as counts in an .h5ad."""
    _, query = halves
    path = tmp_path_factory.mktemp("query") / "pbmc_query.h5ad"
    query.write_h5ad(path)
    return path


@pytest.fixture
def use_home(monkeypatch):
    """Point this process at a staged home (for in-process calls)."""
    def use(env: dict) -> None:
        for k, v in env.items():
            monkeypatch.setenv(k, v)
    return use


os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


@pytest.fixture(scope="session")
def mouse_names():
    """The title_case renamer, for tests that build mouse-named data."""
    return title_case
