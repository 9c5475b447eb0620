"""The reads a command works on: BAMs given by the agent, or FASTQ aligned into cached BAMs."""

from __future__ import annotations

import time
from pathlib import Path

from biotool.output import InputError
from biotool.provenance import used
from biotool.reads.bam import library_bam, open_bam
from biotool.reads.reference import Reference


def bams_for(fastq_groups: list[list[str]], bams: list[str], ref: Reference, preset: str,
             threads: int, deadline: float | None, start: float) -> tuple[list[dict], list[dict]]:
    """[{sample, bam, ...}] and provenance items; each FASTQ group is one library."""
    if bool(fastq_groups) == bool(bams):
        raise InputError("give reads as --fastq or as --bam (exactly one of them)")
    libs, prov = [], []
    if bams:
        for b in bams:
            open_bam(b).close()  # fail early on a missing index, before any work
            libs.append({"sample": Path(b).name, "bam": str(b), "aligned_here": False,
                         "truncated": False})
        return libs, prov
    presets = set()
    for group in fastq_groups:
        out = library_bam(group, ref, preset, threads, deadline, start)
        presets.add(out["preset"])
        libs.append({"sample": Path(group[0]).name, "fastq": [str(g) for g in group],
                     "aligned_here": True, **out})
    for p in sorted(presets):
        path, digest = ref.index(p)
        prov.append(used("index", f"minimap2:{p}", digest, path=str(path)))
    return libs, prov


def deadline_from(timeout: float | None) -> tuple[float, float | None]:
    start = time.monotonic()
    if timeout is not None and timeout <= 0:
        raise InputError("--timeout must be positive (seconds)")
    return start, (start + timeout if timeout else None)
