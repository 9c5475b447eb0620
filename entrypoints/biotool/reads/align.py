"""`biotool align`: where a seeded sample of reads lands on a reference (bwa mem for short
reads, minimap2 via mappy for long ones)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from biotool.alignment.aligners import SHORT, aligner_of, naming
from biotool.alignment.reference import resolve
from biotool.arms import Hedges, declared
from biotool.competence import bounded
from biotool.deadline import UNBOUNDED, Deadline
from biotool.output import ToolFailure
from biotool.provenance import provenance
from biotool.reads import fastq
from biotool.reads.shortreads import map_sample

WINDOW = 1000
FEW_MAPPED = 100

# mapped_fraction and the loci's shares are what the answer is made of, in both arms; the
# competence judged from them is the hedge.
HEDGES = Hedges.of("competence")


def _minimap2_sample(index, preset, recs, deadline, reference):
    """Primary placements by minimap2 (mappy), as map_sample gives bwa's: (placed, aligned,
    truncated)."""
    import mappy

    aligner = mappy.Aligner(str(index), preset=preset)
    if not aligner:
        raise ToolFailure(f"--reference {reference}: minimap2 could not load index {index}")
    placed, aligned = [], 0
    for _name, seq, _qual in recs:
        # The clock is read every 256 reads: cheap, and fine-grained enough for a budget.
        if aligned % 256 == 0 and deadline.passed():
            return placed, aligned, True
        aligned += 1
        hit = next((h for h in aligner.map(seq.decode()) if h.is_primary), None)
        if hit is not None:
            placed.append((hit.ctg, hit.r_st, hit.r_en, hit.mapq, hit.strand < 0))
    return placed, aligned, False


def align_sample(fastq_path: str | Path, reference: str, n_reads: int = 20000,
                 preset: str = "auto", seed: int = 0, top: int = 5,
                 deadline: Deadline = UNBOUNDED) -> dict:
    ref = resolve(reference)
    recs, total = fastq.sample(fastq_path, n_reads, seed)
    preset, why = fastq.choose_preset(recs, preset)
    index, _ = ref.index(preset, deadline)
    with naming(reference, [fastq_path]):
        if preset == SHORT:
            placed, n, truncated = map_sample(index, recs, fastq.as_text, deadline=deadline)
        else:
            placed, n, truncated = _minimap2_sample(index, preset, recs, deadline, reference)
    loci: Counter = Counter()
    strands: Counter = Counter()
    mapq_sum = mapped = 0
    for ctg, r_st, r_en, mapq, reverse in placed:
        mapped += 1
        mapq_sum += mapq
        strands["-" if reverse else "+"] += 1
        loci[(ctg, (r_st + r_en) // 2 // WINDOW)] += 1
    top_loci = [{"contig": ctg, "window": [b * WINDOW + 1, (b + 1) * WINDOW], "reads": c,
                 "share": round(c / mapped, 4)} for (ctg, b), c in loci.most_common(top)]
    frac = mapped / n if n else 0.0
    spots = []
    if mapped < FEW_MAPPED:
        spots.append(f"only {mapped} reads mapped: locus shares rest on fewer than "
                     f"{FEW_MAPPED} reads")
    if truncated:
        spots.append(f"--timeout stopped the work after {n} of {len(recs)} sampled reads")
    if n < total:
        spots.append(f"a sample of {n} of {total} reads: loci covered by under ~{total // max(n, 1)} "
                     "reads of the library may be absent from top_loci")
    if frac < 0.5:
        spots.append(f"{1 - frac:.0%} of sampled reads did not map: wrong reference, "
                     "contamination or adapters")
    competence = bounded(confidence=frac, margin=top_loci[0]["share"] if top_loci else 0.0,
                         alternatives=max(0, len(loci) - 1), blind_spots=spots,
                         remedy="raise --sample or align the whole library "
                                "(biotool breakpoints/variants align every read)")
    return declared({
        "reference": ref.name,
        "preset": preset,
        "aligner": aligner_of(preset),
        "preset_reason": why,
        "n_reads": n,
        "n_reads_in_file": total,
        "mapped": mapped,
        "truncated": truncated,
        "mapped_fraction": round(frac, 4),
        "mean_mapq": round(mapq_sum / mapped, 1) if mapped else None,
        "strands": dict(strands),
        "window_size": WINDOW,
        "top_loci": top_loci,
        "convention": "window is 1-based inclusive; a read is placed by the midpoint of its "
                      "primary alignment",
        "competence": competence,
        "provenance": provenance(*ref.provenance(preset)),
    }, HEDGES)
