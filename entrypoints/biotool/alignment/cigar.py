"""CIGARs as (operation code, length) pairs: read from SAM text (an SA tag's) and walked."""

from __future__ import annotations

import re

from biotool.alignment.vocabulary import (ALIGNED, CLIPS, CONSUMES_QUERY, CONSUMES_REFERENCE,
                                          HARD_CLIP, OPS)

Cigar = tuple[tuple[int, int], ...]

_RUNS = re.compile(rf"(\d+)([{OPS}])")


def parse(text: str) -> Cigar | None:
    """The operations of a SAM text CIGAR, or None when the text is not one ('*' included)."""
    runs = _RUNS.findall(text)
    if not runs or sum(len(n) + 1 for n, _ in runs) != len(text):
        return None
    return tuple((OPS.index(op), int(n)) for n, op in runs)


def match_blocks(cigar, ref_start: int):
    """(query start, end, reference start, end) of each aligned (M/=/X) block; query
    positions count the stored bases (soft clips, not hard ones)."""
    qs, rs = 0, ref_start
    for op, ln in cigar:
        if op in ALIGNED:
            yield qs, qs + ln, rs, rs + ln
        if op in CONSUMES_QUERY:
            qs += ln
        if op in CONSUMES_REFERENCE:
            rs += ln


def clipped(cigar: Cigar, kinds: frozenset[int] = CLIPS) -> tuple[int, int]:
    """(bases clipped before the aligned ones, after them) by operations of `kinds` (both clips
    by default: positions on the whole read; {HARD_CLIP}: the bases the record lacks)."""
    ends = []
    for ops in (cigar, cigar[::-1]):
        n = 0
        for op, ln in ops:
            if op not in CLIPS:
                break
            n += ln if op in kinds else 0
        ends.append(n)
    return ends[0], ends[1]


def query_length(cigar: Cigar) -> int:
    """The whole read's length: its stored bases and its hard-clipped ones."""
    return sum(ln for op, ln in cigar if op in CONSUMES_QUERY or op == HARD_CLIP)


def reference_taken(cigar: Cigar, n: int, from_start: bool) -> int:
    """Reference bases the first (from_start) or last `n` aligned read bases consume, with
    the deletions between them."""
    ops = [c for c in (cigar if from_start else reversed(cigar)) if c[0] not in CLIPS]
    ref = 0
    for op, ln in ops:
        if n <= 0:
            break
        take = min(ln, n) if op in CONSUMES_QUERY else ln
        if op in CONSUMES_QUERY:
            n -= take
        if op in CONSUMES_REFERENCE:
            ref += take
    return ref
