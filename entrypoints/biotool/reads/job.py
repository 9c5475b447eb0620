"""What a reads command works on, gathered once before any counting: the reference with its
contigs, the regions, the libraries (BAMs given, or FASTQ aligned into cached BAMs), the
provenance of the indexes aligned with, and the command's `Deadline`. `breakpoints` and
`variants` open one `ReadsJob`."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from pathlib import Path

from biotool.alignment.aligners import index_label
from biotool.alignment.reference import Reference, resolve
from biotool.deadline import Deadline
from biotool.provenance import used
from biotool.reads import region as region_mod
from biotool.reads.bam import check_library, check_sorted_and_indexed, library_bam, open_bam
from biotool.reads.inputs import (check_header, check_same_sequence, no_repeats,
                                  unique_samples)
from commandline.choice import exactly_one

# Reference fetched either side of a region, so an indel or a repeat at its edge is read whole.
PAD = 2000


@dataclass(frozen=True)
class Library:
    """One library of reads as a coordinate-sorted, indexed BAM: one the agent gave
    (`aligned_here` false: checked against the reference before any work), or its FASTQ
    aligned by this run into the cache."""

    sample: str                     # the VCF column and the output's name for it
    bam: str
    aligned_here: bool
    truncated: bool = False         # --timeout stopped feeding its aligner
    preset: str | None = None       # the aligner preset, when aligned here
    fastq: tuple[str, ...] = ()     # its FASTQ file(s), when aligned here
    warnings: tuple[str, ...] = ()  # what the BAM's checks let through but the agent must know


@dataclass(frozen=True)
class ReadsJob:
    reference: Reference
    contigs: dict[str, int]
    regions: list[tuple[str, int, int]]   # 0-based half-open (contig, start, end)
    region: str | None                    # --region as given
    libraries: tuple[Library, ...]
    index_provenance: tuple               # provenance.used() of each index aligned with
    deadline: Deadline

    @property
    def truncated(self) -> bool:
        """Whether --timeout cut any library's alignment short."""
        return any(lib.truncated for lib in self.libraries)

    @property
    def warnings(self) -> list[str]:
        """What the input checks let through but the agent must know (e.g. a header checksum
        that disagrees while the bases agree)."""
        return [w for lib in self.libraries for w in lib.warnings]

    def window(self, contig: str, start: int, end: int) -> tuple[str, int]:
        """(sequence, offset): the reference over start..end and PAD either side."""
        off = max(0, start - PAD)
        return self.reference.fetch(contig, off, min(self.contigs[contig], end + PAD)), off


def open_job(reference: str, fastq_groups: list[list[str]], bams: list[str],
             region: str | None, preset: str, threads: int,
             deadline: Deadline) -> ReadsJob:
    """Every input checked, and FASTQ libraries aligned, before any counting: the deadline,
    the reference, the regions on its contigs, then the libraries."""
    ref = resolve(reference)
    contigs = ref.contigs()
    regions = region_mod.parse(region, contigs)
    libs, prov = bams_for(fastq_groups, bams, ref, preset, threads, deadline)
    return ReadsJob(ref, contigs, regions, region, tuple(libs), tuple(prov), deadline)


def bams_for(fastq_groups: list[list[str]], bams: list[str], ref: Reference, preset: str,
             threads: int, deadline: Deadline) -> tuple[list[Library], list[dict]]:
    """The libraries, each FASTQ group one library, and the provenance of the indexes aligned
    with; every BAM checked against the reference before any is read."""
    exactly_one({"--fastq": fastq_groups, "--bam": bams})
    libs, prov = [], []
    for group in fastq_groups:
        check_library(group)
    no_repeats(bams or [str(f) for g in fastq_groups for f in g], "--bam" if bams else "--fastq")
    if bams:
        contigs = ref.contigs()
        md5s: dict[str, str] = {}  # contig -> md5 of the reference's sequence, shared by BAMs
        for b in bams:
            handle = open_bam(b)  # fail early on a missing index, before any work
            try:
                warnings = check_header(handle, b, ref, contigs, md5s)
                check_sorted_and_indexed(handle, b)
                check_same_sequence(handle, b, ref, contigs)
            finally:
                with contextlib.suppress(OSError):  # htslib's close fails after a read error
                    handle.close()
            libs.append(Library(Path(b).name, str(b), aligned_here=False,
                                warnings=tuple(warnings)))
        return unique_samples(libs), prov
    presets = set()
    for group in fastq_groups:
        out = library_bam(group, ref, preset, threads, deadline)
        presets.add(out.preset)
        libs.append(Library(Path(group[0]).name, out.bam, aligned_here=True,
                            truncated=out.truncated, preset=out.preset,
                            fastq=tuple(str(g) for g in group)))
    for p in sorted(presets):
        path, digest = ref.index(p)
        prov.append(used("index", index_label(p), digest, path=str(path)))
    return unique_samples(libs), prov


def with_warnings(comp, warnings: list[str]):
    """A competence with the input warnings added to its blind spots."""
    return replace(comp, blind_spots=comp.blind_spots + tuple(warnings))
