"""Where the pieces of a split read meet on the read.

An aligner extends each piece of a split read for as long as extending scores better than
clipping (bwa mem: a base's match +1 against a mismatch -4 and a clip -5), so when the bases
just past a junction match the reference on the far side but one, two pieces can both claim a
few read bases: their query spans overlap, and one piece's clip edge lies that many bases
past the break. The overlap's bases go to the piece whose reference they match better (a
junction carries no mismatches of its own); the other piece's edge moves in by them. A tie
leaves both pieces as the aligner placed them, since the bases then do not say where the
break is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from biotool.alignment.cigar import (Cigar, clipped, match_blocks, parse, query_length,
                                     reference_taken)
from biotool.alignment.vocabulary import HARD_CLIP
from biotool.nucleotides import reverse_complement

# An SA tag names each other piece of the read; aligners write a handful, a crafted tag more.
MAX_PIECES = 16
HARD = frozenset({HARD_CLIP})

Fetch = Callable[[str, int, int], str]  # (contig, 0-based start, end) -> upper-case bases


@dataclass(frozen=True)
class Piece:
    """One aligned piece of a read: where it lies and how (an alignment record or an SA entry)."""
    contig: str
    pos: int        # 0-based leftmost reference base
    reverse: bool
    cigar: Cigar

    def span(self) -> tuple[int, int]:
        """The read bases it aligns, [start, end) in the order the read was sequenced (a
        reverse piece's CIGAR runs along the reverse complement)."""
        lead, trail = clipped(self.cigar)
        total = query_length(self.cigar)
        return (trail, total - lead) if self.reverse else (lead, total - trail)


@dataclass(frozen=True)
class EdgeShift:
    """How far a piece's break edges move once the overlap is given away: reference bases
    its left (right) edge moves inwards, read bases its left (right) clip grows by."""
    left_ref: int = 0
    right_ref: int = 0
    left_query: int = 0
    right_query: int = 0


NO_SHIFT = EdgeShift()


def sa_pieces(text: str | None) -> list[Piece]:
    """The pieces an SA tag's text names ("contig,pos,strand,CIGAR,mapq,NM;" each), those
    that parse, the first MAX_PIECES."""
    out = []
    for entry in (text or "").split(";")[:MAX_PIECES]:
        fields = entry.split(",")
        if len(fields) < 4 or not fields[1].isdigit() or fields[2] not in ("+", "-"):
            continue
        cigar = parse(fields[3])
        if cigar is not None and int(fields[1]) > 0:
            out.append(Piece(fields[0], int(fields[1]) - 1, fields[2] == "-", cigar))
    return out


def _mismatches(piece: Piece, bases: str, lo: int, hi: int, fetch: Fetch) -> int:
    """Read bases lo..hi (sequenced order; `bases` are they) that `piece` does not set against
    an equal reference base (inserted ones included)."""
    total = query_length(piece.cigar)
    if piece.reverse:
        bases, lo, hi = reverse_complement(bases), total - hi, total - lo
    hard = clipped(piece.cigar, HARD)[0]
    equal = 0
    for qs, qe, rs, _ in match_blocks(piece.cigar, piece.pos):
        a, b = max(qs + hard, lo), min(qe + hard, hi)
        if a < b:
            ref = fetch(piece.contig, rs + a - qs - hard, rs + b - qs - hard)
            equal += sum(x == y for x, y in zip(bases[a - lo:b - lo], ref))
    return (hi - lo) - equal


def _give_away(piece: Piece, n: int, at_read_end: bool) -> EdgeShift:
    """The shift of `piece` giving the `n` read bases at its sequenced start (end) away: on the
    reverse strand the read's end is the alignment's left edge."""
    right = at_read_end != piece.reverse
    ref = reference_taken(piece.cigar, n, from_start=not right)
    return EdgeShift(right_ref=ref, right_query=n) if right else EdgeShift(left_ref=ref,
                                                                            left_query=n)


def refined(own: Piece, stored: str, others: list[Piece], fetch: Fetch) -> EdgeShift:
    """How far `own`'s break edges move: for each side of its read span that another piece
    overlaps, the overlap goes to whichever matches the reference with fewer mismatches.
    `stored` is own's record's bases as stored (the hard-clipped ones absent): the overlap
    lies inside both pieces' aligned bases, so own's record holds all of it. Pieces of a read
    of another length (a malformed tag) are passed over."""
    start, end = own.span()
    total = query_length(own.cigar)
    hard_lead, hard_trail = clipped(own.cigar, HARD)
    if len(stored) != total - hard_lead - hard_trail:
        return NO_SHIFT  # a record stored without its bases
    # The record's bases in sequenced order, and the read position of the first of them.
    read = reverse_complement(stored) if own.reverse else stored
    first = hard_trail if own.reverse else hard_lead
    others = [p for p in others if query_length(p.cigar) == total]
    moves = []
    for at_end in (False, True):
        # Pieces running past own's span on this side overlap it by (read bases, piece).
        reach = []
        for p in others:
            s, e = p.span()
            if at_end and start < s < end < e:
                reach.append((end - s, p))
            elif not at_end and s < start < e < end:
                reach.append((e - start, p))
        if not reach:
            continue
        n, p = max(reach, key=lambda r: r[0])
        lo, hi = (end - n, end) if at_end else (start, start + n)
        bases = read[lo - first:hi - first]
        if _mismatches(own, bases, lo, hi, fetch) > _mismatches(p, bases, lo, hi, fetch):
            moves.append(_give_away(own, n, at_end))
    return EdgeShift(*(sum(getattr(m, f) for m in moves) for f in
                       ("left_ref", "right_ref", "left_query", "right_query")))
