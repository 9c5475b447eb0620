"""A header checksum alone never refuses good data: the 1000 Genomes layout, where the BAM's
@SQ carries the M5 of the full chromosome and --reference is the matching extract."""

import hashlib
import subprocess
from pathlib import Path

import pytest

from biotool_testing import simulate as sim
from biotool_testing.arms import run_arms
from biotool_testing.contract import error_line


def _reheader(src_bam: Path, out_bam: Path, **sq) -> Path:
    import pysam

    with pysam.AlignmentFile(str(src_bam)) as src:
        header = src.header.to_dict()
        header["SQ"][0].update(sq)
        with pysam.AlignmentFile(str(out_bam), "wb", header=header) as out:
            for read in src:
                out.write(pysam.AlignedSegment.fromstring(read.to_string(), out.header))
    pysam.index(str(out_bam))
    return out_bam


@pytest.fixture(scope="module")
def extract(tmp_path_factory) -> dict:
    """A 12 kb 'chromosome', a 4,200-base extract of it as --reference (same contig name and
    the extract's length, as in a caller's test data), planted variants, reads, and a BAM
    whose @SQ carries the full chromosome's M5 and UR."""
    d = tmp_path_factory.mktemp("extract")
    chrom = sim.genome(12000, seed=31)
    ref = chrom[3000:7200]
    truth = sim.plant_variants(ref, seed=31, fractions=(1.0, 0.5), low=())
    reads = sim.variant_reads(ref, truth, depth=60, seed=31, error_rate=0.005)
    fasta = sim.write_fasta(d / "extract.fasta", "20", ref)
    fq = sim.write_fastq(d / "reads.fastq", reads)
    plain = sim.align(fasta, fq, d / "plain.bam")
    m5 = hashlib.md5(chrom.encode()).hexdigest()
    bam = _reheader(plain, d / "full_m5.bam", M5=m5, UR="file:/data/human_g1k_v37.fasta")
    other = sim.write_fasta(d / "other.fasta", "20", sim.genome(4200, seed=32))
    return {"fasta": fasta, "other": other, "bam": bam, "truth": truth, "m5": m5}


def test_header_m5_of_the_full_chromosome_is_a_warning_and_calls_stay_exact(biotool, extract):
    r = biotool("variants", "--bam", str(extract["bam"]), "--reference", str(extract["fasta"]),
                "--top", "100")
    assert r.code == 0, r.stderr
    out = r.json
    [warning] = out["warnings"]
    assert "M5" in warning and "human_g1k_v37" in warning and "lengths agree" in warning
    assert warning in out["competence"]["blind_spots"]
    called = {(v["pos"], v["ref"], v["alt"]) for v in out["variants"]}
    assert called == {(t["pos"], t["ref"], t["alt"]) for t in extract["truth"]}
    # bcftools reads the same BAM against the same extract and finds the same sites.
    mp = subprocess.run(f"bcftools mpileup -f {extract['fasta']} {extract['bam']} 2>/dev/null | "
                        "bcftools call -mv 2>/dev/null | bcftools query -f '%POS\\n'",
                        shell=True, capture_output=True, text=True, check=True)
    assert {int(p) for p in mp.stdout.split()} == {t["pos"] for t in extract["truth"]}


def test_header_m5_warning_reaches_breakpoints_too(biotool, extract):
    arms = run_arms(biotool, ("breakpoints", "--bam", str(extract["bam"]), "--reference",
                              str(extract["fasta"])))
    tool, control = arms["tool"], arms["control"]
    [warning] = tool["warnings"]
    assert warning in tool["consensus"][0]["competence"]["blind_spots"]
    # What the check found is a finding, kept in the control arm; only the guess at why (and
    # the blind spots that repeat it) go.
    [kept] = control["warnings"]
    assert "is not the md5 of" in kept and "positions are read as --reference's" in kept
    assert "likely" in warning and "likely" not in kept
    assert control["consensus"] == [
        {k: v for k, v in row.items() if k != "competence"} for row in tool["consensus"]]


@pytest.mark.parametrize("command", ["variants", "breakpoints"])
def test_checksum_and_bases_both_disagreeing_is_still_refused(biotool, extract, command):
    # Same contig name and length, another sequence: the sampled bases give it away.
    r = biotool(command, "--bam", str(extract["bam"]), "--reference", str(extract["other"]))
    error_line(r, extract["bam"], "different sequence (M5)", "aligned to a different reference")
