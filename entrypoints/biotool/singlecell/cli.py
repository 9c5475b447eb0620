"""Commands of the singlecell family: `biotool celltype`."""

from __future__ import annotations

from biotool import options
from biotool.family import Family
from biotool.output import InputError
from commandline.choice import exactly_one
from commandline.kinds import count
from commandline.spec import Command, Option

CELLTYPE_HELP = """Which cell types are in a single-cell sample, from pretrained models⟦, with
the limits stated⟧. Prints one JSON object.

\b
INPUT (one of):
  --matrix M   .h5ad (X, or .raw when X is scaled); a 10x folder (v2 genes.tsv or v3
               features.tsv, gzipped or not; or the folder holding exactly one such
               folder, like Cell Ranger's outs/); a 10x .h5; any folder holding one .mtx(.gz)
               and two labelling files under any names (counts.mtx.gz + genes.tsv.gz +
               cells.tsv.gz works: labellings are assigned to axes by their lengths); or a
               cell-by-gene .csv/.tsv (cell names in column 1, gene names in the header; a
               gene-by-cell table whose header holds 10x barcodes is transposed).
               The demo image stages a sample: /opt/biotool/samples/demo-pbmc68k-heldout.
               Counts are normalised to 10k per cell + log1p; already-normalised data are
               detected and reported under matrix.normalisation.
  --genes G1,G2,...  one cell's genes, highest expression first (Cell2Sentence only).

SPECIES: read from the gene names (human CD3E upper case; mouse Cd3e title case, Gm12345,
...Rik). Unknown widens the CellTypist panel to every species; Cell2Sentence then needs
--organism. The gene names win over an --organism that disagrees with them (species.source
and species.note say so); --organism decides only when the names show no species.

\b
MODELS:
  celltypist   --reference auto scores every staged CellTypist model of the species by fit
               (mean max probability over at most 3,000 cells per model, a seeded
               subsample: panel_cells) and reports the ranking and the winner's composition
               over every cell.
               ⟦Beside them: the winner's margin over the runner-up and
               reference_is_conclusive (fit >= 0.5 and margin >= 0.05; else a caveat: read
               the per-cell composition, the more reliable evidence, not the reference
               name).⟧
               A staged model that cannot be loaded is skipped⟦ (not evidence either way)⟧
               and listed in errors. --reference NAME (or a .pkl path) uses that model
               only⟦: it will label cells of types it never saw⟧. Feature coverage is reported.
  c2s-celltype Cell2Sentence: samples --sample cells, writes each cell's top 200 genes into
               C2S's prompt, and tallies the generated cell types into a composition.
               Loaded once, batched, GPU (bf16) when present. Stops at --timeout (the
               whole command's budget) and returns the partial composition with
               truncated: true.
  all          both, plus `agreement` (do they name the same types, cell by cell). No
               merged consensus label is produced. When C2S is not staged or fails, the
               CellTypist answer is returned with errors {"c2s-celltype": why}.


OUTPUT (bounded: a few KB): matrix {cells, genes, read_as, normalisation}; species
  {species, source, evidence}; celltypist {reference, tissue, fit, coverage, ranking,
  panel_cells, composition [{cell_type, cells, fraction, mean_probability}] (top 30 types;
  the rest in composition_other)}; c2s {model, device, cells_answered, truncated,
  composition, cells [{cell, cell_type}] (the first 20)}; agreement (with all); errors
  {model: why} when a model was skipped or failed ({"celltypist": "no CellTypist reference
  could be scored: ..."} when none was); truncated; timing {timeout_s, elapsed_s,
  cells_covered {celltypist (cells a scored reference labelled), c2s}}; provenance (model
  sha256s).
  ⟦Beside them: competence in species, celltypist and c2s, and celltypist's margin,
  reference_is_conclusive and caveat; with --genes, competence.confidence is the model's
  probability of its answer.⟧
  --cells-out FILE writes every cell's labels (TSV) and returns its path as cells_file.

Models staged here: `biotool list` (production panels and C2S are named there, with why
they are not staged). Exit codes: 2 bad input (missing/corrupt/empty matrix, labellings
that fit neither axis, model genes not covered by the data, a model not staged in this
image, a --c2s-model folder without tokenizer, out-of-range numbers); 4 model failure (a
staged model broken or missing files)."""


def describe() -> Family:
    return Family(
        commands=("celltype",),
        summary="cell types in single-cell data: CellTypist reference panel by fit, "
                "Cell2Sentence per-cell composition",
        python=("scanpy", "anndata", "celltypist", "torch", "transformers"))


def celltype_cmd(matrix, genes, model, reference, organism, n_cells, budget_seconds, c2s_model,
                 batch_size, seed, cells_out) -> dict:
    import os
    import warnings

    # Library warnings (celltypist, anndata, scanpy) are not the agent's concern: stderr
    # carries progress and at most one error line, never warnings before it.
    warnings.simplefilter("ignore")
    # Caches and downloads must never happen at run time (read-only image, offline).
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    # celltypist makes its model folder at import: never the (maybe read-only) HOME.
    from biotool.cache import cache_root

    os.environ.setdefault("CELLTYPIST_FOLDER", str(cache_root() / "celltypist"))
    # numba's compiled normalisation and matplotlib's font list, built with the image,
    # put where the libraries look before scanpy imports them (biotool.libcaches).
    from biotool import libcaches

    libcaches.seed()
    from biotool.deadline import Deadline
    from biotool.singlecell.celltype import celltype_genes, celltype_matrix

    exactly_one({"--matrix": matrix, "--genes": genes})
    if genes is not None:
        if model != "c2s-celltype":
            raise InputError("--genes: only --model c2s-celltype reads a ranked gene list")
        if reference != "auto":
            raise InputError(f"--reference {reference}: CellTypist needs a --matrix; "
                             "--genes goes to Cell2Sentence only")
        if cells_out is not None:
            raise InputError("--cells-out: needs a --matrix (--genes is one cell)")
        return celltype_genes(genes, organism, c2s_model, Deadline.of_process(budget_seconds))
    return celltype_matrix(matrix, model, reference, organism, n_cells,
                           Deadline.of_process(budget_seconds), c2s_model, batch_size, seed,
                           cells_out)


def commands() -> list[Command]:
    return [Command("celltype", celltype_cmd, help=CELLTYPE_HELP, options=(
        Option(("--matrix", "-m"), "Expression matrix file or folder (see above)."),
        Option(("--genes",), "Comma-separated genes of one cell, highest expression first (with "
               "--model c2s-celltype)."),
        Option(("--model",), "celltypist | c2s-celltype | all.", default="celltypist"),
        Option(("--reference",), "auto (score the species' panel) or a staged CellTypist model "
               "name, or a .pkl path.", default="auto"),
        Option(("--organism",), "auto | human | mouse.", default="auto"),
        Option(("--sample",), "Cells sampled for Cell2Sentence (seeded).", kind=count(), default=8,
               aliases=("--n-cells",), dest="n_cells"),
        options.timeout("Seconds for the whole command, counted from the process's start: imports,"
                        " the matrix load, the CellTypist panel and the Cell2Sentence model load "
                        "count. A model load that an earlier run measured as longer than what is "
                        "left is refused up front, naming the measured time; generation stops at "
                        "the deadline and the answered cells come back with truncated: true "
                        "(timing.cells_covered says how many). When nothing could be answered in "
                        "time: exit 2, one line. The floor is start-up + matrix load + panel (+ "
                        "model load + one cell).",
                        300.0, aliases=("--budget-seconds",), dest="budget_seconds"),
        Option(("--c2s-model",), "Staged Cell2Sentence model name/alias, or a folder with "
               "config.json, weights and tokenizer.", default="c2s-celltype"),
        Option(("--batch-size",), "Most cells per Cell2Sentence generation batch (smaller when "
               "the budget needs it).", kind=count(), default=8),
        Option(("--seed",), "Seed for sampling cells.", kind=int, default=0),
        Option(("--cells-out",), "Write every cell's labels (TSV) here; the path is returned as "
               "cells_file."),
    ))]
