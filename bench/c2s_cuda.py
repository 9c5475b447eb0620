"""Cell2Sentence on CUDA: bf16, batched, cells per second (prints that no GPU is present
otherwise). Self-contained: builds its own tiny C2S-shaped model, or takes --model PATH
(a folder with config.json, weights and tokenizer, e.g. C2S-Pythia-410m-cell-type-prediction).

The CPU float32 run of the same prompts and batch size is measured in the same process as
the peer, so the output carries a ratio as well as cells/s.

Usage: python bench/c2s_cuda.py [--model PATH] [--cells 256] [--batch-size 32] [--cpu-cells 32]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path

from timing import timed

warnings.simplefilter("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def run(weights: Path, tok: Path, prompts: list[str], device: str, batch_size: int) -> dict:
    import torch

    from biotool.singlecell import c2s

    def generate(batch: list[str]) -> dict:
        out = c2s.generate(loaded, batch, batch_size=batch_size)
        if device.startswith("cuda"):
            torch.cuda.synchronize()  # the GPU's work is done, not only queued
        return out

    load_s, loaded = timed(lambda: c2s.load(weights, tok, device=device, cache=False))
    generate(prompts[:batch_size])  # warm-up (kernels, cache)
    gen_s, out = timed(lambda: generate(prompts))
    return {"device": device, "dtype": loaded.dtype, "cells": len(prompts),
            "batch_size": batch_size, "load_s": round(load_s, 3), "generate_s": round(gen_s, 3),
            "cells_per_s": round(len(prompts) / gen_s, 2), "answers": out["answers"][:3]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--tokenizer", type=Path, default=None)
    ap.add_argument("--cells", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--cpu-cells", type=int, default=32)
    args = ap.parse_args()

    import torch

    from biotool.singlecell import c2s, matrix, tiny_c2s
    from biotool.singlecell.demo_model import pbmc_counts

    result: dict = {"torch": torch.__version__, "cuda_available": torch.cuda.is_available()}
    if not torch.cuda.is_available():
        result["note"] = "no CUDA GPU present: the CUDA figure was not measured"
        print(json.dumps(result, indent=1))
        return 0
    result["gpu"] = torch.cuda.get_device_name(0)
    counts = pbmc_counts()
    norm, _ = matrix.normalise(counts)
    with tempfile.TemporaryDirectory() as tmp:
        if args.model is None:
            weights, tok = tiny_c2s.build(Path(tmp) / "tiny", list(counts.var_names),
                                          layers=4, hidden=256)
            result["model"] = "tiny (built here: Llama, 4 layers, hidden 256)"
        else:
            weights, tok = args.model, args.tokenizer or args.model
            result["model"] = str(args.model)
        cells = c2s.cell_sentences(norm, min(args.cells, norm.n_obs), seed=0)
        prompts = [c2s.prompt(c["genes"], "Homo sapiens") for c in cells]
        while len(prompts) < args.cells:  # more cells than the demo data: reuse its sentences
            prompts += prompts[: args.cells - len(prompts)]
        result["cuda_bf16"] = run(weights, tok, prompts, "cuda", args.batch_size)
        cpu_prompts = prompts[: args.cpu_cells]
        result["cpu_fp32"] = run(weights, tok, cpu_prompts, "cpu", min(args.batch_size,
                                                                           len(cpu_prompts)))
    result["ratio_cells_per_s_cuda_over_cpu"] = round(
        result["cuda_bf16"]["cells_per_s"] / result["cpu_fp32"]["cells_per_s"], 2)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
