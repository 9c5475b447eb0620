"""RNA-seq draws: transcript abundances for salmon/kallisto, and a count matrix for DESeq2."""

from __future__ import annotations

import random
from pathlib import Path

from . import common

# --- rnaseq-quant-drawn -----------------------------------------------------------------------

# CDS nested in, or sharing exons with, another CDS of the table: a read of theirs would be
# ambiguous between the two, so they never become transcripts.
NESTED = {("MN908947.3", "ORF1a"), ("influenza-A-H1N1", "PB1-F2"),
          ("influenza-A-H1N1", "M2"), ("influenza-A-H1N1", "NEP")}
CDS_LENGTH = (300, 4000)
# Stretches of the single-record references cut into windows (0-based, end excluded): HIV-1's
# interior, past its 5' LTR and short of its 3' LTR (the two LTRs are the same sequence).
WINDOW_SOURCES = {"phiX174": None, "pPCP1": None, "HIV-1": (700, 8400)}
WINDOW_LENGTH = (600, 2400)
TRANSCRIPTS = (12, 16)
ABSENT = (3, 5)
K = 31                      # salmon's and kallisto's default k: no k-mer shared between two
READ_LENGTH = 100
ERROR_RATE = 0.002
TOP_READS = (4000, 8000)
STEP = (0.35, 0.6)          # each of the top three over the next: at least 1/0.6 = 1.67x
REST_MARGIN = 1.6           # the others: at most the third's reads / 1.6
MIN_READS = 30


def annotated_cds() -> list[tuple[str, str]]:
    """(label, sequence) of every staged CDS of 300-4,000 nt that no other CDS contains or
    shares exons with; labels are for the draw's own use only."""
    seqs: dict[str, str] = {}
    for name in ("MN908947.3", "influenza-A-H1N1"):
        for ident, seq in common.staged_records("reference", name):
            seqs[ident.split()[0]] = seq
    out = []
    for row in common.gene_rows():
        if (row["reference"], row["symbol"]) in NESTED or row["strand"] != "+":
            continue
        seq = common.cds_sequence(row, seqs[row["seqid"]])
        if CDS_LENGTH[0] <= len(seq) <= CDS_LENGTH[1]:
            out.append((f"{row['seqid']}:{row['symbol']}", seq))
    return out


def windows(rng: random.Random) -> list[tuple[str, str]]:
    """Two non-overlapping windows of random place and length from each source genome."""
    out = []
    for name, span in WINDOW_SOURCES.items():
        _, seq = common.staged_reference(name)
        start, end = span or (0, len(seq))
        half = (end - start) // 2
        for lo in (start, start + half):
            length = rng.randint(*WINDOW_LENGTH)
            at = rng.randrange(lo, lo + half - length)
            out.append((f"{name}:{at + 1}-{at + length}", seq[at:at + length]))
    return out


def kmers(seq: str) -> set[str]:
    """Every k-mer of seq and of its reverse complement."""
    both = (seq, common.reverse_complement(seq))
    return {s[i:i + K] for s in both for i in range(len(s) - K + 1)}


def distinct(records: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The records, in order, less each one sharing a k-mer with one kept before it."""
    kept, seen = [], set()
    for label, seq in records:
        own = kmers(seq)
        if own & seen:
            continue
        kept.append((label, seq))
        seen |= own
    return kept


def read_counts(rng: random.Random, n: int, absent: int) -> list[int]:
    """Reads per transcript: `absent` of them none, one clearly first, then a clear second and
    third, each over the next by a factor of 1/0.6 or more, the rest drawn at random under the
    third by REST_MARGIN or more. Read counts, not TPM: a TPM divides by an effective length
    that each tool estimates its own way, so only the counts' order is the same for all."""
    order = rng.sample(range(n), n)
    counts = [0] * n
    top = rng.uniform(*TOP_READS)
    for i in order[:3]:
        counts[i] = round(top)
        top *= rng.uniform(*STEP)
    third = counts[order[2]]
    for i in order[3 + absent:]:
        counts[i] = round(rng.uniform(MIN_READS, third / REST_MARGIN))
    return counts


def quant(rng: random.Random, public: Path) -> dict:
    """12-16 transcripts (staged CDS and windows of staged genomes, no 31-mer shared, ids
    tx01..) in /task/transcripts.fasta and single-end 100 nt reads from them in
    /task/reads.fastq: 3-5 transcripts get none, one gets clearly the most, then a clear second
    and third. The truth: `top`, `top3` (in order) and `absent`."""
    pool = annotated_cds() + windows(rng)
    rng.shuffle(pool)
    pool = distinct(pool)
    chosen = pool[:rng.randint(*TRANSCRIPTS)]
    ids = [f"tx{i:02d}" for i in range(1, len(chosen) + 1)]
    seqs = [seq for _, seq in chosen]
    counts = read_counts(rng, len(seqs), rng.randint(*ABSENT))
    reads = []
    for tx, seq, n in zip(ids, seqs, counts):
        reads += common.simulate_reads(rng, seq, n, READ_LENGTH, prefix=f"{tx}_",
                                       error_rate=ERROR_RATE)
    reads = common.shuffled(rng, reads)
    reads = [(f"r{i:06d}", s, q) for i, (_, s, q) in enumerate(reads, 1)]
    common.write_fasta(public / "transcripts.fasta", list(zip(ids, seqs)))
    common.write_fastq(public / "reads.fastq", reads)
    ranked = sorted(range(len(ids)), key=lambda i: -counts[i])
    return {"top": ids[ranked[0]], "top3": [ids[i] for i in ranked[:3]],
            "absent": [ids[i] for i in range(len(ids)) if counts[i] == 0]}



# --- rnaseq-de-drawn --------------------------------------------------------------------------

GENES = 2000
REPLICATES = 3
PLANTED = (4, 10)                   # genes planted up, and as many (drawn apart) down
LOG_MEAN = (4.0, 1.7)               # a null gene's mean count: exp(N(4.0, 1.7)), median ~55
ASYMPT_DISP = (0.02, 0.08)          # dispersion trend a0 + a1/mean (DESeq2's parametric fit)
EXTRA_POIS = (0.5, 2.0)
DISP_SCATTER = 0.45                 # a gene's dispersion: the trend times exp(N(0, this))
SIZE_FACTOR = 0.3                   # a sample's depth: exp(U(-this, this))
UP_BASE = (300, 3000)               # planted up: control mean in this range (log-uniform)
DOWN_BASE = (2500, 25000)           # planted down: control mean in this range
PLANTED_LFC = (3.0, 5.0)            # |log2 fold change| of a planted gene
NULL_LFC = 0.8                      # a null gene is redrawn while its observed |log2FC| >= this
PLANTED_MIN_LFC = 2.5               # a planted one while its observed |log2FC| < this
# DESeq2's independent filtering drops genes under a base-mean quantile it picks, at most the
# 95th: a planted gene's base mean must clear that quantile by this factor, or the matrix is
# drawn again (a planted gene filtered out would leave the rule's set).
FILTER_QUANTILE, FILTER_MARGIN = 0.95, 1.25


def size_factors(counts):
    """DESeq2's median-of-ratios size factors (genes with a zero left out), for the guard."""
    import numpy as np

    keep = (counts > 0).all(axis=1)
    logs = np.log(counts[keep])
    return np.exp(np.median(logs - logs.mean(axis=1, keepdims=True), axis=0))


def observed_lfc(counts, sf):
    """log2 of the treated over the control mean of normalized counts, 0.5 added to each."""
    import numpy as np

    norm = counts / sf
    return np.log2((norm[:, REPLICATES:].mean(axis=1) + 0.5)
                   / (norm[:, :REPLICATES].mean(axis=1) + 0.5))


def de_matrix(rng: random.Random):
    """Negative-binomial counts, genes x (3 control, 3 treated), and the planted genes' rows:
    (counts, up rows, down rows), drawn again until every planted gene's base mean clears the
    highest quantile DESeq2's independent filtering may cut at."""
    import numpy as np

    gen = np.random.default_rng(rng.getrandbits(128))
    for _ in range(50):
        counts, up, down = _de_draw(rng, gen)
        base_mean = (counts / size_factors(counts)).mean(axis=1)
        floor = FILTER_MARGIN * np.quantile(base_mean, FILTER_QUANTILE)
        if base_mean[up + down].min() > floor:
            return counts, up, down
    raise RuntimeError("no draw in 50 put the planted genes above the filtering quantile")


def _de_draw(rng: random.Random, gen):
    """One matrix: nulls whose observed fold change reaches NULL_LFC and planted genes whose
    falls short of PLANTED_MIN_LFC are drawn again, so that the rule's line is never near a
    gene: a null cannot reach |log2FC| 1, a planted one is far past it and padj 0.01."""
    import numpy as np

    n_up, n_down = rng.randint(*PLANTED), rng.randint(*PLANTED)
    rows = rng.sample(range(GENES), n_up + n_down)
    up, down = sorted(rows[:n_up]), sorted(rows[n_up:])
    base = np.exp(gen.normal(*LOG_MEAN, size=GENES))
    lfc = np.zeros(GENES)
    for row in up:
        base[row] = np.exp(gen.uniform(*np.log(UP_BASE)))
        lfc[row] = gen.uniform(*PLANTED_LFC)
    for row in down:
        base[row] = np.exp(gen.uniform(*np.log(DOWN_BASE)))
        lfc[row] = -gen.uniform(*PLANTED_LFC)
    a0, a1 = gen.uniform(*ASYMPT_DISP), gen.uniform(*EXTRA_POIS)
    disp = (a0 + a1 / base) * np.exp(gen.normal(0, DISP_SCATTER, size=GENES))
    disp[rows] = a0 + a1 / base[rows]
    sf = np.exp(gen.uniform(-SIZE_FACTOR, SIZE_FACTOR, size=2 * REPLICATES))
    treated = np.r_[np.zeros(REPLICATES), np.ones(REPLICATES)]
    mean = base[:, None] * sf[None, :] * 2.0 ** (lfc[:, None] * treated[None, :])

    def draw(which):
        r = 1.0 / disp[which][:, None]
        return gen.negative_binomial(r, r / (r + mean[which]))

    counts = draw(np.arange(GENES))
    planted = np.zeros(GENES, bool)
    planted[rows] = True
    for _ in range(200):
        obs = observed_lfc(counts, size_factors(counts))
        bad = np.where(planted, np.abs(obs) < PLANTED_MIN_LFC, np.abs(obs) >= NULL_LFC)
        bad |= planted & (np.sign(obs) != np.sign(lfc))
        if not bad.any():
            return counts, up, down
        counts[bad] = draw(np.flatnonzero(bad))
    raise RuntimeError("the count matrix's guard did not settle in 200 rounds")


def de(rng: random.Random, public: Path) -> dict:
    """/task/counts.tsv: 2,000 genes (neutral ids G00000-G99999) by 3 control and 3 treated
    samples of negative-binomial counts (realistic means and dispersions), 4-10 genes planted
    up and 4-10 down by 8-32x; /task/samples.tsv: the design. The truth: `up` and `down`, the
    planted genes, which DESeq2's rule (padj < 0.01, |log2FC| >= 1) returns exactly."""
    counts, up, down = de_matrix(rng)
    ids = [f"G{n:05d}" for n in sorted(rng.sample(range(100000), GENES))]
    samples = [f"ctrl_{i}" for i in range(1, REPLICATES + 1)] + \
              [f"trt_{i}" for i in range(1, REPLICATES + 1)]
    with open(public / "counts.tsv", "w", encoding="ascii") as fh:
        fh.write("gene\t" + "\t".join(samples) + "\n")
        for gid, row in zip(ids, counts):
            fh.write(gid + "\t" + "\t".join(str(int(c)) for c in row) + "\n")
    with open(public / "samples.tsv", "w", encoding="ascii") as fh:
        fh.write("sample\tcondition\n")
        for name in samples:
            fh.write(f"{name}\t{'control' if name.startswith('ctrl') else 'treated'}\n")
    return {"up": [ids[r] for r in up], "down": [ids[r] for r in down]}
