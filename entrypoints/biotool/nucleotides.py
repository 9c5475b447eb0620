"""The nucleotide alphabet's complement, shared by the families that turn a strand over."""

from __future__ import annotations

# IUPAC codes to their complements (U, RNA's T, pairs with A).
_COMP = str.maketrans("ACGTURYSWKMBDHVN", "TGCAAYRSWMKVHDBN")


def reverse_complement(seq: str) -> str:
    return seq.translate(_COMP)[::-1]
