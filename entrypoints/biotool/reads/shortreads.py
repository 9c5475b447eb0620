"""Short reads go to `bwa mem`; long reads stay on minimap2.

minimap2's `sr` preset maps ~11% fewer of a noisy short-read library than `bwa mem` (bowtie2's
lambda-phage example: 85% against 96.4%, bench/reads_bench.py), so the short-read path is bwa,
with its index staged with the reference or built once into the cache (biotool.reads.indexes).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from biotool.output import InputError
from biotool.procs import OutOfTime, run_pipeline

SHORT = "sr"  # the preset name of the short-read path, kept from minimap2's vocabulary
# Seconds past --timeout that an aligner (and its sort) has to finish the reads it was given.
FINISH_GRACE = 30.0
_REF_OPS = re.compile(r"(\d+)[MDN=X]")


def aligner_of(preset: str) -> str:
    """The aligner command a preset runs, as the output names it."""
    return "bwa mem" if preset == SHORT else f"minimap2 -x {preset}"


def index_label(preset: str) -> str:
    """The provenance name of a preset's index."""
    return "bwa" if preset == SHORT else f"minimap2:{preset}"


def bwa_command(prefix: Path, threads: int, paired: bool) -> list[str]:
    """`bwa mem` reading FASTQ on stdin (mates interleaved when paired), SAM on stdout."""
    return ["bwa", "mem", "-v", "1", "-t", str(threads), *(["-p"] if paired else []),
            str(prefix), "-"]


def finish_by(deadline: float | None) -> float | None:
    """When a fed aligner (and its sort) is killed: FINISH_GRACE past the command's deadline,
    the feeding having stopped at it, so the reads given are aligned into a partial result
    while nothing runs on unbounded."""
    return None if deadline is None else deadline + FINISH_GRACE


def map_sample(prefix: Path, recs, as_text, threads: int = 1,
               deadline: float | None = None) -> tuple[list[tuple], int, bool]:
    """Primary placements of `recs` by bwa mem: ([(contig, start0, end0, mapq, reverse)] for
    mapped reads, reads aligned, truncated). Reads are fed while SAM is read back, and
    feeding stops at the deadline, so the budget bounds the work."""
    fed, truncated = 0, False
    placed, seen = [], 0

    def feed(stdin) -> None:
        nonlocal fed, truncated
        for rec in recs:
            if deadline is not None and fed % 256 == 0 and time.monotonic() > deadline:
                truncated = True
                break
            stdin.write(as_text(rec))
            fed += 1

    def read(stdout) -> None:
        nonlocal seen
        for line in stdout:
            if line[:1] == b"@":
                continue
            f = line.split(b"\t", 6)
            flag = int(f[1])
            if flag & 0x900:
                continue
            seen += 1
            if flag & 4:
                continue
            start = int(f[3]) - 1
            length = sum(int(n) for n in _REF_OPS.findall(f[5].decode()))
            placed.append((f[2].decode(), start, start + length, int(f[4]), bool(flag & 16)))

    try:
        run_pipeline([bwa_command(prefix, threads, False)], finish_by(deadline), feed=feed,
                     read=read, names=["bwa mem"])
    except OutOfTime as why:
        raise InputError(f"bwa mem did not finish the {fed} reads given within --timeout and "
                         f"{FINISH_GRACE:g} s ({why}); give a longer --timeout") from None
    return placed, seen, truncated
