"""biotool/hittext.py: what of a hit's title and organism name an agent may see (issue 38).
The same rule runs in biotool's output and in the egress gate's report filter."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from biotool import hittext
from biotool.taxonomy import influenza, summary

REFS = Path(__file__).resolve().parents[3] / "refs"

CASES = [
    ("Severe acute respiratory syndrome coronavirus 2 isolate SARS-CoV-2/human/USA/"
     "CA-CDC-QDX21497008/2021 ORF1ab polyprotein (ORF1ab), surface glycoprotein (S) genes, "
     "complete cds",
     "Severe acute respiratory syndrome coronavirus 2 ORF1ab polyprotein (ORF1ab), surface "
     "glycoprotein (S) genes, complete cds"),
    ("Influenza A virus (A/Puerto Rico/8/1934(H1N1)) segment 4 hemagglutinin (HA) gene, "
     "complete cds", "Influenza A virus (H1N1) segment 4 hemagglutinin (HA) gene, complete cds"),
    ("Influenza A virus A/California/07/2009(H1N1) segment 6 neuraminidase (NA) gene",
     "Influenza A virus (H1N1) segment 6 neuraminidase (NA) gene"),
    ("Escherichia coli str. K-12 substr. MG1655, complete genome",
     "Escherichia coli complete genome"),
    ("Yersinia pestis biovar Microtus str. 91001 plasmid pPCP1, complete sequence",
     "Yersinia pestis biovar Microtus plasmid pPCP1, complete sequence"),
    ("Human immunodeficiency virus 1", "Human immunodeficiency virus 1"),
    ("Homo sapiens chromosome 1, GRCh38.p14 Primary Assembly",
     "Homo sapiens chromosome 1, Primary Assembly"),
    ("gi|30271926|ref|NC_045512.2| MN908947.3 AB123456 SRR11772659 29903 bp", "bp"),
    ("SARS-CoV-2 isolate Wuhan-Hu-1, complete genome", "SARS-CoV-2 complete genome"),
    ("Bété virus ß-lactamase", "virus"),
]


# Issue 47: designations that follow no designator word, in the shapes of real nt titles. A
# word of letters and digits goes unless its place names a taxon or a product.
DESIGNATIONS = [
    ("Bat coronavirus RaTG13, complete genome", "Bat coronavirus complete genome"),
    ("Mycobacterium tuberculosis H37Rv, complete genome",
     "Mycobacterium tuberculosis complete genome"),
    ("Pseudomonas aeruginosa PAO1, complete genome", "Pseudomonas aeruginosa complete genome"),
    ("Pseudomonas aeruginosa UCBPP-PA14, complete genome",
     "Pseudomonas aeruginosa complete genome"),
    ("Escherichia coli K-12 MG1655 chromosome", "Escherichia coli chromosome"),
    ("Escherichia coli CFT073, complete genome", "Escherichia coli complete genome"),
    ("Escherichia coli O157:H7 str. Sakai DNA, complete genome",
     "Escherichia coli DNA, complete genome"),
    ("Staphylococcus aureus subsp. aureus N315 DNA, complete genome",
     "Staphylococcus aureus subsp. aureus DNA, complete genome"),
    ("Staphylococcus aureus subsp. aureus MRSA252 complete genome",
     "Staphylococcus aureus subsp. aureus complete genome"),
    ("Yersinia pestis CO92 plasmid pMT1, complete sequence",
     "Yersinia pestis plasmid pMT1, complete sequence"),
    ("Yersinia pestis KIM10+, complete genome", "Yersinia pestis complete genome"),
    ("Streptococcus pneumoniae TIGR4, complete genome", "Streptococcus pneumoniae complete genome"),
    ("Helicobacter pylori J99, complete genome", "Helicobacter pylori complete genome"),
    ("Saccharomyces cerevisiae S288C chromosome IV, complete sequence",
     "Saccharomyces cerevisiae chromosome IV, complete sequence"),
    ("Mycobacterium tuberculosis variant bovis BCG str. Pasteur 1173P2 complete genome",
     "Mycobacterium tuberculosis variant bovis BCG complete genome"),
    ("Vibrio cholerae O1 biovar El Tor str. N16961 chromosome I, complete sequence",
     "Vibrio cholerae biovar El Tor chromosome I, complete sequence"),
    ("Acinetobacter baumannii AB5075-UW, complete genome", "Acinetobacter baumannii complete genome"),
    ("Bat SARS-like coronavirus WIV1, complete genome", "Bat SARS-like coronavirus complete genome"),
    ("Bat coronavirus HKU9-1 complete genome", "Bat coronavirus complete genome"),
    ("Pangolin coronavirus GX-P5L, complete genome", "Pangolin coronavirus complete genome"),
    ("BetaCoV/Wuhan/WIV04/2019 ORF1ab polyprotein gene", "ORF1ab polyprotein gene"),
    ("Severe acute respiratory syndrome coronavirus 2 USA-WA1 surface glycoprotein (S) gene",
     "Severe acute respiratory syndrome coronavirus 2 surface glycoprotein (S) gene"),
    ("SARS-CoV-2 CDC-QDX123 nucleocapsid phosphoprotein (N) gene",
     "SARS-CoV-2 nucleocapsid phosphoprotein (N) gene"),
    ("Human immunodeficiency virus type 1 (HXB2), complete genome; HIV1/HTLV-III/LAV reference "
     "genome", "Human immunodeficiency virus type 1 complete genome; reference genome"),
    ("Arabidopsis thaliana ecotype Col-0 chromosome 1", "Arabidopsis thaliana chromosome 1"),
    ("Mus musculus chromosome 1, GRCm39 C57BL/6J", "Mus musculus chromosome 1"),
    ("Mycobacterium tuberculosis H37Rv 16S ribosomal RNA gene, partial sequence",
     "Mycobacterium tuberculosis 16S ribosomal RNA gene, partial sequence"),
    ("Klebsiella pneumoniae subsp. pneumoniae HS11286 chromosome, complete genome",
     "Klebsiella pneumoniae subsp. pneumoniae chromosome, complete genome"),
]
# Taxonomy's and products' words of letters and digits, which must survive.
TAXONOMY = [
    "Coliphage phiX174, complete genome",
    "Escherichia phage phiX174, complete genome",
    "Enterobacteria phage T4, complete genome",
    "Bacillus phage phi29, complete genome",
    "Mycobacterium phage Bxb1, complete genome",
    "Human coronavirus 229E, complete genome",
    "Human coronavirus NL63, complete genome",
    "Human coronavirus HKU1, complete genome",
    "Coxsackievirus A16 polyprotein gene, complete cds",
    "Human betaherpesvirus 6B, complete genome",
    "Human papillomavirus type 16 E6 protein and E7 protein genes",
    "Hepatitis C virus subtype 1a polyprotein gene",
    "Streptococcus pneumoniae serotype 19F capsular polysaccharide locus",
    "Influenza A virus subtype H5N1 hemagglutinin (HA1) gene, partial cds",
    "Homo sapiens BRCA1 mRNA",
    "Human immunodeficiency virus 1 envelope glycoprotein gp120 (env) gene",
    "EV-A71 VP1 gene",
    "Severe acute respiratory syndrome coronavirus 2 ORF1ab polyprotein (ORF1ab), ORF1a "
    "polyprotein (ORF1ab), surface glycoprotein (S), ORF3a protein (ORF3a) genes, complete cds",
]
# Both at once: the designation goes, taxonomy's words stay.
MIXED = [
    ("Human coronavirus OC43 strain ATCC VR-759, complete genome",
     "Human coronavirus OC43 complete genome"),
    ("Enterovirus D68 strain Fermon, complete genome", "Enterovirus D68 complete genome"),
    ("HIV-1 isolate 01BR087 from Brazil, complete genome", "HIV-1 from Brazil, complete genome"),
    ("Influenza A virus (A/goose/Guangdong/1/1996(H5N1)) segment 1 polymerase PB2 (PB2) gene, "
     "complete cds", "Influenza A virus (H5N1) segment 1 polymerase PB2 (PB2) gene, complete cds"),
    ("Homo sapiens tumor protein p53 (TP53), transcript variant 1, mRNA",
     "Homo sapiens tumor protein p53 transcript variant mRNA"),
]


@pytest.mark.parametrize("raw,kept", DESIGNATIONS + MIXED)
def test_designations_of_one_sample_go_without_a_designator_word(raw, kept):
    assert hittext.public_text(raw) == kept


@pytest.mark.parametrize("title", TAXONOMY)
def test_words_of_letters_and_digits_that_name_a_taxon_or_product_stay(title):
    assert hittext.public_text(title) == title


def test_the_staged_panel_keeps_its_organisms_and_titles():
    """What the local panel's hits carry (refs/databases.toml's taxa, the FASTA titles) and
    what taxonomy's answers name pass with their organism words, phiX174's name included."""
    taxa = tomllib.loads((REFS / "databases.toml").read_text())["database"][0]["taxa"]
    names = {hittext.public_text(t["sciname"]) for t in taxa.values()}
    assert names == {"Severe acute respiratory syndrome coronavirus 2", "Escherichia phage phiX174",
                     "Human immunodeficiency virus 1", "Yersinia pestis biovar Microtus",
                     "Influenza A virus (H1N1)"}
    for fasta in (REFS / "demo" / "genomes").glob("*.fasta"):
        title = fasta.read_text().split("\n", 1)[0].split(" ", 1)[1]
        assert hittext.public_text(title) == title.replace(" str. 91001", ""), fasta


@pytest.mark.parametrize("raw,kept", CASES)
def test_titles_keep_organism_and_product_words_only(raw, kept):
    assert hittext.public_text(raw) == kept


def test_what_taxonomy_reads_survives_the_reduction():
    title = hittext.public_text(CASES[1][0])
    assert influenza.segment_of({"title": title}) == 4
    assert influenza.subtype_of({"title": title}) == ("H1", "N1")
    assert summary.organism_of({"sciname": hittext.public_text(
        "Influenza A virus (A/Puerto Rico/8/1934(H1N1))")}) == "Influenza A virus"


@pytest.mark.parametrize("value", [{"accession": "NC_045512.2"}, ["NC_045512.2"], "12", True,
                                   float("inf"), None])
def test_values_of_another_type_are_dropped(value):
    assert hittext.integer(value) is None and hittext.taxid(value) is None
    assert hittext.number(value) is None and hittext.strand(value) is None
    if not isinstance(value, str):
        assert hittext.public_text(value) is None
