"""biotool/hittext.py: what of a hit's title and organism name an agent may see (issue 38).
The same rule runs in biotool's output and in the egress gate's report filter."""

from __future__ import annotations

import pytest

from biotool import hittext
from biotool.taxonomy import influenza, summary

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
