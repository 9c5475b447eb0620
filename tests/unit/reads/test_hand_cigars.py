"""Every signature, re-derived by hand from CIGARs written directly (no aligner in between).

The reference has no repeat around 1-based base 1000 and a run of five A at 2001..2005.
Each read below comes once on each strand; the expected pos follows the stated convention
(pos = 1-based last reference base covered before the break), worked out in the comments.
"""

import random

import pytest

CONTIG = "chr|1:x"  # ':' and '|' in a contig name must survive --region and the VCF
FOREIGN = "TTTTTGGGGGCCCCCAAAAATTTTTGGGGGCCCCCAAAAA"


def _reference() -> str:
    rng = random.Random(5)
    ref = list("".join(rng.choice("ACGT") for _ in range(3000)))
    ref[996:1006] = list("ACGTCAGTCA")   # 1-based 997..1006: no repeat at the site
    ref[1999:2006] = list("CAAAAAG")     # 1-based 2000 C, 2001..2005 A, 2006 G
    return "".join(ref)


@pytest.fixture(scope="module")
def hand(tmp_path_factory):
    import pysam

    d = tmp_path_factory.mktemp("hand")
    ref = _reference()
    fasta = d / "ref.fa"
    fasta.write_text(f">{CONTIG}\n{ref}\n")
    M = lambda a, b: ref[a:b]  # 0-based, half-open
    reads = []
    for strand in (0, 16):
        reads += [
            # 1-based 1001..1100: starts at pos 1000, ends at pos 1100
            ("plain", 1000, "100M", M(1000, 1100), strand),
            # leading soft clip, first aligned base 1001: clip at pos 1000; end at pos 1100
            ("lsoft", 1000, "30S100M", FOREIGN[:30] + M(1000, 1100), strand),
            # 901..1000 then a soft clip: start at pos 900, clip at pos 1000
            ("rsoft", 900, "100M30S", M(900, 1000) + FOREIGN[:30], strand),
            # the same with hard clips, as supplementary alignments carry them
            ("lhard", 1000, "30H100M", M(1000, 1100), strand | 0x800),
            ("rhard", 900, "100M30H", M(900, 1000), strand | 0x800),
            # a 3-base clip is a start, not a clip (shorter than min_clip 5)
            ("short", 1000, "3S97M", FOREIGN[:3] + M(1000, 1097), strand),
            # deletion of 1001..1003 (CAG): span 1000..1003
            ("del", 950, "50M3D50M", M(950, 1000) + M(1003, 1053), strand),
            # one A of the run 2001..2005 deleted: span 2000..2005
            ("hdel", 1950, "53M1D50M", M(1950, 2003) + M(2004, 2054), strand),
            # one more A inserted inside the run: span 2000..2005
            ("hins", 1950, "52M1I50M", M(1950, 2002) + "A" + M(2002, 2052), strand),
        ]
    reads.sort(key=lambda r: r[1])
    header = {"HD": {"VN": "1.6", "SO": "coordinate"}, "SQ": [{"SN": CONTIG, "LN": len(ref)}]}
    bam = d / "hand.bam"
    with pysam.AlignmentFile(str(bam), "wb", header=header) as out:
        for name, pos0, cigar, seq, flag in reads:
            a = pysam.AlignedSegment(out.header)
            a.query_name, a.reference_id, a.reference_start = f"{name}{flag}", 0, pos0
            a.cigarstring, a.query_sequence, a.flag, a.mapping_quality = cigar, seq, flag, 60
            a.query_qualities = pysam.qualitystring_to_array("I" * len(seq))
            out.write(a)
    pysam.index(str(bam))
    return {"fasta": fasta, "bam": bam, "ref": ref}


def _rows(out):
    return {r["pos"]: {k: r[k] for k in ("starts", "ends", "clips", "indels")}
            for r in out["consensus"]}


def test_each_signature_lands_on_the_hand_derived_pos(biotool, hand):
    r = biotool("breakpoints", "--bam", str(hand["bam"]), "--reference", str(hand["fasta"]),
                "--min-mapq", "0", "--top", "50")
    assert r.code == 0, r.stderr
    rows = _rows(r.json)
    # pos 1000: plain x2 + short x2 start there; 4 soft + 4 hard clips (both ends, both
    # strands); the deletion's span 1000..1003 covers it (2 reads).
    assert rows[1000] == {"starts": 4, "ends": 0, "clips": 8, "indels": 2}
    assert rows[1100] == {"starts": 0, "ends": 6, "clips": 0, "indels": 0}  # plain, lsoft, lhard
    assert rows[1097]["ends"] == 2                                         # short: 1001..1097
    assert rows[900] == {"starts": 4, "ends": 0, "clips": 0, "indels": 0}  # rsoft, rhard
    # The homopolymer indels are counted over their whole span, not at one edge.
    assert rows[2000]["indels"] == 4
    sig = r.json["by_signature"]
    assert sig["clips"] == {"contig": CONTIG, "pos": 1000, "reads": 8}
    assert sig["indels"]["span"] == [2000, 2005] and sig["indels"]["reads"] == 4


def test_region_with_colon_and_pipe_in_the_contig_name(biotool, hand):
    for region in (f"{CONTIG}:990-1010", f"{{{CONTIG}}}:990-1010"):
        r = biotool("breakpoints", "--bam", str(hand["bam"]), "--reference",
                    str(hand["fasta"]), "--min-mapq", "0", "--region", region, "--top", "50")
        assert r.code == 0, r.stderr
        assert set(_rows(r.json)) == {1000}  # read ends at 1097/1100 lie outside the region


def test_indel_depth_counts_only_reads_that_span_the_event(biotool, hand):
    r = biotool("variants", "--bam", str(hand["bam"]), "--reference", str(hand["fasta"]),
                "--min-mapq", "0", "--min-depth", "2")
    assert r.code == 0, r.stderr
    calls = {(v["pos"], v["ref"], v["alt"]): v for v in r.json["variants"]}
    # Deletion of 1001..1003 after T at 1000. rsoft/rhard end at 1000 and cannot show it;
    # only the two deletion reads span 1000 and 1001.
    dele = calls[(1000, "TCAG", "T")]
    assert (dele["depth"], dele["alt_reads"], dele["fwd"], dele["rev"]) == (2, 2, 1, 1)
    # The homopolymer events, shifted fully left to the C at 2000.
    assert calls[(2000, "CA", "C")]["depth"] == 4 and calls[(2000, "C", "CA")]["depth"] == 4


def test_snv_depth_fraction_and_strands_counted_by_hand(biotool, hand, tmp_path):
    """At 1-based 1501: 10 reference reads, 10 alt reads (7 forward, 3 reverse), 2 alt reads
    whose base is below --min-bq (not informative: in neither depth nor alt), 2 reads deleting
    1500..1502 (informative: depth, not alt), 1 alt read below --min-mapq (ignored)."""
    import pysam

    ref = hand["ref"]
    alt = next(b for b in "ACGT" if b != ref[1500])
    reads = []
    for i in range(10):
        reads.append((1450, "100M", ref[1450:1550], 16 if i % 2 else 0, None, 60))
    for i in range(10):
        seq = ref[1450:1500] + alt + ref[1501:1550]
        reads.append((1450, "100M", seq, 16 if i >= 7 else 0, None, 60))
    for _ in range(2):
        seq = ref[1450:1500] + alt + ref[1501:1550]
        reads.append((1450, "100M", seq, 0, 50, 60))  # base quality 2 at the site
    for _ in range(2):
        reads.append((1450, "49M3D48M", ref[1450:1499] + ref[1502:1550], 0, None, 60))
    reads.append((1450, "100M", ref[1450:1500] + alt + ref[1501:1550], 0, None, 5))
    header = {"HD": {"VN": "1.6", "SO": "coordinate"}, "SQ": [{"SN": CONTIG, "LN": len(ref)}]}
    bam = tmp_path / "snv.bam"
    with pysam.AlignmentFile(str(bam), "wb", header=header) as out:
        for j, (pos0, cigar, seq, flag, lowq_at, mapq) in enumerate(reads):
            a = pysam.AlignedSegment(out.header)
            a.query_name, a.reference_id, a.reference_start = f"r{j}", 0, pos0
            a.cigarstring, a.query_sequence, a.flag, a.mapping_quality = cigar, seq, flag, mapq
            q = ["I"] * len(seq)
            if lowq_at is not None:
                q[lowq_at] = "#"
            a.query_qualities = pysam.qualitystring_to_array("".join(q))
            out.write(a)
    pysam.index(str(bam))
    r = biotool("variants", "--bam", str(bam), "--reference", str(hand["fasta"]))
    assert r.code == 0, r.stderr
    snv = next(v for v in r.json["variants"] if v["type"] == "SNV")
    assert (snv["pos"], snv["ref"], snv["alt"]) == (1501, ref[1500], alt)
    assert (snv["depth"], snv["alt_reads"], snv["fwd"], snv["rev"]) == (22, 10, 7, 3)
    assert snv["af"] == round(10 / 22, 4)
    # Raising the floor above the fraction hides it, and the note says why.
    r = biotool("variants", "--bam", str(bam), "--reference", str(hand["fasta"]),
                "--min-af", "0.5")
    assert all(v["type"] != "SNV" for v in r.json["variants"])
    assert "allele fraction >= 0.5" in r.json["note"] and r.json["n_below_floor"] >= 1
