"""Staged single-cell models: CellTypist panels per species and Cell2Sentence weights + tokenizer.

Manifest fields read here (refs/models.toml, [[model]]): `framework` ("celltypist" or
"cell2sentence"), `organism` ("human", "mouse" or "human+mouse"), `tissue`, and for
Cell2Sentence `tokenizer`: the name of another staged model item holding the tokenizer, or a
path relative to the weights folder. Without it the tokenizer is looked for in the weights
folder itself, and its absence fails at load time, never deep inside generation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from biotool import staging
from biotool.output import InputError, ToolFailure
from biotool.provenance import used
from biotool.staging.item import StagedItem

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                "pytorch_model.bin.index.json")
DEFAULT_C2S = "c2s-celltype"


def _organisms(item: StagedItem) -> set[str]:
    return set((item.organism or "").lower().replace(",", "+").split("+")) - {""}


def celltypist_panel(species: str) -> list[StagedItem]:
    """Staged, usable CellTypist models for a species; "unknown" means every species' models."""
    out = []
    for rec in staging.staged_items("model"):
        if rec.framework != "celltypist" or not rec.usable:
            continue
        if species in ("human", "mouse") and species not in _organisms(rec):
            continue
        out.append(rec)
    return sorted(out, key=lambda r: r.name)


def celltypist_model(name_or_path: str) -> tuple[Path, dict, StagedItem | None]:
    """(path, provenance item, staged item or None) for `--reference NAME|PATH.pkl`."""
    path = Path(name_or_path)
    if staging.find("model", name_or_path) is None and ("/" in name_or_path or
                                                         path.suffix == ".pkl"):
        from biotool.cache import sha256_file
        from biotool.files import input_file

        input_file(path, "--reference", allow_empty=False)  # a FIFO is refused, never opened

        return path, used("model", path.name, sha256_file(path), framework="celltypist"), None
    rec = staging.require("model", name_or_path, "--reference",
                          otherwise="a CellTypist model file (.pkl)")
    if rec.framework != "celltypist":
        raise InputError(f"--reference {name_or_path}: is a {rec.framework} model, "
                         "not a CellTypist model")
    return rec.path(), used("model", rec.name, rec.sha256, framework="celltypist"), rec


def _has_tokenizer(folder: Path) -> bool:
    return folder.is_dir() and any((folder / f).is_file() for f in TOKENIZER_FILES)


@dataclass(frozen=True)
class C2SModel:
    """A Cell2Sentence model ready to load: its weights' folder, its tokenizer's folder, and the
    provenance items it adds to an answer (the model first, then a staged tokenizer)."""

    weights: Path
    tokenizer: Path
    provenance: tuple[dict, ...]

    @property
    def name(self) -> str:
        return self.provenance[0]["name"]


def c2s_model(name_or_path: str = DEFAULT_C2S) -> C2SModel:
    """The C2SModel of a staged C2S model or a local folder.

    A staged model that lacks weights or tokenizer is a broken image (exit 4); a folder the
    user named that lacks them is bad input (exit 2).
    """
    from biotool.cache import sha256_tree

    path = Path(name_or_path)
    if staging.find("model", name_or_path) is None and path.is_dir():
        weights, tok, err = path, path, InputError
        items = [used("model", path.name, sha256_tree(path), framework="cell2sentence")]
    else:
        rec = staging.require("model", name_or_path, "--c2s-model",
                              otherwise="a model folder (config.json, weights, tokenizer), or "
                                        "use --model celltypist")
        weights, err = rec.path(), ToolFailure
        items = [used("model", rec.name, rec.sha256, framework="cell2sentence")]
        tok_spec = rec.tokenizer
        if not tok_spec:
            tok = weights
        else:
            tok_rec = staging.find("model", tok_spec)
            if staging.usable(tok_rec):
                tok = tok_rec.path()
                items.append(used("tokenizer", tok_rec.name, tok_rec.sha256))
            else:
                tok = weights / tok_spec
    has_weights = any((weights / f).is_file() for f in WEIGHT_FILES)
    if not has_weights or not (weights / "config.json").is_file():
        raise err(f"{weights}: no model weights (config.json with model.safetensors or "
                  "pytorch_model.bin) in this folder")
    if not _has_tokenizer(tok):
        raise err(f"{tok}: no tokenizer ({', '.join(TOKENIZER_FILES[:2])}) for the weights in "
                  f"{weights}; stage the tokenizer beside the weights or name it in the "
                  "manifest's `tokenizer` field")
    return C2SModel(weights=weights, tokenizer=tok, provenance=tuple(items))

