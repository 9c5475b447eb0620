"""Reads draws (biotool align / variants / breakpoints, or minimap2, bwa, samtools, bcftools):
a staged reference drawn at random, an edit planted in it, short reads simulated from the
result. The truth is stated in the conventions the instructions give: 1-based, VCF's
left-aligned form for indels, `biotool breakpoints`' "last base before the break"."""

from __future__ import annotations

import random
from pathlib import Path

from biotool_sandbox.draws.common import (BASES, mutate, shuffled, simulate_reads,
                                          staged_records, staged_reference, write_fastq)

# The single-record staged references (the name `biotool references` lists); the reads of
# the variant and breakpoint tasks come from one of them, the agent must find which.
SINGLE = ("MN908947.3", "phiX174", "HIV-1", "pPCP1")
MULTI = ("influenza-A-H1N1",)
READ_LENGTH = 150
COVERAGE = (40.0, 60.0)
ERROR_RATE = (0.001, 0.004)
# Planted edits stay this far from a record's ends, so reads cover them from both sides.
MARGIN = 300
SMALL_DELETION = (3, 15)
LARGE_DELETION = (200, 2000)
WINDOW = (800, 2000)
READS_FILE = "reads.fastq"


def _library(rng: random.Random, seq: str, start: int = 0, end: int | None = None) -> list:
    """Reads at a drawn depth (40-60x) and error rate (0.1-0.4%) over seq[start:end]."""
    end = len(seq) if end is None else end
    coverage, error = rng.uniform(*COVERAGE), rng.uniform(*ERROR_RATE)
    n = round(coverage * (end - start) / READ_LENGTH)
    return simulate_reads(rng, seq, n, READ_LENGTH, error_rate=error, start=start, end=end)


def _write_reads(rng: random.Random, public: Path, reads: list) -> None:
    """The reads shuffled and renamed read000001.. so neither order nor name tells where."""
    out = [(f"read{i:06d}", s, q) for i, (_, s, q) in enumerate(shuffled(rng, reads), 1)]
    write_fastq(public / READS_FILE, out)


def _plain(seq: str) -> bool:
    return all(b in BASES for b in seq)


def snv_site(seq: str, i: int, alt: str) -> bool:
    """Whether ref seq[i] -> alt (0-based) is one unambiguous substitution: plain bases around
    it and neither base repeated by a neighbour (no homopolymer run to slide in)."""
    return (_plain(seq[i - 2:i + 3]) and alt in BASES and alt != seq[i]
            and seq[i] not in (seq[i - 1], seq[i + 1]) and alt not in (seq[i - 1], seq[i + 1]))


def fixed_deletion(seq: str, i: int, k: int) -> bool:
    """Whether deleting seq[i:i+k] (0-based) can be written only one way: the deleted bases
    shift neither left (the base before equals the last deleted one) nor right (the first
    deleted equals the base after); then VCF's left-aligned form is this very placement and a
    breakpoint has no microhomology to slide along."""
    return _plain(seq[i - 1:i + k + 1]) and seq[i - 1] != seq[i + k - 1] and seq[i] != seq[i + k]


def snv(rng: random.Random, public: Path) -> dict:
    """One substitution planted well inside a drawn single-record reference, outside any
    homopolymer run; ~150 bp reads at 40-60x of the mutated genome in /task/reads.fastq.
    Truth: the reference's staged name, the 1-based pos, ref and alt."""
    name = rng.choice(SINGLE)
    _, seq = staged_reference(name)
    while True:
        i = rng.randrange(MARGIN, len(seq) - MARGIN)
        alt = mutate(rng, seq[i])
        if snv_site(seq, i, alt):
            break
    _write_reads(rng, public, _library(rng, seq[:i] + alt + seq[i + 1:]))
    return {"reference": name, "pos": i + 1, "ref": seq[i], "alt": alt}


def _deletion(rng: random.Random, public: Path, lengths: tuple[int, int]):
    """(reference, its sequence, i, k): k bases (within `lengths`) deleted after base i
    (1-based) of a drawn single-record reference where they can be placed one way only
    (fixed_deletion), well inside it; the deleted genome's reads written to `public`."""
    name = rng.choice(SINGLE)
    _, seq = staged_reference(name)
    while True:
        k = rng.randint(*lengths)
        i = rng.randrange(MARGIN, len(seq) - MARGIN - k)
        if fixed_deletion(seq, i, k):
            break
    _write_reads(rng, public, _library(rng, seq[:i] + seq[i + k:]))
    return name, seq, i, k


def small_deletion(rng: random.Random, public: Path) -> dict:
    """A deletion of 3-15 bases planted well inside a drawn single-record reference where it
    can be placed one way only (fixed_deletion); reads as for snv. Truth in VCF's form: pos is
    the 1-based base before the deleted ones, ref that base and the deleted bases, alt that
    base."""
    name, seq, i, k = _deletion(rng, public, SMALL_DELETION)
    return {"reference": name, "pos": i, "ref": seq[i - 1:i + k], "alt": seq[i - 1]}


def _windows(length: int) -> int:
    """How many windows of WINDOW's lengths fit in a record of `length` bases."""
    return sum(length - w + 1 for w in range(WINDOW[0], min(WINDOW[1], length) + 1))


def origin(rng: random.Random, public: Path) -> dict:
    """Reads of one window (800-2,000 bp) of one record of a drawn staged reference
    (influenza's segments included): the reference drawn uniformly, then the window uniformly
    among all its records' windows (so a short segment is rarely drawn: few windows fit it).
    A read is placed at each edge of the window, so the reads cover exactly [start, end].
    Truth: the record's identifier (the FASTA header's first word, the contig name an aligner
    reports), the window's first and last base, 1-based."""
    name = rng.choice(SINGLE + MULTI)
    records = [(ident, seq) for ident, seq in staged_records("reference", name)
               if len(seq) >= WINDOW[0]]
    while True:
        ident, seq = rng.choices(records, weights=[_windows(len(s)) for _, s in records])[0]
        w = rng.randint(WINDOW[0], min(WINDOW[1], len(seq)))
        start = rng.randrange(0, len(seq) - w + 1)
        if _plain(seq[start:start + w]):
            break
    end = start + w
    reads = _library(rng, seq, start, end)
    for at in (start, end - READ_LENGTH):
        reads += simulate_reads(rng, seq, 1, READ_LENGTH, start=at, end=at + READ_LENGTH)
    _write_reads(rng, public, reads)
    return {"record": ident, "start": start + 1, "end": end}


def large_deletion(rng: random.Random, public: Path) -> dict:
    """A deletion of 200-2,000 bp in a drawn single-record reference, its junction free of
    microhomology (fixed_deletion), ~150 bp reads of the deleted genome (the junction reads are
    split across it). Truth in `biotool breakpoints`' convention (pos = the last reference base
    before the break): left = the last base kept before the deleted ones, right = the last
    deleted base (the right-hand piece starts at right + 1), 1-based."""
    name, _, i, k = _deletion(rng, public, LARGE_DELETION)
    return {"reference": name, "left": i, "right": i + k}
