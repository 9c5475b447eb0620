"""The alignment vocabulary against htslib's own: which CIGAR operations consume the
reference and the query, what a SAM text CIGAR covers, and the read filters' bits."""

from __future__ import annotations

import random

import pytest

from biotool.alignment import vocabulary as v

pysam = pytest.importorskip("pysam")


def test_the_operation_codes_and_letters_are_htslibs():
    ops = pysam.CIGAR_OPS
    assert [ops.CMATCH, ops.CINS, ops.CDEL, ops.CREF_SKIP, ops.CSOFT_CLIP, ops.CHARD_CLIP,
            ops.CPAD, ops.CEQUAL, ops.CDIFF] == [v.MATCH, v.INSERTION, v.DELETION, v.SKIP,
                                                  v.SOFT_CLIP, v.HARD_CLIP, v.PADDING,
                                                  v.EQUAL, v.DIFF]
    assert v.OPS == "MIDNSHP=X"


def _segment(cigar):
    header = pysam.AlignmentHeader.from_dict({"SQ": [{"SN": "c", "LN": 10_000}]})
    a = pysam.AlignedSegment(header)
    a.reference_id, a.reference_start, a.cigartuples = 0, 100, cigar
    return a


def test_what_each_operation_consumes_is_what_htslib_counts():
    for op in range(9):
        a = _segment([(v.MATCH, 5), (op, 7), (v.MATCH, 5)])
        assert (a.reference_length - 10 == 7) == (op in v.CONSUMES_REFERENCE), v.OPS[op]
        assert (a.infer_query_length() - 10 == 7) == (op in v.CONSUMES_QUERY), v.OPS[op]
    assert v.ALIGNED == {v.MATCH, v.EQUAL, v.DIFF}
    table = v.code_table(v.CONSUMES_REFERENCE)
    assert len(table) == v.N_CODES and [i for i, x in enumerate(table) if x] == \
        sorted(v.CONSUMES_REFERENCE)


def test_a_text_cigar_covers_what_htslib_says():
    rng = random.Random(3)
    for _ in range(300):
        cigar = [(rng.randrange(9), rng.randint(1, 500)) for _ in range(rng.randint(1, 8))]
        cigar.append((v.MATCH, 1))  # htslib counts a CIGAR covering nothing as one base
        a = _segment(cigar)
        assert v.text_reference_length(a.cigarstring) == a.reference_length, a.cigarstring
    assert v.text_reference_length("*") == 0


def test_the_read_filters_are_the_bits_they_name():
    assert v.NOT_PRIMARY == 0x900 and v.SKIP_FOR_DIVERGENCE == 0x904
    assert v.SKIP_FOR_JUNCTIONS == 0x704 and v.SKIP_FOR_ALLELES == 0xF04
    # The junction filter keeps what carries a junction's far side; the allele one does not.
    assert not v.SKIP_FOR_JUNCTIONS & v.SUPPLEMENTARY and v.SKIP_FOR_ALLELES & v.SUPPLEMENTARY
    assert [f for f in (v.PAIRED, v.PROPER_PAIR, v.UNMAPPED, v.MATE_UNMAPPED, v.REVERSE,
                        v.MATE_REVERSE, v.FIRST_OF_PAIR, v.SECOND_OF_PAIR, v.SECONDARY,
                        v.QC_FAIL, v.DUPLICATE, v.SUPPLEMENTARY)] == [1 << i for i in range(12)]
    a = _segment([(v.MATCH, 10)])
    a.flag = v.REVERSE | v.SUPPLEMENTARY | v.DUPLICATE
    assert a.is_reverse and a.is_supplementary and a.is_duplicate and not a.is_secondary
