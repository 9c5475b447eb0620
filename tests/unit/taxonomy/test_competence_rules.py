"""The design's competence rules for taxonomy: influenza subtype evidence and the detection floor,
each on a case built for it (sparse strong evidence, a subtype absent from the database, a
dominated sample at n=100, a balanced one at n=300)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from biotool.taxonomy import influenza, sequences, summary

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "refs" / "demo"
ARTIC = DEMO / "sarscov2" / "MT007544.fastq"
FLU = DEMO / "influenza" / "influenza_a_h1n1.fasta"
HELDOUT = Path(__file__).parent / "data" / "influenza_heldout.fasta"
SARS2 = "Severe acute respiratory syndrome coronavirus 2"
PR8 = "Influenza A virus (A/Puerto Rico/8/1934(H1N1)) segment {}, complete sequence"
H3N2 = "Influenza A virus (A/Texas/50/2012(H3N2)) segment {}, complete sequence"


def hit(title: str, score: float = 500.0) -> dict:
    return {"title": title, "sciname": "", "bit_score": score}


def fragments(fasta: Path, n: int, length: int, seed: int, error: float = 0.05,
              only: set[str] | None = None) -> list[tuple[str, str]]:
    """Reads cut from real sequences with seeded substitutions (a sequencer's errors)."""
    rng = random.Random(seed)
    out = []
    for ident, seq in sequences.read_fasta(fasta):
        if only is not None and ident not in only:
            continue
        for i in range(n):
            p = rng.randrange(0, len(seq) - length)
            read = [b if rng.random() > error else rng.choice("ACGT") for b in seq[p:p + length]]
            out.append((f"{ident}_frag{i}", "".join(read)))
    return out


def write_fastq(path: Path, records) -> Path:
    path.write_text("".join(f"@{i}\n{s}\n+\n{'5' * len(s)}\n" for i, s in records))
    return path


# Influenza: confidence = min(1, n_strong / 10), margin, alternatives = ties, depth floor.

def test_one_ha_read_and_one_na_read_is_sparse_evidence_not_confidence():
    flu = influenza.tiers({"r1": [hit(PR8.format(4))], "r2": [hit(PR8.format(6))]})
    comp = flu["competence"]
    assert flu["strong_reads"] == 2
    assert comp["confidence"] == 0.2          # min(1, 2/10), not 0.9
    assert comp["margin"] == 1.0              # strong H1N1, no weak-only subtype outside it
    assert comp["alternatives"] == 0 and comp["ties"] == 0
    assert any("subtypes below the read-depth floor are unobserved" in b
               for b in comp["blind_spots"])
    assert "--sample" in comp["remedy"]


def test_ha_only_reads_leave_n_open_and_the_margin_at_zero():
    h5 = "Influenza A virus (A/goose/Guangdong/1/1996(H5N1)) segment 4, complete sequence"
    flu = influenza.tiers({f"h{i}": [hit(h5)] for i in range(12)})
    assert [c["subtype"] for c in flu["candidates"]] == ["H5N?"]
    comp = flu["competence"]
    assert comp["confidence"] == 1.0 and comp["margin"] == 0.0
    assert any("NA (segment 6)" in b for b in comp["blind_spots"])


def test_confidence_saturates_at_ten_strong_reads_and_the_floor_lifts_at_twenty():
    ten = {f"h{i}": [hit(PR8.format(4 if i % 2 else 6))] for i in range(10)}
    assert influenza.tiers(ten)["competence"]["confidence"] == 1.0
    assert any("read-depth floor" in b for b in influenza.tiers(ten)["competence"]["blind_spots"])
    twenty = {f"h{i}": [hit(PR8.format(4 if i % 2 else 6))] for i in range(20)}
    comp = influenza.tiers(twenty)["competence"]
    assert comp["confidence"] == 1.0
    assert not any("read-depth floor" in b for b in comp["blind_spots"])


def test_a_weak_only_subtype_outside_the_strong_ones_takes_the_margin_away():
    hits = {f"s{i}": [hit(PR8.format(4 if i % 2 else 6))] for i in range(12)}
    hits["w"] = [hit(H3N2.format(7))]
    comp = influenza.tiers(hits)["competence"]
    assert comp["confidence"] == 1.0 and comp["margin"] == 0.0
    assert comp["alternatives"] == comp["ties"] == 1


def test_a_subtype_absent_from_the_panel_points_at_the_no_hit_reads_and_nt():
    """An H3N2 sample against a panel holding only H1N1: internal segments hit H1N1 strains
    (weak), HA and NA hit nothing."""
    hits = {f"int{i}": [hit(PR8.format(1 + i % 3))] for i in range(9)}
    hits.update({f"nohit{i}": [] for i in range(6)})
    flu = influenza.tiers(hits, panel="demo-viral-panel", panel_subtypes={"H1N1"})
    comp = flu["competence"]
    assert flu["strong"]["H"] == {} and flu["strong"]["N"] == {}
    assert [c["tier"] for c in flu["candidates"]] == ["weak"]
    assert comp["confidence"] == 0.0 and comp["margin"] == 0.0
    assert comp["alternatives"] >= 1  # never 0 on a one-subtype panel
    assert any("6 of 15 reads had no hit in the panel demo-viral-panel: the HA/NA reads may be "
               "among them" in b for b in comp["blind_spots"])
    assert "--remote" in comp["remedy"]
    assert not comp["remedy"].startswith("search more reads")


def test_the_same_reads_against_nt_need_no_panel_warning():
    hits = {f"int{i}": [hit(PR8.format(1 + i % 3))] for i in range(9)}
    hits.update({f"nohit{i}": [] for i in range(6)})
    comp = influenza.tiers(hits)["competence"]
    assert comp["alternatives"] == 0
    assert not any("no hit in the panel" in b for b in comp["blind_spots"])
    assert "--remote" not in comp["remedy"]


def test_database_subtypes_are_read_from_the_staged_taxa_table():
    taxa = {"a": {"sciname": "Influenza A virus (A/Puerto Rico/8/1934(H1N1))"},
            "b": {"sciname": "Influenza A virus (A/California/07/2009(H1N1))"},
            "c": {"sciname": "Escherichia phage phiX174"}}
    assert influenza.database_subtypes(taxa) == {"H1N1"}
    taxa["d"] = {"sciname": "Influenza A virus (A/Texas/50/2012(H3N2))"}
    assert influenza.database_subtypes(taxa) == {"H1N1", "H3N2"}


def test_absent_subtype_end_to_end_on_generated_reads(biotool, tmp_path):
    """Reads of internal segments drift from the panel's PR8 (12% substitutions, still found)
    while HA and NA reads stand in for a subtype the panel lacks (random sequence: no hit)."""
    internal = {"NC_002016.1", "NC_002019.1", "NC_002020.1", "NC_002021.1"}
    reads = fragments(FLU, 4, 300, seed=11, error=0.12, only=internal)
    rng = random.Random(5)
    reads += [(f"absent_ha_na_{i}", "".join(rng.choice("ACGT") for _ in range(300)))
              for i in range(8)]
    fq = write_fastq(tmp_path / "h3n2_like.fastq", reads)
    r = biotool("taxonomy", "--fastq", str(fq), "--local", "--sample", "100")
    assert r.code == 0, r.stderr
    flu = r.json["influenza"]
    comp = flu["competence"]
    no_hit = r.json["summary"]["no_hit"]
    assert 8 <= no_hit <= 10  # the 8 stand-ins, and at most a couple of drifted fragments
    assert flu["strong"]["H"] == {} and comp["confidence"] == 0.0
    assert comp["alternatives"] >= 1
    assert any(f"{no_hit} of 24 reads had no hit in the panel" in b for b in comp["blind_spots"])
    assert "search nt remotely (--remote)" in comp["remedy"]


def test_a_held_out_mix_against_the_one_subtype_panel_has_no_margin(biotool, tmp_path):
    """Real H1N1, H2N2, H3N2 and influenza B segments (HA, NA, M; data/PROVENANCE.md) against
    the demo panel, which holds H1N1 only: H1N1 is typed from its own HA and NA, the other
    subtypes' HA and NA come back as no-hit, and the answer must not call H1N1 certain."""
    pr8 = {"NC_002017.1", "NC_002018.1", "NC_002016.1", "NC_002019.1"}  # HA, NA, M, NP
    reads = (fragments(FLU, 5, 300, seed=21, error=0.02, only=pr8)
             + fragments(HELDOUT, 5, 300, seed=22, error=0.02))
    fq = write_fastq(tmp_path / "heldout_mix.fastq", reads)
    r = biotool("taxonomy", "--fastq", str(fq), "--local", "--sample", "100")
    assert r.code == 0, r.stderr
    flu = r.json["influenza"]
    comp = flu["competence"]
    no_hit = r.json["summary"]["no_hit"]
    assert flu["strong"]["H"] == {"H1": 5} and flu["strong"]["N"] == {"N1": 5}
    assert [c["subtype"] for c in flu["candidates"]] == ["H1N1"]
    assert no_hit >= 30  # at least the 30 H2/H3/B HA and NA reads: the panel lacks them
    assert comp["margin"] == 0.0 and comp["alternatives"] >= 1
    assert any("holds one influenza subtype (H1N1)" in b and "the margin is 0" in b
               for b in comp["blind_spots"])
    assert any(f"{no_hit} of {len(reads)} reads had no hit in the panel demo-viral-panel: the "
               "HA/NA reads may be among them" in b for b in comp["blind_spots"])
    assert comp["remedy"].startswith("search nt remotely (--remote) or a wider database")


def test_no_hit_reads_beside_typed_ha_and_na_take_the_margin_on_any_panel():
    """A panel of two subtypes, H1N1 typed from HA and NA, and many reads with no hit: another
    subtype's HA/NA may be among them, so the typed subtype has no margin."""
    hits = {f"s{i}": [hit(PR8.format(4 if i % 2 else 6))] for i in range(20)}
    hits.update({f"nohit{i}": [] for i in range(10)})
    two = influenza.tiers(hits, panel="panel", panel_subtypes={"H1N1", "H3N2"})["competence"]
    assert two["margin"] == 0.0 and two["alternatives"] == 0
    assert any("10 of 30 reads had no hit" in b for b in two["blind_spots"])
    clean = {k: v for k, v in hits.items() if v}
    full = influenza.tiers(clean, panel="panel", panel_subtypes={"H1N1", "H3N2"})["competence"]
    assert full["margin"] == 1.0 and full["confidence"] == 1.0


# The detection floor: can_see_minority = dominant_fraction < 0.5 and n >= 200, both over the
# reads with a named best hit.

def _assigned(counts: dict[str, int]) -> tuple[dict, list]:
    hits, searched = {}, []
    for name, k in counts.items():
        for i in range(k):
            q = f"{name}-{i}"
            searched.append(q)
            hits[q] = [{"sciname": name, "taxid": None, "bit_score": 300.0, "title": name}]
    return hits, searched


def test_the_seed_rule_on_both_axes():
    for counts, n_expected, seen in [({"A": 40, "B": 30, "C": 30}, 100, False),   # n < 200
                                     ({"A": 99, "B": 1}, 100, False),             # dominated
                                     ({"A": 250, "B": 50}, 300, False),           # 83% dominant
                                     ({"A": 100, "B": 100, "C": 100}, 300, True),
                                     ({"A": 100, "B": 100}, 200, False),          # exactly half
                                     ({"A": 99, "B": 99, "C": 2}, 200, True)]:
        hits, searched = _assigned(counts)
        s = summary.summarize(hits, searched, n_expected, None)
        assert s["can_see_minority"] is seen, counts
        assert (f"deplete {s['dominant']}" in s["caveat"]) is not seen


def test_a_dominated_sample_at_n_100_says_the_share_the_floor_and_the_remedy(biotool, tmp_path):
    sars = list(sequences.read_fastq(ARTIC))[:90]
    phix = fragments(DEMO / "genomes" / "phiX174.fasta", 10, 450, seed=7)
    fq = write_fastq(tmp_path / "dominated.fastq", sars + phix)
    r = biotool("taxonomy", "--fastq", str(fq), "--local", "--sample", "100")
    assert r.code == 0, r.stderr
    s = r.json["summary"]
    assert r.json["n"] == 100 and s["dominant"] == SARS2 and s["dominant_fraction"] == 0.9
    assert s["can_see_minority"] is False
    assert f"{SARS2} is 90% of the 100 reads with a named hit" in s["caveat"]
    assert "Escherichia phage phiX174 is also seen, at 10%" in s["caveat"]
    # All 100 reads of the file were searched: more of this sample cannot help, more sequence can.
    assert s["whole_input"] is True and s["caveat"].startswith(
        "Every read of the input was searched (100 of 100 identified): the whole input")
    assert ("A dominance call from 100 reads has a floor of 1/100: anything below about 1.00% "
            "of the reads is unobserved, not absent") in s["caveat"]
    assert f"sequence deeper, or deplete {SARS2} before sequencing" in s["caveat"]
    assert "--sample" not in s["caveat"] + s["competence"]["remedy"]
    assert 0 <= s["p_minority_seen"] <= 1  # extra detail beside the rule


def test_a_dominated_sample_drawn_from_more_reads_says_how_to_see_past_it(biotool, tmp_path):
    sars = list(sequences.read_fastq(ARTIC))[:180]
    phix = fragments(DEMO / "genomes" / "phiX174.fasta", 20, 450, seed=7)
    fq = write_fastq(tmp_path / "dominated.fastq", sars + phix)
    r = biotool("taxonomy", "--fastq", str(fq), "--local", "--sample", "100")
    assert r.code == 0, r.stderr
    s = r.json["summary"]
    assert r.json["n"] == 100 and s["whole_input"] is False and s["dominant"] == SARS2
    assert "below about 1.00% of the reads (1/n) is unobserved, not absent" in s["caveat"]
    assert (f"deplete {SARS2} (map the reads to its genome and keep the unmapped reads) or "
            "search far more reads (--sample)") in s["caveat"]
    assert "raise --sample" in s["competence"]["remedy"]
    assert any("100 of 200 input reads were not searched" in b
               for b in s["competence"]["blind_spots"])


def test_a_balanced_sample_at_n_300_can_see_a_minority(biotool, tmp_path):
    sars = list(sequences.read_fastq(ARTIC))[:100]
    phix = fragments(DEMO / "genomes" / "phiX174.fasta", 100, 450, seed=7)
    hiv = fragments(DEMO / "genomes" / "hiv1.fasta", 100, 450, seed=8)
    fq = write_fastq(tmp_path / "balanced.fastq", sars + phix + hiv)
    r = biotool("taxonomy", "--fastq", str(fq), "--local", "--sample", "300")
    assert r.code == 0, r.stderr
    s = r.json["summary"]
    assert r.json["n"] == 300 and s["dominant_fraction"] < 0.5
    assert {o["reads"] for o in s["organisms"]} == {100}
    assert s["can_see_minority"] is True
    assert "deplete" not in s["caveat"] and "unobserved, not absent" in s["caveat"]


def _random_reads(n: int, length: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [(f"nohit{i}", "".join(rng.choice("ACGT") for _ in range(length))) for i in range(n)]


@pytest.mark.parametrize("named,total", [(5, 300), (50, 300), (200, 500)])
def test_confidence_and_margin_count_the_reads_that_matched_nothing(biotool, tmp_path, named,
                                                                    total):
    """The demo ARTIC reads diluted with reads that match nothing, through the real blastn:
    dominance stays over the named reads (the design), but competence is over the whole sample,
    so a handful of identified reads is never a confident identification."""
    sars = list(sequences.read_fastq(ARTIC))[:named]
    fq = write_fastq(tmp_path / "diluted.fastq", sars + _random_reads(total - named, 400, seed=3))
    r = biotool("taxonomy", "--fastq", str(fq), "--local", "--sample", "500")
    assert r.code == 0, r.stderr
    s = r.json["summary"]
    no_hit = total - named
    assert r.json["n"] == total and s["named_reads"] == named and s["no_hit"] == no_hit
    assert s["dominant"] == SARS2 and s["dominant_fraction"] == 1.0  # of the named reads
    assert s["can_see_minority"] is False
    assert s["no_hit_caveat"] == (f"{no_hit} reads matched nothing in this database: "
                                  "unobserved, not absent")
    assert f"{SARS2} is 100% of the {named} reads with a named hit" in s["caveat"]
    assert f"dominates the {named} named reads; {no_hit} of {total} reads matched nothing" \
        in s["caveat"]
    assert f"Only {named} of {total} reads" in s["caveat"]
    comp = s["competence"]
    assert comp["applicable"] is True
    # The no-hit reads could all be a runner-up: no lead survives them here.
    assert comp["margin"] == 0.0
    # Every read of the file was searched: the share identified is the input's own.
    assert s["whole_input"] is True and comp["confidence"] == round(named / total, 4)
    assert comp["remedy"].startswith("search nt remotely (--remote)")
    assert "--sample" not in comp["remedy"]


def test_the_whole_sample_named_keeps_full_confidence(biotool):
    r = biotool("taxonomy", "--fastq", str(ARTIC), "--local", "--sample", "200")
    assert r.code == 0, r.stderr
    comp = r.json["summary"]["competence"]
    assert r.json["summary"]["named_reads"] == 200
    assert comp["confidence"] == 1.0 and comp["margin"] == 1.0


def test_sample_competence_on_both_axes():
    # The whole input: its own shares.
    assert summary.sample_competence(90, 10, 100, 100, whole=True) == (0.9, 0.8)
    conf, margin = summary.sample_competence(60, 10, 100, 120, whole=True)   # 20 no-hit reads
    assert conf == pytest.approx(0.5) and margin == pytest.approx(30 / 120)
    assert summary.sample_competence(19, 0, 19, 19, whole=True) == (1.0, 1.0)
    # A sample: the dominant share at its 95% lower bound, the runner-up at its upper bound.
    low, high = summary.wilson(90, 100)[0], summary.wilson(10, 100)[1]
    conf, margin = summary.sample_competence(90, 10, 100, 100)
    assert conf == pytest.approx(low) and margin == pytest.approx(low - high)
    assert 0.8 < low < 0.9 and 0.1 < high < 0.2
    assert summary.sample_competence(19, 0, 19, 19)[0] == pytest.approx(19 / (19 + 1.96 ** 2))
    assert summary.sample_competence(0, 0, 0, 50) == (0.0, 0.0)


def test_no_cliff_in_confidence_as_a_sample_grows():
    """k of k sampled reads name one organism: confidence rises smoothly with k (it was 0.475
    at 19 and 1.0 at 20), stays below the whole input's 1.0, and a handful stays under 0.5."""
    values = []
    for k in range(1, 301):
        hits, searched = _assigned({"A": k})
        s = summary.summarize(hits, searched, 10 * k, None)  # a sample of a larger input
        assert s["whole_input"] is False
        values.append(s["competence"]["confidence"])
    steps = [b - a for a, b in zip(values, values[1:])]
    assert all(d >= 0 for d in steps) and max(steps) < 0.15  # the largest step is 1 -> 2 reads
    assert abs(values[19] - values[18]) < 0.01
    assert values[2] < 0.5 < values[9] < values[199] < 1.0
    whole = summary.summarize(*_assigned({"A": 3}), 3, None)
    assert whole["competence"]["confidence"] == 1.0 and whole["competence"]["margin"] == 1.0


def test_the_demo_influenza_segments_are_a_complete_identification(biotool):
    """The demo's 10 influenza segments (each matched over its full length) are the whole
    input: all 10 identified is confidence 1.0, not a failure, and no remedy asks for more of
    a sample that was searched entirely."""
    r = biotool("taxonomy", "--fasta", str(FLU), "--local")
    assert r.code == 0, r.stderr
    s = r.json["summary"]
    comp = s["competence"]
    assert r.json["input"]["sampled"] is False and s["whole_input"] is True
    assert s["named_reads"] == 10 and s["dominant"] == "Influenza A virus"
    assert s["aligned_fraction"] == 1.0
    assert comp["confidence"] == 1.0 and comp["margin"] == 1.0
    assert s["caveat"].startswith("Every sequence of the input was searched (10 of 10 "
                                  "identified): the whole input, not a sample.")
    assert "A dominance call from 10 sequences has a floor of 1/10" in s["caveat"]
    assert "not established" not in s["caveat"] and "Only 10 of 10" not in s["caveat"]
    assert "--sample" not in s["caveat"] + comp["remedy"]
    assert not any("not searched" in b for b in comp["blind_spots"])


def test_fasta_records_count_by_how_much_of_them_aligns(biotool, tmp_path):
    """A contig that is phiX174 over 30% of its length and unrelated sequence over the rest is
    named by a part of it: it counts as 0.3 identified, and the caveat says so."""
    phix = dict(sequences.read_fasta(DEMO / "genomes" / "phiX174.fasta"))
    phix = next(iter(phix.values()))
    rng = random.Random(9)
    filler = "".join(rng.choice("ACGT") for _ in range(1400))
    fa = tmp_path / "contigs.fasta"
    fa.write_text(f">whole\n{phix[:2000]}\n>chimera\n{phix[2000:2600]}{filler}\n")
    r = biotool("taxonomy", "--fasta", str(fa), "--local")
    assert r.code == 0, r.stderr
    s = r.json["summary"]
    assert s["whole_input"] is True and s["named_reads"] == 2
    assert 0.62 <= s["aligned_fraction"] <= 0.66  # (1.0 + 0.3) / 2
    assert s["competence"]["confidence"] == s["aligned_fraction"]
    assert "1 sequence of 2 align over under half their length" in s["caveat"]


def test_the_minority_wording_agrees_with_the_organisms_listed(biotool, tmp_path):
    """200 SARS-CoV-2 reads and 50 phiX174 reads: phiX174 is listed at 20%, so the caveat must
    not say a minority cannot be seen; it says what the list shows and what lies below 1/n."""
    sars = list(sequences.read_fastq(ARTIC))
    phix = fragments(DEMO / "genomes" / "phiX174.fasta", 50, 450, seed=7)
    fq = write_fastq(tmp_path / "mix.fastq", sars + phix)
    r = biotool("taxonomy", "--fastq", str(fq), "--local", "--sample", "250")
    assert r.code == 0, r.stderr
    s = r.json["summary"]
    listed = {o["name"]: o["fraction"] for o in s["organisms"]}
    assert listed == {SARS2: 0.8, "Escherichia phage phiX174": 0.2}
    assert "cannot be seen" not in s["caveat"]
    assert not any("cannot be seen" in b for b in s["competence"]["blind_spots"])
    assert f"{SARS2} is 80% of the 250 reads with a named hit" in s["caveat"]
    assert "Escherichia phage phiX174 is also seen, at 20%" in s["caveat"]
    assert "anything below about 0.40% of the reads is unobserved, not absent" in s["caveat"]


def test_a_sample_with_no_named_hit_establishes_nothing(biotool, tmp_path):
    fq = write_fastq(tmp_path / "nothing.fastq", _random_reads(250, 400, seed=4))
    r = biotool("taxonomy", "--fastq", str(fq), "--local", "--sample", "250")
    assert r.code == 0, r.stderr
    s = r.json["summary"]
    assert s["named_reads"] == 0 and s["no_hit"] == 250 and s["dominant"] is None
    assert s["can_see_minority"] is False and s["detection_floor"] == 1.0
    assert s["caveat"].startswith("No named hits among the 250 reads searched; this "
                                  "establishes nothing about the sample.")
    assert "250 reads matched nothing" in s["no_hit_caveat"]
    comp = s["competence"]
    assert comp["applicable"] is False and comp["confidence"] == 0.0 and comp["margin"] == 0.0
    assert "deplete" not in comp["remedy"] and "dominant" not in comp["remedy"]
    assert "--remote" in comp["remedy"]


def test_reads_tied_between_two_hosts_count_as_host_for_each():
    hits = {f"t{i}": [{"sciname": "Homo sapiens", "taxid": 9606, "bit_score": 400.0},
                      {"sciname": "Macaca mulatta", "taxid": 9544, "bit_score": 400.0}]
            for i in range(150)}
    hits.update({f"v{i}": [{"sciname": SARS2, "taxid": 2697049, "bit_score": 400.0}]
                 for i in range(60)})
    s = summary.summarize(hits, list(hits), 210, None)
    assert s["named_reads"] == 210 and s["ambiguous"] == 150
    assert {o["name"]: o["reads"] for o in s["organisms"]} == \
        {"Homo sapiens": 150, "Macaca mulatta": 150, SARS2: 60}
    assert s["host_dominated"] is True and s["can_see_minority"] is False
    assert "150 reads tied between names at their best hit and count for each name" in s["caveat"]


def test_reads_tied_between_strain_names_are_still_named():
    strains = ["Severe acute respiratory syndrome coronavirus 2 isolate A",
               "Severe acute respiratory syndrome coronavirus 2 isolate B"]
    hits = {f"q{i}": [{"sciname": n, "bit_score": 900.0} for n in strains] for i in range(30)}
    s = summary.summarize(hits, list(hits), 30, "panel")
    assert s["named_reads"] == 30 and s["no_hit"] == 0 and s["dominant"] == strains[0]
    assert "No named hits" not in s["caveat"] and "count for each name" in s["caveat"]
