"""The `hf-model` preparer: a Hugging Face model folder checked for config and weights in a
format transformers loads, then put to the item's own check (`check`, a name of
biotool.stagebuild.hooks.CHECKS: for Cell2Sentence, a real prompt its tokenizer encodes and
the model continues)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from biotool.staging import StagingError
from biotool.stagebuild.hooks import CHECKS, named
from biotool.stagebuild.tools import Prepared

# What transformers' PyTorch loader reads as weights: one file, or an index of shards.
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def check_weights(folder: Path) -> list[str]:
    """The weight files of a staged Hugging Face folder (a shard index counts when every shard
    it names is there); StagingError naming what is there when there are none."""
    if not (folder / "config.json").is_file():
        raise StagingError(f"{folder.name}: no config.json among the staged files")
    found = [w for w in WEIGHT_FILES if (folder / w).is_file()]
    for index in (folder / f"{w}.index.json" for w in WEIGHT_FILES):
        if not index.is_file():
            continue
        try:
            shards = set(json.loads(index.read_text())["weight_map"].values())
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            raise StagingError(f"{index.name}: not a shard index ({exc})") from None
        missing = sorted(sh for sh in shards if not (folder / sh).is_file())
        if missing:
            raise StagingError(f"{index.name} names shards that were not staged: "
                               f"{', '.join(missing)[:200]}")
        found.append(index.name)
    if not found:
        have = ", ".join(sorted(p.name for p in folder.iterdir()))[:300]
        raise StagingError(f"no model weights among the staged files ({have}): transformers "
                           f"loads {' or '.join(WEIGHT_FILES)} or a sharded index of either; "
                           "widen the manifest's include to match the repository's weights")
    return found


def check_hf_model(folder: Path, entry: Mapping[str, Any]) -> dict:
    """What staging records of a Hugging Face model folder: its weight files (transformers'
    formats), then the item's own check (manifest `check`, a name of hooks.CHECKS: the
    family's code that runs the model, given the folder, a real prompt encoded and answered),
    so staging knows the format and never a framework's prompt."""
    from biotool.output import ProgramError

    weights = check_weights(folder)
    spec = entry.get("check")
    if not spec:
        raise StagingError("an hf-model item names its check (check = NAME, one of "
                           f"{', '.join(sorted(CHECKS))}: the code that proves the model answers)")
    check = named(CHECKS, "check", spec, f"model {entry.get('name', folder.name)}")
    try:
        found = check(folder)
    except ProgramError as exc:
        raise StagingError(str(exc)) from None
    return {"tokenizer_probe_ids": found["tokenizer_ids"],
            "model_probe": {"weights": weights, "answer": found["answer"]}}


def prepare(entry: Mapping[str, Any], fetched: list[Path], item_dir: Path) -> Prepared:
    """The staged folder `weights` (where the item's files were fetched) and what its check
    found."""
    weights = item_dir / "weights"
    return Prepared({"main": weights}, check_hf_model(weights, entry))
