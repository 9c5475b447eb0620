"""Cell2Sentence cell-type prediction with transformers + torch only.

One cell at a time is what the model was trained on: a cell's genes ranked by expression,
written into C2S's own prompt template. A sample's composition is the tally over sampled
cells (an averaged pseudo-cell gets named as something no cell is). The model is loaded once
per process and prompts are generated in batches; the time budget stops between batches and
the partial composition is returned, flagged.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from biotool.deadline import UNBOUNDED, Deadline
from biotool.output import InputError, ToolFailure
from biotool.progress import log

# Cell2Sentence's cell-type prompt, verbatim: the model was fine-tuned on exactly this text.
PROMPT = ("The following is a list of {num_genes} gene names ordered by descending expression "
          "level in a {organism} cell. Your task is to give the cell type which this cell "
          "belongs to based on its gene expression.\nCell sentence: {cell_sentence}.\n"
          "The cell type corresponding to these genes is:")
TOP_GENES = 200  # the published cell-type model was trained on the top 200 genes per cell
MAX_NEW_TOKENS = 32

_LOADED: dict[tuple, "Loaded"] = {}


class Loaded:
    """A model and tokenizer in memory, with the device and dtype they run on."""

    def __init__(self, model, tokenizer, device: str, dtype: str):
        self.model, self.tokenizer, self.device, self.dtype = model, tokenizer, device, dtype


def pick_device(device: str | None = None) -> str:
    import torch

    if device:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def loaded_already(weights: Path, tokenizer: Path, device: str | None = None) -> bool:
    """Whether this process holds the model already (load() will cost nothing)."""
    return (str(weights), str(tokenizer), pick_device(device)) in _LOADED


def load(weights: Path, tokenizer: Path, device: str | None = None, cache: bool = True) -> Loaded:
    """Load once per process (cache=True); bf16 on CUDA, float32 on CPU."""
    import sys

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from biotool.progress import quiet

    if quiet() or not sys.stderr.isatty():
        hf_logging.disable_progress_bar()  # plain lines on stderr, not a bar redrawn in a log
    device = pick_device(device)
    key = (str(weights), str(tokenizer), device)
    if cache and key in _LOADED:
        return _LOADED[key]
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    try:
        tok = AutoTokenizer.from_pretrained(str(tokenizer), local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - transformers raises many types for a bad folder
        raise InputError(f"{tokenizer}: cannot load the tokenizer "
                         f"({type(exc).__name__}: {exc})") from None
    try:
        model = AutoModelForCausalLM.from_pretrained(str(weights), dtype=dtype,
                                                     local_files_only=True)
    except Exception as exc:  # noqa: BLE001
        raise ToolFailure(f"{weights}: cannot load the model "
                          f"({type(exc).__name__}: {exc})") from None
    model.to(device).eval()
    # Decoder-only models continue from the last token: pad on the left so every prompt ends
    # where generation starts, and a batch answers exactly as single prompts would.
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    loaded = Loaded(model, tok, device, str(dtype).removeprefix("torch."))
    if cache:
        _LOADED[key] = loaded
    return loaded


def prompt(genes: list[str], organism: str) -> str:
    return PROMPT.format(num_genes=len(genes), organism=organism, cell_sentence=" ".join(genes))


def clean_answer(text: str) -> str:
    """The generated cell type: first line, whitespace trimmed, trailing period stripped."""
    text = text.strip().split("\n", 1)[0].strip()
    return text[:-1].rstrip() if text.endswith(".") else text


def _encode(tok, batch: list[str], device: str):
    enc = tok(batch, return_tensors="pt", padding=True).to(device)
    lengths = enc["attention_mask"].sum(dim=1).tolist() if "attention_mask" in enc else \
        [enc["input_ids"].shape[1]] * len(batch)
    if enc["input_ids"].shape[1] == 0 or min(lengths) == 0:
        raise InputError("the Cell2Sentence tokenizer encodes a prompt to no ids (a tokenizer "
                         "folder without its vocabulary?): generation cannot start from it")
    return enc


def generate(loaded: Loaded, prompts: list[str], batch_size: int = 8,
             max_new_tokens: int = MAX_NEW_TOKENS, deadline: Deadline = UNBOUNDED,
             per_cell_estimate: float | None = None) -> dict:
    """Greedy answers for prompts, in batches of at most `batch_size`.

    The budget is checked before every batch, as the design checks it before every cell: the
    first batch is one cell (it measures a cell's cost), and each later one is sized so that
    it fits in what is left of `deadline` and takes at most about
    budget.CHECK_EVERY_S (budget.Batches plans the batches). The first cell runs only when
    what an earlier run measured for one cell (`per_cell_estimate`) fits, or, with no
    measurement, when any time is left; and the deadline rings inside a batch too
    (budget.alarm), losing only that batch. When not even
    one more cell fits, the answers so far come back flagged `truncated` (a partial
    composition beats a tool the caller has to abandon); `per_cell` is what one cell took."""
    import torch

    from biotool import budget

    tok, model = loaded.tokenizer, loaded.model
    answers: list[str] = []
    plan = budget.Batches(len(prompts), deadline, batch_size, estimate=per_cell_estimate)
    try:
        with budget.alarm(deadline):
            for first, size in plan:
                batch = prompts[first:first + size]
                enc = _encode(tok, batch, loaded.device)
                with torch.inference_mode():
                    out = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False,
                                         num_beams=1, pad_token_id=tok.pad_token_id,
                                         eos_token_id=tok.eos_token_id)
                # The answer follows the prompt: slice ids at the (left-padded) prompt length.
                new = out[:, enc["input_ids"].shape[1]:]
                answers += [clean_answer(t) for t in tok.batch_decode(new,
                                                                      skip_special_tokens=True)]
                log(f"cell2sentence: {len(answers)}/{len(prompts)} cells")
        truncated = plan.truncated
    except budget.BudgetSpent:
        truncated = True  # the batch in flight is lost; the answers before it stand
    return {"answers": answers, "truncated": truncated, "done": len(answers),
            "requested": len(prompts), "per_cell_s": plan.per_item}


def cell_sentences(adata, n_cells: int, n_genes: int = TOP_GENES, seed: int = 0) -> list[dict]:
    """Sampled cells, each with its expressed genes ranked by descending expression."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    n = min(n_cells, adata.n_obs)
    idx = np.sort(rng.choice(adata.n_obs, size=n, replace=False))
    names = np.asarray(adata.var_names)
    out = []
    for i in idx:
        row = adata.X[i]
        row = row.toarray().ravel() if sp.issparse(row) else np.asarray(row).ravel()
        order = np.argsort(-row, kind="stable")
        order = order[row[order] > 0][:n_genes]
        if order.size:
            out.append({"cell": str(adata.obs_names[i]), "genes": [str(g) for g in names[order]]})
    return out


def composition(labels: list[str]) -> list[dict]:
    counts = Counter(labels)
    total = sum(counts.values()) or 1
    return [{"cell_type": k, "cells": v, "fraction": round(v / total, 4)}
            for k, v in counts.most_common()]


# A real prompt's cell sentence for the staging check: highly expressed genes of a human PBMC.
PROBE_GENES = ("MALAT1 TMSB4X B2M EEF1A1 TPT1 RPS27 RPL13 FTL CD74 HLA-DRA LYZ S100A9 "
               "CD3E IL7R NKG7 GNLY MS4A1 CD79A").split()


def check_tokenizer(folder: Path) -> int:
    """Encode a real C2S prompt with the staged tokenizer; the number of ids (never 0)."""
    import contextlib
    import sys

    try:
        with contextlib.redirect_stdout(sys.stderr):
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(str(folder))
            ids = tok(prompt(PROBE_GENES, "Homo sapiens"))["input_ids"]
    except Exception as exc:  # noqa: BLE001 - any loader failure means an unusable folder
        why = " ".join(str(exc).split())[:300]
        raise ToolFailure(f"the tokenizer in {folder.name} does not load ({why})") from None
    if not ids:
        raise ToolFailure(f"the tokenizer in {folder.name} encodes a C2S prompt to no ids "
                          "(a tokenizer folder without its vocabulary?)")
    return len(ids)


def check_answer(folder: Path) -> str:
    """The staged model loads and continues a real C2S prompt: what it said."""
    import contextlib
    import sys

    from biotool.output import ProgramError

    try:
        with contextlib.redirect_stdout(sys.stderr):
            loaded = load(folder, folder, device="cpu", cache=False)
            said = generate(loaded, [prompt(PROBE_GENES, "Homo sapiens")], max_new_tokens=2)
    except ProgramError as exc:
        raise ToolFailure(f"the model in {folder.name} does not load or answer ({exc})") from None
    return said["answers"][0][:80]


def check_staged(folder: Path) -> dict:
    """The staging check of a Cell2Sentence model folder (its manifest's `check`): the ids a
    real prompt encodes to, and the model's answer to it; ToolFailure saying which failed."""
    return {"tokenizer_ids": check_tokenizer(folder), "answer": check_answer(folder)}


def answer_probability(loaded: Loaded, prompt_text: str, answer: str) -> float:
    """The model's probability of `answer` as the continuation of `prompt_text` (one forward
    pass, teacher-forced): its own certainty in what greedy generation said, which generate()
    does not expose. 0.0 for an empty answer."""
    import torch

    tok = loaded.tokenizer
    head = tok(prompt_text)["input_ids"]
    whole = tok(f"{prompt_text} {answer}")["input_ids"] if answer else head
    # The answer's tokens are what follows the longest prefix the two encodings share.
    k = next((i for i, (a, b) in enumerate(zip(head, whole)) if a != b), min(len(head),
                                                                              len(whole)))
    if not answer or k == 0 or k >= len(whole):
        return 0.0
    ids = torch.tensor([whole], device=loaded.device)
    with torch.inference_mode():
        logits = loaded.model(ids).logits[0, k - 1:-1].float()
    logp = torch.log_softmax(logits, dim=-1).gather(1, ids[0, k:, None]).sum()
    return float(torch.exp(logp))
