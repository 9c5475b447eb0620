"""Reading query sequences: FASTA or FASTQ (plain or gzip, a file or stdin), validated,
sampled with a seed."""

from __future__ import annotations

import gzip
import random
import re
from pathlib import Path
from typing import Iterator

from biotool.output import InputError

# IUPAC nucleotide codes; anything else in a sequence line means the file is not what it claims.
_NUC = re.compile(r"^[ACGTUNRYKMSWBDHVacgtunrykmswbdhv.\-*]*$")


def _open_text(path: Path, what: str):
    """A text stream of a plain or gzip file, or of stdin for "-"; opened once (pipes work).

    A named path is checked by stat first (biotool.files), so a FIFO is refused, never opened.
    """
    import io
    import sys

    from biotool.files import input_file

    if str(path) == "-":
        raw = sys.stdin.buffer
    else:
        input_file(path, what)
        try:
            raw = open(path, "rb")
        except OSError as exc:
            raise InputError(f"{_name(path)}: cannot read it ({exc.strerror or exc})") from None
    buf = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
    try:
        gz = buf.peek(2)[:2] == b"\x1f\x8b"
    except OSError as exc:
        raise InputError(f"{_name(path)}: cannot read it ({exc.strerror or exc})") from None
    stream = gzip.GzipFile(fileobj=buf) if gz else buf
    return io.TextIOWrapper(stream, errors="replace")


# Longest line read: one endless line (a sparse file, a binary blob) is refused after this
# many characters instead of being read whole into memory; a genome on one line still fits.
MAX_LINE = 1 << 26


def _name(path) -> str:
    return "stdin (-)" if str(path) == "-" else str(path)


def _lines(path: Path, what: str) -> Iterator[str]:
    """Lines of the file; a read error or a corrupt gzip is an InputError naming the file."""
    import zlib

    try:
        with _open_text(path, what) as fh:
            lineno = 0
            while line := fh.readline(MAX_LINE):
                lineno += 1
                if "\x00" in line[:4096]:
                    raise InputError(f"{_name(path)}: line {lineno}: NUL bytes: binary data, "
                                     "not FASTA/FASTQ text")
                if len(line) >= MAX_LINE and not line.endswith("\n"):
                    raise InputError(f"{_name(path)}: line {lineno} is longer than "
                                     f"{MAX_LINE:,} characters (not FASTA/FASTQ text?)")
                yield line
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{_name(path)}: cannot read it ({getattr(exc, 'strerror', None) or exc})") \
            from None


def _clean_id(header: str, path: Path, lineno: int) -> str:
    ident = header.split()[0] if header.split() else ""
    if not ident:
        raise InputError(f"{_name(path)}: line {lineno}: record header has no identifier")
    return ident


def _check_nucleotide(ident: str, seq: str, path: Path, lineno: int) -> str:
    """The sequence upper-cased with U as T; InputError when it reads as protein."""
    seq = seq.upper().replace("U", "T")
    # IUPAC ambiguity letters are also amino-acid letters (M, K, S, ...): a real nucleotide
    # sequence is nearly all A/C/G/T/N, a protein rarely.
    core = sum(seq.count(c) for c in "ACGTN")
    if seq and core < 0.75 * len(seq):
        raise InputError(f"{_name(path)}: line {lineno}: record {ident} looks like protein "
                         f"({core / len(seq):.0%} A/C/G/T/N); taxonomy searches nucleotides "
                         f"(blastn)")
    return seq


def read_fasta(path: str | Path, what: str = "--fasta") -> Iterator[tuple[str, str]]:
    """Yield (identifier, sequence) per record (empty ones too: the caller counts and skips
    them); raises InputError naming the line at fault."""
    path = Path(path)
    ident, chunks, start = None, [], 0
    for lineno, line in enumerate(_lines(path, what), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith(">"):
            if ident is not None:
                yield ident, _check_nucleotide(ident, "".join(chunks), path, start)
            ident, chunks, start = _clean_id(line[1:], path, lineno), [], lineno
        elif ident is None:
            raise InputError(f"{_name(path)}: line {lineno}: not FASTA (expected '>' header first)")
        elif not _NUC.match(line):
            raise InputError(f"{_name(path)}: line {lineno}: not a nucleotide sequence line "
                             f"(protein or binary? taxonomy searches nucleotides)")
        else:
            chunks.append(line)
    if ident is not None:
        yield ident, _check_nucleotide(ident, "".join(chunks), path, start)


def read_fastq(path: str | Path, what: str = "--fastq") -> Iterator[tuple[str, str]]:
    """Yield (identifier, sequence) per four-line FASTQ record (zero-length reads, which
    trimmers leave behind, too: the caller counts and skips them)."""
    path = Path(path)
    lines = _lines(path, what)
    lineno = 0
    for head in lines:
        lineno += 1
        if not head.strip():
            continue
        seq, plus, qual = (next(lines, "") for _ in range(3))
        if not head.startswith("@"):
            raise InputError(f"{_name(path)}: line {lineno}: not FASTQ (expected '@' header)")
        if not plus.startswith("+"):
            raise InputError(f"{_name(path)}: line {lineno + 2}: not FASTQ (expected '+' line)")
        seq, qual = seq.strip(), qual.strip()
        if len(seq) != len(qual):
            raise InputError(f"{_name(path)}: line {lineno + 3}: quality length differs from "
                             f"sequence length (truncated FASTQ?)")
        if not _NUC.match(seq):
            raise InputError(f"{_name(path)}: line {lineno + 1}: not a nucleotide sequence")
        ident = _clean_id(head[1:], path, lineno)
        yield ident, _check_nucleotide(ident, seq, path, lineno + 1)
        lineno += 3


def _searchable(records: Iterator[tuple[str, str]], skipped: dict) -> Iterator[tuple[str, str]]:
    """Records with at least one A/C/G/T; empty and N-only ones are counted in `skipped`."""
    for ident, seq in records:
        if not seq:
            skipped["empty"] += 1
        elif not seq.strip("N"):
            skipped["no_acgt"] += 1
        else:
            yield ident, seq


def sample(records: Iterator[tuple[str, str]], n: int, seed: int = 0) -> tuple[list, int]:
    """A seeded uniform sample of `n` records (reservoir), in input order; and the total seen.

    Reservoir sampling reads a large FASTQ once in constant memory.
    """
    rng = random.Random(seed)
    reservoir: list[tuple[int, tuple[str, str]]] = []
    total = 0
    for i, rec in enumerate(records):
        total += 1
        if len(reservoir) < n:
            reservoir.append((i, rec))
        else:
            j = rng.randrange(i + 1)
            if j < n:
                reservoir[j] = (i, rec)
    reservoir.sort(key=lambda t: t[0])
    return [rec for _, rec in reservoir], total


def load_queries(fasta: str | None, fastq: str | None, n: int, seed: int = 0) -> dict:
    """The query set: {queries: [(id, seq)], total, sampled, source, format}."""
    if (fasta is None) == (fastq is None):
        raise InputError("taxonomy: give exactly one of --fasta or --fastq")
    if n < 1:
        raise InputError(f"--sample: must be at least 1, got {n}")
    fmt, path = ("fasta", fasta) if fasta else ("fastq", fastq)
    reader = read_fasta if fmt == "fasta" else read_fastq
    skipped = {"empty": 0, "no_acgt": 0}
    queries, total = sample(_searchable(reader(path), skipped), n, seed)
    if not queries:
        if any(skipped.values()):
            raise InputError(f"{_name(path)}: no searchable {fmt.upper()} records ({skipped['empty']} "
                             f"empty, {skipped['no_acgt']} with no A/C/G/T base)")
        raise InputError(f"{_name(path)}: no {fmt.upper()} records")
    # Unique ids: reports are merged by query id, so duplicates would silently collapse.
    seen: dict[str, int] = {}
    unique = []
    for ident, seq in queries:
        k = seen.get(ident, 0)
        seen[ident] = k + 1
        unique.append((ident if k == 0 else f"{ident}.{k}", seq))
    return {"queries": unique, "total": total, "sampled": total > len(unique),
            "skipped": skipped, "source": str(path), "format": fmt}


def to_fasta(queries: list[tuple[str, str]]) -> str:
    return "".join(f">{ident}\n{seq}\n" for ident, seq in queries)
