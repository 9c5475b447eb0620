"""A region of an indexed BAM as numpy arrays, without one Python object per read.

`breakpoints` needs a few fields of every alignment. pysam builds an object per read and a
list per CIGAR, which alone costs about what the whole `samtools view | awk` pipeline does;
here BGZF blocks are inflated in threads (libdeflate or zlib, outside the GIL), records are
located by one pass over their sizes, and every field is gathered for all records of a batch
at once.

Semantics follow htslib's region iterator: the index's chunks for the region, records of the
contig with pos < end and bam_endpos > start; a CIGAR stored in a CG tag (more than 65,535
operations) replaces its placeholder, as htslib does.
"""

from __future__ import annotations

import ctypes
import gzip
import struct
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from biotool.alignment.vocabulary import (CLIPS, CONSUMES_QUERY, CONSUMES_REFERENCE, INDELS,
                                          SOFT_CLIP, UNMAPPED, code_table)
from biotool.output import InputError
from biotool.reads.bam import index_of

READ_BYTES = 1 << 18     # compressed bytes read at a time: one batch, a few MB inflated
RUN_BYTES = 1 << 24      # inflated bytes a batch holds at most: 256 KB of BGZF can be 256 MB
MAX_BLOCK = 1 << 16     # BGZF's largest block
MAX_RECORD = 1 << 28    # bytes; a 10 Mb read, its qualities and an operation a base take 55 MB
BLOCKS_PER_TASK = 8      # BGZF blocks one thread inflates per task
SEQ_CODES = b"=ACMGRSVTWYHKDBN"

# Per BAM operation code, whether it consumes reference and query bases, is a clip, is an
# indel: the vocabulary's sets as lookup tables.
REF_OPS = np.array(code_table(CONSUMES_REFERENCE), dtype=np.int64)
QUERY_OPS = np.array(code_table(CONSUMES_QUERY), dtype=np.int64)
CLIP_OPS = np.array(code_table(CLIPS), dtype=bool)
INDEL_OPS = np.array(code_table(INDELS), dtype=bool)


@dataclass
class Batch:
    """Records of one batch that overlap the region, as parallel arrays (one row a record)."""
    pos: np.ndarray        # 0-based leftmost reference base
    end: np.ndarray        # bam_endpos: pos + reference length (at least pos + 1)
    flag: np.ndarray
    mapq: np.ndarray
    n_ops: np.ndarray      # CIGAR operations (the CG tag's when it holds the CIGAR)
    ops: np.ndarray        # the batch's CIGAR operations: a row's are ops[first_op:+n_ops]
    lens: np.ndarray       # ... and their lengths
    first_op: np.ndarray   # row -> index of its first operation in ops/lens
    seq_at: np.ndarray     # row -> byte offset of its packed sequence in buf
    l_seq: np.ndarray
    aux_at: np.ndarray     # row -> byte offset of its aux fields (tags) in buf
    rec_end: np.ndarray    # row -> byte offset just past its record, where its aux fields end
    buf: bytearray


def _bin_overlaps(bin_id: int, beg: int, end: int, min_shift: int, depth: int) -> bool:
    """Whether bin `bin_id` of a (min_shift, depth) binning overlaps [beg, end): tested per
    bin the index lists, not by listing the region's bins (millions with min_shift 0)."""
    level = ((7 * bin_id + 1).bit_length() - 1) // 3  # bins of level L start at (8**L - 1) / 7
    if level > depth:  # the pseudo-bin of the index's metadata, or no bin at all
        return False
    shift = min_shift + 3 * (depth - level)
    lo = (bin_id - ((1 << 3 * level) - 1) // 7) << shift
    return lo < end and beg < lo + (1 << shift)


_PIECE = 1 << 20  # an index is read this much at a time: a count in it can be a lie


def _take(fh, n: int, keep: bool = True) -> bytes:
    """The next n bytes of the index (discarded when not `keep`); EOFError when it has fewer."""
    if n < 0:
        raise EOFError
    parts = []
    while n:
        part = fh.read(min(n, _PIECE))
        if not part:
            raise EOFError
        n -= len(part)
        if keep:
            parts.append(part)
    return b"".join(parts)


def region_chunks(index: Path, tid: int, beg: int, end: int) -> list[tuple[int, int]]:
    """Merged (start, end) virtual offsets of the index's chunks for [beg, end) on `tid`.

    The index is read as a stream up to `tid` and no further: htslib ignores what follows,
    so a file past that can be of any size (a sparse BAI, a CSI that inflates to GBs)."""
    with open(index, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"  # a CSI is BGZF-compressed; htslib reads either form
    try:
        with (gzip.open(index, "rb") if gz else open(index, "rb")) as fh:
            chunks, linear = _index_chunks(fh, tid, beg, end, index)
    except (OSError, EOFError, zlib.error, struct.error):
        raise InputError(f"--bam: index {index} is truncated or corrupt; rebuild it with "
                         "`samtools index`") from None
    s, e = chunks[:, 0], chunks[:, 1]
    # Empty or reversed chunks hold nothing, nor chunks ending before the linear index's offset.
    keep = (e > s) & (e > linear)
    s, e = s[keep], e[keep]
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    top = np.maximum.accumulate(e)
    # A chunk starting in the block where the ones before end joins them, as htslib merges.
    new = np.ones(len(s), dtype=bool)
    new[1:] = (s[1:] >> 16) > (top[:-1] >> 16)
    last = np.append(np.flatnonzero(new)[1:] - 1, len(s) - 1) if len(s) else []
    return list(zip(s[new].tolist(), top[last].tolist()))


def _index_chunks(fh, tid: int, beg: int, end: int, index: Path):
    """(array of the (start, end) chunks of `tid`'s bins overlapping [beg, end), the BAI's
    linear offset for `beg` or 0) from the index stream `fh`."""
    magic = _take(fh, 4)
    if magic == b"BAI\x01":
        min_shift, depth, csi = 14, 5, False
    elif magic == b"CSI\x01":
        min_shift, depth, l_aux = struct.unpack("<iii", _take(fh, 12))
        _take(fh, l_aux, keep=False)
        csi = True
    else:
        raise InputError(f"--bam: index {index} is neither BAI nor CSI; rebuild it with "
                         "`samtools index`")
    if min_shift < 0 or depth < 0:  # no binning; htslib loads it and then finds nothing
        raise EOFError
    none = np.zeros((0, 2), dtype=np.uint64)
    n_ref = struct.unpack("<i", _take(fh, 4))[0]
    if not 0 <= tid < n_ref:
        return none, 0
    bin_head = struct.Struct("<IQi" if csi else "<Ii")  # CSI stores each bin's loffset too
    i32 = struct.Struct("<i").unpack
    kept, linear = [], 0
    for ref in range(tid + 1):
        for _ in range(i32(_take(fh, 4))[0]):
            head = bin_head.unpack(_take(fh, bin_head.size))
            wanted = ref == tid and _bin_overlaps(head[0], beg, end, min_shift, depth)
            chunks = _take(fh, 16 * head[-1], keep=wanted)
            if wanted:
                kept.append(chunks)
        if not csi:
            n_intv = i32(_take(fh, 4))[0]
            if ref < tid:
                _take(fh, 8 * n_intv, keep=False)
            elif n_intv > 0:
                _take(fh, 8 * min(beg >> min_shift, n_intv - 1), keep=False)
                linear = struct.unpack("<Q", _take(fh, 8))[0]
    if not kept:
        return none, linear
    return np.frombuffer(b"".join(kept), "<u8").reshape(-1, 2), linear


def _block_spans(data: bytes, where: str, base: int, stop: int) -> list[tuple[int, int]]:
    """(start, size) of the whole BGZF blocks in `data` (file offset `base`) that start before
    file offset `stop`, as many as inflate to RUN_BYTES (one at least)."""
    spans, at, n, room = [], 0, len(data), RUN_BYTES
    while at + 18 <= n and base + at < stop:
        if data[at:at + 4] != b"\x1f\x8b\x08\x04" or data[at + 12:at + 14] != b"BC":
            raise InputError(f"--bam {where}: not BGZF at byte {base + at} (corrupt, or not a "
                             "BAM)")
        size = struct.unpack_from("<H", data, at + 16)[0] + 1
        if at + size > n:
            break
        isize = struct.unpack_from("<I", data, at + size - 4)[0]
        # A negative deflate length, or an ISIZE that would size a 4 GB buffer before failing.
        if size < 26 or isize > MAX_BLOCK:
            raise InputError(f"--bam {where}: corrupt BGZF block at byte {base + at} (its "
                             "sizes are impossible); check the file, or re-create it")
        room -= isize
        if room < 0 and spans:
            break
        spans.append((at, size))
        at += size
    return spans


_LIB = None
_LOCAL = threading.local()


def _libdeflate():
    """libdeflate through ctypes (what htslib inflates with; about twice zlib's speed), or
    None where the library is absent (zlib then; the results are the same)."""
    global _LIB
    if _LIB is None:
        try:
            lib = ctypes.CDLL("libdeflate.so.0")
        except OSError:
            lib = False
        else:
            lib.libdeflate_alloc_decompressor.restype = ctypes.c_void_p
            lib.libdeflate_deflate_decompress.argtypes = [
                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
            lib.libdeflate_crc32.restype = ctypes.c_uint32
            lib.libdeflate_crc32.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t]
        _LIB = lib
    return _LIB or None


def _inflate_blocks(data: bytes, blocks: list[tuple[int, int, int]], out: bytearray,
                    where: str) -> None:
    """Inflate each (start, size, offset in out) block of `data` into `out`, checking its
    length and CRC32; a thread's share of a run (ctypes and zlib release the GIL)."""
    lib = _libdeflate()
    if lib:
        dec = getattr(_LOCAL, "decompressor", None)
        if dec is None:
            dec = _LOCAL.decompressor = lib.libdeflate_alloc_decompressor()
        src = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value
        dst = ctypes.addressof((ctypes.c_char * len(out)).from_buffer(out)) if out else 0
        got = ctypes.c_size_t()
    for at, size, to in blocks:
        crc, isize = struct.unpack_from("<II", data, at + size - 8)
        if lib:
            ok = (lib.libdeflate_deflate_decompress(dec, src + at + 18, size - 26, dst + to,
                                                    isize, ctypes.byref(got)) == 0
                  and got.value == isize and lib.libdeflate_crc32(0, dst + to, isize) == crc)
        else:
            try:  # a byte past ISIZE at most: 64 KB of deflate can inflate to 64 MB
                block = zlib.decompressobj(-15).decompress(data[at + 18:at + size - 8], isize + 1)
            except zlib.error:
                block = b""
            ok = len(block) == isize and zlib.crc32(block) == crc
            out[to:to + isize] = block if ok else b""
        if not ok:
            raise InputError(f"--bam {where}: corrupt BGZF block (bad data or checksum) in the "
                             "file; check the file, or re-create it")


def _inflate_run(data: bytes, spans: list[tuple[int, int]], where: str, mapper):
    """(the buffer the blocks inflate into, [each block's inflated size], a callable that
    waits until they have): the blocks are handed to `mapper` in tasks."""
    sizes = [struct.unpack_from("<I", data, at + size - 4)[0] for at, size in spans]
    out = bytearray(sum(sizes))
    blocks, to = [], 0
    for (at, size), isize in zip(spans, sizes):
        blocks.append((at, size, to))
        to += isize
    tasks = [blocks[i:i + BLOCKS_PER_TASK] for i in range(0, len(blocks), BLOCKS_PER_TASK)]
    pending = mapper(lambda task: _inflate_blocks(data, task, out, where), tasks)
    return out, sizes, lambda: list(pending)


def _inflated(path: Path, start: int, stop: int, mapper):
    """([block file offsets], [inflated sizes], inflated bytes) for runs of the BGZF blocks
    that start in [start, stop), READ_BYTES of the file at a time. A run is handed to
    `mapper` before the previous one is returned, so threads inflate while it is used."""
    where = str(path)
    ahead = None
    step = READ_BYTES // 16  # growing: a small region stops after its first few blocks
    with open(path, "rb") as fh:
        fh.seek(start)
        pending, base = b"", start
        while base < stop:
            # Up to `stop` and a block more (so the last is whole), less what is held already.
            more = fh.read(max(0, min(step, stop - base) + MAX_BLOCK - len(pending)))
            step = min(2 * step, READ_BYTES)
            data = pending + more
            spans = _block_spans(data, where, base, stop)
            if not spans:
                if more:  # a block longer than what was read so far
                    pending = data
                    continue
                raise InputError(f"--bam {where}: ends inside a region its index points to "
                                 f"(byte {base}): the file is truncated or the index is of "
                                 f"another file; check it and rebuild with `samtools index`")
            out, sizes, wait = _inflate_run(data, spans, where, mapper)
            run = ([base + a for a, _ in spans], sizes, out, wait)
            if ahead:
                ahead[3]()
                yield ahead[:3]
            ahead = run
            used = spans[-1][0] + spans[-1][1]
            pending, base = data[used:], base + used
    if ahead:
        ahead[3]()
        yield ahead[:3]


def _chunk_bytes(path: Path, vstart: int, vend: int, mapper):
    """The inflated bytes of the chunk [vstart, vend) (BGZF virtual offsets), in pieces."""
    cend, uend = vend >> 16, vend & 0xFFFF
    skip = vstart & 0xFFFF
    for starts, sizes, data in _inflated(path, vstart >> 16, cend + 1 if uend else cend, mapper):
        if uend and starts[-1] == cend:  # the chunk ends inside its last block
            data = data[:len(data) - sizes[-1] + uend]
        yield data[skip:] if skip else data
        skip = 0


_SIZE = struct.Struct("<i").unpack_from
_LAST = np.iinfo(np.int64).max  # the order key of an unmapped record
_CORRUPT = ("--bam {path}: corrupt alignment record (a size or position in it is impossible); "
            "check the file, or re-create it")


def _record_starts(buf: bytes, path: Path) -> tuple[list[int], int]:
    """Offsets of the whole records in `buf`, and where the first incomplete one begins.

    The one loop per record left in Python: each record's place depends on the size of the
    one before it."""
    offs, at, n = [], 0, len(buf)
    add = offs.append
    while at + 4 <= n:
        size = _SIZE(buf, at)[0]
        # Below the fixed fields (a negative size loops), or past any read (2 GB were held).
        if not 32 <= size <= MAX_RECORD:
            raise InputError(_CORRUPT.format(path=path))
        nxt = at + 4 + size
        if nxt > n:
            break
        add(at)
        at = nxt
    return offs, at


def scan(path: str | Path, tid: int, beg: int, end: int, threads: int = 1):
    """Batches (see Batch) of the alignments overlapping [beg, end) on reference `tid`."""
    path = Path(path)
    index = index_of(path)
    if index is None:
        raise InputError(f"--bam {path}: no index (.bai/.csi) found; run `samtools index {path}`")
    chunks = region_chunks(index, tid, beg, end)
    if chunks and chunks[-1][0] >> 16 >= path.stat().st_size:  # chunks come sorted by start
        raise InputError(f"--bam {path}: its index points past the end of the file (byte "
                         f"{chunks[-1][0] >> 16}): the file is truncated or the index is of "
                         "another file; check it and rebuild with `samtools index`")
    pool = None
    if threads > 1:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(threads)
    mapper = pool.map if pool else map
    try:
        last = -1  # order key of the last record read (see _decode)
        for vstart, vend in chunks:
            cut, short = [], 0  # pieces of a record the last piece cut off; the bytes it lacks
            for piece in _chunk_bytes(path, vstart, vend, mapper):
                cut.append(piece)
                short -= len(piece)
                if short > 0:  # joined once whole: each piece added to it copied it again
                    continue
                buf = piece if len(cut) == 1 else b"".join(cut)
                offs, used = _record_starts(buf, path)
                rest = buf[used:]
                cut = [rest] if rest else []
                short = (4 + _SIZE(rest, 0)[0] if len(rest) >= 4 else 4) - len(rest)
                if offs:
                    batch, past_end, last = _decode(buf, offs, tid, beg, end, path, last)
                    yield batch
                    if past_end:  # sorted records: none further on can overlap
                        return
            if cut:
                raise InputError(f"--bam {path}: a record is cut off where its index says a "
                                 "run of records ends; rebuild the index with `samtools index`")
    finally:
        if pool:
            pool.shutdown()


def _seg_sums(values: np.ndarray, first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Per row, the sum of values[first:first + count] (rows may be empty)."""
    cum = np.concatenate([[0], np.cumsum(values)])
    return cum[first + count] - cum[first]


def _decode(buf: bytes, offs: list[int], tid: int, beg: int, end: int, path: Path,
            last: int):
    """(Batch of the records at `offs` overlapping the region, whether any lies past it, the
    order key of the last record); `last` is the key of the record before them."""
    n = len(buf)
    at = np.asarray(offs, dtype=np.int64)
    # Views with a one-byte stride read a little-endian integer at any byte offset.
    i64 = np.ndarray((n - 7,), "<i8", buf, 0, (1,))
    u32 = np.ndarray((n - 3,), "<u4", buf, 0, (1,))
    # Three 8-byte reads per record cover its fixed fields (gathers are the cost here).
    size_ref, pos_name, cig_seq = (i64[at + k] for k in (0, 8, 16))
    size = size_ref & 0xFFFFFFFF
    refid = size_ref >> 32
    pos = (pos_name & 0xFFFFFFFF).astype(np.int32).astype(np.int64)
    name_len = (pos_name >> 32) & 0xFF
    mapq_all = (pos_name >> 40) & 0xFF
    n_cig = cig_seq & 0xFFFF
    flag_all = (cig_seq >> 16) & 0xFFFF
    l_seq = cig_seq >> 32
    cig_at = at + 36 + name_len
    seq_at = cig_at + 4 * n_cig
    rec_end = at + 4 + size
    bad = (size < 32) | (l_seq < 0) | (seq_at + (l_seq + 1) // 2 + l_seq > rec_end) | \
        (refid < -1) | (pos < -1)  # below -1 (none) they name no place
    if bad.any():
        raise InputError(_CORRUPT.format(path=path))
    # Coordinate order (unmapped last): the early stop relies on it; pysam saw the first reads.
    key = np.where(refid < 0, _LAST, refid << 32 | (pos + 1))
    if key[0] < last or (key[1:] < key[:-1]).any():
        raise InputError(f"--bam {path}: not coordinate-sorted (a record further on comes "
                         "before the one it follows); run `samtools sort` and index the result")
    past_end = bool(((refid != tid) | (pos >= end)).any())
    near = (refid == tid) & (pos < end)
    if not near.all():
        at, pos, n_cig, l_seq, cig_at, seq_at, rec_end, flag_all, mapq_all = (
            a[near] for a in (at, pos, n_cig, l_seq, cig_at, seq_at, rec_end, flag_all,
                              mapq_all))
    first = np.cumsum(n_cig) - n_cig
    words = u32[np.repeat(cig_at - 4 * first, n_cig) + 4 * np.arange(int(n_cig.sum()))]
    ops, lens = (words & 0xF).astype(np.int64), (words >> 4).astype(np.int64)
    rows = np.arange(len(at))
    placeholder = (n_cig > 0) & (l_seq > 0)
    placeholder[placeholder] &= (ops[first[placeholder]] == SOFT_CLIP) & \
        (lens[first[placeholder]] == l_seq[placeholder])
    if placeholder.any():
        ops, lens, first, n_cig, rows = _cg_cigars(buf, placeholder, ops, lens, first, n_cig,
                                                   seq_at, l_seq, rec_end)
    flag, mapq = flag_all[rows], mapq_all[rows]
    pos, l_seq, seq_at = pos[rows], l_seq[rows], seq_at[rows]
    ref_len = _seg_sums(lens * REF_OPS[ops], first, n_cig)
    ref_len[(flag & UNMAPPED) != 0] = 0  # htslib's bam_endpos: an unmapped read covers one base
    stop = pos + np.maximum(ref_len, 1)
    rec_end = rec_end[rows]
    keep = stop > beg
    if not keep.all():
        pos, stop, flag, mapq, n_cig, first, seq_at, l_seq, rec_end = (
            a[keep] for a in (pos, stop, flag, mapq, n_cig, first, seq_at, l_seq, rec_end))
    aux_at = seq_at + (l_seq + 1) // 2 + l_seq
    return (Batch(pos, stop, flag, mapq, n_cig, ops, lens, first, seq_at, l_seq, aux_at, rec_end,
                  buf), past_end, int(key[-1]))


def _cg_cigars(buf, placeholder, ops, lens, first, n_cig, seq_at, l_seq, rec_end):
    """Swap in the CIGARs kept in CG tags (BAM's form for more than 65,535 operations):
    those rows move to the end, their operations appended after everyone else's."""
    moved, extra_ops, extra_lens = [], [], []
    for row in np.flatnonzero(placeholder).tolist():
        words = _cg_tag(buf, int(seq_at[row] + (l_seq[row] + 1) // 2 + l_seq[row]),
                        int(rec_end[row]))
        if words is not None:
            moved.append(row)
            extra_ops.append((words & 0xF).astype(np.int64))
            extra_lens.append((words >> 4).astype(np.int64))
    if not moved:
        return ops, lens, first, n_cig, np.arange(len(n_cig))
    is_cg = np.zeros(len(n_cig), dtype=bool)
    is_cg[moved] = True
    own = ~np.repeat(is_cg, n_cig)
    ops = np.concatenate([ops[own], *extra_ops])
    lens = np.concatenate([lens[own], *extra_lens])
    rows = np.concatenate([np.flatnonzero(~is_cg), np.array(moved, dtype=np.int64)])
    counts = n_cig.copy()
    counts[moved] = [len(o) for o in extra_ops]
    counts = counts[rows]
    return ops, lens, np.cumsum(counts) - counts, counts, rows


_AUX_SIZES = {ord(c): s for c, s in zip("AcCsSiIfZHB", (1, 1, 1, 2, 2, 4, 4, 4, 0, 0, 0))}
_B_SIZES = {ord(c): s for c, s in zip("cCsSiIf", (1, 1, 2, 2, 4, 4, 4))}


def _cg_tag(buf: bytes, at: int, stop: int):
    """The CG:B,I array of the aux fields in buf[at:stop], as uint32 words, or None (also
    when the fields are malformed: the record then keeps the CIGAR it has)."""
    try:
        return _find_cg(buf, at, stop)
    except (ValueError, IndexError, struct.error):
        return None


def _find_cg(buf: bytes, at: int, stop: int):
    # A real CG (65,536+ operations) brings 256 KB; a record of 4-byte fields, a step each.
    for _ in range(4 + (stop - at) // 64):
        if at + 3 > stop:
            return None
        tag, kind = buf[at:at + 2], buf[at + 2]
        at += 3
        if kind in (ord("Z"), ord("H")):
            at = buf.index(b"\0", at, stop) + 1
        elif kind == ord("B"):
            # The count is unsigned: read as signed, a negative one stepped back for ever.
            sub, count = buf[at], struct.unpack_from("<I", buf, at + 1)[0]
            if tag == b"CG" and sub == ord("I"):
                if at + 5 + 4 * count > stop:
                    return None
                return np.frombuffer(buf, "<u4", count, at + 5).copy()
            at += 5 + count * _B_SIZES.get(sub, 0)
        elif kind in _AUX_SIZES:
            at += _AUX_SIZES[kind]
        else:
            return None
    return None


# Per aux type letter, its value's size in bytes: fixed, or Z/H (up to a NUL), or B (an array).
_ZSTRING, _ARRAY, _BAD = -1, -2, -3
_AUX_STEP = np.full(256, _BAD, dtype=np.int64)
for _kind, _size in _AUX_SIZES.items():
    _AUX_STEP[_kind] = _size or _ZSTRING
_AUX_STEP[ord("B")] = _ARRAY
_B_STEP = np.zeros(256, dtype=np.int64)  # 0: not an array type, the record's walk stops
for _kind, _size in _B_SIZES.items():
    _B_STEP[_kind] = _size
# Aligners write about a dozen aux fields; a record with more is walked no further (read as
# lacking the tag), so a crafted record cannot cost one pass over the batch per field.
MAX_AUX_FIELDS = 64


def tagged(batch: Batch, rows: np.ndarray, tag: bytes) -> np.ndarray:
    """Per given row, whether its aux fields hold `tag` (two letters, as b"SA")."""
    return _tag_offsets(batch, rows, tag) >= 0


def tag_texts(batch: Batch, rows: np.ndarray, tag: bytes) -> list[str | None]:
    """Per given row, the text of its `tag` when that is a Z (string) field, else None."""
    at = _tag_offsets(batch, rows, tag).tolist()
    stop = batch.rec_end[rows].tolist()
    out = []
    for a, end in zip(at, stop):
        nul = batch.buf.find(b"\0", a + 3, end) if a >= 0 and batch.buf[a + 2] == ord("Z") else -1
        out.append(batch.buf[a + 3:nul].decode("ascii", "replace") if nul >= 0 else None)
    return out


def _tag_offsets(batch: Batch, rows: np.ndarray, tag: bytes) -> np.ndarray:
    """Per given row, the byte offset in batch.buf of its `tag` field (its two letters), or -1:
    every row's fields are walked at once, one field a step; a malformed field ends that row's
    walk."""
    u8 = np.frombuffer(batch.buf, np.uint8)
    at, stop = batch.aux_at[rows].copy(), batch.rec_end[rows]
    found = np.full(len(rows), -1, dtype=np.int64)
    live = np.flatnonzero(at + 3 <= stop)
    if not len(live):
        return found
    lo, hi = int(at[live].min()), int(stop[live].max())
    # Where Z/H values may end; the one at hi stands for "none left" (past every row's end).
    nul = np.append(lo + np.flatnonzero(u8[lo:hi] == 0), hi)
    want = tag[0] | tag[1] << 8
    last = len(u8) - 1
    for _ in range(MAX_AUX_FIELDS):
        a, end = at[live], stop[live]
        name = u8[a].astype(np.int64) | u8[a + 1].astype(np.int64) << 8
        found[live[name == want]] = a[name == want]
        step = _AUX_STEP[u8[a + 2]]
        nxt = a + 3 + step
        text = step == _ZSTRING
        if text.any():
            nxt[text] = nul[np.searchsorted(nul, a[text] + 3)] + 1
        arr = step == _ARRAY
        if arr.any():
            b = a[arr] + 3  # the element type, then a little-endian uint32 count
            width = _B_STEP[u8[np.minimum(b, last)]]
            count = sum(u8[np.minimum(b + 1 + k, last)].astype(np.int64) << (8 * k)
                        for k in range(4))
            nxt[arr] = np.where((b + 5 <= end[arr]) & (width > 0), b + 5 + count * width,
                                end[arr] + 1)
        at[live] = nxt
        live = live[(step != _BAD) & (name != want) & (nxt + 3 <= end)]
        if not len(live):
            break
    return found


def _row_ops(n_ops: np.ndarray, first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indices into ops/lens of the rows' operations, row after row; where each row starts)."""
    starts = np.cumsum(n_ops) - n_ops
    return np.repeat(first - starts, n_ops) + np.arange(int(n_ops.sum())), starts


def clip_lengths(batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the bases soft- or hard-clipped at the CIGAR's start and at its end (all of
    them on both sides when every operation is a clip)."""
    idx, starts = _row_ops(batch.n_ops, batch.first_op)
    clip = CLIP_OPS[batch.ops[idx]]
    lens = batch.lens[idx]
    aligned = (~clip).astype(np.int64)
    cum = np.concatenate([[0], np.cumsum(aligned)])
    # Aligned operations before each operation in its row, and after it.
    before = cum[:-1] - np.repeat(cum[starts], batch.n_ops)
    after = np.repeat(cum[starts + batch.n_ops], batch.n_ops) - cum[1:]
    return (_seg_sums(lens * (clip & (before == 0)), starts, batch.n_ops),
            _seg_sums(lens * (clip & (after == 0)), starts, batch.n_ops))


def indel_events(batch: Batch, rows: np.ndarray) -> dict:
    """Every insertion and deletion of the given rows: its row, operation (INSERTION or
    DELETION), length,
    and the 0-based reference and query positions where it begins."""
    n_ops = batch.n_ops[rows]
    idx, starts = _row_ops(n_ops, batch.first_op[rows])
    ops, lens = batch.ops[idx], batch.lens[idx]
    ref_step, query_step = lens * REF_OPS[ops], lens * QUERY_OPS[ops]
    ref_cum = np.concatenate([[0], np.cumsum(ref_step)])
    query_cum = np.concatenate([[0], np.cumsum(query_step)])
    row = np.repeat(rows, n_ops)
    ref_at = np.repeat(batch.pos[rows] - ref_cum[starts], n_ops) + ref_cum[:-1]
    query_at = query_cum[:-1] - np.repeat(query_cum[starts], n_ops)
    pick = INDEL_OPS[ops] & (lens > 0)  # a 0I or 0D is no event
    return {"row": row[pick], "op": ops[pick], "len": lens[pick], "ref": ref_at[pick],
            "query": query_at[pick]}


_BASES = np.frombuffer(SEQ_CODES, dtype=np.uint8)


def query_bases(batch: Batch, rows: np.ndarray, start: np.ndarray, length: np.ndarray) -> list[str]:
    """The read bases [start, start + length) of each given row (cut at the read's end; empty
    for a read stored without its sequence), decoded from BAM's 4-bit codes."""
    length = np.clip(np.minimum(start + length, batch.l_seq[rows]) - start, 0, None)
    total = int(length.sum())
    if not total:
        return [""] * len(rows)
    at = np.repeat(start, length) + np.arange(total) - np.repeat(np.cumsum(length) - length, length)
    byte = np.frombuffer(batch.buf, np.uint8)[np.repeat(batch.seq_at[rows], length) + at // 2]
    text = _BASES[np.where(at % 2 == 0, byte >> 4, byte & 0xF)].tobytes().decode()
    ends = np.cumsum(length).tolist()
    return [text[e - k:e] for e, k in zip(ends, length.tolist())]
