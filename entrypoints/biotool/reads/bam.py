"""Whole-library alignment to a sorted, indexed BAM, cached by the content of its inputs.

Reads are validated in Python as they stream into the aligner (bwa mem for short reads,
minimap2 for long ones), so a truncated or corrupt FASTQ fails loudly; its SAM goes straight
into `samtools sort`, and the BAM and its index are published together by renaming their
directory: a later run never trusts a half-written file, nor a BAM beside another run's index.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from biotool.alignment import aligners
from biotool.alignment.aligners import SHORT, aligner_command, aligner_of, finish_by, naming
from biotool.alignment.cigar import match_blocks
from biotool.alignment.reference import Reference
from biotool.alignment.vocabulary import SKIP_FOR_DIVERGENCE
from biotool.cache import content_key, entry_dir, work_dir
from biotool.deadline import UNBOUNDED, Deadline
from biotool.files import input_file, magic, unreadable
from biotool.output import InputError, ToolFailure
from biotool.procs import OutOfTime, run_pipeline
from biotool.progress import log
from biotool.reads import fastq

SHAPE_SAMPLE = 2000
# Stop feeding reads at this share of the time budget; the rest is for sorting and counting.
FEED_SHARE = 0.6


def choose_preset(fastqs: list[Path], preset: str) -> tuple[str, str]:
    """The preset for a library, judged on its first SHAPE_SAMPLE reads when "auto"."""
    head = list(islice(fastq.records(fastqs[0]), SHAPE_SAMPLE)) if preset == "auto" else []
    return fastq.choose_preset(head, preset)


def _stream(fastqs: list[Path]):
    """Records to feed the aligner: one file, or two mate files interleaved (bwa mem -p pairs them)."""
    if len(fastqs) == 1:
        yield from fastq.records(fastqs[0])
    else:
        for r1, r2 in fastq.paired(fastqs[0], fastqs[1]):
            yield r1
            yield r2


def check_library(fastqs: list[str | Path]) -> list[Path]:
    """The files of one library, each checked by kind and format: one file, or two mates."""
    fastqs = [Path(f) for f in fastqs]
    if len(fastqs) not in (1, 2):
        raise InputError(f"--fastq {','.join(map(str, fastqs))}: give one file, or two mate "
                         "files of one paired library")
    for f in fastqs:
        fastq.check_path(f)
    return fastqs


@dataclass(frozen=True)
class AlignedBam:
    """A library aligned into the cache: its coordinate-sorted, indexed BAM, the preset it
    was aligned with and why, whether an earlier run had published it (`cached`), whether
    --timeout cut the feeding short, and the reads (pairs: fragments) it holds (None when
    an earlier run's count cannot be read)."""

    bam: str
    preset: str
    preset_reason: str
    cached: bool
    truncated: bool
    n_reads: int | None


def library_bam(fastqs: list[str | Path], ref: Reference, preset: str = "auto",
                threads: int = 2, deadline: Deadline = UNBOUNDED) -> AlignedBam:
    """Align every read to `ref` into the cache (an earlier run's full alignment is reused).

    The BAM, its index and its read count are published together as one directory (a rename
    that fails if another run got there first), so a reader never sees a BAM beside an index
    of another run's BAM. A lock makes a second concurrent run on the same input wait and
    reuse the first one's result instead of aligning again.
    """
    from filelock import FileLock, Timeout

    fastqs = check_library(fastqs)
    preset, why = choose_preset(fastqs, preset)
    if len(fastqs) == 2 and preset != SHORT:
        log(f"paired files with preset {preset}: mates are aligned as single reads")
    index, index_sha = ref.index(preset, deadline)
    key = content_key(*fastqs, reference=ref.sha256, index=index_sha, preset=preset,
                      paired=len(fastqs) == 2)
    d = entry_dir("bam", key)
    done = _published(d / "full", preset, why)
    if done:
        return done
    try:  # before the lock, so refused reads leave no lock and no folder behind
        _validate(fastqs, deadline)
    except InputError:
        with contextlib.suppress(OSError):
            d.rmdir()  # only when empty: another run's files stay
        raise
    lock = FileLock(str(d / "align.lock"))
    wait = max(0.0, deadline.left() * FEED_SHARE) if deadline.bounded else -1
    try:
        lock.acquire(timeout=wait)
        locked = True
    except Timeout:  # the other run holds it past our budget: align on our own
        locked = False
    try:
        done = _published(d / "full", preset, why)
        if done:
            return done
        with naming(ref.name, fastqs):
            return _align_and_publish(fastqs, index, preset, why, threads, d, deadline)
    finally:
        if locked:
            lock.release()


def _validate(fastqs: list[Path], deadline: Deadline) -> None:
    """Read every record once before minimap2 starts, so malformed input is refused (exit 2)
    before any alignment work; within the feeding share of a time budget (the stream into
    minimap2 checks the same again, so a record past that point still fails loudly)."""
    until = deadline.share(FEED_SHARE / 2)
    stream = fastq.records(fastqs[0]) if len(fastqs) == 1 else fastq.paired(*fastqs)
    for i, _ in enumerate(stream):
        if until is not None and not i % 4096 and deadline.clock() > until:
            return


def _published(unit: Path, preset: str, why: str) -> AlignedBam | None:
    """The result a complete earlier run published in `unit`, or None."""
    bam = unit / "aligned.bam"
    if not (bam.is_file() and Path(str(bam) + ".bai").is_file()):
        return None
    return AlignedBam(str(bam), preset, why, cached=True, truncated=False,
                      n_reads=_count_note(unit))


def _align_and_publish(fastqs, index, preset, why, threads, d,
                       deadline: Deadline) -> AlignedBam:
    feed_until = deadline.share(FEED_SHARE)
    # More threads than CPUs only adds sort buffers (-m is per thread) and memory pressure.
    threads = max(1, min(int(threads), os.cpu_count() or 1))
    log(f"aligning the whole library with {aligner_of(preset)} ({threads} threads)")
    with work_dir(d) as work:
        unit_tmp = work / "unit"
        unit_tmp.mkdir()
        bam = unit_tmp / "aligned.bam"
        n, truncated = _align_sorted(fastqs, index, preset, threads, bam, feed_until, deadline,
                                     work)
        import pysam

        pysam.index(str(bam), str(bam) + ".bai")
        (unit_tmp / "n_reads.txt").write_text(str(n))
        # A partial alignment is kept apart, under its read count, so no full run trusts it.
        unit = d / (f"first{n}" if truncated else "full")
        try:
            os.rename(unit_tmp, unit)
        except OSError:
            if not _published(unit, preset, why):  # not another run's complete result
                raise ToolFailure(f"could not publish the alignment into the cache at {unit}") from None
    return AlignedBam(str(unit / "aligned.bam"), preset, why, cached=False,
                      truncated=truncated, n_reads=n)


def _count_note(unit: Path) -> int | None:
    try:
        return int((unit / "n_reads.txt").read_text())
    except (OSError, ValueError):
        return None


def _align_sorted(fastqs, index, preset, threads, out_bam, feed_until, deadline,
                  work) -> tuple[int, bool]:
    mm_cmd = aligner_command(preset, index, threads, paired=len(fastqs) == 2)
    sort_cmd = ["samtools", "sort", "-@", str(max(0, threads - 1)), "-m", "256M", "-O", "bam",
                "-T", str(work / "sorttmp"), "-o", str(out_bam), "-"]
    n = 0
    truncated = False

    def feed(stdin) -> None:
        nonlocal n, truncated
        write = stdin.write
        for rec in _stream(fastqs):
            write(fastq.as_text(rec))
            n += 1
            if feed_until is not None and n % 1000 == 0 and deadline.clock() > feed_until:
                truncated = True
                log(f"time budget: stopped feeding after {n} reads; result will be partial")
                break

    try:
        run_pipeline([mm_cmd, sort_cmd], finish_by(deadline), feed=feed,
                     names=[aligner_of(preset), "samtools sort"])
    except OutOfTime as why:
        raise why.refusal(f"--fastq {fastqs[0]}: {aligner_of(preset)} and samtools sort did not "
                          f"finish the {n} reads given {aligners.within_grace()}") from None
    if len(fastqs) == 2:
        n //= 2  # pairs, counted as fragments
    return n, truncated


def open_bam(path: str | Path, threads: int = 1):
    """A pysam handle on a coordinate-sorted, indexed BAM; InputError naming what is wrong.
    `threads` > 1 decompresses in htslib's background threads."""
    import pysam

    path = Path(input_file(path, "--bam", allow_empty=False))
    try:
        kind = magic(path)
    except OSError as exc:
        raise unreadable("--bam", path, exc) from None
    if kind == "CRAM":
        raise InputError(f"--bam {path}: CRAM is not supported; convert it to BAM with "
                         f"`samtools view -b -T REFERENCE.fa -o x.bam {path}` and index it")
    present = index_of(path)
    if present:  # before htslib opens it: a FIFO there would block it for ever
        _check_index(path, present)
    pysam.set_verbosity(0)  # htslib's own stderr lines would break the one-line error contract
    try:
        bam = pysam.AlignmentFile(str(path), "rb", threads=max(1, threads))
    except (ValueError, OSError) as exc:
        raise InputError(f"--bam {path}: not a readable BAM ({str(exc).strip()[:120]})") from None
    if not bam.has_index():
        bam.close()
        if present:
            raise InputError(f"--bam {path}: its index {present} is corrupt or unreadable; "
                             f"rebuild it with `samtools index {path}`")
        raise InputError(f"--bam {path}: no index (.bai/.csi) found; run `samtools index {path}` "
                         "(the BAM must be coordinate-sorted)")
    return bam


def index_of(bam: Path) -> Path | None:
    """The index htslib would load for `bam`: .csi before .bai, beside the name or its stem;
    like htslib, the first name that exists at all (a directory there hides the others)."""
    stem = bam.with_suffix("")
    for cand in (Path(f"{bam}.csi"), Path(f"{stem}.csi"), Path(f"{bam}.bai"), Path(f"{stem}.bai")):
        if cand.exists():
            return cand
    return None


# An index is a fraction of its BAM plus a genome's linear index; htslib loads a bigger one whole.
INDEX_SLACK = 16 << 20
INDEX_PER_BAM_BYTE = 8


def _check_index(bam: Path, index: Path) -> None:
    """InputError unless the index is a regular, readable file of a size this BAM can have."""
    input_file(index, f"--bam {bam}: its index")
    limit = INDEX_SLACK + INDEX_PER_BAM_BYTE * bam.stat().st_size
    if _index_bytes(index, limit) > limit:
        raise InputError(f"--bam {bam}: its index {index} holds over {limit:,} bytes, far more "
                         f"than an index of this BAM can; rebuild it with `samtools index {bam}`")


def _index_bytes(index: Path, limit: int) -> int:
    """The index's size as htslib loads it (a gzip-compressed one inflated), counted up to
    just past `limit`; what a corrupt stream holds up to where it breaks."""
    import gzip
    import zlib

    with open(index, "rb") as fh:
        if fh.read(2) != b"\x1f\x8b":
            return os.fstat(fh.fileno()).st_size
    total = 0
    with contextlib.suppress(OSError, EOFError, zlib.error), gzip.open(index, "rb") as fh:
        while total <= limit and (piece := fh.read(1 << 20)):
            total += len(piece)
    return total


SNIFF_READS = 5000


def check_sorted_and_indexed(bam, path: str) -> None:
    """InputError unless the BAM is coordinate-sorted and its index belongs to it.

    Reads the first SNIFF_READS records in file order (an unsorted BAM shows itself at once),
    then looks the first and last of them up through the index: a stale index (of another or
    an earlier file) cannot find them where the file has them."""
    so = bam.header.to_dict().get("HD", {}).get("SO")
    if so and so != "coordinate":
        raise InputError(f"--bam {path}: not coordinate-sorted (header SO:{so}); run "
                         f"`samtools sort -o sorted.bam {path}` and index that")
    seen = []
    last = (-1, -1)
    try:
        bam.reset()  # from the first record, wherever an earlier read left the handle
        for read in bam.fetch(until_eof=True):
            if read.is_unmapped or read.reference_id < 0:
                break  # unmapped reads come last in a sorted BAM
            here = (read.reference_id, read.reference_start)
            if here < last:
                raise InputError(f"--bam {path}: not coordinate-sorted (read "
                                 f"{read.query_name} at {read.reference_name}:"
                                 f"{read.reference_start + 1} comes after position "
                                 f"{last[1] + 1}); run `samtools sort` and index the result")
            last = here
            seen.append(read)
            if len(seen) >= SNIFF_READS:
                break
        for read in (seen[0], seen[-1]) if seen else ():
            found = any(r.query_name == read.query_name and r.reference_start == read.reference_start
                        for r in bam.fetch(read.reference_name, read.reference_start,
                                           read.reference_start + 1))
            if not found:
                raise InputError(f"--bam {path}: its index does not match the file (stale or "
                                 f"of another BAM); rebuild it with `samtools index {path}`")
    except (OSError, ValueError) as exc:
        raise unreadable_bam(path, exc) from None


def unreadable_bam(path: str, exc: Exception) -> InputError:
    """The error for a read htslib failed: a corrupt or cut-off record or block."""
    return InputError(f"--bam {path}: unreadable through its index or truncated "
                      f"({str(exc).strip()[:120]}); check the file and rebuild the index "
                      f"with `samtools index {path}`")


def fetch(bam, *region, **options):
    """bam.fetch(...), htslib's read errors as the InputError naming the BAM: records past
    the first ones check_sorted_and_indexed read are first read here."""
    reads = bam.fetch(*region, **options)
    while True:
        try:
            read = next(reads)
        except StopIteration:
            return
        except (OSError, ValueError) as exc:
            raise unreadable_bam(os.fsdecode(bam.filename), exc) from None
        yield read


# No aligner reports alignments this divergent; reads this far from the reference were
# aligned to another sequence that carries the same contig name and length.
MISMATCH_REFUSE = 0.3
MISMATCH_MIN_BASES = 2000
DIVERGENCE_SAMPLE_BASES = 50_000  # 25x the minimum: a precise share for ~20 ms


def refuse_if_divergent(path: str, mismatched: int, bases: int, ref_name: str) -> None:
    """The one rule `breakpoints` and `variants` apply to a BAM given with --bam: over
    MISMATCH_REFUSE of its aligned bases differing means another sequence of the same name."""
    if bases >= MISMATCH_MIN_BASES and mismatched > MISMATCH_REFUSE * bases:
        raise InputError(f"--bam {path}: {mismatched / bases:.0%} of its aligned bases differ "
                         f"from --reference {ref_name} (contig names and lengths match): it "
                         "was aligned to a different sequence of the same name")


def sampled_divergence(bam, ref: Reference, contigs: dict[str, int], min_mapq: int = 20,
                       max_bases: int = DIVERGENCE_SAMPLE_BASES,
                       contig: str | None = None) -> tuple[int, int]:
    """(bases differing from the reference, bases compared) over the first aligned bases of
    the BAM in file order (primary alignments, MAPQ >= min_mapq), up to max_bases; of one
    `contig` only (through the index) when given."""
    import numpy as np

    mism = total = 0
    if contig is None:
        bam.reset()  # from the first record, wherever an earlier read left the handle
    for read in fetch(bam, contig) if contig else fetch(bam, until_eof=True):
        if read.is_unmapped or read.reference_id < 0:
            break
        if (read.flag & SKIP_FOR_DIVERGENCE or read.mapping_quality < min_mapq
                or read.reference_name not in contigs):
            continue
        seq = read.query_sequence
        if not seq:
            continue
        q = np.frombuffer(seq.upper().encode(), dtype=np.uint8)
        refseq = ref.fetch(read.reference_name, read.reference_start,
                           read.reference_end).encode()
        r = np.frombuffer(refseq, dtype=np.uint8)
        for qs, qe, rs, re_ in _match_blocks(read):
            rb = r[rs - read.reference_start:re_ - read.reference_start]
            qb = q[qs:qe]
            known = (rb != ord("N")) & (qb != ord("N"))
            total += int(known.sum())
            mism += int((known & (rb != qb)).sum())
        if total >= max_bases:
            break
    return mism, total


def _match_blocks(read):
    """(query start, end, reference start, end) of each aligned (M/=/X) block of the CIGAR."""
    return match_blocks(read.cigartuples or (), read.reference_start)
