"""Breakpoints on amplicon libraries: read starts and ends at the amplicon's primers (and at a
contig's first and last base) are not breaks; the Cas9 cut carried by indels ranks first."""

import pytest

from biotool_testing import simulate as sim


def _run(biotool, fasta, fastq):
    r = biotool("breakpoints", "--fastq", str(fastq), "--reference", str(fasta))
    assert r.code == 0, r.stderr
    return r.json


@pytest.mark.parametrize("reverse_share", [0.0, 0.5])
def test_cut_in_a_220bp_amplicon_ranks_first_and_edges_are_explained(biotool, tmp_path,
                                                                     reverse_share):
    amp, c = sim.amplicon(220, seed=41)
    reads, truth = sim.amplicon_reads(amp, c, seed=41, n=2000, edited=0.25,
                                      reverse_share=reverse_share)
    fasta = sim.write_fasta(tmp_path / "amplicon.fasta", "amplicon", amp)
    out = _run(biotool, fasta, sim.write_fastq(tmp_path / "miseq.fastq", reads))
    assert out["preset"] == "sr"
    top = out["consensus"][0]
    assert (top["contig"], top["pos"]) == ("amplicon", c)
    assert "indels" in top["agreeing"]
    # Nearly every edited read carries its indel across the cut (a few end in a clip instead).
    assert 0.9 * truth["edited_reads"] <= top["indels"] <= truth["edited_reads"]
    assert abs(top["broken_fraction"] - 0.25) < 0.05
    assert out["by_signature"]["indels"]["span"] == [c, c]
    # Both amplicon ends were seen by (nearly) every read and are explained, not ranked.
    discounted = {d["pos"]: d for d in out["discounted"]}
    assert discounted[0]["reads"] > 1800 and "first base" in discounted[0]["why"]
    assert discounted[220]["reads"] > 1800 and "last base" in discounted[220]["why"]
    assert all(row["pos"] not in (0, 220) for row in out["consensus"])
    assert "discounted" in out["note"] and "primers" in out["note"]
    # Indel spans overlap next to the cut (a templated +1 insertion may sit on either side of
    # the base it doubles), so the runner-up is the neighbour, with fewer reads: no tie.
    comp = top["competence"]
    assert comp["ties"] == 0 and comp["margin"] > 0.05
    assert abs(out["consensus"][1]["pos"] - c) == 1


def test_amplicon_within_a_longer_reference_discounts_its_primers(biotool, tmp_path):
    # The same library aligned to the genome the amplicon comes from: the primers are not
    # contig ends, so only the one-sided pile of read starts (ends) marks them.
    genome = sim.genome(6000, seed=43)
    amp, c = sim.amplicon(220, seed=42)
    genome = genome[:2000] + amp + genome[2220:]
    reads, truth = sim.amplicon_reads(amp, c, seed=42, n=2000, edited=0.25, reverse_share=0.5)
    fasta = sim.write_fasta(tmp_path / "genome.fasta", "chr", genome)
    out = _run(biotool, fasta, sim.write_fastq(tmp_path / "miseq.fastq", reads))
    assert out["consensus"][0]["pos"] == 2000 + c
    # Stagger bases and adapters that match the flanks by chance spread each primer's read
    # edges over a few bases; together they hold nearly every read.
    for primer in (2000, 2220):
        near = [d for d in out["discounted"] if abs(d["pos"] - primer) <= 5]
        assert sum(d["reads"] for d in near) > 1800
        assert all("primer" in d["why"] for d in near)
    assert all(abs(row["pos"] - p) > 5 for row in out["consensus"] for p in (2000, 2220))
