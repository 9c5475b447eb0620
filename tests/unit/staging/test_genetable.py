"""The gene table builder on a RefSeq-shaped annotation GFF3: which CDS model each gene gets,
and the symbols and synonyms its gene lines carry."""

from __future__ import annotations

import csv


def _table(tmp_path, genes, chromosomes, seqids):
    from biotool_testing.fake_sources import write_gene_gff

    from biotool.stagebuild import genetable

    write_gene_gff(tmp_path, "https://h/x.gff.gz", 10090, chromosomes, genes)
    out = tmp_path / "genes.tsv"
    n = genetable.build(tmp_path / "h/x.gff.gz", out, "REF", seqids=seqids)
    rows = list(csv.DictReader([l for l in out.open() if not l.startswith("#")], delimiter="\t"))
    assert n == len(rows)
    return {r["symbol"]: r for r in rows}


def _gene(symbol, gid, acc, exons, pid, tag=None, extra=()):
    return {"symbol": symbol, "gene_id": gid, "accession": acc, "strand": "+", "exons": exons,
            "protein_id": pid, "tag": tag, "description": f"{symbol} protein",
            "product": f"{symbol} protein, isoform 1", "synonyms": [f"{symbol}-alt"],
            "extra_cds": list(extra)}


def test_the_selected_cds_and_the_longest_otherwise(tmp_path):
    genes = [_gene("Sel", "1", "NC_000077.7", [(10, 39)], "NP_1.1", "RefSeq Select",
                   [("XP_9.1", [(10, 99)])]),
             _gene("Long", "2", "NC_000077.7", [(200, 229)], "NP_2.1", None,
                   [("XP_3.1", [(200, 229), (300, 359)])])]
    rows = _table(tmp_path, genes, {"NC_000077.7": "11"}, "refseq")
    assert rows["Sel"]["protein_id"] == "NP_1.1" and rows["Sel"]["cds"] == "10..39"
    assert rows["Long"]["protein_id"] == "XP_3.1" and rows["Long"]["cds"] == "200..229,300..359"
    assert rows["Sel"]["seqid"] == "NC_000077.7" and rows["Sel"]["reference"] == "REF"
    assert rows["Sel"]["synonyms"] == "Sel-alt" and rows["Sel"]["product"] == "Sel protein, isoform 1"


def test_ucsc_names_for_chromosomes_and_scaffolds_dropped(tmp_path):
    genes = [_gene("OnChr", "1", "NC_000017.11", [(10, 39)], "NP_1.1"),
             _gene("OnMT", "2", "NC_012920.1", [(10, 39)], "YP_2.1"),
             _gene("OnScaffold", "3", "NT_187361.1", [(10, 39)], "NP_3.1")]
    rows = _table(tmp_path, genes, {"NC_000017.11": "17", "NC_012920.1": "MT",
                                    "NT_187361.1": "1"}, "ucsc")
    assert rows["OnChr"]["seqid"] == "chr17" and rows["OnMT"]["seqid"] == "chrM"
    assert "OnScaffold" not in rows
