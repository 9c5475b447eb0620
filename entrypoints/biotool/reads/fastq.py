"""FASTQ reads for the read tools: a --fastq path checked before any work, records with the
SAM name limit on top of biotool.seqio's checks, a seeded sample, pair checks, and the preset
a library's shape calls for.

Every malformed input becomes one InputError naming the file and record, so a truncated
download never turns into a silently smaller library.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Iterator

from biotool import seqio
from biotool.files import input_file, magic, unreadable
from biotool.output import InputError
from biotool.seqio import Record

# samtools refuses read names longer than this (SAM spec QNAME limit).
MAX_NAME = 254


def check_path(path: Path) -> None:
    """InputError naming what is wrong with a --fastq path before anything reads it: not a
    regular file (never opened, so a FIFO cannot block), or a compression or format other
    than FASTQ, plain or gzip."""
    if str(path) == "-":
        raise InputError("--fastq -: reads cannot come from stdin (results are cached by the "
                         "file's content); write them to a file and give its path")
    input_file(path, "--fastq")
    try:
        kind = magic(path)
    except OSError as exc:
        raise unreadable("--fastq", path, exc) from None
    if kind in ("bzip2", "xz", "zstd"):
        raise InputError(f"--fastq {path}: unsupported compression ({kind}); give FASTQ plain "
                         "or gzip-compressed")
    if kind == "gzip":
        try:
            with seqio.open_path(path, "--fastq") as fh:
                inner = fh.read(4)
        except (OSError, EOFError, zlib.error):
            inner = b""  # a corrupt stream is reported with its record number by records()
        if inner.startswith(b"BAM\x01"):
            raise InputError(f"--fastq {path}: is a BAM file, not FASTQ; give it as --bam")
    elif kind is not None:
        raise InputError(f"--fastq {path}: unsupported format ({kind}); give reads in FASTQ, "
                         "plain or gzip")


def records(path: str | Path) -> Iterator[Record]:
    """Yield (name, seq, qual) for each record; InputError on anything malformed."""
    path = Path(path)
    check_path(path)
    for n, rec in enumerate(seqio.fastq(path, "--fastq"), 1):
        name = rec[0].split(None, 1)[0]
        if len(name) > MAX_NAME:
            raise InputError(f"--fastq {path}: record {n} has a read name of {len(name)} "
                             f"characters; at most {MAX_NAME} are allowed (SAM/BAM limit)")
        yield rec


def sample(path: str | Path, n: int, seed: int = 0) -> tuple[list[Record], int]:
    """A seeded uniform sample of at most `n` records, in file order, and the total read count."""
    return seqio.sample(records(path), n, seed)


def paired(path1: str | Path, path2: str | Path) -> Iterator[tuple[Record, Record]]:
    """Mates in lockstep; InputError when one file runs out before the other."""
    it1, it2 = records(path1), records(path2)
    n = 0
    while True:
        r1 = next(it1, None)
        r2 = next(it2, None)
        if r1 is None and r2 is None:
            return
        if r1 is None or r2 is None:
            short, other = (path1, path2) if r1 is None else (path2, path1)
            raise InputError(f"--fastq {short}: has {n} reads but its mate file {other} has "
                             "more; paired files must hold the same reads in the same order")
        n += 1
        yield r1, r2


def as_text(rec: Record) -> bytes:
    name, seq, qual = rec
    return b"@" + name + b"\n" + seq + b"\n+\n" + qual + b"\n"


def library_shape(recs: list[Record]) -> dict:
    """Median length and mean base quality of a sample, for choosing a preset."""
    if not recs:
        return {"median_length": 0, "mean_quality": 0.0}
    lengths = sorted(len(r[1]) for r in recs)
    qsum = sum(sum(r[2]) - 33 * len(r[2]) for r in recs[:2000])
    qlen = sum(len(r[2]) for r in recs[:2000]) or 1
    return {"median_length": lengths[len(lengths) // 2], "mean_quality": round(qsum / qlen, 1)}


def choose_preset(recs: list[Record], preset: str) -> tuple[str, str]:
    """(preset, why): `preset` as given, or for "auto" the one the sample's shape calls for."""
    if preset != "auto":
        return preset, "given with --preset"
    return auto_preset(library_shape(recs))


SHORT_MAX = 350  # median read length up to which a library is short reads (Illumina reaches 300)


def auto_preset(shape: dict) -> tuple[str, str]:
    """The preset for a library shape, and why: short reads are short whatever their quality
    (a noisy Illumina run is still Illumina), so length alone picks the short-read path."""
    med, q = shape["median_length"], shape["mean_quality"]
    if med <= SHORT_MAX:
        return "sr", (f"median read length {med} <= {SHORT_MAX}: short reads (bwa mem), "
                      f"whatever their mean quality ({q})")
    return "map-ont", (f"median read length {med}, mean quality {q}: long reads (minimap2 "
                       "-x map-ont; use --preset map-pb for PacBio CLR)")
