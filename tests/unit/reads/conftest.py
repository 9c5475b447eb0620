"""Simulated truth for the reads tests, generated once per session (seeded, small)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from biotool_testing import simulate as sim

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
ARTIC_FASTQ = REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"


@pytest.fixture(scope="session")
def cas9(tmp_path_factory) -> dict:
    """A 6 kb genome cut after base c, reads carrying every break signature at c."""
    d = tmp_path_factory.mktemp("cas9")
    ref = sim.genome(6000, seed=11)
    c = sim.cut_site(ref, random.Random(11))
    reads, truth = sim.cas9_reads(ref, c, seed=11)
    fasta = sim.write_fasta(d / "genome.fasta", "sim_chr", ref)
    fq = sim.write_fastq(d / "cas9.fastq", reads)
    return {"dir": d, "fasta": fasta, "fastq": fq, "truth": truth, "ref": ref,
            "bam": sim.align(fasta, fq, d / "cas9.bam")}


@pytest.fixture(scope="session")
def planted(tmp_path_factory) -> dict:
    """A 6 kb genome with SNVs and indels at known fractions, 60x of 150 bp reads with 0.5%
    substitution errors, and a BAM of them; the reads are also split into two samples."""
    d = tmp_path_factory.mktemp("planted")
    ref = sim.genome(6000, seed=21)
    truth = sim.plant_variants(ref, seed=21, fractions=(1.0, 0.5, 0.35), low=(0.04,))
    reads = sim.variant_reads(ref, truth, depth=60, seed=21, error_rate=0.005)
    fasta = sim.write_fasta(d / "genome.fasta", "sim_chr", ref)
    fq = sim.write_fastq(d / "reads.fastq", reads)
    half = len(reads) // 2
    fq_a = sim.write_fastq(d / "sampleA.fastq", reads[:half])
    fq_b = sim.write_fastq(d / "sampleB.fastq", reads[half:])
    return {"dir": d, "fasta": fasta, "fastq": fq, "truth": truth, "ref": ref,
            "bam": sim.align(fasta, fq, d / "reads.bam"),
            "bam_a": sim.align(fasta, fq_a, d / "sampleA.bam"),
            "bam_b": sim.align(fasta, fq_b, d / "sampleB.bam")}


def cache_leftovers(cache: Path) -> list[str]:
    """Files in the cache that a later run must never trust: temp files, BAMs without index."""
    bad = []
    if not cache.exists():
        return bad
    for p in cache.rglob("*"):
        if p.is_file() and (p.name.startswith(".") or ".work." in str(p)):
            bad.append(str(p))
        if p.suffix == ".bam" and not Path(str(p) + ".bai").exists():
            bad.append(str(p))
    return bad


@pytest.fixture
def leftovers():
    return cache_leftovers


@pytest.fixture(scope="session")
def artic_fastq() -> Path:
    return ARTIC_FASTQ
