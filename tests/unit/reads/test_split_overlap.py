"""Breakpoints where a split read's pieces overlap on the read: bwa mem extends a piece past
the junction through bases that match the far side's reference but one (an imperfect
microhomology), so that piece's clip edge lies a few bases past the break while the other
piece aligns the same bases exactly. The overlap goes to the piece that matches it better."""

import pytest

from biotool.alignment.cigar import parse
from biotool.reads import splitreads
from biotool.reads.splitreads import NO_SHIFT, EdgeShift, Piece
from biotool_testing import simulate as sim
from biotool_testing.paths import REFS

SARS = REFS / "demo" / "sarscov2" / "MN908947.3.reference.fasta"


def _sars() -> str:
    return "".join(line.strip() for line in SARS.read_text().splitlines()[1:]).upper()


def _junction_reads(genome: str, i: int, reverse: bool) -> list[tuple[str, str]]:
    """150 bp reads of the deleted genome across its junction (after base i), one every 2
    bases, and a few over its flanks, all read off one strand."""
    reads = [(f"j{d}", genome[i - 150 + d:i + d]) for d in range(8, 143, 2)]
    reads += [(f"f{n}", genome[s:s + 150]) for n, s in enumerate(range(i - 900, i + 750, 37))]
    return [(name, sim.revcomp(s) if reverse else s) for name, s in reads]


# (i, k, the bases either side that the aligner extends a piece through): the deletion of
# bases i+1..i+k (1-based). 17953/1242 is the large_deletion draw of seed 390: deleted bases
# start TTTGCA, the kept ones after the deletion ATTGCA, so the left piece ran on to 17959.
# 26860/666 is its mirror: the kept bases before it end as the deleted ones do but for the
# last base, so the right piece ran back to 27520.
CASES = [(17953, 1242, "left"), (26860, 666, "right")]


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("i,k,extended", CASES, ids=[c[2] for c in CASES])
def test_overlapping_split_pieces_give_the_exact_junction(biotool, tmp_path, i, k, extended,
                                                          reverse):
    ref = _sars()
    if extended == "left":  # the premise: 5 of the 6 bases after the break match on both sides
        assert ref[i:i + 6] == "TTTGCA" and ref[i + k:i + k + 6] == "ATTGCA"
    else:
        assert ref[i - 6:i - 1] == ref[i + k - 6:i + k - 1] and ref[i - 1] != ref[i + k - 1]
    reads = _junction_reads(ref[:i] + ref[i + k:], i, reverse)
    r = biotool("breakpoints", "--fastq", str(sim.write_fastq(tmp_path / "reads.fastq", reads)),
                "--reference", "MN908947.3")
    assert r.code == 0, r.stderr
    top = r.json["consensus"][:2]
    assert sorted(row["pos"] for row in top) == [i, i + k]
    assert all("clips" in row["agreeing"] for row in top)


def _inversion_read():
    """A read of ref[100:130] then the reverse complement of ref[500:530], its first piece
    aligned on through 3 bases past the junction (33M), the second exactly (reverse, 30M):
    (reference, read, first piece, second piece)."""
    ref = sim.genome(1000, seed=5)
    read = ref[100:130] + sim.revcomp(ref[500:530])
    first = Piece("c", 100, False, parse("33M27S"))
    second = Piece("c", 500, True, parse("30M30S"))
    return ref, read, first, second


def _fetch(ref: str):
    return lambda contig, start, end: ref[start:end]


def test_the_piece_that_mismatches_in_the_overlap_gives_it_away():
    ref, read, first, second = _inversion_read()
    assert ref[130:133] != read[30:33]  # the premise: the first piece mismatches there
    assert first.span() == (0, 33) and second.span() == (30, 60)
    # The left piece's right edge moves 3 reference bases in, its clip grows by 3 read bases;
    # the reverse piece matches the overlap exactly and keeps it.
    assert splitreads.refined(first, read, [second], _fetch(ref)) == EdgeShift(right_ref=3,
                                                                               right_query=3)
    assert splitreads.refined(second, sim.revcomp(read), [first], _fetch(ref)) == NO_SHIFT


def test_a_hard_clipped_supplementary_piece_reads_the_overlap_from_its_own_bases():
    ref, read, first, second = _inversion_read()
    supplementary = Piece("c", 100, False, parse("33M27H"))
    assert splitreads.refined(supplementary, read[:33], [second], _fetch(ref)) == EdgeShift(
        right_ref=3, right_query=3)
    # The mirror read: the reverse piece first, supplementary, run on 3 bases past the
    # junction; on the reverse strand the read's end is the alignment's left edge.
    read = sim.revcomp(ref[500:530]) + ref[100:130]
    stored = sim.revcomp(read)
    reverse_supp = Piece("c", 497, True, parse("27H33M"))
    forward = Piece("c", 100, False, parse("30S30M"))
    assert reverse_supp.span() == (0, 33) and ref[497:500] != stored[27:30]
    assert splitreads.refined(reverse_supp, stored[27:], [forward], _fetch(ref)) == EdgeShift(
        left_ref=3, left_query=3)
    assert splitreads.refined(forward, read, [reverse_supp], _fetch(ref)) == NO_SHIFT


def test_a_tie_in_the_overlap_leaves_the_pieces_as_aligned():
    ref, read, first, second = _inversion_read()
    ref = ref[:130] + read[30:33] + ref[133:]  # the first piece now matches the overlap too
    assert splitreads.refined(first, read, [second], _fetch(ref)) == NO_SHIFT
    assert splitreads.refined(second, sim.revcomp(read), [first], _fetch(ref)) == NO_SHIFT


def test_sa_pieces_reads_each_entry_and_passes_over_malformed_ones():
    pieces = splitreads.sa_pieces("chr2,101,-,30S20M,60,0;chr1,x,+,5M,1,0;chr1,7,+,*,0,0;"
                                  "chr1,3,?,5M,0,0;chr1,1,+,10H5M,9,1;")
    assert pieces == [Piece("chr2", 100, True, ((4, 30), (0, 20))),
                      Piece("chr1", 0, False, ((5, 10), (0, 5)))]
    assert splitreads.sa_pieces(None) == []
