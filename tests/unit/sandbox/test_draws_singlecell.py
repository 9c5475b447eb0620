"""The single-cell draw (biotool_sandbox.draws.singlecell.subsample): a subsample of the held-out
PBMC cells in which one type dominates. The truth is checked against biotool celltype's own
code path on the written folder (its matrix reader, normalisation and CellTypist scoring), and
the files against the staged sample they were cut from."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from biotool_sandbox.draws import singlecell

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


def draw(seed: int, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    return singlecell.subsample(random.Random(seed), out)


def biotool_composition(folder: Path) -> tuple[int, list[dict]]:
    """(cells, composition) as `biotool celltype --reference demo-pbmc68k-celltypist` computes
    them, in this process."""
    from biotool.singlecell import celltypist_panel as ctp
    from biotool.singlecell import matrix

    adata = matrix.load(folder)
    norm, _ = matrix.normalise(adata)
    s = ctp.score(norm, ctp.load_model(singlecell.model_path()))
    return adata.n_obs, ctp.composition(s["labels"], s["max_prob"])


@pytest.fixture(scope="module")
def drawn(staged_home, tmp_path_factory) -> dict[int, tuple[dict, Path]]:
    """Three draws (each runs CellTypist twice: drawn once per module)."""
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BIOTOOL_HOME", str(staged_home))
        for seed in (1, 2, 3):
            folder = tmp_path_factory.mktemp(f"draw{seed}")
            out[seed] = (draw(seed, folder), folder)
    return out


def test_files_in_the_sample_format(drawn, biotool_env):
    truth, folder = drawn[1]
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) \
        == [f"sample/{f}" for f in sorted(singlecell.FILES)]
    counts, genes, cells = singlecell.read_sample(folder / "sample")
    assert counts.shape == (truth["cells"], len(genes)) == (len(cells), len(genes))


def test_cells_are_the_staged_cells_unchanged(drawn, biotool_env):
    """Every cell is one of the held-out sample's, with its counts as staged; none twice."""
    from biotool import staging

    src = staging.require("sample", singlecell.SAMPLE, "test").path("main")
    full, full_genes, full_cells = singlecell.read_sample(src)
    where = {c: i for i, c in enumerate(full_cells)}
    for truth, folder in drawn.values():
        counts, genes, cells = singlecell.read_sample(folder / "sample")
        assert genes == full_genes and len(set(cells)) == len(cells)
        picked = [where[c] for c in cells]
        assert (counts != full[picked]).nnz == 0
        assert counts.dtype.kind == "i"


def test_same_seed_same_files_and_truth(drawn, biotool_env, tmp_path):
    truth, folder = drawn[2]
    assert draw(2, tmp_path) == truth
    for name in singlecell.FILES:
        assert (tmp_path / "sample" / name).read_bytes() == \
            (folder / "sample" / name).read_bytes()


def test_truth_is_biotools_composition(drawn, biotool_env):
    """biotool celltype's own reader, normalisation and scoring on the written folder give the
    truth: the draw's CellTypist call is the same computation, not a look-alike."""
    for truth, folder in drawn.values():
        cells, comp = biotool_composition(folder / "sample")
        assert cells == truth["cells"]
        assert (comp[0]["cell_type"], comp[0]["cells"]) == (truth["dominant"],
                                                           truth["dominant_cells"])
        assert comp[0]["cells"] >= singlecell.MIN_DOMINANT
        assert all(c["cells"] <= singlecell.OTHERS_SHARE * comp[0]["cells"] for c in comp[1:])


def test_labels_are_per_cell(drawn, biotool_env):
    """A cell's label does not depend on the cells beside it (best match, no majority voting):
    the subsample's labels are the full sample's for the same cells."""
    from biotool import staging
    from celltypist.models import Model

    model = Model.load(str(singlecell.model_path()))
    src = staging.require("sample", singlecell.SAMPLE, "test").path("main")
    full = dict(zip(singlecell.read_sample(src)[2],
                    singlecell.labels(*singlecell.read_sample(src), model)))
    truth, folder = drawn[3]
    cells = singlecell.read_sample(folder / "sample")[2]
    tally = Counter(full[c] for c in cells)
    assert tally.most_common(1)[0] == (truth["dominant"], truth["dominant_cells"])


def test_answer_space(drawn, biotool_env):
    """Drawn uniformly from the choices, each a different (dominant, its cells, all cells), no
    fixed answer is right with chance 1e-4 on the staged sample's composition."""
    from biotool import staging
    from celltypist.models import Model

    assert len({json.dumps(t, sort_keys=True) for t, _ in drawn.values()}) == len(drawn)
    src = staging.require("sample", singlecell.SAMPLE, "test").path("main")
    labels = singlecell.labels(*singlecell.read_sample(src),
                               Model.load(str(singlecell.model_path())))
    options = singlecell.choices(dict(Counter(labels)))
    answers = {(t, k, k + m) for t, k, m in options}
    assert len(answers) == len(options) and 1 / len(options) < 1e-4


def test_choices_keep_one_type_dominant():
    sizes = {"A": 30, "B": 25, "C": 3}
    for t, k, m in singlecell.choices(sizes):
        cap = int(singlecell.OTHERS_SHARE * k)
        assert singlecell.MIN_DOMINANT <= k <= sizes[t] and k // 4 <= m
        assert m <= sum(min(v, cap) for u, v in sizes.items() if u != t)
