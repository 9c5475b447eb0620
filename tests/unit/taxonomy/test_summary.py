"""The summary states its detection floor and whether a minority could have been seen."""

from __future__ import annotations

from biotool.taxonomy import summary


def _hits(names: list[tuple[str, int, int]]) -> tuple[dict, list]:
    hits, searched = {}, []
    for name, taxid, k in names:
        for i in range(k):
            q = f"{name}-{i}"
            searched.append(q)
            hits[q] = [{"sciname": name, "taxid": taxid, "bit_score": 300.0, "title": name}]
    return hits, searched


def test_a_host_dominated_small_sample_says_it_could_not_see_a_virus():
    # The real run this guards against: 40 reads, 23 human, 8 macaque, no virus.
    hits, searched = _hits([("Homo sapiens", 9606, 23), ("Macaca mulatta", 9544, 8)])
    searched += [f"nohit-{i}" for i in range(9)]
    s = summary.summarize(hits, searched, total_reads=1_000_000, local_db=None)
    assert s["dominant"] == "Homo sapiens" and s["dominant_fraction"] == 0.7419  # 23 of 31 named
    assert s["detection_floor"] == 0.025 and s["no_hit"] == 9 and s["named_reads"] == 31
    assert s["host_dominated"] is True and s["can_see_minority"] is False
    assert "Homo sapiens is 74% of the 31 reads with a named hit" in s["caveat"]
    assert "deplete Homo sapiens (map the reads to its genome and keep the unmapped reads)" \
        in s["caveat"] and "organism asked about may be a minority" in s["caveat"]
    assert any("999960 of 1000000 input reads were not searched" in b
               for b in s["competence"]["blind_spots"])


def test_ties_and_ambiguous_reads_are_counted_not_hidden():
    hits = {"a": [{"sciname": "X", "bit_score": 100.0}, {"sciname": "Y", "bit_score": 100.0}],
            "b": [{"sciname": "X", "bit_score": 100.0}],
            "c": [{"sciname": "Y", "bit_score": 90.0}]}
    s = summary.summarize(hits, ["a", "b", "c"], 3, "panel")
    # The tied read counts for each name, and the caveat says so.
    assert s["ambiguous"] == 1 and s["named_reads"] == 3
    assert [(o["name"], o["reads"]) for o in s["organisms"]] == [("X", 2), ("Y", 2)]
    assert s["competence"]["ties"] == 1 and s["competence"]["margin"] == 0.0
    assert "1 read tied between names" in s["caveat"]


def test_influenza_strains_pool_to_the_species():
    hits = {"a": [{"sciname": "Influenza A virus (A/Puerto Rico/8/1934(H1N1))", "bit_score": 1}],
            "b": [{"sciname": "Influenza A virus (A/Texas/50/2012(H3N2))", "bit_score": 1}]}
    s = summary.summarize(hits, ["a", "b"], 2, None)
    assert s["dominant"] == "Influenza A virus" and s["dominant_fraction"] == 1.0
