"""A gene annotation GTF staged beside its genome, on the genome's own sequence names.

featureCounts, STAR, stringtie and gffread match a GTF's first column against the names in
the BAM or FASTA exactly: a GTF named `17` on a genome named `chr17` counts nothing and says
nothing. So staging reads the staged genome's .fai, keeps each GTF line whose sequence the
genome names, renames a scaffold the two publishers write differently (GENCODE's
`KI270706.1` is the UCSC-named analysis set's `chr1_KI270706v1_random`), drops lines on
sequences the genome lacks, and refuses the GTF when fewer than MIN_ON_GENOME of its lines
lie on the genome (the wrong naming, or the wrong assembly).
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from biotool.staging import StagingError

# Alt haplotypes or patches may fall off a primary assembly; more than 1% is a mismatch.
MIN_ON_GENOME = 0.99
# A UCSC name of a GenBank scaffold: chr1_KI270706v1_random, chrUn_GL000195v1, chr6_GL000251v2_alt.
_UCSC_SCAFFOLD = re.compile(r"^chr[^_]+_([A-Z]{2}\d+)v(\d+)(?:_random|_alt|_fix)?$")


@dataclass
class GtfCheck:
    """What staging made of a GTF against its genome's sequence names."""
    lines: int = 0
    kept: int = 0
    renamed: int = 0
    dropped: Counter = field(default_factory=Counter)  # sequence name -> lines dropped
    genes: set = field(default_factory=set)

    @property
    def share_on_genome(self) -> float:
        return self.kept / self.lines if self.lines else 0.0

    def record(self) -> dict:
        return {"lines": self.lines, "on_genome": self.kept, "renamed": self.renamed,
                "dropped": sum(self.dropped.values()),
                "dropped_sequences": [n for n, _ in self.dropped.most_common(5)]}


def genome_names(fai: Path) -> list[str]:
    """The sequence names of a genome, in order, from its samtools .fai."""
    return [line.split("\t", 1)[0] for line in Path(fai).read_text().splitlines() if line]


def aliases(names: list[str]) -> dict[str, str]:
    """{GenBank accession.version: the genome's name} for each UCSC-named scaffold, so a GTF
    on accessions (GENCODE's scaffolds) lands on the genome's names."""
    out = {}
    for name in names:
        m = _UCSC_SCAFFOLD.match(name)
        if m:
            out[f"{m.group(1)}.{m.group(2)}"] = name
    return out


def _gene_id(attributes: str) -> str | None:
    m = re.search(r'(?:^|;)\s*gene_id "([^"]*)"', attributes)
    return m.group(1) if m else None


def stage_gtf(src: Path, dest: Path, names: list[str]) -> GtfCheck:
    """Write `src` (a GTF, gzip or plain) to `dest` on the genome's `names`; StagingError when
    it is not a GTF or fewer than MIN_ON_GENOME of its lines lie on the genome."""
    known, renames = set(names), aliases(names)
    check = GtfCheck()
    with open(src, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    opener = gzip.open if gz else open
    try:
        with opener(src, "rt", encoding="utf-8") as inp, open(dest, "w", encoding="utf-8") as out:
            for line in inp:
                if line.startswith("#"):
                    out.write(line)
                    continue
                f = line.split("\t", 8)
                if len(f) != 9 or _gene_id(f[8]) is None:
                    raise StagingError(f"{src.name}: line {check.lines + 1} is not a GTF line "
                                       "(9 tab-separated columns with a gene_id attribute)")
                check.lines += 1
                seq = f[0]
                if seq not in known and seq in renames:
                    seq, check.renamed = renames[seq], check.renamed + 1
                if seq not in known:
                    check.dropped[f[0]] += 1
                    continue
                check.kept += 1
                check.genes.add(_gene_id(f[8]))
                out.write(line if seq == f[0] else seq + line[len(f[0]):])
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise StagingError(f"{src.name}: not a readable GTF ({exc})") from None
    if check.lines == 0:
        raise StagingError(f"{src.name}: holds no GTF lines")
    if check.share_on_genome < MIN_ON_GENOME:
        theirs = ", ".join(n for n, _ in check.dropped.most_common(3))
        raise StagingError(
            f"{src.name}: {check.lines - check.kept} of its {check.lines} lines name sequences "
            f"the genome does not ({theirs}; the genome names {', '.join(names[:3])}, ...): "
            "an annotation on another naming or assembly; stage one on the genome's names "
            "(GENCODE's for the UCSC-named GRCh38 analysis set, the same RefSeq release's for "
            "a RefSeq genome)")
    return check
