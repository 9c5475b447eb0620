"""The reads draws (biotool_sandbox.draws.reads) on the staged demo references: seeded, varied,
and their truth checked against the staged FASTA and the reads themselves, not the draw's own
bookkeeping."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from biotool_sandbox.draws import reads as draws

TASKS = Path(__file__).resolve().parents[3] / "harbor" / "tasks"
COMPLEMENT = str.maketrans("ACGT", "TGCA")
FUNCTIONS = {"snv": draws.snv, "small_deletion": draws.small_deletion,
             "origin": draws.origin, "large_deletion": draws.large_deletion}
TASK_OF = {"snv": "reads-snv-drawn", "small_deletion": "reads-deletion-drawn",
           "origin": "reads-origin-drawn", "large_deletion": "reads-breakpoint-drawn"}


def rc(seq: str) -> str:
    return seq.translate(COMPLEMENT)[::-1]


def fasta(path: Path) -> dict[str, str]:
    """The records of a FASTA file, read here without biotool's parser."""
    out, name = {}, None
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            name = line[1:].split()[0]
            out[name] = ""
        elif line.strip():
            out[name] += line.strip().upper()
    return out


@pytest.fixture
def refs(biotool_env, staged_home) -> dict[str, dict[str, str]]:
    """Each staged demo reference's records, by the name `biotool references` lists."""
    from biotool import staging

    return {name: fasta(Path(staging.require("reference", name, "test").path("main")))
            for name in draws.SINGLE + draws.MULTI}


def draw(fn: str, seed: int, tmp_path: Path) -> tuple[dict, Path]:
    public = tmp_path / f"{fn}-{seed}"
    public.mkdir(parents=True)
    return FUNCTIONS[fn](random.Random(seed), public), public


def fastq(public: Path) -> list[str]:
    lines = (public / "reads.fastq").read_text().splitlines()
    assert len(lines) % 4 == 0
    assert all(h.startswith("@read") for h in lines[0::4])
    return lines[1::4]


def count(reads: list[str], kmer: str) -> int:
    """Reads holding `kmer` on either strand."""
    back = rc(kmer)
    return sum(kmer in r or back in r for r in reads)


@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
def test_same_seed_same_files_and_truth(fn, biotool_env, tmp_path):
    a, pa = draw(fn, 7, tmp_path / "a")
    b, pb = draw(fn, 7, tmp_path / "b")
    assert a == b
    assert (pa / "reads.fastq").read_bytes() == (pb / "reads.fastq").read_bytes()
    # Only the reads, under the name the instruction gives.
    assert sorted(p.name for p in pa.iterdir()) == ["reads.fastq"]
    assert "/task/reads.fastq" in (TASKS / TASK_OF[fn] / "instruction.md").read_text()


@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
def test_seeds_draw_different_truths(fn, biotool_env, tmp_path):
    truths = [json.dumps(draw(fn, seed, tmp_path)[0], sort_keys=True) for seed in range(8)]
    assert len(set(truths)) == 8


@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
def test_key_fields_are_the_truths(fn, biotool_env, tmp_path):
    key = json.loads((TASKS / TASK_OF[fn] / "key.json").read_text())
    truth, _ = draw(fn, 3, tmp_path)
    assert key["draw"] == f"reads.{FUNCTIONS[fn].__name__}"
    assert set(key["fields"]) == set(truth)
    assert all("drawn" in rule for rule in key["fields"].values())


@pytest.mark.parametrize("seed", range(4))
def test_snv_truth_is_in_the_reference_and_the_reads(seed, refs, tmp_path):
    truth, public = draw("snv", seed, tmp_path)
    (seq,) = refs[truth["reference"]].values()
    i = truth["pos"] - 1
    assert seq[i] == truth["ref"] != truth["alt"]
    # Not in a homopolymer run: neither base repeats a neighbour, so the position is one.
    assert {seq[i - 1], seq[i + 1]}.isdisjoint({truth["ref"], truth["alt"]})
    reads = fastq(public)
    assert all(len(r) == draws.READ_LENGTH for r in reads)
    mutant = seq[i - 12:i] + truth["alt"] + seq[i + 1:i + 13]
    wild = seq[i - 12:i + 13]
    assert count(reads, mutant) >= 15 and count(reads, wild) <= 1


@pytest.mark.parametrize("seed", range(4))
def test_small_deletion_truth_is_vcf_left_aligned_and_in_the_reads(seed, refs, tmp_path):
    truth, public = draw("small_deletion", seed, tmp_path)
    (seq,) = refs[truth["reference"]].values()
    p, ref, alt = truth["pos"], truth["ref"], truth["alt"]
    k = len(ref) - 1
    assert 3 <= k <= 15 and seq[p - 1:p + k] == ref and alt == ref[0]
    edited = seq[:p] + seq[p + k:]
    # Left-aligned and the only placement: deleting the k bases one further left or right
    # gives another genome.
    assert seq[:p - 1] + seq[p - 1 + k:] != edited
    assert seq[:p + 1] + seq[p + 1 + k:] != edited
    reads = fastq(public)
    junction = edited[p - 12:p + 12]
    assert count(reads, junction) >= 15 and count(reads, seq[p - 12:p + 12]) <= 1


@pytest.mark.parametrize("seed", range(6))
def test_origin_reads_cover_exactly_the_window(seed, refs, tmp_path):
    truth, public = draw("origin", seed, tmp_path)
    records = {rid: s for r in refs.values() for rid, s in r.items()}
    seq = records[truth["record"]]
    start, end = truth["start"], truth["end"]
    assert draws.WINDOW[0] <= end - start + 1 <= draws.WINDOW[1] and 1 <= start and end <= len(seq)
    window = seq[start - 1:end]
    reads = fastq(public)
    # Every read lies in the window (a read with a few errors still shares one of its seven
    # 20-base pieces with it, on one strand), and error-free reads sit on both of its edges.
    assert all(any(x[j:j + 20] in window for x in (r, rc(r)) for j in range(0, 140, 20))
               for r in reads)
    assert count(reads, window[:draws.READ_LENGTH]) >= 1
    assert count(reads, window[-draws.READ_LENGTH:]) >= 1
    assert len(reads) >= draws.COVERAGE[0] * len(window) / draws.READ_LENGTH


def test_origin_draws_influenza_segments(biotool_env, tmp_path):
    segments = set()
    for seed in range(60):
        truth, _ = draw("origin", seed, tmp_path)
        if not truth["record"].startswith(("MN908947", "NC_001422", "gi|")):
            segments.add(truth["record"])
    assert len(segments) >= 2


@pytest.mark.parametrize("seed", range(4))
def test_large_deletion_breakpoints(seed, refs, tmp_path):
    truth, public = draw("large_deletion", seed, tmp_path)
    (seq,) = refs[truth["reference"]].values()
    left, right = truth["left"], truth["right"]
    assert draws.LARGE_DELETION[0] <= right - left <= draws.LARGE_DELETION[1]
    # No microhomology: the junction cannot slide either way (1-based: base left is kept,
    # left+1..right deleted, right+1 kept).
    assert seq[left - 1] != seq[right - 1] and seq[left] != seq[right]
    reads = fastq(public)
    junction = seq[left - 15:left] + seq[right:right + 15]
    assert count(reads, junction) >= 15
    deleted = seq[left:right]
    assert count(reads, deleted[len(deleted) // 2 - 15:len(deleted) // 2 + 15]) == 0


def test_answer_spaces(refs):
    """No fixed answer passes more than 1e-4 of draws: the reference is drawn uniformly, then
    a position (and an alt or a length) among many."""
    singles = [next(iter(refs[n].values())) for n in draws.SINGLE]
    # SNV: a fixed (reference, pos, alt) wins at most 1/4 x 1/(eligible sites of that one).
    snv = max(1 / len(draws.SINGLE) / sum(draws.snv_site(s, i, a)
                                          for i in range(draws.MARGIN, len(s) - draws.MARGIN)
                                          for a in "ACGT")
              for s in singles)
    assert snv < 1e-4
    # Small deletion: (length, position) drawn together, uniform over the lengths, then over
    # the positions that fit, redrawn until fixed_deletion: a pair's chance is its weight
    # (1 / positions that fit its length) over the eligible pairs' total.
    def deletion(s):
        weights = [1 / (len(s) - 2 * draws.MARGIN - k)
                   for k in range(draws.SMALL_DELETION[0], draws.SMALL_DELETION[1] + 1)
                   for i in range(draws.MARGIN, len(s) - draws.MARGIN - k)
                   if draws.fixed_deletion(s, i, k)]
        return max(weights) / sum(weights)
    assert max(1 / len(draws.SINGLE) * deletion(s) for s in singles) < 1e-4
    # Origin: a fixed (record, start, end) passes for at most 21 x 21 windows (tol 10) of the
    # reference's windows, all equally likely once the reference (1 of 5) is drawn.
    origin = max(1 / 5 * 21 * 21 / sum(draws._windows(len(s)) for s in r.values())
                 for r in refs.values())
    assert origin < 1e-4
