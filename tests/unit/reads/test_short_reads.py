"""Short reads take the short-read path by length whatever their quality, and map within 1%
of `bwa mem` on bowtie2's own example (lambda phage, 10,000 simulated reads with errors and Ns,
mean base quality 16.5)."""

import subprocess
from pathlib import Path

import pytest

from biotool.reads.fastq import auto_preset

LAMBDA = Path(__file__).with_name("data") / "bowtie2_lambda"
READS = LAMBDA / "reads_1.fq.gz"
REF = LAMBDA / "lambda_virus.fa"


@pytest.fixture(scope="module")
def bwa_peer(tmp_path_factory) -> int:
    """Primary alignments `bwa mem` maps from the same reads, run directly."""
    d = tmp_path_factory.mktemp("bwa_peer")
    subprocess.run(["bwa", "index", "-p", str(d / "lambda"), str(REF)], check=True,
                   capture_output=True)
    sam = subprocess.run(["bwa", "mem", "-v", "1", str(d / "lambda"), str(READS)], check=True,
                         capture_output=True).stdout.decode().splitlines()
    flags = [int(l.split("\t")[1]) for l in sam if not l.startswith("@")]
    primary = [f for f in flags if not f & 0x900]
    assert len(primary) == 10000
    return sum(1 for f in primary if not f & 4)


@pytest.mark.parametrize("median,quality,want", [
    (91, 16.5, "sr"), (150, 35.0, "sr"), (350, 8.0, "sr"), (351, 35.0, "map-ont"),
    (5000, 12.0, "map-ont"),
])
def test_the_short_read_path_is_picked_by_length_alone(median, quality, want):
    preset, why = auto_preset({"median_length": median, "mean_quality": quality})
    assert preset == want and str(median) in why


def test_align_maps_noisy_short_reads_within_one_percent_of_bwa(biotool, bwa_peer):
    r = biotool("align", "--fastq", str(READS), "--reference", str(REF), "--n-reads", "10000")
    assert r.code == 0, r.stderr
    out = r.json
    assert out["preset"] == "sr" and out["aligner"] == "bwa mem"
    assert "16.5" in out["preset_reason"] and out["n_reads"] == 10000
    assert out["mapped"] >= bwa_peer - 100, (out["mapped"], bwa_peer)  # within 1% of the reads
    assert out["mapped_fraction"] > 0.95
    assert any(u["name"] == "bwa" and len(u["sha256"]) == 64 for u in out["provenance"]["used"])


def test_whole_library_bam_maps_as_many_reads_as_bwa(biotool, bwa_peer, tmp_path, leftovers):
    args = ("breakpoints", "--fastq", str(READS), "--reference", str(REF))
    r = biotool(*args)
    assert r.code == 0, r.stderr
    out = r.json
    assert out["preset"] == "sr"
    mapped = int(subprocess.run(["samtools", "view", "-c", "-F", "0x904", out["bam"]],
                                check=True, capture_output=True, text=True).stdout)
    assert mapped >= bwa_peer - 100, (mapped, bwa_peer)
    # The bwa index is built once into the cache, beside nothing half-written.
    indexes = list((tmp_path / "cache").rglob("reference.bwt"))
    assert len(indexes) == 1
    assert biotool(*args).json["bam"] == out["bam"]
    assert leftovers(tmp_path / "cache") == []


def test_short_read_sample_stops_at_the_time_budget(biotool):
    # The index is built first (a tiny budget cannot cover that: test_index_build.py); then the
    # budget is spent before the first read is fed: a flagged partial result, not a hang.
    assert biotool("align", "--fastq", str(READS), "--reference", str(REF), "--n-reads",
                   "10").code == 0
    r = biotool("align", "--fastq", str(READS), "--reference", str(REF), "--n-reads", "10000",
                "--timeout", "0.001")
    assert r.code == 0, r.stderr
    out = r.json
    assert out["truncated"] is True and out["aligner"] == "bwa mem"
    assert out["n_reads"] < 10000 and out["n_reads_in_file"] == 10000
    assert any("--timeout" in s for s in out["competence"]["blind_spots"])
