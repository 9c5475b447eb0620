"""Reading query sequences: FASTA or FASTQ (plain or gzip), validated, sampled with a seed."""

from __future__ import annotations

import gzip
import random
import re
from pathlib import Path
from typing import Iterator

from biotool.output import InputError

# IUPAC nucleotide codes; anything else in a sequence line means the file is not what it claims.
_NUC = re.compile(r"^[ACGTUNRYKMSWBDHVacgtunrykmswbdhv.\-*]*$")


def _open_text(path: Path):
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a regular file")
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rt", errors="replace") if gz else open(path, errors="replace")


def _clean_id(header: str, path: Path, lineno: int) -> str:
    ident = header.split()[0] if header.split() else ""
    if not ident:
        raise InputError(f"{path}: line {lineno}: record header has no identifier")
    return ident


def read_fasta(path: str | Path) -> Iterator[tuple[str, str]]:
    """Yield (identifier, sequence) per record; raises InputError naming the line at fault."""
    path = Path(path)
    ident, chunks, start = None, [], 0
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            if line.startswith(">"):
                if ident is not None:
                    yield _finish(ident, chunks, path, start)
                ident, chunks, start = _clean_id(line[1:], path, lineno), [], lineno
            elif ident is None:
                raise InputError(f"{path}: line {lineno}: not FASTA (expected '>' header first)")
            elif not _NUC.match(line):
                raise InputError(f"{path}: line {lineno}: not a nucleotide sequence line")
            else:
                chunks.append(line)
    if ident is not None:
        yield _finish(ident, chunks, path, start)


def _finish(ident: str, chunks: list[str], path: Path, lineno: int) -> tuple[str, str]:
    seq = "".join(chunks).upper().replace("U", "T")
    if not seq:
        raise InputError(f"{path}: line {lineno}: record {ident} has an empty sequence")
    return ident, seq


def read_fastq(path: str | Path) -> Iterator[tuple[str, str]]:
    """Yield (identifier, sequence) per four-line FASTQ record."""
    path = Path(path)
    with _open_text(path) as fh:
        lineno = 0
        while True:
            head = fh.readline()
            lineno += 1
            if not head:
                return
            if not head.strip():
                continue
            seq, plus, qual = fh.readline(), fh.readline(), fh.readline()
            if not head.startswith("@"):
                raise InputError(f"{path}: line {lineno}: not FASTQ (expected '@' header)")
            if not plus.startswith("+"):
                raise InputError(f"{path}: line {lineno + 2}: not FASTQ (expected '+' line)")
            seq, qual = seq.strip(), qual.strip()
            if len(seq) != len(qual):
                raise InputError(f"{path}: line {lineno + 3}: quality length differs from "
                                 f"sequence length (truncated FASTQ?)")
            if not seq or not _NUC.match(seq):
                raise InputError(f"{path}: line {lineno + 1}: not a nucleotide sequence")
            yield _clean_id(head[1:], path, lineno), seq.upper().replace("U", "T")
            lineno += 3


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
    queries, total = sample(reader(path), n, seed)
    if not queries:
        raise InputError(f"{path}: no {fmt.upper()} records")
    # Unique ids: reports are merged by query id, so duplicates would silently collapse.
    seen: dict[str, int] = {}
    unique = []
    for ident, seq in queries:
        k = seen.get(ident, 0)
        seen[ident] = k + 1
        unique.append((ident if k == 0 else f"{ident}.{k}", seq))
    return {"queries": unique, "total": total, "sampled": total > len(unique),
            "source": str(path), "format": fmt}


def to_fasta(queries: list[tuple[str, str]]) -> str:
    return "".join(f">{ident}\n{seq}\n" for ident, seq in queries)
