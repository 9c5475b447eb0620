"""The reads a command works on: BAMs given by the agent, or FASTQ aligned into cached BAMs."""

from __future__ import annotations

import os
import time
from collections import Counter
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
    _no_repeats(bams or [str(f) for g in fastq_groups for f in g], "--bam" if bams else "--fastq")
    if bams:
        contigs = ref.contigs()
        for b in bams:
            handle = open_bam(b)  # fail early on a missing index, before any work
            try:
                check_header(handle, b, ref, contigs)
            finally:
                handle.close()
            libs.append({"sample": Path(b).name, "bam": str(b), "aligned_here": False,
                         "truncated": False})
        _unique_samples(libs)
        return libs, prov
    presets = set()
    for group in fastq_groups:
        out = library_bam(group, ref, preset, threads, deadline, start)
        presets.add(out["preset"])
        libs.append({"sample": Path(group[0]).name, "fastq": [str(g) for g in group],
                     "aligned_here": True, **out})
    _unique_samples(libs)
    for p in sorted(presets):
        path, digest = ref.index(p)
        prov.append(used("index", f"minimap2:{p}", digest, path=str(path)))
    return libs, prov


def deadline_from(timeout: float | None) -> tuple[float, float | None]:
    start = time.monotonic()
    if timeout is not None and not timeout > 0:  # `not >` also catches nan
        raise InputError(f"--timeout {timeout}: must be a positive number of seconds")
    return start, (start + timeout if timeout else None)


def check_header(handle, path: str, ref: Reference, contigs: dict[str, int]) -> None:
    """InputError unless the BAM was aligned to this reference: it must share a contig name
    with it, every shared name must have the same length, and an @SQ M5 (when present) the
    same sequence. Pooling BAMs of different references would add unrelated positions."""
    import hashlib

    shared = [sq for sq in handle.header.to_dict().get("SQ", []) if sq.get("SN") in contigs]
    if not shared:
        names = ", ".join(list(contigs)[:5])
        raise InputError(f"--bam {path}: its header has none of the reference contigs ({names}); "
                         "was it aligned to this --reference?")
    for sq in shared:
        if int(sq.get("LN", -1)) != contigs[sq["SN"]]:
            raise InputError(f"--bam {path}: contig {sq['SN']} is {sq.get('LN')} bp in its header "
                             f"but {contigs[sq['SN']]} bp in --reference {ref.name}: it was "
                             "aligned to a different reference")
        if sq.get("M5"):
            import pysam

            with pysam.FastaFile(str(ref.fasta)) as fa:
                seq = fa.fetch(sq["SN"]).upper().encode()
            if hashlib.md5(seq).hexdigest() != str(sq["M5"]).lower():
                raise InputError(f"--bam {path}: contig {sq['SN']} has a different sequence (M5) "
                                 f"in its header than in --reference {ref.name}: it was aligned "
                                 "to a different reference")


def _no_repeats(paths: list[str], flag: str) -> None:
    """The same file given twice would count every read twice when pooled."""
    seen = {}
    for p in paths:
        real = os.path.realpath(p)
        if real in seen:
            raise InputError(f"{flag} {p}: given twice (also as {seen[real]}); each library once")
        seen[real] = p


def _unique_samples(libs: list[dict]) -> None:
    """Sample names are file names; two files of one name in different folders get their paths,
    so VCF sample columns stay distinct (and free of tabs)."""
    counts = Counter(l["sample"] for l in libs)
    for l in libs:
        if counts[l["sample"]] > 1:
            l["sample"] = l.get("bam") or l["fastq"][0]
        l["sample"] = " ".join(l["sample"].split()) or "sample"


def check_top(top: int) -> None:
    if top < 1:
        raise InputError(f"--top {top}: must be at least 1")
