"""The one way to run an aligner: which one a preset runs, its command line, the name of
its index, and how long it may run past the command's deadline.

Short reads go to `bwa mem`; long reads stay on minimap2. minimap2's `sr` preset maps ~11%
fewer of a noisy short-read library than `bwa mem` (bowtie2's lambda-phage example: 85%
against 96.4%, bench/reads_bench.py), so the short-read path is bwa, with its index staged
with the reference or built once into the cache (biotool.alignment.indexes).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from biotool.deadline import Deadline
from biotool.output import ToolFailure

SHORT = "sr"  # the preset name of the short-read path, kept from minimap2's vocabulary
# Seconds past --timeout that an aligner (and its sort) has to finish the reads it was given.
FINISH_GRACE = 30.0


def aligner_of(preset: str) -> str:
    """The aligner command a preset runs, as the output names it."""
    return "bwa mem" if preset == SHORT else f"minimap2 -x {preset}"


def index_label(preset: str) -> str:
    """The provenance name of a preset's index."""
    return "bwa" if preset == SHORT else f"minimap2:{preset}"


def bwa_command(prefix: Path, threads: int, paired: bool, reads: str = "-") -> list[str]:
    """`bwa mem` reading FASTQ from `reads` (stdin by default; mates interleaved when
    paired), SAM on stdout."""
    return ["bwa", "mem", "-v", "1", "-t", str(threads), *(["-p"] if paired else []),
            str(prefix), reads]


def aligner_command(preset: str, index: Path, threads: int, paired: bool) -> list[str]:
    """The aligner of `preset` reading FASTQ on stdin, SAM on stdout: bwa mem for short
    reads, minimap2 (primary and supplementary alignments only) for the long-read presets."""
    if preset == SHORT:
        return bwa_command(index, threads, paired)
    return ["minimap2", "-a", "-x", preset, "-t", str(threads), "--secondary=no", str(index),
            "-"]


def finish_by(deadline: Deadline) -> float | None:
    """When a fed aligner (and its sort) is killed: FINISH_GRACE past the command's deadline,
    the feeding having stopped at it, so the reads given are aligned into a partial result
    while nothing runs on unbounded."""
    return None if deadline.at is None else deadline.at + FINISH_GRACE


def within_grace() -> str:
    """How a refusal words the bound a fed aligner had (--timeout, then the grace)."""
    return f"within --timeout and {FINISH_GRACE:g} s"


@contextmanager
def naming(reference: str, fastqs) -> Iterator[None]:
    """An aligner's failure names the caller's inputs (--reference as given, --fastq), not
    only the tool: a crash on the input is read as being about that input."""
    try:
        yield
    except ToolFailure as exc:
        reads = ", ".join(str(f) for f in fastqs)
        raise ToolFailure(f"--reference {reference} with --fastq {reads}: {exc.message}") from None
