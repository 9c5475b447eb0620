"""Cell2Sentence through the real transformers path with a tiny gene-symbol model: the
verbatim prompt, batching that answers exactly as one-at-a-time, the budget stop, and
tokenizer problems caught at load."""

from __future__ import annotations

import time

import pytest

from biotool.singlecell import c2s
from biotool_testing.arms import run_arms

TEMPLATE = ("The following is a list of {num_genes} gene names ordered by descending expression "
            "level in a {organism} cell. Your task is to give the cell type which this cell "
            "belongs to based on its gene expression.\nCell sentence: {cell_sentence}.\n"
            "The cell type corresponding to these genes is:")


@pytest.fixture(scope="module")
def prompts(halves):
    from biotool.singlecell import matrix

    norm, _ = matrix.normalise(halves[1])
    cells = c2s.cell_sentences(norm, 6, seed=1)
    return [c2s.prompt(c["genes"], "Homo sapiens") for c in cells]


@pytest.fixture(scope="module")
def loaded(tiny_c2s):
    return c2s.load(tiny_c2s["weights"], tiny_c2s["tokenizer"], device="cpu")


def test_prompt_is_the_published_template_verbatim():
    assert c2s.PROMPT == TEMPLATE
    assert c2s.prompt(["CD3E", "LYZ"], "Homo sapiens").endswith(
        "Cell sentence: CD3E LYZ.\nThe cell type corresponding to these genes is:")
    assert c2s.clean_answer(" CD4-positive, alpha-beta T cell.\nmore") == "CD4-positive, alpha-beta T cell"


def test_cell_sentences_rank_one_cells_genes_by_expression(halves):
    import numpy as np

    from biotool.singlecell import matrix

    norm, _ = matrix.normalise(halves[1])
    cell = c2s.cell_sentences(norm, 1, seed=3)[0]
    row = norm[cell["cell"]].X.toarray().ravel()
    values = [row[list(norm.var_names).index(g)] for g in cell["genes"]]
    assert values == sorted(values, reverse=True) and min(values) > 0
    assert len(cell["genes"]) == min(c2s.TOP_GENES, int(np.count_nonzero(row)))


def test_batched_generation_equals_one_at_a_time(loaded, prompts):
    batched = c2s.generate(loaded, prompts, batch_size=len(prompts))
    single = [c2s.generate(loaded, [p], batch_size=1)["answers"][0] for p in prompts]
    assert batched["answers"] == single
    assert len(set(single)) > 1  # the cells really differ, so equality is not vacuous
    # Answers are sliced at the prompt length: none of them repeats the prompt.
    assert not any("Cell sentence" in a for a in single)


def test_model_is_loaded_once_per_process(tiny_c2s, loaded):
    assert c2s.load(tiny_c2s["weights"], tiny_c2s["tokenizer"], device="cpu") is loaded


def test_budget_stops_between_batches_with_a_flag(loaded, prompts):
    # A spent budget answers no cell: the first cell is no longer free.
    out = c2s.generate(loaded, prompts, batch_size=1, deadline=time.monotonic())
    assert out["truncated"] is True and out["done"] == 0 and out["requested"] == len(prompts)
    full = c2s.generate(loaded, prompts, batch_size=2, deadline=time.monotonic() + 600)
    assert full["truncated"] is False and full["done"] == len(prompts)
    assert full["per_cell_s"] > 0
    # A measured cost per cell that does not fit what is left: not even the first cell runs.
    none = c2s.generate(loaded, prompts, batch_size=1, deadline=time.monotonic() + 5,
                        per_cell_estimate=60.0)
    assert none["done"] == 0 and none["truncated"] is True


@pytest.fixture(scope="module")
def c2s_env(stage_models, tiny_c2s, ct_models):
    return stage_models([
        {"name": "pbmc-blood", "framework": "celltypist", "organism": "human",
         "tissue": "blood", "source": str(ct_models["pbmc-blood"])},
        {"name": "tiny-c2s-tokenizer", "framework": "tokenizer",
         "source": str(tiny_c2s["tokenizer"])},
        {"name": "tiny-c2s", "aliases": ["c2s-celltype"], "framework": "cell2sentence",
         "organism": "human+mouse", "source": str(tiny_c2s["weights"]),
         "tokenizer": "tiny-c2s-tokenizer"},
        {"name": "broken-c2s", "framework": "cell2sentence", "organism": "human+mouse",
         "source": str(tiny_c2s["weights"])},
    ])


def test_all_runs_both_models_and_reports_agreement(biotool, c2s_env, query_h5ad):
    r = biotool("celltype", "--matrix", str(query_h5ad), "--model", "all", "--n-cells", "4",
                env=c2s_env)
    assert r.code == 0, r.stderr
    out = r.json
    assert out["c2s"]["cells_answered"] == 4 and out["c2s"]["truncated"] is False
    assert out["c2s"]["organism"] == "Homo sapiens" and out["c2s"]["device"] == "cpu"
    assert sum(c["cells"] for c in out["c2s"]["composition"]) == 4
    assert out["agreement"]["cells_compared"] == 4
    assert "consensus" not in out
    names = {u["name"] for u in out["provenance"]["used"]}
    assert {"tiny-c2s", "tiny-c2s-tokenizer", "pbmc-blood"} <= names


def test_command_budget_counts_the_load_and_says_what_it_covered(c2s_env, use_home,
                                                                  query_h5ad):
    from biotool.singlecell.celltype import BudgetRefusal, celltype_matrix

    use_home(c2s_env)
    # A budget that was spent before the command began: nothing is answered, exit 4.
    with pytest.raises(BudgetRefusal, match="ran out while loading the matrix"):
        celltype_matrix(str(query_h5ad), model="c2s-celltype", n_cells=5, batch_size=1,
                        budget_seconds=1, started=time.monotonic() - 2)
    out = celltype_matrix(str(query_h5ad), model="all", n_cells=5, batch_size=1,
                          budget_seconds=600)
    assert out["truncated"] is False
    assert out["timing"]["cells_covered"] == {"celltypist": out["matrix"]["cells"], "c2s": 5}
    assert 0 < out["timing"]["elapsed_s"] <= 600


def test_a_model_load_measured_too_long_is_refused_up_front(c2s_env, use_home, query_h5ad,
                                                           monkeypatch, tmp_path):
    """The load time an earlier run measured (kept in the cache) decides before loading."""
    from biotool import budget
    from biotool.singlecell import models
    from biotool.singlecell.celltype import BudgetRefusal, celltype_matrix

    use_home(c2s_env)
    monkeypatch.setenv("BIOTOOL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(c2s, "_LOADED", {})  # load afresh, as a new process would
    spec = models.c2s_model("c2s-celltype")
    key = f"c2s-load:{spec['weights']}:cpu"
    celltype_matrix(str(query_h5ad), model="c2s-celltype", n_cells=2, budget_seconds=600)
    assert 0 < budget.measured(key)["load_s"] < 600  # the real load, measured
    budget.record(key, load_s=500.0)                   # as a slow disk would have measured it
    monkeypatch.setattr(c2s, "_LOADED", {})  # a new process: the model is not held
    with pytest.raises(BudgetRefusal, match=r"took 500\.0 s on this machine .*give --timeout"):
        celltype_matrix(str(query_h5ad), model="c2s-celltype", n_cells=2, budget_seconds=60)
    both = celltype_matrix(str(query_h5ad), model="all", n_cells=2, budget_seconds=60)
    # Refused, not loaded and overrun: the process never held the model, and no new load was
    # measured over the slow one.
    assert c2s._LOADED == {} and budget.measured(key)["load_s"] == 500.0
    assert "took 500.0 s on this machine" in both["errors"]["c2s-celltype"]
    assert both["truncated"] is True and "c2s" not in both
    assert both["timing"]["cells_covered"] == {"celltypist": both["matrix"]["cells"]}


def test_genes_mode_answers_one_ranked_list(biotool, c2s_env):
    arms = run_arms(biotool, ("celltype", "--genes", "CD3E,IL7R,LTB,CCR7,LEF1,TCF7", "--model",
                              "c2s-celltype"), c2s_env)
    tool, control = arms["tool"], arms["control"]
    assert tool["species"]["species"] == "human" and isinstance(tool["cell_type"], str)
    # The control arm: the same answer without the competence of the call or the species.
    assert control["cell_type"] == tool["cell_type"] and "competence" not in control
    assert "competence" not in control["species"]


def test_weights_folder_without_tokenizer_fails_at_load(biotool, c2s_env, tiny_c2s):
    r = biotool("celltype", "--genes", "CD3E,IL7R,LTB,CCR7,LEF1", "--model", "c2s-celltype",
                "--c2s-model", str(tiny_c2s["weights"]), env=c2s_env)
    assert r.code == 2 and "no tokenizer" in r.stderr and r.stderr.count("\n") == 1
    r = biotool("celltype", "--genes", "CD3E,IL7R,LTB,CCR7,LEF1", "--model", "c2s-celltype",
                "--c2s-model", "broken-c2s", env=c2s_env)
    assert r.code == 4 and "no tokenizer" in r.stderr and r.stderr.count("\n") == 1


def test_a_folder_with_weights_and_tokenizer_loads(tiny_c2s):
    from biotool.singlecell.models import c2s_model

    spec = c2s_model(str(tiny_c2s["both"]))
    assert spec["tokenizer"] == spec["weights"] == tiny_c2s["both"]
    loaded = c2s.load(spec["weights"], spec["tokenizer"], device="cpu")
    assert c2s.generate(loaded, [c2s.prompt(["CD3E", "LYZ"], "Homo sapiens")])["done"] == 1


def test_c2s_needs_a_species_it_can_name(biotool, c2s_env):
    r = biotool("celltype", "--genes", "CD3E,Il7r,LTB,Ccr7,LEF1,Tcf7", "--model", "c2s-celltype",
                env=c2s_env)
    assert r.code == 2 and "--organism" in r.stderr


def test_generate_runs_the_budgets_plan_and_stops_where_it_says(loaded, prompts, monkeypatch):
    # The plan itself (what fits, batch sizes) is budget.Batches, tested with a clock of the
    # test's own in tests/unit/test_budget.py; here generate() must run exactly the batches the
    # plan hands out and flag the rest. A plan that allows 1 then 2 cells, on any host:
    from biotool import budget

    real = budget.Batches

    class Planned(real):
        def __iter__(self):
            for first, size in [(0, 1), (1, 2)]:
                self.done = first
                yield first, size
            self.done, self.per_item, self.truncated = 3, 0.5, True

    eight = (prompts * 8)[:8]
    monkeypatch.setattr(budget, "Batches", Planned)
    out = c2s.generate(loaded, eight, batch_size=8, deadline=None)
    monkeypatch.setattr(budget, "Batches", real)
    whole = c2s.generate(loaded, eight, batch_size=8)
    assert out["done"] == 3 and out["truncated"] is True and out["requested"] == 8
    assert out["answers"] == whole["answers"][:3] and out["per_cell_s"] == 0.5
    assert whole["done"] == 8 and whole["truncated"] is False
