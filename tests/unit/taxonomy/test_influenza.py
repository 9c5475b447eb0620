"""Influenza subtype tiers on NCBI titles like those of the demo influenza FASTA."""

from __future__ import annotations

from pathlib import Path

from biotool.taxonomy import influenza

REPO = Path(__file__).resolve().parents[3]
FLU = REPO / "refs" / "demo" / "influenza" / "influenza_a_h1n1.fasta"


def demo_titles() -> dict[str, str]:
    """accession -> title, exactly as NCBI wrote them in the demo FASTA."""
    out = {}
    for line in FLU.read_text().splitlines():
        if line.startswith(">"):
            acc, _, title = line[1:].partition(" ")
            out[acc] = title
    return out


def hit(title: str, score: float = 500.0, sciname: str = "") -> dict:
    return {"title": title, "sciname": sciname, "bit_score": score, "accession": "x"}


def test_segments_are_read_from_refseq_numbers_and_genbank_gene_names():
    t = demo_titles()
    assert influenza.segment_of(hit(t["NC_002017.1"])) == 4   # "segment 4" only
    assert influenza.segment_of(hit(t["NC_002018.1"])) == 6   # "segment 6" only
    assert influenza.segment_of(hit(t["NC_002016.1"])) == 7
    assert influenza.segment_of(hit(t["CY121680.1"])) == 4    # "hemagglutinin (HA) gene"
    assert influenza.segment_of(hit(t["CY121682.1"])) == 6    # "neuraminidase (NA) gene"
    assert influenza.subtype_of(hit(t["NC_002017.1"])) == ("H1", "N1")
    assert influenza.subtype_of(hit("Influenza A virus (A/Texas/50/2012(H3N2)) "
                                    "segment 7")) == ("H3", "N2")


def test_ha_and_na_are_strong_internal_segments_weak():
    t = demo_titles()
    h3n2 = "Influenza A virus (A/Texas/50/2012(H3N2)) segment {} , complete sequence"
    hits = {
        "r1": [hit(t["NC_002017.1"])],                        # HA, PR8 H1N1 (RefSeq)
        "r2": [hit(t["CY121680.1"])],                         # HA, Cal/07 H1N1 (GenBank)
        "r3": [hit(t["CY121682.1"])],                         # NA N1
        "r4": [hit(h3n2.format(7))],                          # M of an H3N2: weak
        "r5": [hit(h3n2.format(1))],                          # PB2 of an H3N2: weak
        "r6": [hit(t["NC_002020.1"])],                        # NS of PR8: weak H1N1
        "r7": [{"title": "Homo sapiens chromosome 1", "sciname": "Homo sapiens",
                "bit_score": 900.0}],
    }
    flu = influenza.tiers(hits)
    assert flu["reads"] == 6
    assert flu["strong"]["H"] == {"H1": 2} and flu["strong"]["N"] == {"N1": 1}
    assert flu["weak"]["subtypes"] == {"H3N2": 2, "H1N1": 1}
    subtypes = [(c["subtype"], c["tier"]) for c in flu["candidates"]]
    assert subtypes == [("H1N1", "strong"), ("H3N2", "weak")]
    comp = flu["competence"]
    # No ranking axis between candidates: each beyond the first is an alternative and a tie.
    assert comp["alternatives"] == 1 and comp["ties"] == 1
    assert comp["margin"] == 0.0 and comp["confidence"] < 0.9


def test_without_ha_or_na_the_subtype_is_not_established():
    t = demo_titles()
    flu = influenza.tiers({"r1": [hit(t["NC_002016.1"])], "r2": [hit(t["NC_002023.1"])]})
    assert flu["strong"]["H"] == {} and flu["strong"]["N"] == {}
    assert [c["tier"] for c in flu["candidates"]] == ["weak"]
    assert any("H subtype is not established" in b for b in flu["competence"]["blind_spots"])
    assert flu["competence"]["confidence"] <= 0.3


def test_a_read_tied_across_subtypes_supports_both():
    ha = "Influenza A virus (A/{}) segment 4, complete sequence"
    flu = influenza.tiers({"r1": [hit(ha.format("X/1/2000(H1N1)"), 800),
                                  hit(ha.format("Y/1/2000(H5N1)"), 800),
                                  hit(ha.format("Z/1/2000(H3N2)"), 600)]})
    assert flu["strong"]["H"] == {"H1": 1, "H5": 1}  # the lower-scoring H3 does not count
    assert {c["subtype"] for c in flu["candidates"]} == {"H1N?", "H5N?"}
    assert flu["competence"]["ties"] == 1


def test_no_influenza_hit_means_no_block():
    assert influenza.tiers({"r1": [hit("Escherichia phage phiX174, complete genome")]}) is None


def test_refseq_style_titles_with_the_subtype_only_in_the_strain_name():
    """RefSeq titles name the segment by number and the subtype only inside the strain name;
    GenBank titles name the gene; some strains are typed for H only."""
    titles = {
        "h3_ha": "Influenza A virus (A/New York/392/2004(H3N2)) segment 4, complete sequence",
        "h3_na": "Influenza A virus (A/New York/392/2004(H3N2)) segment 6, complete sequence",
        "h5_ha": "Influenza A virus (A/goose/Guangdong/1/1996(H5N1)) segment 4 hemagglutinin "
                 "(HA) gene, complete cds",
        "h1_na": "Influenza A virus (A/swine/Iowa/A02432386/2019(H1N2)) neuraminidase (NA) "
                 "gene, complete cds",
        "h9_ha": "Influenza A virus (A/chicken/Pakistan/UDL-01/2008(H9)) HA gene for "
                 "haemagglutinin, complete cds",
        "h9_na": "Influenza A virus (A/chicken/Pakistan/UDL-01/2008(H9)) segment 6, complete "
                 "sequence",
        "pb1": "Influenza A virus (A/New York/392/2004(H3N2)) PB1-F2 protein (PB1-F2) and "
               "polymerase PB1 (PB1) genes, complete cds",
    }
    assert [influenza.segment_of(hit(t)) for t in titles.values()] == [4, 6, 4, 6, 4, 6, 2]
    flu = influenza.tiers({k: [hit(t)] for k, t in titles.items()})
    assert flu["strong"]["H"] == {"H3": 1, "H5": 1, "H9": 1}
    assert flu["strong"]["N"] == {"N2": 2}          # N2 from H3N2 and from H1N2's NA
    assert flu["weak"]["subtypes"] == {"H3N2": 1}   # the PB1 hit only
    assert flu["unlabelled_reads"] == 1             # an NA hit labelled "(H9)" names no N
    assert {c["subtype"] for c in flu["candidates"]} == {"H3N2", "H5N2", "H9N2"}
    assert flu["competence"]["ties"] == 2
