"""Whole-library alignment to a sorted, indexed BAM, cached by the content of its inputs.

Reads are validated in Python as they stream into the minimap2 binary (so a truncated or
corrupt FASTQ fails loudly), minimap2's SAM goes straight into `samtools sort`, and the BAM
and its index are published with os.replace: a later run never trusts a half-written file.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

from biotool.cache import atomic_path, content_key, entry_dir
from biotool.output import InputError, ToolFailure
from biotool.progress import log
from biotool.reads import fastq
from biotool.reads.reference import Reference

SHAPE_SAMPLE = 2000
# Stop feeding reads at this share of the time budget; the rest is for sorting and counting.
FEED_SHARE = 0.6


def choose_preset(fastqs: list[Path], preset: str) -> tuple[str, str]:
    if preset != "auto":
        return preset, "given with --preset"
    head = []
    for rec in fastq.records(fastqs[0]):
        head.append(rec)
        if len(head) >= SHAPE_SAMPLE:
            break
    return fastq.auto_preset(fastq.library_shape(head))


def _stream(fastqs: list[Path]):
    """Records to feed minimap2: one file, or two mate files interleaved (fragment mode pairs them)."""
    if len(fastqs) == 1:
        yield from fastq.records(fastqs[0])
    elif len(fastqs) == 2:
        for r1, r2 in fastq.paired(fastqs[0], fastqs[1]):
            yield r1
            yield r2
    else:
        raise InputError("--fastq: give one file, or two mate files of one paired library")


def library_bam(fastqs: list[str | Path], ref: Reference, preset: str = "auto",
                threads: int = 2, deadline: float | None = None, start: float | None = None) -> dict:
    """Align every read to `ref`; return {bam, preset, n_reads, truncated, cached, ...}."""
    fastqs = [Path(f) for f in fastqs]
    for f in fastqs:
        if not f.is_file():
            raise InputError(f"--fastq {f}: no such file")
    preset, why = choose_preset(fastqs, preset)
    if len(fastqs) == 2 and preset != "sr":
        log(f"paired files with preset {preset}: mates are aligned as single reads")
    index, index_sha = ref.index(preset)
    key = content_key(*fastqs, reference=ref.sha256, index=index_sha, preset=preset,
                      paired=len(fastqs) == 2)
    d = entry_dir("bam", key)
    final = d / "aligned.bam"
    if final.exists() and Path(str(final) + ".bai").exists():
        return {"bam": str(final), "preset": preset, "preset_reason": why, "cached": True,
                "truncated": False, "n_reads": _count_note(d)}
    start = start or time.monotonic()
    feed_until = None if deadline is None else start + (deadline - start) * FEED_SHARE
    log(f"aligning the whole library with minimap2 -x {preset} ({threads} threads)")
    with tempfile.TemporaryDirectory(dir=d, prefix=".work.") as work:
        mm_err = Path(work) / "minimap2.err"
        part = Path(work) / "sorted.bam"
        n, truncated = _align_sorted(fastqs, index, preset, threads, part, mm_err,
                                     feed_until, Path(work))
        import pysam

        pysam.index(str(part), str(part) + ".bai")
        if truncated:
            final = d / f"aligned.first{n}.bam"
        with atomic_path(Path(str(final) + ".bai"), suffix=".bai") as tmp_bai:
            os.replace(str(part) + ".bai", tmp_bai)
        with atomic_path(final, suffix=".bam") as tmp_bam:
            os.replace(part, tmp_bam)
    if not truncated:
        with atomic_path(d / "n_reads.txt") as tmp:
            tmp.write_text(str(n))
    return {"bam": str(final), "preset": preset, "preset_reason": why, "cached": False,
            "truncated": truncated, "n_reads": n}


def _count_note(d: Path) -> int | None:
    try:
        return int((d / "n_reads.txt").read_text())
    except (OSError, ValueError):
        return None


def _align_sorted(fastqs, index, preset, threads, out_bam, err_path, feed_until, work) -> tuple[int, bool]:
    threads = max(1, int(threads))
    mm_cmd = ["minimap2", "-a", "-x", preset, "-t", str(threads), "--secondary=no",
              str(index), "-"]
    sort_cmd = ["samtools", "sort", "-@", str(max(0, threads - 1)), "-m", "256M", "-O", "bam",
                "-T", str(work / "sorttmp"), "-o", str(out_bam), "-"]
    n = 0
    truncated = False
    with open(err_path, "wb") as err, open(work / "sort.err", "wb") as serr:
        try:
            mm = subprocess.Popen(mm_cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
            srt = subprocess.Popen(sort_cmd, stdin=mm.stdout, stdout=subprocess.DEVNULL, stderr=serr)
        except FileNotFoundError as exc:
            raise ToolFailure(f"{exc.filename} is not installed (needed to align the library)") from None
        mm.stdout.close()  # samtools holds the read end; minimap2 sees SIGPIPE if it dies
        try:
            write = mm.stdin.write
            for rec in _stream(fastqs):
                write(fastq.as_text(rec))
                n += 1
                if feed_until is not None and n % 1000 == 0 and time.monotonic() > feed_until:
                    truncated = True
                    log(f"time budget: stopped feeding after {n} reads; result will be partial")
                    break
            mm.stdin.close()
        except BaseException as exc:
            for p in (mm, srt):
                p.kill()
            for p in (mm, srt):
                p.wait()
            if isinstance(exc, BrokenPipeError):
                raise ToolFailure(f"minimap2 failed: {_tail(err_path)}") from None
            raise
        mm_rc, sort_rc = mm.wait(), srt.wait()
    if mm_rc != 0:
        raise ToolFailure(f"minimap2 -x {preset} failed (exit {mm_rc}): {_tail(err_path)}")
    if sort_rc != 0:
        raise ToolFailure(f"samtools sort failed (exit {sort_rc}): {_tail(work / 'sort.err')}")
    if len(fastqs) == 2:
        n //= 2  # pairs, counted as fragments
    return n, truncated


def _tail(path: Path) -> str:
    try:
        lines = [l for l in path.read_text(errors="replace").splitlines() if l.strip()]
    except OSError:
        return "no message"
    errs = [l for l in lines if "ERROR" in l or "error" in l.lower()]
    return (errs or lines or ["no message"])[-1][:300]


def open_bam(path: str | Path):
    """A pysam handle on a coordinate-sorted, indexed BAM; InputError naming what is wrong."""
    import pysam

    path = Path(path)
    if not path.is_file():
        raise InputError(f"--bam {path}: no such file")
    try:
        bam = pysam.AlignmentFile(str(path), "rb")
    except (ValueError, OSError) as exc:
        raise InputError(f"--bam {path}: not a readable BAM ({str(exc).strip()[:120]})") from None
    if not bam.has_index():
        bam.close()
        raise InputError(f"--bam {path}: no index (.bai/.csi) found; run `samtools index {path}` "
                         "(the BAM must be coordinate-sorted)")
    return bam
