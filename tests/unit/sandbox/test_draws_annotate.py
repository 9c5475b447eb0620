"""The annotation draws (biotool_sandbox.draws.annotate): the same seed gives the same inputs
and truth, seeds differ in their truth, and each truth is checked against the written inputs
with Biopython and the staged data, not the draw's own bookkeeping."""

from __future__ import annotations

import random

import pytest

from biotool_sandbox.draws import annotate
from biotool_sandbox.draws.common import reverse_complement

SEEDS = range(12)


def _sequence(folder) -> str:
    lines = (folder / "sequence.fasta").read_text().splitlines()
    assert lines[0].startswith(">") and not any(ln.startswith(">") for ln in lines[1:])
    return "".join(lines[1:])


def _draw(fn, seed, folder):
    folder.mkdir()
    return fn(random.Random(seed), folder)


def _files(folder) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("fn, files", [
    (annotate.orf_drawn, ["sequence.fasta"]),
    (annotate.restriction_drawn, ["enzymes.txt", "sequence.fasta"]),
    (annotate.variant_annotate_drawn, ["variant.tsv"]),
])
def test_same_seed_same_draw_and_seeds_differ(fn, files, tmp_path, biotool_env):
    a = _draw(fn, 7, tmp_path / "a")
    b = _draw(fn, 7, tmp_path / "b")
    assert a == b and _files(tmp_path / "a") == _files(tmp_path / "b")
    assert sorted(_files(tmp_path / "a")) == files
    truths = [_draw(fn, seed, tmp_path / f"s{seed}") for seed in SEEDS]
    assert len({repr(sorted(t.items())) for t in truths}) == len(truths)


def test_orf_truth_read_from_the_sequence(tmp_path):
    from Bio.Seq import Seq

    for seed in SEEDS:
        truth = _draw(annotate.orf_drawn, seed, tmp_path / f"s{seed}")
        seq = _sequence(tmp_path / f"s{seed}")
        assert 1500 <= len(seq) <= 3000 and set(seq) <= set("ACGT")
        start, end, protein = truth["start"], truth["end"], truth["protein"]
        orf = seq[start - 1:end]
        if truth["strand"] == "-":
            orf = reverse_complement(orf)
        assert truth["strand"] in "+-" and 1 <= start < end <= len(seq)
        assert orf.startswith("ATG") and end - start + 1 == 3 * len(protein) + 3
        assert 101 <= len(protein) <= 301
        assert str(Seq(orf).translate()) == protein + "*"


def test_orf_is_the_one_biotool_finds_first(tmp_path):
    """find_orfs lists the planted ORF first, with its coordinates and protein; the next
    ORF is under the 60 codons the draw allows any other."""
    from biotool.annotate import arguments, sequence_tools

    for seed in SEEDS:
        truth = _draw(annotate.orf_drawn, seed, tmp_path / f"s{seed}")
        seq = _sequence(tmp_path / f"s{seed}")
        got = sequence_tools.find_orfs(arguments.FindOrfs(sequence=seq))
        first, second = got["orfs"][0], got["orfs"][1]
        assert {k: first[k] for k in truth} == truth
        assert second["length_aa"] < annotate.OTHER_ORF_MAX_AA


def test_own_orf_finder_on_a_small_case():
    # + frame 1: ATG AAA TAA; - strand: CAT at 10-12 read back is ATG, then GGG, then TTA -> TAA
    seq = "ATGAAATAA" + "TTACCCCAT"
    found = {(o["strand"], o["start"], o["end"], o["length_aa"]) for o in annotate.orfs(seq)}
    assert ("+", 1, 9, 2) in found and ("-", 10, 18, 2) in found


def test_enzyme_table_is_biopythons():
    from Bio import Restriction

    for name, (site, cut) in annotate.ENZYMES.items():
        enzyme = Restriction.RestrictionBatch([name]).get(name)
        assert (enzyme.site, enzyme.fst5, enzyme.is_palindromic()) == (site, cut, True), name


def test_restriction_truth_is_biopythons_search(tmp_path):
    from Bio import Restriction
    from Bio.Seq import Seq

    for seed in SEEDS:
        folder = tmp_path / f"s{seed}"
        truth = _draw(annotate.restriction_drawn, seed, folder)
        seq = _sequence(folder)
        names = (folder / "enzymes.txt").read_text().split()
        assert 2000 <= len(seq) <= 4000 and len(set(names)) == 3
        batch = Restriction.RestrictionBatch(names)
        hits = {str(e): sorted(c) for e, c in batch.search(Seq(seq), linear=True).items()}
        assert truth == {f"enzyme{i}_cuts": hits[n] for i, n in enumerate(names, 1)}
        assert all(2 <= len(cuts) <= 4 for cuts in truth.values())


def test_snv_consequence_forms():
    # The spike's D614G (c.1841A>G), a synonymous and a stop-gained change on a toy CDS.
    cds = "ATGCTTCAGGACTAA"
    assert annotate.snv_consequence(cds, 10, "G")["hgvs_p"] == "p.Asp4Gly"
    syn = annotate.snv_consequence(cds, 5, "A")
    assert (syn["hgvs_c"], syn["hgvs_p"], syn["effect"]) == ("c.6T>A", "p.Leu2=", "synonymous")
    stop = annotate.snv_consequence(cds, 6, "T")
    assert (stop["hgvs_p"], stop["effect"], stop["codon_change"]) == \
        ("p.Gln3Ter", "nonsense", "CAG>TAG")


def test_spike_d614g_by_the_draws_code(biotool_env):
    rows = {r["symbol"]: r for r in annotate.gene_rows()}
    _, genome = annotate.staged_reference("MN908947.3")
    spike = rows["S"]
    got = annotate.snv_consequence(annotate._cds(spike, genome),
                                   annotate._cds_index(spike, 23403), "G")
    assert (got["hgvs_c"], got["hgvs_p"], got["effect"]) == \
        ("c.1841A>G", "p.Asp614Gly", "missense")


def test_variant_truth_read_from_the_reference(tmp_path, biotool_env):
    from Bio.Seq import Seq

    _, genome = annotate.staged_reference("MN908947.3")
    rows = annotate.gene_rows()
    for seed in SEEDS:
        folder = tmp_path / f"s{seed}"
        truth = _draw(annotate.variant_annotate_drawn, seed, folder)
        reference, position, ref, alt = (folder / "variant.tsv").read_text().split("\t")
        position, alt = int(position), alt.strip()
        assert reference == "MN908947.3" and genome[position - 1] == ref != alt
        covering = [r for r in rows if any(a <= position <= b for a, b in r["segments"])]
        assert [r["symbol"] for r in covering] == [truth["gene"]]
        (a, b), = covering[0]["segments"]
        assert covering[0]["strand"] == "+"  # every SARS-CoV-2 CDS here
        index = position - a
        assert truth["hgvs_c"] == f"c.{index + 1}{ref}>{alt}"
        cds = genome[a - 1:b]
        mutated = cds[:index] + alt + cds[index + 1:]
        before, after = str(Seq(cds).translate()), str(Seq(mutated).translate())
        k = index // 3
        assert truth["effect"] == ("synonymous" if before == after else
                                   "nonsense" if after[k] == "*" else "missense")
        assert truth["hgvs_p"].startswith("p.") and f"{k + 1}" in truth["hgvs_p"]


def test_variant_answer_space(biotool_env):
    """Each eligible base and alternative is one answer (hgvs_c names both): a fixed answer
    passes with chance 1 / (3 x eligible bases)."""
    _, genome = annotate.staged_reference("MN908947.3")
    eligible = annotate.eligible_positions(annotate.gene_rows(), genome)
    assert len({p for p, _ in eligible}) == len(eligible)
    assert 1 / (3 * len(eligible)) < 1e-4
