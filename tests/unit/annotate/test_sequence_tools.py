"""Local sequence tools on real demo sequences and small cases whose answer is known."""

from __future__ import annotations

from pathlib import Path

import pytest

from biotool.output import InputError

DEMO = Path(__file__).resolve().parents[3] / "refs" / "demo"


def _fasta(path: Path) -> str:
    return "".join(ln.strip() for ln in path.read_text().splitlines() if not ln.startswith(">"))


def test_seq_stats_on_phix174_counts_every_base(call):
    seq = _fasta(DEMO / "genomes/phiX174.fasta").upper()
    res = call("seq_stats", {"reference": "phiX174"})
    assert res["length"] == 5386 == len(seq)
    assert res["composition"] == {b: seq.count(b) for b in sorted(set(seq))}
    gc = (seq.count("G") + seq.count("C")) / len(seq)
    assert res["gc_fraction"] == pytest.approx(gc, abs=1e-6)
    assert res["provenance"]["used"][0]["name"] == "phiX174"


def test_seq_stats_flags_ambiguous_bases(call):
    res = call("seq_stats", {"sequence": "ACGTNNNNRY"})
    assert res["ambiguous_bases"] == 6 and "molecular_weight_da" not in res
    assert res["competence"]["confidence"] == pytest.approx(0.4)
    assert "ambiguous" in res["competence"]["blind_spots"][0]


def test_seq_stats_reads_u_as_rna_not_as_ambiguous(call):
    from Bio.SeqUtils import molecular_weight

    res = call("seq_stats", {"sequence": "ACGUACGUAGGCUA"})
    assert res["alphabet"] == "rna" and res["ambiguous_bases"] == 0
    assert res["gc_fraction"] == 0.5 and res["competence"]["blind_spots"] == []
    assert res["molecular_weight_da"] == round(molecular_weight("ACGUACGUAGGCUA", "RNA"), 2)
    mixed = call("seq_stats", {"sequence": "ACGTUACGT"})
    assert "molecular_weight_da" not in mixed and "T and U" in mixed["competence"]["blind_spots"][0]


def test_protein_stats(call):
    res = call("seq_stats", {"sequence": "MKWVTFISLLFLFSSAYS", "alphabet": "protein"})
    assert res["length"] == 18 and 1900 < res["molecular_weight_da"] < 2300


def test_reverse_complement_of_iupac(call):
    assert call("reverse_complement", {"sequence": "AACGTRYN"})["reverse_complement"] == \
        "NRYACGTT"


def test_translate_all_frames_and_another_genetic_code(call):
    res = call("translate", {"sequence": "ATGTGATAA", "frame": "all"})
    frames = {f["frame"]: f["protein"] for f in res["frames"]}
    assert frames[1] == "M**" and frames[-1] == "LSH"
    # TGA is Trp in the vertebrate mitochondrial code (table 2).
    mito = call("translate", {"sequence": "ATGTGATAA", "table": 2})
    assert mito["frames"][0]["protein"] == "MW*"


def test_translate_the_spike_from_the_staged_reference(call):
    res = call("translate", {"reference": "MN908947.3", "start": 21563, "end": 25384,
                             "to_stop": True})
    protein = res["frames"][0]["protein"]
    assert len(protein) == 1273 and protein.startswith("MFVFLVLLPLVSSQCVNL")
    assert protein[613] == "D"  # D614


def test_find_orfs_recovers_the_spike_as_the_longest_orf(call):
    # From 21000 the longest ORF starts at an in-frame ATG 27 nt upstream of S (1282 aa);
    # from 21550, past that ATG, it is the S CDS itself.
    wide = call("find_orfs", {"reference": "MN908947.3", "start": 21000, "end": 26000,
                              "min_protein_length": 100})["orfs"][0]
    assert (wide["start"], wide["end"], wide["length_aa"]) == (21536 - 21000 + 1,
                                                               25384 - 21000 + 1, 1282)
    res = call("find_orfs", {"reference": "MN908947.3", "start": 21550, "end": 26000,
                             "min_protein_length": 100})
    top = res["orfs"][0]
    assert (top["strand"], top["start"], top["end"], top["length_aa"]) == \
        ("+", 21563 - 21550 + 1, 25384 - 21550 + 1, 1273)
    assert top["complete"] is True


def test_find_orfs_on_the_minus_strand_reports_input_coordinates(call):
    # An ORF written on the reverse strand: ATG AAA TAA reverse-complemented.
    res = call("find_orfs", {"sequence": "GGTTATTTCATGG", "min_protein_length": 2})
    orf = next(o for o in res["orfs"] if o["strand"] == "-")
    assert (orf["start"], orf["end"], orf["protein"]) == (3, 11, "MK")


def test_align_pairwise_counts_ties(call):
    same = call("align_pairwise", {"seq_a": "ACGTACGT", "seq_b": "ACGTACGT"})
    assert same["identity"] == 1.0 and same["co_optimal_alignments"] == 1
    tied = call("align_pairwise", {"seq_a": "AAAA", "seq_b": "AAA"})
    assert tied["gaps"] == 1 and tied["competence"]["ties"] == 3  # the gap fits 4 places


def test_primer_tm_matches_the_nearest_neighbour_model(call):
    from Bio.SeqUtils import MeltingTemp as mt

    primer = "ACCAGCTTTATTTGCCCCAG"
    res = call("primer_tm", {"sequence": primer, "na_mM": 50, "primer_nM": 250})
    assert res["tm_nearest_neighbor_c"] == pytest.approx(
        mt.Tm_NN(primer, Na=50, dnac1=250, dnac2=0), abs=0.01)
    assert 50 < res["tm_nearest_neighbor_c"] < 65


def test_primer_with_ambiguous_bases_is_refused_naming_the_field(call):
    with pytest.raises(InputError, match=r"^args\.sequence"):
        call("primer_tm", {"sequence": "ACGTNNACGT"})
    with pytest.raises(InputError, match=r"^args\.sequence: holds U"):
        call("primer_tm", {"sequence": "ACGUACGUACGUAAAGG"})


def test_restriction_sites_cut_positions(call):
    res = call("restriction_sites", {"sequence": "AAAGAATTCAAAGGATCCAAA",
                                     "enzymes": ["EcoRI", "BamHI", "NotI"]})
    cuts = {c["enzyme"]: c["cuts"] for c in res["cutters"]}
    assert cuts == {"EcoRI": [5], "BamHI": [14]}  # G^AATTC, G^GATCC
    assert res["non_cutters"] == ["NotI"]


def test_unknown_enzyme_is_named(call):
    with pytest.raises(InputError, match=r"args\.enzymes\[1\]: unknown enzyme 'EcoXYZ'"):
        call("restriction_sites", {"sequence": "ACGT", "enzymes": ["EcoRI", "EcoXYZ"]})


@pytest.mark.parametrize("tool", ["seq_stats", "translate", "find_orfs", "reverse_complement",
                                  "restriction_sites"])
def test_a_sequence_with_invalid_characters_is_refused(call, tool):
    with pytest.raises(InputError, match=r"^args\.sequence: invalid character 'J' at "
                                         r"position 5"):
        call(tool, {"sequence": "ACGTJACGT"})


def test_unknown_reference_names_the_staged_ones(call):
    with pytest.raises(InputError, match=r"^args\.reference: no usable staged reference 'hg19'.*"
                                         r"MN908947\.3"):
        call("seq_stats", {"reference": "hg19"})
