"""Sequence input: opening a reads or query file (plain or gzip, checked by kind before it is
opened), FASTQ and FASTA records with one-line errors naming the file and the record or line,
and one seeded reservoir sampler.

pysam's FastxFile and Biopython's parsers neither bound a line's length nor name the record at
fault, so each format is one hand loop over bounded line reads.
"""

from __future__ import annotations

import gzip
import io
import random
import sys
import zlib
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, TypeVar

from biotool.files import input_file, unreadable
from biotool.output import InputError

Record = tuple[bytes, bytes, bytes]  # FASTQ: name line (without '@'), sequence, qualities

# Phred+33 quality characters, '!' to '~'.
_QUALITIES = bytes(range(33, 127))
# IUPAC nucleotide codes (and the gap/unknown marks minimap2 reads as N): anything else in a
# sequence line means this is not DNA/RNA (a protein FASTQ, or text).
_NUCLEOTIDES = b"ACGTUNRYKMSWBDHVacgtunrykmswbdhv.-"
# A query FASTA may also mark a stop with '*'; a FASTQ may not (SAM reads a lone '*' as "no
# sequence").
_FASTA_LETTERS = _NUCLEOTIDES + b"*"
# Longest line read, a name line or a sequence line, FASTQ and FASTA alike: a file of one
# endless line (a sparse file, a binary blob) is refused after this many bytes instead of
# being read whole into memory; a genome on one line still fits.
MAX_LINE = 1 << 26

T = TypeVar("T")


def shown(path: str | Path) -> str:
    """The path as error lines name it ("-" is stdin)."""
    return "stdin (-)" if str(path) == "-" else str(path)


def open_path(path: str | Path, what: str) -> BinaryIO:
    """A binary stream of the file, gunzipped when it starts with gzip's magic; "-" is stdin,
    read once (the magic is peeked, not consumed). A named path is checked by stat first
    (biotool.files), so a FIFO, device or folder is refused, never opened."""
    if str(path) == "-":
        buf = sys.stdin.buffer
        if not isinstance(buf, io.BufferedReader):
            buf = io.BufferedReader(buf)
    else:
        input_file(path, what)
        try:
            buf = open(path, "rb")
        except OSError as exc:
            raise unreadable(what, path, exc) from None
    try:
        gz = buf.peek(2)[:2] == b"\x1f\x8b"
    except OSError as exc:
        buf.close()
        raise unreadable(what, path, exc) from None
    if not gz:
        return buf
    if str(path) == "-":
        return gzip.GzipFile(fileobj=buf)
    buf.close()  # gzip.open closes the file it opens; a GzipFile over ours would leave it open
    return gzip.open(path, "rb")


def _bad_bytes(line: bytes) -> str | None:
    """What makes a line unusable downstream (NUL, non-ASCII or control bytes), or None."""
    if b"\x00" in line:
        return "a NUL byte"
    if not line.isascii():
        return "non-ASCII bytes"
    if any(b < 32 and b != 9 for b in line):
        return "control characters"
    return None


def _check_record(at: str, n: int, head: bytes, seq: bytes, qual: bytes) -> None:
    """The checks samtools and minimap2 would otherwise fail on later, naming no file.

    The fast tests (isalpha, isascii, translate, all in C) pass for every well-formed record;
    the slow path only runs to word the error."""
    if not head[1:].split(None, 1):
        raise InputError(f"{at}: record {n} has an empty read name")
    if not head.isascii() or b"\x00" in head:
        raise InputError(f"{at}: record {n} has {_bad_bytes(head)} in its name line")
    if seq and not seq.isalpha():
        bad = _bad_bytes(seq)  # other punctuation ('.', '-') is read as N by minimap2
        if bad:
            raise InputError(f"{at}: record {n} has {bad} in its sequence")
    odd = seq.translate(None, _NUCLEOTIDES)
    if odd:
        raise InputError(f"{at}: record {n} has {chr(odd[0])!r} in its sequence, which is not "
                         "a nucleotide code (protein or text?); reads must be DNA or RNA "
                         "(IUPAC codes)")
    odd = qual.translate(None, _QUALITIES)
    if odd:
        bad = _bad_bytes(odd)
        if bad is None or bad == "control characters":
            bad = (f"a quality character below '!' (byte {odd[0]})" if odd[0] < 33 else
                   f"a quality character above '~' (byte {odd[0]})")
        raise InputError(f"{at}: record {n} has {bad} in its qualities; qualities are "
                         "Phred+33, '!' to '~'")


def fastq(path: str | Path, what: str = "--fastq") -> Iterator[Record]:
    """Yield (name line, seq, qual) per record; InputError naming the file and the record on
    anything malformed, a corrupt gzip stream, or no record at all."""
    at = f"{what} {path}"
    fh = open_path(path, what)
    n = 0
    try:
        with fh:
            readline = fh.readline
            while True:
                head = readline(MAX_LINE)
                if not head:
                    break
                if head[:1] != b"@":
                    if n == 0 and head[:1] == b">":
                        raise InputError(f"{at}: this is FASTA, not FASTQ (no base qualities); "
                                         "give reads in FASTQ")
                    if not head.strip():  # trailing blank lines are harmless; inner ones are not
                        rest = readline()
                        while rest and not rest.strip():
                            rest = readline()
                        if not rest:
                            break
                        raise InputError(f"{at}: blank line inside the file after record {n}")
                    if n == 0 and _bad_bytes(head[:64]):
                        raise InputError(f"{at}: not FASTQ text (starts with "
                                         f"{_bad_bytes(head[:64])})")
                    raise InputError(f"{at}: record {n + 1} does not start with '@'")
                if len(head) >= MAX_LINE and not head.endswith(b"\n"):
                    raise InputError(f"{at}: record {n + 1}'s name line is longer than "
                                     f"{MAX_LINE:,} bytes (not FASTQ?)")
                seq = readline(MAX_LINE)
                if len(seq) >= MAX_LINE and not seq.endswith(b"\n"):
                    raise InputError(f"{at}: record {n + 1}'s sequence is longer than "
                                     f"{MAX_LINE:,} bases (not FASTQ?)")
                seq = seq.rstrip(b"\r\n")
                plus = readline(MAX_LINE)
                qual = readline(MAX_LINE).rstrip(b"\r\n")
                if not plus or plus[:1] != b"+" or (not qual and seq):
                    name = head[1:].split()
                    raise InputError(f"{at}: truncated or malformed at record {n + 1} "
                                     f"({name[0].decode(errors='replace')[:80] if name else '?'})")
                if len(seq) != len(qual):
                    raise InputError(f"{at}: record {n + 1} has {len(seq)} bases but "
                                     f"{len(qual)} qualities (truncated or corrupt)")
                n += 1
                head = head.rstrip(b"\r\n")
                _check_record(at, n, head, seq, qual)
                yield head[1:], seq, qual
    except (gzip.BadGzipFile, EOFError, zlib.error, OSError) as exc:
        raise InputError(f"{at}: gzip stream is corrupt or truncated after record {n} "
                         f"({type(exc).__name__})") from None
    if n == 0:
        raise InputError(f"{at}: empty, no reads")


def fasta(path: str | Path, what: str = "--fasta") -> Iterator[tuple[str, str, int]]:
    """Yield (identifier, sequence, line of its header) per record, empty ones too (the caller
    decides what they mean); InputError naming the line at fault."""
    name = shown(path)
    ident, chunks, start, lineno = None, [], 0, 0
    try:
        with open_path(path, what) as fh:
            while raw := fh.readline(MAX_LINE):
                lineno += 1
                if b"\x00" in raw[:4096]:
                    raise InputError(f"{name}: line {lineno}: NUL bytes: binary data, not "
                                     "FASTA/FASTQ text")
                if len(raw) >= MAX_LINE and not raw.endswith(b"\n"):
                    raise InputError(f"{name}: line {lineno} is longer than {MAX_LINE:,} "
                                     "characters (not FASTA/FASTQ text?)")
                line = raw.strip()
                if not line:
                    continue
                if line[:1] == b">":
                    if ident is not None:
                        yield ident, "".join(chunks), start
                    words = line[1:].split(None, 1)
                    if not words:
                        raise InputError(f"{name}: line {lineno}: record header has no "
                                         "identifier")
                    ident, chunks, start = words[0].decode(errors="replace"), [], lineno
                elif ident is None:
                    raise InputError(f"{name}: line {lineno}: not FASTA (expected '>' header "
                                     "first)")
                elif line.translate(None, _FASTA_LETTERS):
                    raise InputError(f"{name}: line {lineno}: not a nucleotide sequence line "
                                     "(protein or binary? taxonomy searches nucleotides)")
                else:
                    chunks.append(line.decode())
    except (OSError, EOFError, zlib.error) as exc:
        raise unreadable(what, path, exc) from None
    if ident is not None:
        yield ident, "".join(chunks), start


def sample(records: Iterable[T], n: int, seed: int = 0) -> tuple[list[T], int]:
    """A seeded uniform sample of at most `n` records, in input order, and the total seen.

    Reservoir sampling reads a large file once in constant memory."""
    rng = random.Random(seed)
    reservoir: list[tuple[int, T]] = []
    total = 0
    for rec in records:
        total += 1
        if len(reservoir) < n:
            reservoir.append((total, rec))
        else:
            j = rng.randrange(total)
            if j < n:
                reservoir[j] = (total, rec)
    reservoir.sort(key=lambda t: t[0])
    return [rec for _, rec in reservoir], total
