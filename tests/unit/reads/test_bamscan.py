"""bamscan reads a region's alignments as arrays; pysam (htslib's own iterator) is the truth.

Every record field breakpoints uses is compared for the same region: which reads overlap it,
their extents, flags, mapping qualities, CIGAR lengths, clips and indels (with inserted
bases), on BAMs written by htslib with every CIGAR operation, unmapped reads placed beside
their mates, reads stored without bases, a CIGAR kept in a CG tag, BAI and CSI indexes."""

import gzip
import random
import signal
import struct
import tracemalloc
import zlib
from pathlib import Path

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
            _tag(a, random.Random(i))  # its own stream: the records above stay as they were
        yield a


def _tag(a, rng: random.Random) -> None:
    """Aux fields of every type in a random order, "SAZ" inside another tag's text, and an SA
    tag on a third of the records."""
    fields = [("NM", rng.randint(0, 9), "i"), ("MD", "10A5^AC3", "Z"),
              ("XA", "chrSAZ,+100,50M,0;", "Z"), ("ZB", [1, -2, 3], "s"),
              ("ZH", "1AE301", "H"), ("ZF", 0.5, "f"), ("ZA", "S", "A")]
    if rng.random() < 0.33:
        fields.append(("SA", "chrB,101,+,30S20M,60,0;", "Z"))
    rng.shuffle(fields)
    for tag, value, kind in fields[:rng.randint(0, len(fields))]:
        if kind == "s":
            a.set_tag(tag, value)  # an integer list: a B array
        else:
            a.set_tag(tag, value, value_type=kind)


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
    # Runs cut at their inflated size, with more read than a run takes.
    monkeypatch.setattr(bamscan, "READ_BYTES", 1 << 18)
    monkeypatch.setattr(bamscan, "RUN_BYTES", 100_000)
    assert _scanned(bams["bai"], 0, 0, 60_000, 2) == want


def test_zlib_inflates_what_libdeflate_does(bams, monkeypatch):
    # Where libdeflate is absent the blocks go through zlib; nothing else changes.
    want = _scanned(bams["csi"], 0, 0, 60_000, 2)
    monkeypatch.setattr(bamscan, "_LIB", False)
    assert bamscan._libdeflate() is None
    assert _scanned(bams["csi"], 0, 0, 60_000, 2) == want


def _sa_truth(path, contig, beg, end):
    """Per overlapping read (pos, flag, mapq, whether it holds an SA tag), by pysam."""
    with pysam.AlignmentFile(str(path)) as bam:
        return sorted((r.reference_start, r.flag, r.mapping_quality, r.has_tag("SA"))
                      for r in bam.fetch(contig, beg, end))


def _sa_scanned(path, tid, beg, end):
    rows = []
    for b in bamscan.scan(path, tid, beg, end, 1):
        sa = bamscan.tagged(b, np.arange(len(b.pos)), b"SA")
        rows += zip(*(a.tolist() for a in (b.pos, b.flag, b.mapq, sa)))
    return sorted(rows)


@pytest.mark.parametrize("tid,beg,end", REGIONS)
def test_the_sa_tag_is_found_as_htslib_finds_it(bams, tid, beg, end):
    assert _sa_scanned(bams["bai"], tid, beg, end) == _sa_truth(bams["bai"], CONTIGS[tid][0],
                                                                 beg, end)


def _aux_rows(*auxes: bytes) -> bamscan.Batch:
    """A batch whose rows hold only these aux fields, one after another in its buffer."""
    ends = np.cumsum([len(a) for a in auxes])
    zero = np.zeros(len(auxes), dtype=np.int64)
    return bamscan.Batch(zero, zero + 1, zero, zero, zero, zero, zero, zero, zero, zero,
                         ends - [len(a) for a in auxes], ends, bytearray(b"".join(auxes)))


SA = b"SAZchrB,101,+,30S20M,60,0;\0"


def test_malformed_aux_fields_end_a_rows_walk_not_the_batch():
    batch = _aux_rows(
        b"NMi" + struct.pack("<i", 3) + b"XBBs" + struct.pack("<I", 2) + b"\1\0\2\0" + SA,
        b"XAZno NUL before this row ends",  # then the next row's SA: not this row's
        SA,
        b"XBBi" + struct.pack("<i", -2) + SA,  # a count of 2**32 - 2: past the row's end
        b"XX?" + SA,  # no such type: the walk cannot know where the next field begins
        b"XBBq" + struct.pack("<I", 1) + b"\0" + SA,  # no such array type
        b"XAZchr1SAZ,+1,5M;\0ZHH1A\0ZFf" + struct.pack("<f", 0.5) + b"ZAAS" + SA,
        b"SA",  # cut off before the type
    )
    assert bamscan.tagged(batch, np.arange(8), b"SA").tolist() == [
        True, False, True, False, False, False, True, False]
    assert bamscan.tagged(batch, np.array([2, 0]), b"SA").tolist() == [True, True]


def test_the_tag_walk_stops_after_max_aux_fields():
    # A step per field for all rows at once: a record of thousands of fields cannot hold the
    # batch; past the bound the row reads as lacking the tag.
    n = bamscan.MAX_AUX_FIELDS
    batch = _aux_rows(b"XXA!" * (n - 1) + SA, b"XXA!" * n + SA)
    assert bamscan.tagged(batch, np.arange(2), b"SA").tolist() == [True, False]


def test_a_tags_text_is_read_where_the_walk_finds_it():
    # A string's text; none where the tag is missing, not a string, or runs past its row.
    batch = _aux_rows(b"NMi" + struct.pack("<i", 3) + SA, b"XAZx\0", b"SAi" + struct.pack("<i", 1),
                      b"SAZno NUL")
    assert bamscan.tag_texts(batch, np.arange(4), b"SA") == ["chrB,101,+,30S20M,60,0;", None,
                                                            None, None]


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


# ------------------------------------------------------------------ hostile indexes and blocks

def _bai_with(bai: bytes, bin_id: int, chunks) -> bytes:
    """A one-reference BAI with one more bin (the first reference's bin count is at byte 8)."""
    n_bin = struct.unpack_from("<i", bai, 8)[0]
    extra = struct.pack("<Ii", bin_id, len(chunks)) + b"".join(struct.pack("<QQ", *c)
                                                                 for c in chunks)
    return bai[:8] + struct.pack("<i", n_bin + 1) + extra + bai[12:]


@pytest.fixture(scope="module")
def one_contig(tmp_path_factory):
    """A BAI-indexed BAM of 300 reads on one contig (a BAI is then easy to edit)."""
    header = pysam.AlignmentHeader.from_dict({"SQ": [{"SN": "chrA", "LN": 60_000}]})
    return _bam_of(tmp_path_factory.mktemp("one"), "one.bam", header,
                   [_read(header, f"r{i}", 20_000 + 100 * i) for i in range(300)])


def _block(data: bytes, level: int = 0, isize: int | None = None,
           bsize: int | None = None) -> bytes:
    """One BGZF block of `data`, its ISIZE and BSIZE as given (a lie) or true."""
    body = zlib.compressobj(level, zlib.DEFLATED, -15)
    comp = body.compress(data) + body.flush()
    return (b"\x1f\x8b\x08\x04" + bytes(6) + b"\x06\x00BC\x02\x00"
            + struct.pack("<H", len(comp) + 25 if bsize is None else bsize) + comp
            + struct.pack("<II", zlib.crc32(data), len(data) if isize is None else isize))


def _peak_bytes(fn):
    """(fn(), the most memory Python held while it ran)."""
    tracemalloc.start()
    try:
        return fn(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_index_is_read_no_further_than_its_reference(one_contig, tmp_path):
    # htslib ignores what follows the index proper: a GB of it (sparse here) was read whole.
    bai = tmp_path / "x.bam.bai"
    bai.write_bytes(Path(f"{one_contig}.bai").read_bytes())
    want = bamscan.region_chunks(bai, 0, 0, 60_000)
    with open(bai, "r+b") as fh:
        fh.truncate(1 << 30)
    got, peak = _peak_bytes(lambda: bamscan.region_chunks(bai, 0, 0, 60_000))
    assert got == want and peak < 16 << 20


def test_a_csi_that_inflates_past_its_index_is_read_as_a_stream(bams, tmp_path):
    # Blocks of zeros after the index proper (256 MB from 400 KB) were inflated into one buffer.
    csi = Path(f"{bams['csi']}.csi")
    bomb = tmp_path / "bomb.csi"
    bomb.write_bytes(csi.read_bytes() + _block(bytes(65280), level=9) * 4096)
    want = bamscan.region_chunks(csi, 0, 0, 60_000)
    got, peak = _peak_bytes(lambda: bamscan.region_chunks(bomb, 0, 0, 60_000))
    assert got == want and peak < 16 << 20


def _csi(min_shift: int, depth: int, chunks) -> bytes:
    """A BGZF-compressed CSI of one reference whose bin 0 holds `chunks`."""
    raw = (b"CSI\x01" + struct.pack("<iiii", min_shift, depth, 0, 1) + struct.pack("<i", 1)
           + struct.pack("<IQi", 0, 0, len(chunks))
           + b"".join(struct.pack("<QQ", *c) for c in chunks) + struct.pack("<Q", 0))
    return _block(raw, level=6)


@pytest.mark.parametrize("min_shift,depth", [(14, 1000), (0, 5), (100, 1), (31, 0)])
def test_any_binning_htslib_loads_is_walked_without_listing_its_bins(tmp_path, min_shift,
                                                                     depth):
    # Bin 0 spans all; min_shift 0 once meant a set of a bin per base (2 GB for 30 Mb).
    index = tmp_path / "x.csi"
    chunks = [(1 << 16, 2 << 16), (5 << 16, 6 << 16)]
    index.write_bytes(_csi(min_shift, depth, chunks))
    got, peak = _peak_bytes(lambda: bamscan.region_chunks(index, 0, 0, 2_000_000))
    assert got == chunks and peak < 16 << 20


@pytest.mark.parametrize("min_shift,depth", [(-1, 1), (14, -1)])
def test_a_negative_binning_is_a_corrupt_index(tmp_path, min_shift, depth):
    index = tmp_path / "x.csi"
    index.write_bytes(_csi(min_shift, depth, [(100, 200)]))
    with pytest.raises(InputError, match="truncated or corrupt"):
        bamscan.region_chunks(index, 0, 0, 1000)


def test_chunks_in_one_block_are_read_once_and_reversed_ones_not_at_all(tmp_path):
    # 20,000 chunks of one block merge into one read of it, as htslib merges them.
    index = tmp_path / "x.csi"
    index.write_bytes(_csi(14, 5, [(7 << 16 | k, 7 << 16 | k + 1) for k in range(0, 60_000, 3)]
                           + [(9 << 16, 8 << 16)]))
    assert bamscan.region_chunks(index, 0, 0, 1000) == [(7 << 16, 7 << 16 | 59_998)]


def test_a_chunk_far_past_the_end_of_the_file_is_an_input_error(one_contig, tmp_path):
    # A seek to 2**47 failed with EINVAL: an internal error, not the index's fault named.
    bam, bai = tmp_path / "far.bam", tmp_path / "far.bam.bai"
    bam.write_bytes(one_contig.read_bytes())
    far = 1 << 47
    bai.write_bytes(_bai_with(Path(f"{one_contig}.bai").read_bytes(), 4681,
                              [(far << 16, (far + 1) << 16)]))
    with pytest.raises(InputError, match=r"far\.bam: its index points past the end"):
        _scanned(bam, 0, 0, 60_000, 1)


def test_an_isize_over_64_kb_is_refused_before_its_buffer_is_made():
    # ISIZE sized the output buffer: 4 GB per lying block before the inflate failed.
    data = _block(b"x" * 100) + _block(b"y" * 10, isize=0xFFFFFFF0)
    with pytest.raises(InputError, match=r"corrupt BGZF block at byte 131"):
        bamscan._block_spans(data, "x.bam", 0, len(data))


def test_a_run_holds_sixteen_mb_inflated_however_well_its_blocks_compress():
    # 256 KB read at a time of blocks of zeros (105 bytes for 64 KB) inflated to 160 MB.
    data = _block(bytes(65280), level=9) * 2500
    spans = bamscan._block_spans(data, "x.bam", 0, len(data))
    assert len(spans) == bamscan.RUN_BYTES // 65280


def test_a_block_shorter_than_its_header_and_trailer_is_refused():
    # BSIZE 17: a negative deflate length, which libdeflate took as 2**64 - 8 bytes to read.
    data = _block(b"", bsize=17)[:18] + _block(b"z" * 50)
    with pytest.raises(InputError, match="corrupt BGZF block at byte 1000"):
        bamscan._block_spans(data, "x.bam", 1000, 1000 + len(data))


@pytest.mark.parametrize("lib", ["libdeflate", "zlib"])
def test_a_block_inflating_past_its_isize_stops_there(monkeypatch, lib):
    # 64 KB of deflate claiming 100 bytes inflates to 64 MB; zlib made all of it first.
    if lib == "zlib":
        monkeypatch.setattr(bamscan, "_LIB", False)
    elif bamscan._libdeflate() is None:
        pytest.skip("libdeflate is not installed")
    data = _block(bytes(64 << 20), level=9, isize=100)
    out = bytearray(100)

    def inflate():
        with pytest.raises(InputError, match="corrupt BGZF block"):
            bamscan._inflate_blocks(data, [(0, len(data), 0)], out, "x.bam")

    assert _peak_bytes(inflate)[1] < 8 << 20


def test_a_negative_b_array_count_cannot_loop_the_aux_walk():
    # A B-array count of -2 (as signed) once stepped the walk back onto the same field.
    def hung(*_):
        raise AssertionError("the aux walk loops")

    aux = b"XXBi" + struct.pack("<i", -2) + b"ZZZZZZZZ"
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(5)
    try:
        assert bamscan._cg_tag(aux, 0, len(aux)) is None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_the_aux_walk_is_bounded_by_the_record_size():
    # 15,000 tiny fields before a CG tag: a Python step each; a real CG tag brings 256 KB.
    cg = b"CGBI" + struct.pack("<i", 2) + struct.pack("<II", 5 << 4, 3 << 4 | 1)
    assert bamscan._cg_tag(b"XXA!" * 15_000 + cg, 0, 60_000 + len(cg)) is None
    real = b"XXA!" * 3 + b"CGBI" + struct.pack("<i", 70_000) + bytes(280_000)
    assert len(bamscan._cg_tag(real, 0, len(real))) == 70_000


def _bam_of(tmp_path, name, header, reads):
    path = tmp_path / name
    with pysam.AlignmentFile(str(path), "wb", header=header) as out:
        for r in reads:
            out.write(r)
    pysam.index(str(path))
    return path


def _read(header, name, pos, cigar="50M"):
    a = pysam.AlignedSegment(header)
    a.query_name, a.reference_id, a.reference_start = name, 0, pos
    a.mapping_quality, a.cigarstring = 60, cigar
    a.query_sequence = "A" * a.infer_query_length()
    return a


def _record_bytes(bam) -> list[bytes]:
    """The BAM's records, each its bytes (the header skipped)."""
    raw = gzip.decompress(bam.read_bytes())
    at = 8 + struct.unpack_from("<i", raw, 4)[0]
    for _ in range(struct.unpack_from("<i", raw, at)[0]):
        at += 8 + struct.unpack_from("<i", raw, at + 4)[0]
    buf = raw[at + 4:]
    offs, _ = bamscan._record_starts(buf, bam)
    return [buf[a:b] for a, b in zip(offs, offs[1:] + [len(buf)])]


@pytest.fixture(scope="module")
def five_records(tmp_path_factory):
    header = pysam.AlignmentHeader.from_dict({"SQ": [{"SN": "chrA", "LN": 60_000}]})
    d = tmp_path_factory.mktemp("five")
    return _record_bytes(_bam_of(d, "five.bam", header,
                                 [_read(header, f"r{i}", 100 * i) for i in range(5)]))


def test_records_out_of_order_past_the_first_ones_are_refused(five_records):
    # Past pysam's first 5,000, one out of order made the early stop drop every read after it.
    recs = list(five_records)
    recs[1], recs[3] = recs[3], recs[1]
    buf = b"".join(recs)
    offs, _ = bamscan._record_starts(buf, "x.bam")
    with pytest.raises(InputError, match=r"x\.bam: not coordinate-sorted"):
        bamscan._decode(buf, offs, 0, 0, 60_000, "x.bam", -1)
    # ... and across batches, against the last record of the one before.
    buf = b"".join(five_records)
    offs, _ = bamscan._record_starts(buf, "x.bam")
    _, _, last = bamscan._decode(buf, offs, 0, 0, 60_000, "x.bam", -1)
    with pytest.raises(InputError, match="not coordinate-sorted"):
        bamscan._decode(buf, offs, 0, 0, 60_000, "x.bam", last)


def test_a_position_below_minus_one_is_a_corrupt_record(five_records):
    rec = bytearray(five_records[2])
    struct.pack_into("<i", rec, 8, -5000)
    with pytest.raises(InputError, match="corrupt alignment record"):
        bamscan._decode(bytes(rec), [0], 0, 0, 60_000, "x.bam", -1)


def test_zero_length_indels_are_no_events(tmp_path):
    # A 0D shifted left and right walked the whole reference slice, once per distinct place.
    header = pysam.AlignmentHeader.from_dict({"SQ": [{"SN": "chrA", "LN": 60_000}]})
    bam = _bam_of(tmp_path, "zero.bam", header,
                  [_read(header, f"r{i}", 10 * i, "20M0D10M0I20M") for i in range(20)])
    batch = next(bamscan.scan(bam, 0, 0, 60_000))
    assert len(bamscan.indel_events(batch, np.arange(len(batch.pos)))["op"]) == 0
