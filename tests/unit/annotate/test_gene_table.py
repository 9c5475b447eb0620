"""The staged gene table and gene look-up."""

from __future__ import annotations

import pytest
from Bio.Seq import Seq


def test_every_cds_in_the_table_translates_to_one_whole_protein(biotool_env):
    from biotool.annotate import genes
    from biotool.annotate.sequences import staged_reference

    rows, prov = genes.rows()
    assert len(rows) >= 20 and prov["sha256"]
    for row in rows:
        ref = staged_reference(row["reference"])
        cds = "".join(ref.fetch(row["seqid"], a - 1, b) for a, b in row["segments"])
        protein = str(Seq(cds).translate())
        assert len(cds) % 3 == 0, row["symbol"]
        assert protein[0] == "M" and protein[-1] == "*", row["symbol"]
        assert "*" not in protein[:-1], (row["symbol"], row["seqid"])


def test_lookup_by_symbol_id_and_synonym(call):
    s = call("gene_lookup", {"query": "s"})
    assert s["count"] == 1 and s["matches"][0]["start"] == 21563
    assert s["matches"][0]["protein_length_aa"] == 1273
    by_id = call("gene_lookup", {"query": "43740568"})
    assert by_id["matched_on"] == "id" and by_id["matches"][0]["symbol"] == "S"
    syn = call("gene_lookup", {"query": "nucleocapsid"})
    assert syn["matches"][0]["symbol"] == "N" and syn["competence"]["confidence"] < 1


def test_an_ambiguous_symbol_lists_every_match_with_ties(call):
    res = call("gene_lookup", {"query": "HA"})
    assert {m["seqid"] for m in res["matches"]} == {"NC_002017.1", "CY121680.1"}
    assert res["competence"]["ties"] == 1 and res["competence"]["margin"] == 0


def test_an_unknown_gene_is_not_applicable_with_a_suggestion(call):
    res = call("gene_lookup", {"query": "ORF3"})
    assert res["count"] == 0 and res["competence"]["applicable"] is False
    assert "ORF3a" in res["competence"]["remedy"]


def test_restricting_to_a_reference(call):
    res = call("gene_lookup", {"query": "HA", "reference": "sars-cov-2"})
    assert res["count"] == 0
    with pytest.raises(Exception, match="no usable staged reference 'nope'"):
        call("gene_lookup", {"query": "HA", "reference": "nope"})
