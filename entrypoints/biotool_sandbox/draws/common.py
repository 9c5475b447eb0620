"""What the draws share: staged sequences, reads simulated from them, the files they write."""

from __future__ import annotations

import csv
import random
from pathlib import Path

from biotool import seqio, staging

_COMPLEMENT = str.maketrans("ACGTN", "TGCAN")
BASES = "ACGT"


def reverse_complement(seq: str) -> str:
    return seq.translate(_COMPLEMENT)[::-1]


def staged_records(kind: str, name: str) -> list[tuple[str, str]]:
    """(identifier, upper-case sequence) of every record of a staged FASTA item."""
    item = staging.require(kind, name, "the task's draw")
    return [(ident, seq.upper()) for ident, seq, _ in seqio.fasta(item.path("main"))]


def staged_reference(name: str) -> tuple[str, str]:
    """The one sequence of a staged single-record reference: (identifier, sequence)."""
    records = staged_records("reference", name)
    if len(records) != 1:
        raise ValueError(f"staged reference {name} holds {len(records)} records, not one")
    return records[0]


GENE_TABLE = "demo-gene-annotation"


def gene_rows(reference: str | None = None) -> list[dict]:
    """The staged gene table's rows (of one reference, or all): reference, symbol, seqid,
    strand and segments (1-based inclusive (start, end) pairs, joined in order)."""
    path = staging.require("database", GENE_TABLE, "the task's draw").path("main")
    with open(path, newline="", encoding="utf-8") as fh:
        lines = [line for line in fh if not line.startswith("#")]
    rows = []
    for row in csv.DictReader(lines, delimiter="\t"):
        if reference is not None and row["reference"] != reference:
            continue
        segments = [tuple(int(x) for x in part.split("..")) for part in row["cds"].split(",")]
        rows.append({"reference": row["reference"], "symbol": row["symbol"],
                     "seqid": row["seqid"], "strand": row["strand"], "segments": segments})
    return rows


def cds_sequence(row: dict, genome: str) -> str:
    """A gene_rows row's CDS on `genome` (its seqid's sequence): segments joined, read on its
    strand."""
    cds = "".join(genome[a - 1:b] for a, b in row["segments"])
    return reverse_complement(cds) if row["strand"] == "-" else cds


def mutate(rng: random.Random, base: str) -> str:
    """A base other than `base`, drawn uniformly."""
    return rng.choice([b for b in BASES if b != base])


def simulate_reads(rng: random.Random, seq: str, n: int, length: int, prefix: str = "read",
                   error_rate: float = 0.0, both_strands: bool = True,
                   start: int = 0, end: int | None = None) -> list[tuple[str, str, str]]:
    """`n` reads of `length` bases drawn uniformly from seq[start:end] (0-based, the whole
    sequence by default), half from the reverse strand when `both_strands`, each base replaced
    with probability `error_rate`: (name, sequence, quality) with neutral names."""
    end = len(seq) if end is None else end
    if end - start < length:
        raise ValueError(f"a read of {length} does not fit in [{start}, {end})")
    reads = []
    for i in range(n):
        at = rng.randrange(start, end - length + 1)
        read = list(seq[at:at + length])
        for j, base in enumerate(read):
            if error_rate and rng.random() < error_rate:
                read[j] = mutate(rng, base if base in BASES else "A")
        text = "".join(read)
        if both_strands and rng.random() < 0.5:
            text = reverse_complement(text)
        reads.append((f"{prefix}{i + 1:06d}", text, "I" * length))
    return reads


def shuffled(rng: random.Random, reads: list) -> list:
    out = list(reads)
    rng.shuffle(out)
    return out


def write_fastq(path: Path, reads: list[tuple[str, str, str]]) -> None:
    with open(path, "w", encoding="ascii") as fh:
        for name, seq, qual in reads:
            fh.write(f"@{name}\n{seq}\n+\n{qual}\n")


def write_fasta(path: Path, records: list[tuple[str, str]], width: int = 70) -> None:
    with open(path, "w", encoding="ascii") as fh:
        for name, seq in records:
            fh.write(f">{name}\n")
            for i in range(0, len(seq), width):
                fh.write(seq[i:i + width] + "\n")
