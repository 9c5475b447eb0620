"""The families' code that staging runs by a manifest's word: `builder = NAME` makes an item
that is built rather than fetched, `check = NAME` proves a staged model answers. Each name
maps to its function here, imported only when an item names it (the data stage copies none
of the demo's builders), so a manifest holds names and never an import path."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from biotool.staging import StagingError


def _demo_celltypist_model(dest: Path, refs_dir: Path) -> Path:
    from biotool.singlecell.demo_model import build

    return build(dest, refs_dir)


def _demo_pbmc_heldout_sample(dest: Path, refs_dir: Path) -> Path:
    from biotool.singlecell.demo_model import build_sample

    return build_sample(dest, refs_dir)


def _cell2sentence_prompt(folder: Path) -> dict:
    from biotool.singlecell.c2s import check_staged

    return check_staged(folder)


# builder name -> fn(dest_dir, refs_dir): the path of what it wrote into dest_dir.
BUILDERS: dict[str, Callable[[Path, Path], Path]] = {
    "demo-celltypist-model": _demo_celltypist_model,
    "demo-pbmc-heldout-sample": _demo_pbmc_heldout_sample,
}
# check name -> fn(model_dir): {"tokenizer_ids": [...], "answer": ...}.
CHECKS: dict[str, Callable[[Path], dict]] = {
    "cell2sentence-prompt": _cell2sentence_prompt,
}


def named(table: dict, field: str, name: str, what: str) -> Callable:
    """The function `name` of `table` (BUILDERS or CHECKS); StagingError naming the known
    ones when a manifest's `field` names another."""
    try:
        return table[name]
    except KeyError:
        raise StagingError(f"{what}: {field} {name!r} is none of {', '.join(sorted(table))} "
                           "(biotool.stagebuild.hooks)") from None
