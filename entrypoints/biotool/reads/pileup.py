"""Per-position allele counts for one region of one BAM, vectorised in batches.

Python walks each read's CIGAR once; the per-base work (quality filter, base codes, strand
tally) runs in numpy over thousands of reads at a time.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from biotool.alignment.vocabulary import (ALIGNED, CONSUMES_QUERY, CONSUMES_REFERENCE, DELETION,
                                          INSERTION, REVERSE, SKIP_FOR_ALLELES)
from biotool.deadline import Deadline
from biotool.output import InputError
from biotool.reads.bam import fetch
from biotool.reads.indel import deletion_span, insertion_left

if TYPE_CHECKING:  # numpy is imported where a pileup is made, not at start-up
    import numpy as np

BATCH_BASES = 2_000_000


class Pileup:
    """Counts for region [start, end) of `contig`; `refseq` starts at 0-based `off`."""

    def __init__(self, contig: str, start: int, end: int, refseq: str, off: int,
                 min_bq: int = 13):
        import numpy as np

        self.contig, self.start, self.end = contig, start, end
        self.min_bq = min_bq
        self.refseq, self.off = refseq, off
        n = end - start
        self.bases = np.zeros(n * 8, dtype=np.int64)  # [pos][A,C,G,T][fwd,rev]
        self.deleted = np.zeros(n + 1, dtype=np.int64)  # reads with a deletion over a base
        self.pairs = np.zeros(n + 1, dtype=np.int64)  # ... covers a base and the one after it
        self.indels: dict = defaultdict(lambda: [0, 0])  # (pos0, REF, ALT) -> [fwd, rev]
        self.reads_used = 0
        self.truncated = False
        self._reset()

    def _reset(self) -> None:
        self._seq, self._qual = [], []
        self._r, self._q, self._len, self._strand = [], [], [], []
        self._dlo, self._dhi, self._slo, self._shi = [], [], [], []
        self._qoff = 0

    def add_bam(self, bam, min_mapq: int, deadline: Deadline) -> None:
        s, e, off, ref = self.start, self.end, self.off, self.refseq
        n, last = 0, -1
        for read in fetch(bam, self.contig, s, e):
            n += 1
            if n % 2000 == 0 and deadline.passed():
                self.truncated = True
                break
            if read.reference_start < last:  # pysam checked the order of the first reads only
                raise InputError(f"--bam {os.fsdecode(bam.filename)}: not coordinate-sorted "
                                 f"(read {read.query_name} at {self.contig}:"
                                 f"{read.reference_start + 1} comes after position {last + 1}); "
                                 "run `samtools sort` and index the result")
            last = read.reference_start
            if read.flag & SKIP_FOR_ALLELES or read.mapping_quality < min_mapq:
                continue
            seq = read.query_sequence
            if not seq:
                continue
            self.reads_used += 1
            rev = 1 if read.flag & REVERSE else 0
            qual = read.query_qualities
            q0 = self._qoff
            self._seq.append(seq.encode())
            self._qual.append(bytes(qual) if qual is not None else b"\x3c" * len(seq))
            self._qoff += len(seq)
            rs = read.reference_start
            self._slo.append(rs)
            self._shi.append(read.reference_end)
            r, q = rs, 0
            for op, ln in read.cigartuples:
                if op in ALIGNED:
                    self._r.append(r)
                    self._q.append(q0 + q)
                    self._len.append(ln)
                    self._strand.append(rev)
                    r += ln
                    q += ln
                elif op == DELETION:
                    self._dlo.append(r)
                    self._dhi.append(r + ln)
                    if ln and s <= r < e:  # a 0D is no event (shifting it walks the whole slice)
                        lo, _ = deletion_span(ref, off, r, ln)
                        if lo > off and lo + ln - off <= len(ref):  # else REF would be cut
                            key = (lo - 1, ref[lo - 1 - off:lo + ln - off], ref[lo - 1 - off])
                            self.indels[key][rev] += 1
                    r += ln
                elif op == INSERTION:
                    if ln and s <= r <= e:
                        lo, ins = insertion_left(ref, off, r, seq[q:q + ln].upper())
                        if lo > off:
                            a = ref[lo - 1 - off]
                            self.indels[(lo - 1, a, a + ins)][rev] += 1
                    q += ln
                elif op in CONSUMES_QUERY:  # a soft clip
                    q += ln
                elif op in CONSUMES_REFERENCE:  # a skip (N)
                    r += ln
            if self._qoff >= BATCH_BASES:
                self._flush()
        self._flush()

    def _flush(self) -> None:
        import numpy as np

        if self._len:
            lut = _lut()
            seq = lut[np.frombuffer(b"".join(self._seq), dtype=np.uint8)]
            qual = np.frombuffer(b"".join(self._qual), dtype=np.uint8)
            lens = np.asarray(self._len, dtype=np.int64)
            first = np.cumsum(lens) - lens
            within = np.arange(int(lens.sum()), dtype=np.int64) - np.repeat(first, lens)
            refpos = np.repeat(np.asarray(self._r, dtype=np.int64), lens) + within
            qpos = np.repeat(np.asarray(self._q, dtype=np.int64), lens) + within
            strand = np.repeat(np.asarray(self._strand, dtype=np.int64), lens)
            base = seq[qpos]
            keep = (refpos >= self.start) & (refpos < self.end) & (base < 4) & \
                   (qual[qpos] >= self.min_bq)
            idx = ((refpos[keep] - self.start) * 4 + base[keep]) * 2 + strand[keep]
            self.bases += np.bincount(idx, minlength=self.bases.size)
        n = self.end - self.start
        for lo_list, hi_list, shrink, arr in ((self._dlo, self._dhi, 0, self.deleted),
                                              (self._slo, self._shi, 1, self.pairs)):
            if lo_list:
                lo = np.clip(np.asarray(lo_list, dtype=np.int64) - self.start, 0, n)
                hi = np.clip(np.asarray(hi_list, dtype=np.int64) - shrink - self.start, 0, n)
                hi = np.maximum(hi, lo)
                arr += np.bincount(lo, minlength=n + 1) - np.bincount(hi, minlength=n + 1)
        self._reset()

    def finish(self) -> Piled:
        """What one library's reads piled up over the region."""
        import numpy as np

        n = self.end - self.start
        return Piled(self.bases.reshape(n, 4, 2), np.cumsum(self.deleted)[:n],
                     np.cumsum(self.pairs)[:n], dict(self.indels), self.reads_used,
                     self.truncated)


@dataclass(frozen=True)
class Piled:
    """One library's pileup over a region, arrays by position: `counts` (n, 4, 2: base,
    strand), `deleted`, `pairs` (reads covering a base and the next: those that can show an
    indel after it); `indels` by key, with their (forward, reverse) reads; the reads used,
    and whether --timeout stopped the reading."""

    counts: np.ndarray
    deleted: np.ndarray
    pairs: np.ndarray
    indels: Mapping[tuple, list[int]]
    reads_used: int
    truncated: bool


_LUT = None


def _lut():
    import numpy as np

    global _LUT
    if _LUT is None:
        _LUT = np.full(256, 4, dtype=np.int64)
        for i, b in enumerate(b"ACGT"):
            _LUT[b] = i
            _LUT[bytes([b]).lower()[0]] = i
    return _LUT
