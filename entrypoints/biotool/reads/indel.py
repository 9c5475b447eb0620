"""Indel placement in repeats: the leftmost and rightmost equivalent positions.

Aligners place an indel inside a repeat at one arbitrary edge; any shift within the repeat
gives the same read sequence, so both the break span and the variant key use these bounds.
`seq` is a slice of the reference starting at 0-based contig position `off`.
"""

from __future__ import annotations


def deletion_span(seq: str, off: int, r: int, k: int) -> tuple[int, int]:
    """For a deletion of 0-based bases r..r+k-1: (lo, hi) where lo is the 0-based first
    deleted base when shifted fully left, and hi the first when shifted fully right."""
    lo = r
    # A deletion running past `seq` (the contig's end, or a long one) shifts within it only.
    while (lo - off > 0 and lo + k - off <= len(seq)
           and seq[lo - 1 - off] == seq[lo + k - 1 - off]):
        lo -= 1
    hi = r
    while hi + k - off < len(seq) and seq[hi + k - off] == seq[hi - off]:
        hi += 1
    return lo, hi


def insertion_left(seq: str, off: int, r: int, ins: str) -> tuple[int, str]:
    """Insertion of `ins` before 0-based base r, shifted fully left: (r', rotated ins)."""
    while r - off > 0 and ins and seq[r - 1 - off] == ins[-1]:
        ins = ins[-1] + ins[:-1]
        r -= 1
    return r, ins


def insertion_right(seq: str, off: int, r: int, ins: str) -> int:
    """The rightmost 0-based base before which the same insertion could sit."""
    while r - off < len(seq) and ins and seq[r - off] == ins[0]:
        ins = ins[1:] + ins[0]
        r += 1
    return r
