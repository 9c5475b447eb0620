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


def test_primers_stay_discounted_when_some_reads_are_chimeras(biotool, tmp_path):
    # Two 150 bp amplicons of one genome; a fifth of the reads are ligated pairs, so a piece
    # of each splits at a primer (an SA tag, a supplementary alignment): most reads covering
    # each primer still stop there, so it stays a primer, and no primer ranks as a break.
    genome = sim.genome(6000, seed=44)
    amps = [genome[1000:1150], genome[3000:3150]]
    reads = sim.chimeric_amplicon_reads(amps, seed=44, n=2000, chimeric=0.2)
    fasta = sim.write_fasta(tmp_path / "genome.fasta", "chr", genome)
    out = _run(biotool, fasta, sim.write_fastq(tmp_path / "miseq.fastq", reads))
    primers = (1000, 1150, 3000, 3150)
    for primer in primers:
        near = [d for d in out["discounted"] if abs(d["pos"] - primer) <= 5]
        assert sum(d["reads"] for d in near) > 800, primer
        assert all("primer" in d["why"] for d in near)
        assert 0.6 < max(d["share"] for d in near) < 0.95  # the chimeras' pieces split there
    assert all(abs(row["pos"] - p) > 5 for row in out["consensus"] for p in primers)


def test_real_artic_reads_keep_their_primers_and_the_isolates_deletion(biotool, artic_fastq):
    # 200 ARTIC nanopore reads of amplicon 99 (MT007544); a few are chimeras whose pieces
    # split at a primer. The verdicts: the 10-nt deletion at 29749 carried by indels ranks
    # first, the amplicon's read starts (29486) and ends (29866) are primers.
    r = biotool("breakpoints", "--fastq", str(artic_fastq), "--reference", "MN908947.3")
    assert r.code == 0, r.stderr
    out = r.json
    assert out["preset"] == "map-ont"
    top = out["consensus"][0]
    assert (top["pos"], top["indels"], top["agreeing"]) == (29751, 191, ["indels"])
    assert all(29740 <= row["pos"] <= 29760 for row in out["consensus"])
    assert [(d["pos"], d["reads"], d["why"]) for d in out["discounted"]] == [
        (29486, 200, "primer (reads start)"), (29866, 163, "primer (reads end)"),
        (29863, 8, "primer (reads end)"), (29865, 2, "primer (reads end)"),
        (29482, 1, "primer (reads start)"), (29861, 1, "primer (reads end)"),
        (29864, 1, "primer (reads end)"), (29868, 1, "primer (reads end)")]
    assert out["discounted_total"] == 8
