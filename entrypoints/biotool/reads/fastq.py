"""FASTQ reading with validation (plain or gzip), seeded sampling and pair checks.

Every malformed input becomes one InputError naming the file and record, so a truncated
download never turns into a silently smaller library.
"""

from __future__ import annotations

import gzip
import random
import zlib
from pathlib import Path
from typing import BinaryIO, Iterator

from biotool.files import input_file, magic
from biotool.output import InputError

Record = tuple[bytes, bytes, bytes]  # name line (without '@'), sequence, qualities


# samtools refuses read names longer than this (SAM spec QNAME limit).
MAX_NAME = 254
# Phred+33 quality characters, '!' to '~'.
_QUALITIES = bytes(range(33, 127))
# IUPAC nucleotide codes (and the gap/unknown marks minimap2 reads as N): anything else in a
# sequence line means this is not DNA/RNA (a protein FASTQ, or text).
_NUCLEOTIDES = b"ACGTUNRYKMSWBDHVacgtunrykmswbdhv.-"
# Longest name line and sequence line read: a file of one endless line (a sparse file, a
# binary blob) is refused after this many bytes instead of being read whole into memory.
MAX_HEAD = 1 << 16
MAX_SEQ = 1 << 26


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
        raise InputError(f"--fastq {path}: cannot be read ({exc.strerror or exc})") from None
    if kind in ("bzip2", "xz", "zstd"):
        raise InputError(f"--fastq {path}: unsupported compression ({kind}); give FASTQ plain "
                         "or gzip-compressed")
    if kind == "gzip":
        try:
            with gzip.open(path, "rb") as fh:
                inner = fh.read(4)
        except (OSError, EOFError, zlib.error):
            inner = b""  # a corrupt stream is reported with its record number by records()
        if inner.startswith(b"BAM\x01"):
            raise InputError(f"--fastq {path}: is a BAM file, not FASTQ; give it as --bam")
    elif kind is not None:
        raise InputError(f"--fastq {path}: unsupported format ({kind}); give reads in FASTQ, "
                         "plain or gzip")


def _open(path: Path) -> BinaryIO:
    check_path(path)
    try:
        if magic(path) == "gzip":
            return gzip.open(path, "rb")
        return open(path, "rb")
    except OSError as exc:
        raise InputError(f"--fastq {path}: cannot be read ({exc.strerror or exc})") from None


def _bad_bytes(line: bytes) -> str | None:
    """What makes a line unusable downstream (NUL, non-ASCII or control bytes), or None."""
    if b"\x00" in line:
        return "a NUL byte"
    if not line.isascii():
        return "non-ASCII bytes"
    if any(b < 32 and b != 9 for b in line):
        return "control characters"
    return None


def _check_record(path: Path, n: int, head: bytes, seq: bytes, qual: bytes) -> None:
    """The checks samtools and minimap2 would otherwise fail on later, naming no file.

    The fast tests (isalpha, isascii, translate, all in C) pass for every well-formed record;
    the slow path only runs to word the error."""
    name = head[1:].split(None, 1)[0] if head[1:].strip() else b""
    if not name:
        raise InputError(f"--fastq {path}: record {n} has an empty read name")
    if len(name) > MAX_NAME:
        raise InputError(f"--fastq {path}: record {n} has a read name of {len(name)} "
                         f"characters; at most {MAX_NAME} are allowed (SAM/BAM limit)")
    if not head.isascii() or b"\x00" in head:
        raise InputError(f"--fastq {path}: record {n} has {_bad_bytes(head)} in its name line")
    if seq and not seq.isalpha():
        bad = _bad_bytes(seq)  # other punctuation ('.', '-') is read as N by minimap2
        if bad:
            raise InputError(f"--fastq {path}: record {n} has {bad} in its sequence")
    odd = seq.translate(None, _NUCLEOTIDES)
    if odd:
        raise InputError(f"--fastq {path}: record {n} has {chr(odd[0])!r} in its sequence, "
                         "which is not a nucleotide code (protein or text?); reads must be DNA "
                         "or RNA (IUPAC codes)")
    odd = qual.translate(None, _QUALITIES)
    if odd:
        bad = _bad_bytes(odd)
        if bad is None or bad == "control characters":
            bad = (f"a quality character below '!' (byte {odd[0]})" if odd[0] < 33 else
                   f"a quality character above '~' (byte {odd[0]})")
        raise InputError(f"--fastq {path}: record {n} has {bad} in its qualities; qualities "
                         "are Phred+33, '!' to '~'")


def records(path: str | Path) -> Iterator[Record]:
    """Yield (name, seq, qual) for each record; InputError on anything malformed."""
    path = Path(path)
    fh = _open(path)
    n = 0
    try:
        with fh:
            readline = fh.readline
            while True:
                head = readline(MAX_HEAD)
                if not head:
                    break
                if head[:1] != b"@":
                    if n == 0 and head[:1] == b">":
                        raise InputError(f"--fastq {path}: this is FASTA, not FASTQ (no base "
                                         "qualities); give reads in FASTQ")
                    if not head.strip():  # trailing blank lines are harmless; inner ones are not
                        rest = readline()
                        while rest and not rest.strip():
                            rest = readline()
                        if not rest:
                            break
                        raise InputError(f"--fastq {path}: blank line inside the file "
                                         f"after record {n}")
                    if n == 0 and _bad_bytes(head[:64]):
                        raise InputError(f"--fastq {path}: not FASTQ text (starts with "
                                         f"{_bad_bytes(head[:64])})")
                    raise InputError(f"--fastq {path}: record {n + 1} does not start with '@'")
                if len(head) >= MAX_HEAD and not head.endswith(b"\n"):
                    raise InputError(f"--fastq {path}: record {n + 1}'s name line is longer than "
                                     f"{MAX_HEAD:,} bytes (not FASTQ?)")
                seq = readline(MAX_SEQ)
                if len(seq) >= MAX_SEQ and not seq.endswith(b"\n"):
                    raise InputError(f"--fastq {path}: record {n + 1}'s sequence is longer than "
                                     f"{MAX_SEQ:,} bases (not FASTQ?)")
                seq = seq.rstrip(b"\r\n")
                plus = readline(MAX_HEAD)
                qual = readline(MAX_SEQ).rstrip(b"\r\n")
                if not plus or plus[:1] != b"+" or (not qual and seq):
                    raise InputError(f"--fastq {path}: truncated or malformed at record {n + 1} "
                                     f"({head[1:].split()[0].decode(errors='replace')[:80] if head[1:].split() else '?'})")
                if len(seq) != len(qual):
                    raise InputError(f"--fastq {path}: record {n + 1} has {len(seq)} bases but "
                                     f"{len(qual)} qualities (truncated or corrupt)")
                n += 1
                head = head.rstrip(b"\r\n")
                _check_record(path, n, head, seq, qual)
                yield head[1:], seq, qual
    except (gzip.BadGzipFile, EOFError, zlib.error, OSError) as exc:
        raise InputError(f"--fastq {path}: gzip stream is corrupt or truncated after "
                         f"record {n} ({type(exc).__name__})") from None
    if n == 0:
        raise InputError(f"--fastq {path}: empty, no reads")


def sample(path: str | Path, n: int, seed: int = 0) -> tuple[list[Record], int]:
    """A seeded uniform sample of at most `n` records (reservoir), and the total read count."""
    if n < 1:
        raise InputError("--sample must be at least 1")
    rng = random.Random(seed)
    keep: list[Record] = []
    total = 0
    for rec in records(path):
        total += 1
        if len(keep) < n:
            keep.append(rec)
        else:
            j = rng.randrange(total)
            if j < n:
                keep[j] = rec
    return keep, total


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
