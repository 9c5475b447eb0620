"""Variant annotation on real coding sequences of the staged demo references.

Expectations come from the biology (published variant names) and are re-derived from the
staged sequence in each test where they can be, so a wrong coordinate cannot pass quietly."""

from __future__ import annotations

import pytest
from Bio.Seq import Seq

from biotool.output import InputError

S_START, S_END = 21563, 25384  # NC_045512.2 S CDS


def _sars2() -> str:
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "refs/demo/sarscov2/MN908947.3.reference.fasta"
    return "".join(ln.strip() for ln in path.read_text().splitlines()[1:]).upper()


def _one(result: dict) -> dict:
    assert len(result["annotations"]) == 1, result["annotations"]
    return result["annotations"][0]


def test_spike_d614g_from_hgvs_gives_codon_and_protein_change(call):
    ann = _one(call("variant_annotate", {"gene": "S", "hgvs": "c.1841A>G"}))
    assert (ann["hgvs_c"], ann["hgvs_p"], ann["effect"]) == ("c.1841A>G", "p.Asp614Gly",
                                                              "missense")
    assert ann["codon_change"] == "GAT>GGT" and ann["codon_number"] == 614
    assert ann["genomic_position"] == 23403  # the A23403G of lineage B.1
    assert ann["hgvs_p_short"] == "p.D614G"


def test_spike_d614g_from_the_genomic_position_finds_the_same_change(call):
    res = call("variant_annotate", {"reference": "NC_045512.2", "position": 23403,
                                    "ref": "A", "alt": "G"})
    ann = _one(res)
    assert ann["gene"] == "S" and ann["hgvs_c"] == "c.1841A>G"
    assert ann["hgvs_p"] == "p.Asp614Gly"
    assert {u["name"] for u in res["provenance"]["used"]} == {"MN908947.3",
                                                             "demo-gene-annotation"}


def test_orf8_q27_stop_of_alpha_is_nonsense(call):
    # B.1.1.7 carries ORF8 Q27* (C27972T): CAA -> TAA.
    ann = _one(call("variant_annotate", {"reference": "MN908947.3", "position": 27972,
                                         "ref": "C", "alt": "T"}))
    assert ann["gene"] == "ORF8"
    assert (ann["hgvs_c"], ann["hgvs_p"], ann["effect"]) == ("c.79C>T", "p.Gln27Ter",
                                                              "nonsense")
    assert ann["codon_change"] == "CAA>TAA" and ann["so_term"] == "stop_gained"


def test_one_base_deletion_is_a_frameshift_with_the_new_stop_counted(call):
    ann = _one(call("variant_annotate", {"gene": "S", "hgvs": "c.1841del"}))
    # Derive the expectation independently: delete c.1841 and read on into the genome.
    genome = _sars2()
    mutated = genome[S_START - 1:S_START - 1 + 1840] + genome[S_START - 1 + 1841:]
    protein = str(Seq(mutated[: len(mutated) // 3 * 3]).translate())
    ref_protein = str(Seq(genome[S_START - 1:S_END]).translate())
    first = next(i for i in range(len(ref_protein)) if protein[i] != ref_protein[i])
    stop = protein.index("*", first)
    assert first == 613  # codon 614: GAT -> GTT...
    expected = f"p.Asp614{'Val' if protein[first] == 'V' else protein[first]}fsTer{stop - first + 1}"
    assert ann["effect"] == "frameshift" and ann["so_term"] == "frameshift_variant"
    assert ann["hgvs_c"] == "c.1841del"
    assert ann["hgvs_p"] == expected == "p.Asp614ValfsTer37"


def test_alpha_h69_v70_deletion_is_inframe_and_shifted_3prime(call):
    # The six-base deletion of H69/V70 given VCF-style at 21764 (padding base included).
    ann = _one(call("variant_annotate", {"reference": "MN908947.3", "position": 21764,
                                         "ref": "ATACATG", "alt": "A"}))
    assert ann["effect"] == "inframe_indel" and ann["so_term"] == "inframe_deletion"
    assert ann["hgvs_p"] == "p.His69_Val70del"
    # HGVS 3' rule: TACATG at c.203-208 is repeated one base on, so it is named c.204_209del.
    assert ann["hgvs_c"] == "c.204_209del"


def test_alpha_y144_deletion_is_named_at_the_3prime_tyrosine(call):
    # S has Tyr144-Tyr145; deleting one Tyr is p.Tyr145del under the HGVS 3' rule
    # (Nextstrain's "Y144-" names the 5' copy).
    ann = _one(call("variant_annotate", {"reference": "MN908947.3", "position": 21990,
                                         "ref": "TTTA", "alt": "T"}))
    assert ann["hgvs_p"] == "p.Tyr145del" and ann["effect"] == "inframe_indel"


def test_n_r203k_g204r_triple_change_is_one_delins(call):
    ann = _one(call("variant_annotate", {"gene": "N", "hgvs": "c.608_610delinsAAC"}))
    assert ann["hgvs_p"] == "p.Arg203_Gly204delinsLysArg"
    assert ann["effect"] == "missense" and ann["genomic_position"] == 28881


def test_synonymous_change(call):
    ann = _one(call("variant_annotate", {"gene": "S", "cds_position": 6, "ref": "T",
                                         "alt": "C"}))
    assert (ann["codon_change"], ann["hgvs_p"], ann["effect"]) == ("TTT>TTC", "p.Phe2=",
                                                                    "synonymous")


def test_inframe_insertion_repeating_a_codon_is_a_dup(call):
    ann = _one(call("variant_annotate", {"gene": "S", "hgvs": "c.10_11insTTT"}))
    assert ann["hgvs_c"] == "c.10_12dup" and ann["hgvs_p"] == "p.Phe4dup"
    assert ann["effect"] == "inframe_indel" and ann["so_term"] == "inframe_insertion"


def test_stop_lost_reads_on_to_the_next_stop(call):
    ann = _one(call("variant_annotate", {"gene": "S", "hgvs": "c.3822A>C"}))
    genome = _sars2()
    tail = "TAC" + genome[S_END:S_END + 60]
    next_stop = str(Seq(tail[: len(tail) // 3 * 3]).translate()).index("*")
    assert ann["effect"] == "stop_lost"
    assert ann["hgvs_p"] == f"p.Ter1274TyrextTer{next_stop}"


def test_a_position_in_two_overlapping_cds_is_annotated_in_both(call):
    # 27757 is the second base of ORF7b's ATG and inside ORF7a's TGA stop.
    res = call("variant_annotate", {"reference": "MN908947.3", "position": 27757,
                                    "ref": "T", "alt": "C"})
    effects = {a["gene"]: (a["hgvs_p"], a["effect"]) for a in res["annotations"]}
    assert effects["ORF7b"] == ("p.Met1?", "start_lost")
    assert effects["ORF7a"][1] == "stop_lost"
    assert res["competence"]["alternatives"] == 1


def test_a_variant_outside_every_cds_is_not_applicable(call):
    res = call("variant_annotate", {"reference": "MN908947.3", "position": 100, "ref": "C",
                                    "alt": "T"})
    assert res["annotations"] == [] and res["effect"] == "non_coding"
    assert res["competence"]["applicable"] is False
    assert "outside every annotated CDS" in res["competence"]["blind_spots"][0]


def test_influenza_na_h275y_oseltamivir_resistance(call):
    # A/California/07/2009 NA (CY121682.1): H275Y (N1 numbering), CAC -> TAC.
    ann = _one(call("variant_annotate", {"gene": "CY121682.1", "cds_position": 823,
                                         "ref": "C", "alt": "T"}))
    assert (ann["gene"], ann["hgvs_c"], ann["hgvs_p"]) == ("NA", "c.823C>T", "p.His275Tyr")
    assert ann["codon_change"] == "CAC>TAC"


def test_given_cds_sequence_without_a_staged_gene(call):
    res = call("variant_annotate", {"cds_sequence": "ATGTGGAAATAA", "hgvs": "c.6G>A"})
    ann = _one(res)
    assert (ann["hgvs_p"], ann["effect"]) == ("p.Trp2Ter", "nonsense")
    fs = _one(call("variant_annotate", {"cds_sequence": "ATGTGGAAATAA", "hgvs": "c.4del"}))
    assert fs["effect"] == "frameshift" and fs["hgvs_p"].endswith("fsTer?")
    assert any("fsTer?" in s for s in call("variant_annotate", {
        "cds_sequence": "ATGTGGAAATAA", "hgvs": "c.4del"})["competence"]["blind_spots"])


@pytest.mark.parametrize("args,field", [
    ({"gene": "S", "hgvs": "c.1841C>G"}, "hgvs"),          # wrong reference base
    ({"gene": "S", "hgvs": "c.99999A>G"}, "hgvs"),         # beyond the CDS
    ({"gene": "S", "hgvs": "1841A>G"}, "hgvs"),            # not HGVS
    ({"gene": "S", "cds_position": 1841, "ref": "A", "alt": "J"}, "alt"),
    ({"gene": "S", "cds_position": 1841, "ref": "C", "alt": "G"}, "ref"),
    ({"gene": "HA", "hgvs": "c.4A>G"}, "gene"),            # two HA records: ambiguous
    ({"gene": "NOPE", "hgvs": "c.4A>G"}, "gene"),
    ({"cds_sequence": "ATGXTAA", "hgvs": "c.1A>G"}, "cds_sequence"),
])
def test_bad_variant_input_names_the_field(call, args, field):
    with pytest.raises(InputError) as exc:
        call("variant_annotate", args)
    assert str(exc.value).startswith(f"args.{field}"), str(exc.value)


# A small CDS whose answers are derived by hand: ATG AAA CCC GGG TAA = M K P G *, then a 3'
# flank GCT AGC TAA that a lost stop reads on into (A S *).
TOY_CDS, TOY_FLANK = "ATGAAACCCGGGTAA", "GCTAGCTAA"


@pytest.mark.parametrize("hgvs,want_c,want_p,effect,so_term", [
    # first codon: any change but to ATG loses the start, TTG and CTG included
    ("c.1A>G", "c.1A>G", "p.Met1?", "start_lost", "start_lost"),
    ("c.1A>T", "c.1A>T", "p.Met1?", "start_lost", "start_lost"),
    ("c.1A>C", "c.1A>C", "p.Met1?", "start_lost", "start_lost"),
    ("c.1_3del", "c.2_4del", "p.Met1?", "start_lost", "start_lost"),  # 3'-shifted ATG|A
    # the stop codon: kept, lost to the next in-frame stop (extTer counts from the old stop)
    ("c.14A>G", "c.14A>G", "p.Ter5=", "synonymous", "stop_retained_variant"),
    ("c.15del", "c.15del", "p.Ter5=", "synonymous", "stop_retained_variant"),  # TA+G: TAG
    ("c.13T>C", "c.13T>C", "p.Ter5GlnextTer3", "stop_lost", "stop_lost"),
    ("c.13_15del", "c.13_15del", "p.Ter5AlaextTer2", "stop_lost", "stop_lost"),
    ("c.12_14del", "c.12_14del", "p.Ter5AlaextTer2", "stop_lost", "stop_lost"),  # spans it
    ("c.12_13insA", "c.12_13insA", "p.Ter5IleextTer2", "stop_lost", "stop_lost"),
    ("c.13del", "c.13del", "p.Ter5LysextTer?", "stop_lost", "stop_lost"),  # no stop after
    # the last sense codon: an in-frame deletion or insertion beside an intact stop
    ("c.10_12del", "c.10_12del", "p.Gly4del", "inframe_indel", "inframe_deletion"),
    ("c.7_12del", "c.7_12del", "p.Pro3_Gly4del", "inframe_indel", "inframe_deletion"),
    ("c.12_13insAAA", "c.12_13insAAA", "p.Gly4_Ter5insLys", "inframe_indel",
     "inframe_insertion"),
])
def test_first_and_last_codon_changes_derived_by_hand(call, hgvs, want_c, want_p, effect,
                                                      so_term):
    ann = _one(call("variant_annotate", {"cds_sequence": TOY_CDS, "flank_3prime": TOY_FLANK,
                                         "hgvs": hgvs}))
    assert (ann["hgvs_c"], ann["hgvs_p"], ann["effect"], ann["so_term"]) == \
        (want_c, want_p, effect, so_term)


def test_spike_stop_codon_changes_on_the_real_genome(call):
    # S ends TAA at 25382..25384 (c.3820..3822, codon 1274); derive the read-through by hand
    # from the staged genome: the next in-frame stop after the old one.
    genome = _sars2()
    assert genome[S_END - 3:S_END] == "TAA"
    ann = _one(call("variant_annotate", {"reference": "MN908947.3", "position": S_END - 2,
                                         "ref": "T", "alt": "C"}))
    tail = str(Seq("CAA" + genome[S_END:S_END + 600]).translate())
    assert ann["gene"] == "S" and ann["hgvs_c"] == "c.3820T>C"
    assert ann["hgvs_p"] == f"p.Ter1274GlnextTer{tail.index('*')}"
    ann = _one(call("variant_annotate", {"gene": "S", "hgvs": "c.3822A>G"}))  # TAA -> TAG
    assert (ann["hgvs_p"], ann["so_term"]) == ("p.Ter1274=", "stop_retained_variant")
    ann = _one(call("variant_annotate", {"gene": "S", "hgvs": "c.1A>G"}))
    assert ann["hgvs_p"] == "p.Met1?" and ann["genomic_position"] == S_START


def test_orf1ab_p4715l_is_numbered_across_the_ribosomal_frameshift(call):
    # C14408T gives nsp12 P323L, ORF1ab (pp1ab) P4715L: past the -1 frameshift at 13468,
    # so only the two-segment CDS holds it (ORF1a ends at 13483).
    ann = _one(call("variant_annotate", {"reference": "MN908947.3", "position": 14408,
                                         "ref": "C", "alt": "T"}))
    assert ann["gene"] == "ORF1ab" and ann["hgvs_p"] == "p.Pro4715Leu"
    assert ann["hgvs_c"] == "c.14144C>T" and ann["codon_change"] == "CCT>CTT"


# pPCP1's longest minus-strand ORF, complement(4815..5888): 357 aa, MSDTMVVNGSGG... (the
# length and start of pesticin, Pst). The staged demo table holds only plus-strand genes, so
# the row is added here; the bases come from the staged plasmid.
PST = {"reference": "pPCP1", "seqid": None, "symbol": "pst_test", "gene": "pst_test",
       "gene_id": "", "locus_tag": "", "synonyms": [], "product": "", "protein_id": "",
       "strand": "-", "cds": "complement(4815..5888)", "segments": [(4815, 5888)],
       "source": "test"}


@pytest.fixture
def minus_gene(monkeypatch, biotool_env):
    from pathlib import Path

    from biotool.annotate import genes

    fasta = Path(__file__).resolve().parents[3] / "refs/demo/genomes/yersinia_pestis_pPCP1.fasta"
    lines = fasta.read_text().splitlines()
    plasmid = "".join(ln.strip() for ln in lines[1:]).upper()
    table, prov = genes.rows()
    from biotool.annotate.sequences import staged_reference

    ref = staged_reference("pPCP1")
    row = {**PST, "reference": ref.name, "seqid": next(iter(ref.contigs()))}
    monkeypatch.setattr(genes, "rows", lambda: ([*table, row], prov))
    return plasmid


def _mutated_protein(genome: str, pos: int, ref: str, alt: str) -> str:
    """Apply a plus-strand edit and read the minus-strand CDS (and on past it) by hand."""
    assert genome[pos - 1:pos - 1 + len(ref)] == ref
    edited = genome[:pos - 1] + alt + genome[pos - 1 + len(ref):]
    end = 5888 + len(alt) - len(ref)
    rc = str(Seq(edited[:end]).reverse_complement())
    return str(Seq(rc[:len(rc) - len(rc) % 3]).translate())


def test_a_minus_strand_cds_reads_plus_strand_ref_and_alt(call, minus_gene):
    genome = minus_gene
    cds = str(Seq(genome[4814:5888]).reverse_complement())
    assert str(Seq(cds).translate()).startswith("MSDTMVVNGSGG") and len(cds) == 3 * 358
    # Genomic 5884 is c.5 (5888 - 5884 + 1): codon 2, AGC (Ser) on the CDS.
    base = genome[5883]
    alt = {"A": "C", "C": "A", "G": "T", "T": "G"}[base]
    ann = _one(call("variant_annotate", {"reference": "pPCP1", "position": 5884,
                                         "ref": base, "alt": alt}))
    comp = {"A": "T", "C": "G", "G": "C", "T": "A"}
    assert ann["hgvs_c"] == f"c.5{comp[base]}>{comp[alt]}" and ann["strand"] == "-"
    assert ann["genomic_position"] == 5884 and ann["codon_number"] == 2
    want = _mutated_protein(genome, 5884, base, alt)
    assert ann["hgvs_p"] == f"p.Ser2{_THREE[want[1]]}"
    # The first base of the CDS is the last genomic base: T>C there is c.1A>G, start lost.
    assert genome[5887] == "T"
    ann = _one(call("variant_annotate", {"reference": "pPCP1", "position": 5888,
                                         "ref": "T", "alt": "C"}))
    assert (ann["hgvs_c"], ann["hgvs_p"]) == ("c.1A>G", "p.Met1?")
    # The stop codon is genomic 4815..4817 (TTA on the plus strand = TAA on the CDS).
    assert str(Seq(genome[4814:4817]).reverse_complement()) in ("TAA", "TAG", "TGA")
    ann = _one(call("variant_annotate", {"reference": "pPCP1", "position": 4817,
                                         "ref": genome[4816], "alt": comp[genome[4816]]}))
    assert ann["hgvs_c"].startswith("c.1072") and ann["effect"] in ("stop_lost", "synonymous")


def test_a_minus_strand_vcf_style_deletion_is_a_frameshift_named_on_the_cds(call, minus_gene):
    genome = minus_gene
    # VCF-style: padding base at 5800, one base deleted at 5801 (c.88 on the CDS).
    ref, alt = genome[5799:5801], genome[5799]
    ann = _one(call("variant_annotate", {"reference": "pPCP1", "position": 5800,
                                         "ref": ref, "alt": alt}))
    assert ann["effect"] == "frameshift" and ann["kind"] == "deletion"
    want = _mutated_protein(genome, 5800, ref, alt)
    cds_prot = str(Seq(genome[4814:5888]).reverse_complement().translate())
    first = next(k for k in range(len(want)) if want[k] != cds_prot[k])
    assert ann["hgvs_p"].startswith(f"p.{_THREE[cds_prot[first]]}{first + 1}"
                                    f"{_THREE[want[first]]}fs")


_THREE = {"A": "Ala", "R": "Arg", "N": "Asn", "D": "Asp", "C": "Cys", "Q": "Gln", "E": "Glu",
          "G": "Gly", "H": "His", "I": "Ile", "L": "Leu", "K": "Lys", "M": "Met", "F": "Phe",
          "P": "Pro", "S": "Ser", "T": "Thr", "W": "Trp", "Y": "Tyr", "V": "Val", "*": "Ter"}
