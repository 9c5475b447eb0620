"""celltype's refusals on the staged demo sample: models named but not staged here, numbers
out of range, options that the chosen model would silently ignore. One line, exit 2, no stdout."""

from __future__ import annotations

import pytest

PBMC = "demo-pbmc68k-heldout"


def test_production_models_named_but_not_staged_say_so(biotool, staged_home):
    """The demo image names the production panels and C2S without staging them: an agent that
    asks for one is told it is not staged here (and why), in one line, before any work."""
    sample = str(staged_home / "samples" / PBMC)
    r = biotool("celltype", "--matrix", sample, "--model", "c2s-celltype")
    assert r.code == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert ("--c2s-model: no usable staged model 'C2S-Pythia-410m-cell-type-prediction' (not "
            "staged in this image: set 'production'") in r.stderr
    assert "huggingface.co" in r.stderr and "--model celltypist" in r.stderr
    r = biotool("celltype", "--matrix", sample, "--reference", "human_lung_atlas")
    assert r.code == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert ("--reference: no usable staged model 'Human_Lung_Atlas' (not staged in this image: "
            "set 'production'") in r.stderr
    assert "staged models: demo-pbmc68k-celltypist;" in r.stderr


@pytest.mark.parametrize("flag,value", [("--batch-size", "0"), ("--timeout", "-1"),
                                        ("--timeout", "nan"), ("--budget-seconds", "-1")])
def test_out_of_range_budget_and_batch_are_refused(biotool, staged_home, flag, value):
    r = biotool("celltype", "--matrix", str(staged_home / "samples" / PBMC), "--model", "all",
                flag, value)
    assert r.code == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    # --budget-seconds is the old, hidden spelling of --timeout: the error uses the new name.
    assert f"Invalid value for '{flag.replace('--budget-seconds', '--timeout')}': " in r.stderr
    assert f"': {value} is not" in r.stderr  # the value as written


def test_a_celltypist_reference_with_c2s_only_is_refused_not_ignored(biotool, staged_home):
    r = biotool("celltype", "--matrix", str(staged_home / "samples" / PBMC), "--model",
                "c2s-celltype", "--reference", "demo-pbmc68k-celltypist")
    assert r.code == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert "--reference demo-pbmc68k-celltypist" in r.stderr
    r = biotool("celltype", "--genes", "CD3E,LYZ", "--model", "c2s-celltype", "--reference",
                "demo-pbmc68k-celltypist")
    assert r.code == 2 and "--genes goes to Cell2Sentence only" in r.stderr
