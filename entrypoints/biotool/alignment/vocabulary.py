"""The alignment vocabulary, named once: CIGAR operations and the SAM flag bits, and the
sets and masks that the read-level rules are written from.

SAM's own numbering (the SAM specification, sections 1.4 and 4.2): a BAM record stores each
CIGAR operation as the code 0-8 below, and SAM text as the letter at that index of OPS.
"""

from __future__ import annotations

import re

# CIGAR operations, by their BAM codes.
MATCH, INSERTION, DELETION, SKIP, SOFT_CLIP, HARD_CLIP, PADDING, EQUAL, DIFF = range(9)
OPS = "MIDNSHP=X"  # the SAM letter of each code
N_CODES = 16  # a BAM operation is 4 bits; codes 9-15 are undefined and consume nothing

# Operations that step along the reference, and along the read's stored bases.
CONSUMES_REFERENCE = frozenset({MATCH, DELETION, SKIP, EQUAL, DIFF})
CONSUMES_QUERY = frozenset({MATCH, INSERTION, SOFT_CLIP, EQUAL, DIFF})
# A read base set against a reference base (a match or a mismatch alike).
ALIGNED = CONSUMES_REFERENCE & CONSUMES_QUERY
CLIPS = frozenset({SOFT_CLIP, HARD_CLIP})
INDELS = frozenset({INSERTION, DELETION})

# SAM flag bits.
PAIRED = 0x1
PROPER_PAIR = 0x2
UNMAPPED = 0x4
MATE_UNMAPPED = 0x8
REVERSE = 0x10
MATE_REVERSE = 0x20
FIRST_OF_PAIR = 0x40
SECOND_OF_PAIR = 0x80
SECONDARY = 0x100
QC_FAIL = 0x200
DUPLICATE = 0x400
SUPPLEMENTARY = 0x800

# Read filters: an alignment is skipped when it has any bit of the mask. They differ on
# purpose; each says why it keeps what the others drop.
# Every line of a read but its primary one: one line per read when counting reads.
NOT_PRIMARY = SECONDARY | SUPPLEMENTARY  # 0x900
# Alignments that place no read base trustworthily; supplementary pieces are kept, because
# a junction's far side shows only as the hard clip of a supplementary alignment.
SKIP_FOR_JUNCTIONS = UNMAPPED | SECONDARY | QC_FAIL | DUPLICATE  # 0x704
# The same and supplementary pieces too: a chimeric read's supplementary piece would count
# its molecule's bases a second time in an allele count.
SKIP_FOR_ALLELES = SKIP_FOR_JUNCTIONS | SUPPLEMENTARY  # 0xF04
# Unmapped and all but the primary line; duplicates and QC failures are kept, since the
# question is which sequence the file was aligned to, and they were aligned to it too.
SKIP_FOR_DIVERGENCE = UNMAPPED | NOT_PRIMARY  # 0x904


def letters(ops: frozenset[int]) -> str:
    """The SAM letters of a set of operations, in code order (for reading CIGAR text)."""
    return "".join(OPS[op] for op in sorted(ops))


def code_table(ops: frozenset[int]) -> list[int]:
    """1 for each of the 16 BAM codes in `ops`, else 0: a lookup table indexed by code."""
    return [1 if code in ops else 0 for code in range(N_CODES)]


_REFERENCE_RUNS = re.compile(rf"(\d+)[{letters(CONSUMES_REFERENCE)}]")


def text_reference_length(cigar: str) -> int:
    """Reference bases a SAM text CIGAR covers (0 for '*')."""
    return sum(int(n) for n in _REFERENCE_RUNS.findall(cigar))
