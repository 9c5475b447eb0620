"""Staged single-cell models: CellTypist panels per species and Cell2Sentence weights + tokenizer.

Manifest fields read here (refs/models.toml, [[model]]): `framework` ("celltypist" or
"cell2sentence"), `organism` ("human", "mouse" or "human+mouse"), `tissue`, and for
Cell2Sentence `tokenizer`: the name of another staged model item holding the tokenizer, or a
path relative to the weights folder. Without it the tokenizer is looked for in the weights
folder itself, and its absence fails at load time, never deep inside generation.
"""

from __future__ import annotations

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


def unstaged_reason(name: str) -> str | None:
    """Why a model the manifests name (by name or alias) is not usable here; None if unnamed."""
    want = name.strip().lower()
    for entry in staging.load_manifests():
        names = [entry["name"], *entry.get("aliases", [])]
        if entry["kind"] == "model" and want in (n.lower() for n in names):
            return f"{entry['name']} is " + staging.status(entry).get("reason", "not staged")
    return None


def celltypist_model(name_or_path: str) -> tuple[Path, dict, StagedItem | None]:
    """(path, provenance item, staged item or None) for `--reference NAME|PATH.pkl`."""
    rec = staging.find("model", name_or_path)
    if rec is not None:
        if not rec.usable:
            raise staging.not_staged(f"--reference {name_or_path}", rec)
        if rec.framework != "celltypist":
            raise InputError(f"--reference {name_or_path}: is a {rec.framework} model, "
                             "not a CellTypist model")
        return rec.path(), used("model", rec.name, rec.sha256, framework="celltypist"), rec
    path = Path(name_or_path)
    if "/" in name_or_path or path.suffix == ".pkl":
        from biotool.cache import sha256_file
        from biotool.files import input_file

        input_file(path, "--reference", allow_empty=False)  # a FIFO is refused, never opened

        return path, used("model", path.name, sha256_file(path), framework="celltypist"), None
    known = ", ".join(r.name for r in celltypist_panel("unknown")) or "none staged"
    why = unstaged_reason(name_or_path)
    raise InputError(f"--reference {name_or_path}: " + (
        f"{why}; staged CellTypist models: {known}" if why else
        f"no staged CellTypist model of that name (staged: {known})"))


def _has_tokenizer(folder: Path) -> bool:
    return folder.is_dir() and any((folder / f).is_file() for f in TOKENIZER_FILES)


def c2s_model(name_or_path: str = DEFAULT_C2S) -> dict:
    """{"weights", "tokenizer", "provenance": [...]} for a staged C2S model or a local folder.

    A staged model that lacks weights or tokenizer is a broken image (exit 4); a folder the
    user named that lacks them is bad input (exit 2).
    """
    from biotool.cache import sha256_tree

    rec = staging.find("model", name_or_path)
    if rec is None:
        path = Path(name_or_path)
        if not path.is_dir():
            why = unstaged_reason(name_or_path)
            raise InputError(f"--c2s-model {name_or_path}: " + (
                f"{why}; use --model celltypist here, or give a folder with config.json, "
                "weights and tokenizer" if why else
                "neither a staged model nor a folder (see `biotool list`; production images "
                "stage C2S-Pythia-410m-cell-type-prediction)"))
        weights, tok, err = path, path, InputError
        items = [used("model", path.name, sha256_tree(path), framework="cell2sentence")]
    else:
        if not rec.usable:
            raise staging.not_staged(f"model {rec.name}", rec)
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
    return {"weights": weights, "tokenizer": tok, "provenance": items}

