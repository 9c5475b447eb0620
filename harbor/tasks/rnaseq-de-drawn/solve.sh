#!/bin/bash
# Oracle: R's DESeq2, default Wald test (design ~ condition, results() defaults, treated vs
# control); the genes with padj < 0.01 and |log2FoldChange| >= 1, split by sign.
set -euo pipefail
Rscript --vanilla - <<'R'
suppressPackageStartupMessages(library(DESeq2))
counts <- as.matrix(read.delim("/task/counts.tsv", row.names = 1, check.names = FALSE))
samples <- read.delim("/task/samples.tsv", row.names = 1)
samples$condition <- factor(samples$condition, levels = c("control", "treated"))
dds <- DESeqDataSetFromMatrix(counts[, rownames(samples)], samples, design = ~ condition)
dds <- DESeq(dds, quiet = TRUE)
res <- results(dds, contrast = c("condition", "treated", "control"))
hit <- !is.na(res$padj) & res$padj < 0.01 & abs(res$log2FoldChange) >= 1
up <- rownames(res)[hit & res$log2FoldChange > 0]
down <- rownames(res)[hit & res$log2FoldChange < 0]
q <- function(x) paste0("[", paste0('"', x, '"', collapse = ", "), "]")
writeLines(sprintf('{"up": %s, "down": %s}', q(up), q(down)), "/logs/artifacts/answer.json")
R
