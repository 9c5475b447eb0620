"""Which BAM engine `breakpoints` reads through: its own BGZF/BAI/BAM decoder
(biotool/reads/bamscan.py) against htslib's region iterator through pysam, the engine
`variants` uses, on the same BAMs in the same run.

    python bench/bam_engine_bench.py [--bp-depth 1000 5000] [--runs 5] [--threads 1 2]
                                     [--out DIR]

Both engines feed the same `breakpoints.tally` (the command's hot path: the region's
alignments, their clips and indels, each distinct indel widened), so the ratio is the
engine's alone; the two tallies must agree exactly, or the bench stops. pysam is used as
well as it can be here: one pass over `fetch`, the fields read once per read, the bases of
a read decoded only when its CIGAR has an insertion. The two are alternated, medians of
--runs after one warming round. BAMs: the demo library (refs/demo: 200 nanopore reads of
SARS-CoV-2, aligned by `library_bam` as `biotool breakpoints --fastq` aligns them) and the
reads bench's Cas9 libraries (--bp-depth: 1000 is 200k reads, 5000 a million). Prints one
JSON object; docs/architecture.md ("The BAM engine") keeps the figures and the decision.
For scale, each BAM also times the reads bench's peer, `samtools view -q 20 -F 0x704 | awk`
tallying starts, ends and clips, the pipeline `biotool breakpoints` is held to (at most its
time, from about 300,000 reads up: docs/reads.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
from pathlib import Path

from repo_paths import REPO  # first: it puts tests/ on sys.path
from timing import timed

from biotool.deadline import UNBOUNDED
from biotool_testing import simulate as sim
from reads_bench import AWK_TALLY, CONTIG, REF, _sh, cuts_library

DEMO_FASTQ = REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"
BATCH = 20_000  # reads per batch handed to the tally, about what one decoder batch holds


def pysam_scan(path, tid: int, beg: int, end: int, threads: int = 1):
    """bamscan.scan's batches, read through pysam (htslib's region iterator)."""
    import pysam

    with pysam.AlignmentFile(str(path), "rb", threads=threads) as bam:
        reads = []
        for read in bam.fetch(bam.get_reference_name(tid), beg, end):
            reads.append(read)
            if len(reads) == BATCH:
                yield _batch(reads)
                reads = []
        if reads:
            yield _batch(reads)


_CODES = None


def _codes():
    """BAM's 4-bit code of each ASCII base (bamscan.SEQ_CODES read backwards)."""
    import numpy as np

    from biotool.reads.bamscan import SEQ_CODES

    global _CODES
    if _CODES is None:
        _CODES = np.full(256, 15, dtype=np.uint8)
        for code, base in enumerate(SEQ_CODES):
            _CODES[base] = code
    return _CODES


def _batch(reads):
    import numpy as np

    from biotool.alignment.vocabulary import INSERTION
    from biotool.reads.bamscan import Batch

    pos, end, flag, mapq, n_ops, ops, lens, seqs, auxes = [], [], [], [], [], [], [], [], []
    for r in reads:
        start = r.reference_start
        pos.append(start)
        stop = r.reference_end
        end.append(start + 1 if stop is None else max(stop, start + 1))
        flag.append(r.flag)
        mapq.append(r.mapping_quality)
        cigar = r.cigartuples or ()
        n_ops.append(len(cigar))
        has_insertion = False
        for op, n in cigar:
            ops.append(op)
            lens.append(n)
            has_insertion |= op == INSERTION
        seqs.append((r.query_sequence or "") if has_insertion else "")
        # The one aux field breakpoints reads (split reads carry it), as BAM stores it.
        auxes.append(b"SAZ" + r.get_tag("SA").encode() + b"\0" if r.has_tag("SA") else b"")
    n_ops = np.asarray(n_ops, dtype=np.int64)
    l_seq = np.array([len(s) for s in seqs], dtype=np.int64)
    # Each read's bases packed two to a byte, as a BAM record holds them.
    half = (l_seq + 1) // 2
    seq_at = np.cumsum(half) - half
    padded = "".join(s + "=" * (len(s) % 2) for s in seqs).encode()
    codes = _codes()[np.frombuffer(padded, dtype=np.uint8)]
    buf = bytearray(((codes[0::2] << 4) | codes[1::2]).astype(np.uint8).tobytes())
    # The aux fields follow all the bases (a row's own stretch of buf, as in a record).
    rec_end = len(buf) + np.cumsum([len(a) for a in auxes], dtype=np.int64)
    aux_at = rec_end - np.array([len(a) for a in auxes], dtype=np.int64)
    buf += b"".join(auxes)
    return Batch(np.asarray(pos, dtype=np.int64), np.asarray(end, dtype=np.int64),
                 np.asarray(flag, dtype=np.int64), np.asarray(mapq, dtype=np.int64), n_ops,
                 np.asarray(ops, dtype=np.int64), np.asarray(lens, dtype=np.int64),
                 np.cumsum(n_ops) - n_ops, seq_at, l_seq, aux_at, rec_end, buf)


@contextlib.contextmanager
def engine(scan):
    """breakpoints.tally reading through `scan` (the bench's swap of its one read call)."""
    from biotool.reads import bamscan

    saved = bamscan.scan
    bamscan.scan = scan
    try:
        yield
    finally:
        bamscan.scan = saved


def _tally(bam: Path, ref, threads: int) -> dict:
    from biotool.reads.breakpoints import tally

    ref_seq = ref.fetch(CONTIG)
    return tally(str(bam), 0, 0, len(ref_seq), ref_seq, 0, 20, UNBOUNDED, ref, CONTIG, threads)


def _same(a: dict, b: dict) -> bool:
    import numpy as np

    keys = ("read_lo", "read_hi", "lclipped", "rclipped", "lsplit", "rsplit")
    return (a["spans"] == b["spans"] and a["reads_seen"] == b["reads_seen"]
            and a["reads_used"] == b["reads_used"]
            and all(np.array_equal(np.sort(a[k]), np.sort(b[k])) for k in keys))


def compare(bam: Path, ref, runs: int, threads: int) -> dict:
    """Median seconds of the tally through each engine, alternated, and their ratio."""
    from biotool.reads import bamscan

    engines = {"decoder": bamscan.scan, "pysam": pysam_scan}
    times = {k: [] for k in (*engines, "peer")}
    outs = {}
    peer = f"samtools view -q 20 -F 0x704 {bam} {CONTIG} | awk '{AWK_TALLY}' > /dev/null"
    for i in range(runs + 1):  # the first round warms the page cache
        for name, scan in engines.items():
            with engine(scan):
                seconds, outs[name] = timed(lambda: _tally(bam, ref, threads))
            if i:
                times[name].append(seconds)
        seconds, _ = timed(lambda: _sh(peer))
        if i:
            times["peer"].append(seconds)
    if not _same(outs["decoder"], outs["pysam"]):
        raise SystemExit(f"{bam}: the two engines tally differently")
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"reads": outs["decoder"]["reads_seen"], "threads": threads,
            "decoder_s": round(med["decoder"], 4), "pysam_s": round(med["pysam"], 4),
            "ratio_pysam_over_decoder": round(med["pysam"] / med["decoder"], 2),
            "samtools_awk_s": round(med["peer"], 4),
            "ratio_decoder_over_samtools_awk": round(med["decoder"] / med["peer"], 2),
            "ratio_pysam_over_samtools_awk": round(med["pysam"] / med["peer"], 2)}


def libraries(d: Path, depths: list[int]):
    """(the Reference, {name: BAM}): the demo reads aligned as `biotool breakpoints
    --fastq` aligns them (into a cache in d), and the Cas9 library of each depth."""
    from biotool.alignment.reference import resolve
    from biotool.reads.bam import library_bam

    os.environ["BIOTOOL_CACHE"] = str(d / "cache")
    ref = resolve(str(REF))
    ref_seq = ref.fetch(CONTIG)
    bams = {"demo": Path(library_bam([DEMO_FASTQ], ref, threads=2).bam)}
    for depth in depths:
        bams[f"cuts{depth}"] = cuts_library(sim, ref_seq, d, depth)[0]
    return ref, bams


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bp-depth", type=int, nargs="+", default=[1000, 5000])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--out", type=Path, default=None, help="keep the data here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
        ref, bams = libraries(args.out or Path(tmp), args.bp_depth)
        result = {"machine": {"cpus": os.cpu_count(), "load_1min": round(os.getloadavg()[0], 2)},
                  "contig": CONTIG,
                  **{name: [compare(bam, ref, args.runs, t) for t in args.threads]
                     for name, bam in bams.items()}}
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
