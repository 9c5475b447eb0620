"""Taxonomy draws: reads of a few organisms of the staged viral panel, mixed in drawn amounts;
reads of one of them, for a search of NCBI's nt."""

from __future__ import annotations

import random
import re
from pathlib import Path

from biotool_sandbox.draws import common

PANEL = "demo-viral-panel"
READ_LENGTH = 150
ERROR_RATE = 0.005       # a short-read instrument's substitutions: every read still hits its source
DOMINANT_READS = (100, 500)  # 401 counts: with 20 sets and 2-3 dominants, any fixed answer < 1e-4
MINOR_READS_MIN = 10     # each other organism: 10 reads up to half the dominant's
_STRAIN = re.compile(r"\s*\(.*\)\s*$")
# The panel's organisms whose species name is what NCBI's nt names their best hits (strains in
# parentheses dropped): not phiX174, whose sequence sits in many vectors and constructs, nor the
# Yersinia strain, whose hits name other strains of the species.
SEARCHED = ("Human immunodeficiency virus 1", "Influenza A virus",
            "Severe acute respiratory syndrome coronavirus 2")
SEARCHED_READS = 40  # one submission's worth (NCBI's 40 queries at most)


def species_name(sciname: str) -> str:
    """The organism a panel record counts for: its scientific name without a strain in
    parentheses, so every influenza A strain is one organism (as `biotool taxonomy` pools them)."""
    return _STRAIN.sub("", sciname).strip()


def _accession(ident: str, taxa: dict) -> str:
    """The taxa key of a FASTA identifier: the identifier itself or one of its '|' fields
    (the panel keeps NCBI's gi|...|ref|ACC| headers for some records)."""
    for candidate in [ident, *ident.split("|")]:
        if candidate in taxa:
            return candidate
    raise ValueError(f"panel record {ident} has no organism in the panel's taxa")


def panel_organisms() -> dict[str, list[str]]:
    """Each organism of the staged panel and its records' sequences, by species name."""
    from biotool import staging

    item = staging.require("database", PANEL, "the task's draw")
    taxa = item.taxa or {}
    out: dict[str, list[str]] = {}
    for ident, seq in common.staged_records("database", PANEL):
        name = species_name(taxa[_accession(ident, taxa)]["sciname"])
        out.setdefault(name, []).append(seq)
    return out


def organism_reads(rng: random.Random, records: list[str], n: int) -> list[tuple[str, str, str]]:
    """`n` reads of an organism, its records (genome, segments, plasmid) drawn by length."""
    usable = [seq for seq in records if len(seq) >= READ_LENGTH]
    picks = rng.choices(range(len(usable)), weights=[len(s) - READ_LENGTH + 1 for s in usable],
                        k=n)
    reads = []
    for i, seq in enumerate(usable):
        reads += common.simulate_reads(rng, seq, picks.count(i), READ_LENGTH,
                                       error_rate=ERROR_RATE)
    return reads


def mix(rng: random.Random, public: Path) -> dict:
    """Reads of 2 or 3 organisms of the panel, one dominant (100-500 reads, every other at most
    half of it), shuffled and renamed read000001...; the truth is the organisms (as the panel
    names them, strains pooled), the dominant one and its read count. The agent sees
    /task/reads.fastq."""
    organisms = panel_organisms()
    chosen = rng.sample(sorted(organisms), rng.choice((2, 3)))
    dominant = chosen[0]
    counts = {dominant: rng.randint(*DOMINANT_READS)}
    for name in chosen[1:]:
        counts[name] = rng.randint(MINOR_READS_MIN, counts[dominant] // 2)
    reads = []
    for name in chosen:
        reads += organism_reads(rng, organisms[name], counts[name])
    reads = common.shuffled(rng, reads)
    common.write_fastq(public / "reads.fastq",
                       [(f"read{i:06d}", seq, qual) for i, (_, seq, qual) in enumerate(reads, 1)])
    return {"organisms": sorted(chosen), "dominant": dominant,
            "dominant_reads": counts[dominant]}


def searched(rng: random.Random, public: Path) -> dict:
    """40 reads of one organism of SEARCHED, named read000001...; the truth is the organism and
    the reads' sequences, `search_reads` (harbor_grade.SEARCH_READS: the task's search must
    hold some of these very reads). The agent sees /task/reads.fastq."""
    organisms = panel_organisms()
    organism = rng.choice(SEARCHED)
    reads = common.shuffled(rng, organism_reads(rng, organisms[organism], SEARCHED_READS))
    common.write_fastq(public / "reads.fastq",
                       [(f"read{i:06d}", seq, qual) for i, (_, seq, qual) in enumerate(reads, 1)])
    return {"organism": organism, "search_reads": [seq for _, seq, _ in reads]}
