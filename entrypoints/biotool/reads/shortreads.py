"""A sample of short reads placed by `bwa mem` (`biotool align`'s short-read path), read back
from its SAM as it streams."""

from __future__ import annotations

from pathlib import Path

from biotool.alignment import aligners
from biotool.alignment.aligners import bwa_command, finish_by
from biotool.alignment.vocabulary import NOT_PRIMARY, REVERSE, UNMAPPED, text_reference_length
from biotool.deadline import UNBOUNDED, Deadline
from biotool.procs import OutOfTime, run_pipeline


def map_sample(prefix: Path, recs, as_text, threads: int = 1,
               deadline: Deadline = UNBOUNDED) -> tuple[list[tuple], int, bool]:
    """Primary placements of `recs` by bwa mem: ([(contig, start0, end0, mapq, reverse)] for
    mapped reads, reads aligned, truncated). Reads are fed while SAM is read back, and
    feeding stops at the deadline, so the budget bounds the work."""
    fed, truncated = 0, False
    placed, seen = [], 0

    def feed(stdin) -> None:
        nonlocal fed, truncated
        for rec in recs:
            if fed % 256 == 0 and deadline.passed():
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
            if flag & NOT_PRIMARY:
                continue
            seen += 1
            if flag & UNMAPPED:
                continue
            start = int(f[3]) - 1
            length = text_reference_length(f[5].decode())
            placed.append((f[2].decode(), start, start + length, int(f[4]),
                           bool(flag & REVERSE)))

    try:
        run_pipeline([bwa_command(prefix, threads, False)], finish_by(deadline), feed=feed,
                     read=read, names=["bwa mem"])
    except OutOfTime as why:
        raise why.refusal(f"bwa mem did not finish the {fed} reads given "
                          f"{aligners.within_grace()}") from None
    return placed, seen, truncated
