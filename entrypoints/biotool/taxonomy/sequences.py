"""Query sequences for taxonomy: FASTA or FASTQ records read by biotool.seqio (plain or gzip,
a file or stdin), upper-cased, refused when they read as protein, and sampled with a seed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from biotool import seqio
from biotool.output import InputError
from commandline.choice import exactly_one


def _check_nucleotide(ident: str, seq: str, path: Path, lineno: int) -> str:
    """The sequence upper-cased with U as T; InputError when it reads as protein."""
    seq = seq.upper().replace("U", "T")
    # IUPAC ambiguity letters are also amino-acid letters (M, K, S, ...): a real nucleotide
    # sequence is nearly all A/C/G/T/N, a protein rarely.
    core = sum(seq.count(c) for c in "ACGTN")
    if seq and core < 0.75 * len(seq):
        raise InputError(f"{seqio.shown(path)}: line {lineno}: record {ident} looks like protein "
                         f"({core / len(seq):.0%} A/C/G/T/N); taxonomy searches nucleotides "
                         f"(blastn)")
    return seq


def read_fasta(path: str | Path, what: str = "--fasta") -> Iterator[tuple[str, str]]:
    """Yield (identifier, sequence) per record (empty ones too: the caller counts and skips
    them); raises InputError naming the line at fault."""
    for ident, seq, lineno in seqio.fasta(path, what):
        yield ident, _check_nucleotide(ident, seq, path, lineno)


def read_fastq(path: str | Path, what: str = "--fastq") -> Iterator[tuple[str, str]]:
    """Yield (identifier, sequence) per FASTQ record (zero-length reads, which trimmers leave
    behind, too: the caller counts and skips them)."""
    # seqio refuses blank lines inside a FASTQ, so record n's sequence is on line 4n - 2.
    for n, (head, seq, _qual) in enumerate(seqio.fastq(path, what), 1):
        ident = head.split(None, 1)[0].decode()
        yield ident, _check_nucleotide(ident, seq.decode(), path, 4 * n - 2)


def _searchable(records: Iterator[tuple[str, str]], skipped: dict) -> Iterator[tuple[str, str]]:
    """Records with at least one A/C/G/T; empty and N-only ones are counted in `skipped`."""
    for ident, seq in records:
        if not seq:
            skipped["empty"] += 1
        elif not seq.strip("N"):
            skipped["no_acgt"] += 1
        else:
            yield ident, seq


@dataclass(frozen=True)
class QuerySet:
    """The queries taxonomy searches, read once: (id, sequence) each, ids made unique, drawn
    from `total` searchable records of `source` (`format` "fasta" or "fastq"); `empty` and
    `no_acgt` count the records skipped as having nothing to search."""

    queries: tuple[tuple[str, str], ...]
    total: int
    empty: int
    no_acgt: int
    source: str
    format: str

    @property
    def sampled(self) -> bool:
        return self.total > len(self.queries)

    @property
    def skipped(self) -> dict[str, int]:
        return {"empty": self.empty, "no_acgt": self.no_acgt}


def load_queries(fasta: str | None, fastq: str | None, n: int, seed: int = 0) -> QuerySet:
    """The query set, sampled with `seed` to at most `n` queries."""
    exactly_one({"--fasta": fasta, "--fastq": fastq})
    fmt, path = ("fasta", fasta) if fasta else ("fastq", fastq)
    reader = read_fasta if fmt == "fasta" else read_fastq
    skipped = {"empty": 0, "no_acgt": 0}
    queries, total = seqio.sample(_searchable(reader(path), skipped), n, seed)
    if not queries:
        if any(skipped.values()):
            raise InputError(f"{seqio.shown(path)}: no searchable {fmt.upper()} records "
                             f"({skipped['empty']} empty, {skipped['no_acgt']} with no A/C/G/T "
                             "base)")
        raise InputError(f"{seqio.shown(path)}: no {fmt.upper()} records")
    # Unique ids: reports are merged by query id, so duplicates would silently collapse.
    seen: dict[str, int] = {}
    unique = []
    for ident, seq in queries:
        k = seen.get(ident, 0)
        seen[ident] = k + 1
        unique.append((ident if k == 0 else f"{ident}.{k}", seq))
    return QuerySet(tuple(unique), total, skipped["empty"], skipped["no_acgt"], str(path), fmt)


def to_fasta(queries: list[tuple[str, str]]) -> str:
    # A '.' no-call (old Illumina, gapped FASTA) is N to BLAST, and the egress gate relays
    # sequence letters only.
    return "".join(f">{ident}\n{seq.replace('.', 'N')}\n" for ident, seq in queries)
