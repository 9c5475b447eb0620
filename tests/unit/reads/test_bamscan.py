"""bamscan reads a region's alignments as arrays; pysam (htslib's own iterator) is the truth.

Every record field breakpoints uses is compared for the same region: which reads overlap it,
their extents, flags, mapping qualities, CIGAR lengths, clips and indels (with inserted
bases), on BAMs written by htslib with every CIGAR operation, unmapped reads placed beside
their mates, reads stored without bases, a CIGAR kept in a CG tag, BAI and CSI indexes."""

import random
import struct

import numpy as np
import pytest

pysam = pytest.importorskip("pysam")

from biotool.output import InputError  # noqa: E402
from biotool.reads import bamscan  # noqa: E402

CONTIGS = (("chrA", 60_000), ("chrB", 25_000))
FLAGS = (0, 16, 256, 1024, 2048, 512, 0, 16, 0)


def _cigar(rng: random.Random) -> list[tuple[int, int]]:
    ops = []
    if rng.random() < 0.2:
        ops.append((5, rng.randint(1, 30)))          # hard clip
    if rng.random() < 0.3:
        ops.append((4, rng.randint(1, 40)))          # soft clip
    ops.append((0, rng.randint(5, 80)))
    for _ in range(rng.randint(0, 4)):
        ops.append((rng.choice((1, 2, 3, 7, 8, 2, 1)), rng.randint(1, 12)))
        ops.append((rng.choice((0, 7, 8)), rng.randint(5, 60)))
    if rng.random() < 0.3:
        ops.append((4, rng.randint(1, 40)))
    if rng.random() < 0.2:
        ops.append((5, rng.randint(1, 30)))
    return ops


def _records(header, rng: random.Random, n: int):
    for i in range(n):
        tid = rng.randrange(len(CONTIGS))
        a = pysam.AlignedSegment(header)
        a.query_name = f"r{i}"
        a.reference_id = tid
        a.reference_start = rng.randrange(CONTIGS[tid][1] - 2000)
        a.mapping_quality = rng.randint(0, 60)
        if rng.random() < 0.05:  # unmapped, placed at its mate's position: no CIGAR
            a.flag = 4 | 1
            a.query_sequence = "".join(rng.choice("ACGT") for _ in range(50))
        else:
            a.flag = rng.choice(FLAGS)
            a.cigartuples = _cigar(rng)
            qlen = sum(ln for op, ln in a.cigartuples if op in (0, 1, 4, 7, 8))
            if rng.random() > 0.1:  # else stored without bases ('*')
                a.query_sequence = "".join(rng.choice("ACGTN") for _ in range(qlen))
        yield a


def _write(path, header, records, csi=False):
    raw = path.with_name(path.stem + ".unsorted.bam")
    with pysam.AlignmentFile(str(raw), "wb", header=header) as out:
        for r in records:
            out.write(r)
    pysam.sort("-o", str(path), str(raw))
    pysam.index(*(["-c"] if csi else []), str(path))
    return path


@pytest.fixture(scope="module")
def bams(tmp_path_factory):
    d = tmp_path_factory.mktemp("bamscan")
    header = pysam.AlignmentHeader.from_dict(
        {"HD": {"VN": "1.6", "SO": "coordinate"},
         "SQ": [{"SN": n, "LN": ln} for n, ln in CONTIGS]})
    recs = list(_records(header, random.Random(7), 6000))
    # One ultra-long alignment: 70,000 operations, which BAM keeps in a CG tag.
    long = pysam.AlignedSegment(header)
    long.query_name, long.reference_id, long.reference_start = "long", 0, 1000
    long.mapping_quality, long.flag = 60, 0
    long.cigartuples = [(0, 1), (1, 1)] * 35_000
    long.query_sequence = "AC" * 35_000
    recs.append(long)
    (d / "csi").mkdir()
    return {"bai": _write(d / "reads.bam", header, recs),
            "csi": _write(d / "csi" / "reads.bam", header, recs, csi=True)}


def _clips(cig):
    lead = trail = 0
    for op, ln in cig:
        if op not in (4, 5):
            break
        lead += ln
    for op, ln in reversed(cig):
        if op not in (4, 5):
            break
        trail += ln
    return lead, trail


def _truth(path, contig, beg, end):
    """Per overlapping read (pos, end, flag, mapq, n_ops, clips) and every indel, by pysam."""
    rows, events = [], []
    with pysam.AlignmentFile(str(path)) as bam:
        for read in bam.fetch(contig, beg, end):
            cig = read.cigartuples or []
            rlen = 0 if read.is_unmapped else sum(ln for op, ln in cig if op in (0, 2, 3, 7, 8))
            rows.append((read.reference_start, read.reference_start + max(rlen, 1), read.flag,
                         read.mapping_quality, len(cig), *_clips(cig)))
            r, q, seq = read.reference_start, 0, read.query_sequence or ""
            for op, ln in cig:
                if op == 1:
                    events.append((read.reference_start, 1, ln, r, seq[q:q + ln]))
                elif op == 2:
                    events.append((read.reference_start, 2, ln, r, ""))
                r += ln if op in (0, 2, 3, 7, 8) else 0
                q += ln if op in (0, 1, 4, 7, 8) else 0
    return sorted(rows), sorted(events)


def _scanned(path, tid, beg, end, threads):
    rows, events = [], []
    for b in bamscan.scan(path, tid, beg, end, threads):
        lead, trail = bamscan.clip_lengths(b)
        rows += zip(*(a.tolist() for a in (b.pos, b.end, b.flag, b.mapq, b.n_ops, lead, trail)))
        ev = bamscan.indel_events(b, np.arange(len(b.pos)))
        ins = ev["op"] == 1
        seqs = iter(bamscan.query_bases(b, ev["row"][ins], ev["query"][ins], ev["len"][ins]))
        for row, op, ln, r in zip(*(ev[k].tolist() for k in ("row", "op", "len", "ref"))):
            events.append((int(b.pos[row]), op, ln, r, next(seqs) if op == 1 else ""))
    return sorted(rows), sorted(events)


REGIONS = [(0, 0, 60_000), (0, 20_000, 20_300), (0, 999, 1001), (1, 0, 25_000),
           (1, 12_345, 12_346), (1, 24_990, 25_000)]


@pytest.mark.parametrize("kind", ["bai", "csi"])
@pytest.mark.parametrize("tid,beg,end", REGIONS)
def test_every_field_matches_htslib_for_the_region(bams, kind, tid, beg, end):
    path = bams[kind]
    assert _scanned(path, tid, beg, end, 1) == _truth(path, CONTIGS[tid][0], beg, end)


def test_small_batches_and_threads_change_nothing(bams, monkeypatch):
    # Records cut across batches are carried over; threads inflate blocks out of order.
    want = _truth(bams["bai"], "chrA", 0, 60_000)
    monkeypatch.setattr(bamscan, "READ_BYTES", 3000)
    monkeypatch.setattr(bamscan, "BLOCKS_PER_TASK", 1)
    assert _scanned(bams["bai"], 0, 0, 60_000, 2) == want


def test_zlib_inflates_what_libdeflate_does(bams, monkeypatch):
    # Where libdeflate is absent the blocks go through zlib; nothing else changes.
    want = _scanned(bams["csi"], 0, 0, 60_000, 2)
    monkeypatch.setattr(bamscan, "_LIB", False)
    assert bamscan._libdeflate() is None
    assert _scanned(bams["csi"], 0, 0, 60_000, 2) == want


def test_a_cigar_kept_in_a_cg_tag_is_the_one_read(bams):
    (rows, _) = _scanned(bams["bai"], 0, 1000, 1001, 1)
    long = [r for r in rows if r[4] == 70_000]
    assert long == [(1000, 1000 + 35_000, 0, 60, 70_000, 0, 0)]


def test_a_region_without_reads_gives_no_rows(bams):
    assert _scanned(bams["bai"], 1, 24_999, 25_000, 1) == _truth(bams["bai"], "chrB",
                                                                  24_999, 25_000)
    assert bamscan.region_chunks(bams["bai"].with_suffix(".bam.bai"), 5, 0, 10) == []


def test_a_corrupt_block_is_an_input_error(bams, tmp_path):
    data = bytearray(bams["bai"].read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "bad.bam"
    bad.write_bytes(bytes(data))
    (tmp_path / "bad.bam.bai").write_bytes(bams["bai"].with_suffix(".bam.bai").read_bytes())
    with pytest.raises(InputError, match=r"--bam .*bad\.bam: (corrupt|not BGZF)"):
        _scanned(bad, 0, 0, 60_000, 1)


def test_a_truncated_file_is_an_input_error(bams, tmp_path):
    data = bams["bai"].read_bytes()
    cut = tmp_path / "cut.bam"
    cut.write_bytes(data[:len(data) // 3])
    (tmp_path / "cut.bam.bai").write_bytes(bams["bai"].with_suffix(".bam.bai").read_bytes())
    with pytest.raises(InputError, match="truncated"):
        _scanned(cut, 0, 0, 60_000, 1)


def _record(size_field: int, body: bytes = b"") -> bytes:
    return struct.pack("<i", size_field) + body


def test_a_record_size_too_small_or_negative_is_refused_not_looped(tmp_path):
    # A negative size would walk backwards for ever; any size below the fixed fields is corrupt.
    for size in (-4, 0, 31):
        buf = _record(36, bytes(36)) + _record(size, bytes(40))
        with pytest.raises(InputError, match="corrupt alignment record"):
            bamscan._record_starts(buf, tmp_path / "x.bam")


def test_a_malformed_cg_tag_leaves_the_cigar_alone():
    # CG:B,I claiming more words than the record holds, and a Z field without its NUL.
    too_long = b"CGBI" + struct.pack("<i", 1 << 20) + bytes(8)
    assert bamscan._cg_tag(too_long, 0, len(too_long)) is None
    unterminated = b"XZZabc"
    assert bamscan._cg_tag(unterminated, 0, len(unterminated)) is None
    good = b"NMC\x01" + b"CGBI" + struct.pack("<i", 2) + struct.pack("<II", 5 << 4, 3 << 4 | 1)
    assert bamscan._cg_tag(good, 0, len(good)).tolist() == [5 << 4, 3 << 4 | 1]
