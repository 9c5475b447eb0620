"""Breakpoints at split reads: a deletion longer than the reads leaves read edges as
one-sided as an amplicon primer's, but the reads there split (their clipped part aligns
across the deletion), so both of its junctions rank, base-exact, and are not discounted."""

import random
from collections import Counter

import numpy as np
import pytest

from biotool.reads.breakpoints import _table
from biotool_testing import simulate as sim


@pytest.mark.parametrize("k", [300, 1800])
def test_a_deletion_longer_than_the_reads_ranks_both_junctions_base_exact(biotool, tmp_path,
                                                                          k):
    ref = sim.genome(8000, seed=51)
    i = sim.deletion_site(ref, k, random.Random(k))
    reads = sim.shotgun_reads(ref[:i] + ref[i + k:], depth=40, seed=k)
    fasta = sim.write_fasta(tmp_path / "genome.fasta", "chr", ref)
    r = biotool("breakpoints", "--fastq", str(sim.write_fastq(tmp_path / "reads.fastq", reads)),
                "--reference", str(fasta))
    assert r.code == 0, r.stderr
    out = r.json
    assert out["preset"] == "sr"
    # Left = the last kept base (1-based i), right = the last deleted one (i + k).
    top = out["consensus"][:2]
    assert {row["pos"] for row in top} == {i, i + k}
    for row in top:
        assert "clips" in row["agreeing"] and row["clips"] >= 20
    assert not [d for d in out["discounted"] if "primer" in d["why"]]


def _ends_at(pos: int, n: int, split: int) -> dict:
    """A tally of n reads ending clipped at base `pos` (none starting near it, as at the left
    junction of a long deletion or at a primer), `split` of them pieces of split reads."""
    hi = np.full(n, pos, dtype=np.int64)
    return {"spans": Counter(), "read_lo": np.arange(pos - 150, pos - 150 + n),
            "read_hi": hi, "lclipped": hi[:0], "rclipped": hi, "lsplit": hi[:0],
            "rsplit": hi[:split], "start": 0, "end": 1000}


def _near_500(table: dict) -> list[tuple]:
    """The discounted edges at base 500 (the tally's own first read starts are left aside)."""
    return [(d["pos"], d["reads"], d["why"], d["share"]) for d in table["discounted"]
            if abs(d["pos"] - 500) <= 5]


def test_split_edges_are_a_junction_and_do_not_make_a_primer():
    # 30 of 40 reads split: 10 reads stop there, a quarter of those covering it.
    table = _table(_ends_at(500, 40, split=30), 1000)
    assert _near_500(table) == []
    j = int(np.searchsorted(table["pos"], 500))
    assert table["cols"]["clips"][j] == 40


@pytest.mark.parametrize("split", [0, 10])
def test_reads_that_stop_at_a_one_sided_pile_are_still_a_primer(split):
    # No split reads (adapter clips), or a quarter of them chimeric: most reads stop there.
    table = _table(_ends_at(500, 40, split=split), 1000)
    assert _near_500(table) == [(500, 40, "primer (reads end)", (40 - split) / 40)]
    j = int(np.searchsorted(table["pos"], 500))
    assert table["cols"]["clips"][j] == 0 and table["cols"]["ends"][j] == 0


def test_short_clips_agreeing_with_split_reads_keep_a_junction_from_being_a_primer(biotool,
                                                                                  tmp_path):
    # Reads across a 600 bp deletion's junction, most with a left piece too short for bwa to
    # place (5-30 bases: clipped, no SA tag), a few split: at the right junction most reads
    # that start there are unsplit, as a primer's would be; their clips agree with the split
    # reads' (the bases before the left junction), so the junction is no primer.
    ref = sim.genome(8000, seed=51)
    k = 600
    i = sim.deletion_site(ref, k, random.Random(7))
    genome = ref[:i] + ref[i + k:]
    short = list(range(8, 32, 2))          # 12 unsplit left clips at the right junction
    split = [40, 48, 56, 64, 72]           # 5 split reads, the right piece primary
    left = list(range(120, 144, 2))        # reads ending clipped at the left junction
    reads = [(f"r{c}", genome[i - c:i - c + 150]) for c in short + split + left]
    r = biotool("breakpoints", "--fastq", str(sim.write_fastq(tmp_path / "reads.fastq", reads)),
                "--reference", str(sim.write_fasta(tmp_path / "genome.fasta", "chr", ref)))
    assert r.code == 0, r.stderr
    assert not [d for d in r.json["discounted"] if "primer" in d["why"]]
    assert {row["pos"] for row in r.json["consensus"][:2]} == {i, i + k}


def test_an_unsplit_clip_agrees_only_with_a_split_clip_at_its_edge():
    from biotool.reads.breakpoints import _agreeing_clips

    clips = [(100, True, "ACGTACGTACGTAC"), (100, False, "ACGTACG"), (100, False, "TTTTTTT"),
             (100, False, "ACGTACGTACGTACGT"), (101, False, "ACGTACG"),
             (100, False, "ACGAACGTACGT")]  # one mismatch in 12 bases: a sequencing error
    assert _agreeing_clips(clips, "l") == [100, 100]
