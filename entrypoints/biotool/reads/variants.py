"""`biotool variants`: substitutions and indels the reads support, above a stated floor.

Depth at a position counts reads that inform it: a base passing the base-quality filter, or
a deletion over it. Allele fraction = alt reads / that depth. Indels are shifted fully left
in repeats so every read's copy of one event counts together (VCF convention: POS is the
base before the event). Several libraries are pooled; each keeps its own counts.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

from biotool.arms import Hedges, declared, hedge
from biotool.competence import bounded, not_applicable
from biotool.deadline import UNBOUNDED, Deadline
from biotool.provenance import provenance, used
from biotool.reads.bam import open_bam, refuse_if_divergent
from biotool.reads.inputs import region_not_in_bam
from biotool.reads.job import Library, open_job, with_warnings
from biotool.reads.pileup import Pileup, _lut

BASES = "ACGT"

# What the depth could not show (fraction_assessed is the summary competence's margin,
# other_indels_nearby the count its call's blind spot gives). The warnings say what the input
# checks found, in both arms (a warning's guess at why is marked in its text).
HEDGES = Hedges.of("competence", "fraction_assessed", "n_below_floor",
                   "variants[].competence", "variants[].other_indels_nearby")


def _mismatches(counts, refseq: str) -> tuple[int, int]:
    """(bases differing from the reference, bases counted) over one region's pileup counts."""
    import numpy as np

    per_base = counts.sum(axis=2)                       # (n, 4)
    refc = _lut()[np.frombuffer(refseq.encode(), dtype=np.uint8)]
    known = refc < 4
    total = int(per_base[known].sum())
    matching = int(per_base[np.nonzero(known)[0], refc[known]].sum())
    return total - matching, total


def variants(reference: str, fastq: list[list[str]] | None = None, bam: list[str] | None = None,
             region: str | None = None, min_depth: int = 10, min_af: float = 0.2, top: int = 25,
             vcf: str | None = None, min_mapq: int = 20, min_bq: int = 13, threads: int = 2,
             deadline: Deadline = UNBOUNDED, preset: str = "auto") -> dict:
    import numpy as np

    if vcf is not None:  # before any work: '' or an unwritable place is refused here
        from biotool.reads.vcf import check_vcf_path

        check_vcf_path(vcf)
    job = open_job(reference, fastq or [], bam or [], region, preset, threads, deadline)
    ref, contigs, libs = job.reference, job.contigs, job.libraries
    calls, below, depths, truncated = [], 0, [], job.truncated
    seen = [_Seen(lib) for lib in libs]
    try:
        for one in seen:  # each BAM opened once, not once per contig of a many-contig reference
            one.handle = open_bam(one.library.bam)
        for contig, s, e in job.regions:
            seq, off = job.window(contig, s, e)
            per_lib = []
            for one in seen:
                pile = Pileup(contig, s, e, seq, off, min_bq=min_bq)
                if contig in one.handle.references:
                    one.in_header = True
                    pile.add_bam(one.handle, min_mapq, job.deadline)
                out = pile.finish()
                mism, bases = _mismatches(out.counts, seq[s - off:e - off])
                one.mismatched += mism
                one.aligned += bases
                one.reads_used += out.reads_used
                truncated |= out.truncated
                per_lib.append(out)
            region_calls, n_below, depth = _call(contig, s, e, seq, off, per_lib, libs,
                                                 min_depth, min_af)
            calls += region_calls
            below += n_below
            depths.append(depth)
    finally:
        for one in seen:
            if one.handle is not None:
                with contextlib.suppress(OSError):  # htslib's close fails after a read error
                    one.handle.close()
    missing = [one.library.bam for one in seen if not one.in_header]
    if missing:
        raise region_not_in_bam(missing[0], job.regions)
    for one in seen:
        if not one.library.aligned_here:
            refuse_if_divergent(one.library.bam, one.mismatched, one.aligned, ref.name)
    depth_all = np.concatenate(depths) if depths else np.zeros(0)
    median_depth = float(np.median(depth_all)) if depth_all.size else 0.0
    covered = depth_all[depth_all > 0]
    median_covered = float(np.median(covered)) if covered.size else 0.0
    assessed = float((depth_all >= min_depth).mean()) if depth_all.size else 0.0
    calls.sort(key=lambda c: (c["alt_reads"], c["af"]), reverse=True)
    for c in calls:
        c["competence"] = _call_competence(c, min_depth, min_af, seq_for=(ref, contigs))
    result = {
        "reference": ref.name,
        "region": region or "all contigs",
        "samples": [{"sample": one.library.sample, "bam": one.library.bam,
                     "reads_used": one.reads_used,
                     **({"preset": one.library.preset} if one.library.preset else {})}
                    for one in seen],
        "floor": {"min_depth": min_depth, "min_af": min_af, "min_mapq": min_mapq,
                  "min_base_quality": min_bq},
        # The floor and its reason define the answer (both arms); the count below it is what
        # the floor hid (a hedge, as n_below_floor is).
        "note": (f"only variants with depth >= {min_depth} and allele fraction >= {min_af} (and "
                 f"at least 2 alt reads) are shown: below that floor an allele is "
                 f"indistinguishable from sequencing and alignment error at these depths"
                 + hedge(f" ({below} candidate alleles seen in 2+ reads fell below it)")),
        # What defines the answer, kept in both arms.
        "convention": ("pos is 1-based; for indels pos is the base before the event and ref/alt "
                       "include it (VCF convention), shifted fully left in repeats. Ranked by "
                       "alt reads, then allele fraction."),
        "median_depth": median_depth,
        "median_depth_covered": median_covered,
        "fraction_assessed": round(assessed, 4),
        "n_variants": len(calls),
        "n_below_floor": below,
        "truncated": truncated,
        "variants": calls[:top],
    }
    if vcf is not None:
        from biotool.reads.vcf import write_vcf

        result["vcf"] = write_vcf(vcf, calls, libs, ref, contigs, result["floor"])
    result["competence"] = _summary_competence(median_depth, median_covered, assessed, min_depth,
                                               min_af, len(calls), truncated)
    if job.warnings:
        result["warnings"] = job.warnings
        result["competence"] = with_warnings(result["competence"], result["warnings"])
    bam_prov = [used("alignments", lib.sample, "", path=lib.bam) for lib in libs
                if not lib.aligned_here]
    result["provenance"] = provenance(*ref.provenance(), *job.index_provenance, *bam_prov)
    return declared(result, HEDGES)


@dataclass
class _Seen:
    """What the pileups saw of one library, summed over the regions."""

    library: Library
    handle: object = None
    in_header: bool = False     # a region's contig is in its BAM's header
    reads_used: int = 0
    mismatched: int = 0         # aligned bases differing from the reference
    aligned: int = 0            # aligned bases counted


def _call(contig, s, e, seq, off, per_lib, libs, min_depth, min_af):
    """(calls, candidates below the floor, informative depth per position) for one region."""
    import numpy as np

    n = e - s
    counts = sum(p.counts for p in per_lib)          # (n, 4, 2)
    deleted = sum(p.deleted for p in per_lib)
    depth = counts.sum(axis=(1, 2)) + deleted
    refc = _lut()[np.frombuffer(seq[s - off:e - off].encode(), dtype=np.uint8)]
    alt = counts.sum(axis=2)                            # (n, 4)
    is_alt = np.ones((n, 4), dtype=bool)
    known = refc < 4
    is_alt[np.nonzero(known)[0], refc[known]] = False
    with np.errstate(divide="ignore", invalid="ignore"):
        af = np.where(depth[:, None] > 0, alt / depth[:, None], 0.0)
    seen = is_alt & (alt >= 2)
    passing = seen & (depth[:, None] >= min_depth) & (af >= min_af)
    below = int(seen.sum() - passing.sum())
    calls = []
    for i, b in zip(*np.nonzero(passing)):
        samples = []
        for lib, p in zip(libs, per_lib):
            d = int(p.counts[i].sum() + p.deleted[i])
            a = p.counts[i, b]
            samples.append({"sample": lib.sample, "depth": d, "alt_reads": int(a.sum()),
                            "af": round(float(a.sum()) / d, 4) if d else None,
                            "fwd": int(a[0]), "rev": int(a[1])})
        a = counts[i, b]
        calls.append({"contig": contig, "pos": s + int(i) + 1, "type": "SNV",
                      "ref": seq[s + int(i) - off], "alt": BASES[b], "depth": int(depth[i]),
                      "alt_reads": int(alt[i, b]), "af": round(float(af[i, b]), 4),
                      "fwd": int(a[0]), "rev": int(a[1]), "samples": samples})
    # Indels: depth is the reads spanning the anchor base and the base after it.
    keys = set()
    for p in per_lib:
        keys |= set(p.indels)
    for key in keys:
        pos0, r, a = key
        i = pos0 - s
        if not 0 <= i < n:
            continue
        fr = [p.indels.get(key, [0, 0]) for p in per_lib]
        fwd, rev = sum(x[0] for x in fr), sum(x[1] for x in fr)
        k = fwd + rev
        if k < 2:
            continue
        samples = []
        for lib, p, x in zip(libs, per_lib, fr):
            # Reads spanning the anchor base and the base after it can show the event; a read
            # ending at the anchor (a fragment end, a cut) cannot, so it does not count.
            sd = max(int(p.pairs[i]), sum(x))
            samples.append({"sample": lib.sample, "depth": sd, "alt_reads": sum(x),
                            "af": round(sum(x) / sd, 4) if sd else None,
                            "fwd": x[0], "rev": x[1]})
        d = sum(x["depth"] for x in samples)
        f = k / d if d else 0.0
        if d < min_depth or f < min_af:
            below += 1
            continue
        kind = "deletion" if len(r) > len(a) else "insertion"
        calls.append({"contig": contig, "pos": pos0 + 1, "type": kind, "ref": r, "alt": a,
                      "length": abs(len(r) - len(a)), "depth": d, "alt_reads": k,
                      "af": round(f, 4), "fwd": fwd, "rev": rev, "samples": samples,
                      "other_indels_nearby": _nearby(keys, per_lib, key)})
    return calls, below, depth


def _nearby(keys, per_lib, key, flank: int = 5) -> int:
    """Observations of a different indel overlapping this one (within `flank` bases): noisy
    reads often write one event several ways, so the true fraction may be higher."""
    pos0, r, _a = key
    lo, hi = pos0 - flank, pos0 + len(r) + flank
    total = 0
    for other in keys:
        if other != key and lo <= other[0] <= hi:
            total += sum(sum(p.indels.get(other, (0, 0))) for p in per_lib)
    return total


def _homopolymer(ref, contig, pos0, length) -> int:
    """Longest run of one base touching the event, in the reference."""
    lo = max(0, pos0 - 10)
    s = ref.fetch(contig, lo, min(length, pos0 + 12))
    i = pos0 - lo + 1
    if i >= len(s):
        return 0
    b = s[i]
    j = i
    while j < len(s) and s[j] == b:
        j += 1
    return j - i


def above_floor_probability(k: int, d: int, floor: float) -> float:
    """P(true allele fraction > floor | k alt of d reads), uniform prior: the Beta(k+1, d-k+1)
    tail, computed as P(Binomial(d+1, floor) <= k) (an exact identity; no scipy import)."""
    n = d + 1
    if n > 20000:  # normal approximation; the exact sum would be slow and is not needed
        mu, sd = n * floor, math.sqrt(n * floor * (1 - floor))
        return 0.5 * (1 + math.erf((k + 0.5 - mu) / (sd * math.sqrt(2))))
    lf, lq = math.log(floor), math.log1p(-floor)
    base = math.lgamma(n + 1)
    total = 0.0
    for j in range(0, min(k, n) + 1):
        total += math.exp(base - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lf + (n - j) * lq)
    return min(1.0, total)


def _call_competence(c, min_depth, min_af, seq_for):
    k, d = c["alt_reads"], c["depth"]
    conf = above_floor_probability(k, d, min_af) if min_af < 1 else 0.0
    spots = []
    if d < 2 * min_depth:
        spots.append(f"depth {d} is close to the floor of {min_depth}: the fraction is "
                     f"known only to about +/-{1.96 * math.sqrt(max(c['af'] * (1 - c['af']), 0.01) / d):.2f}")
    if k >= 5 and (c["fwd"] == 0 or c["rev"] == 0):
        spots.append("every alt read is on one strand: a strand-specific artefact looks like this")
    if c["type"] != "SNV" and c.get("other_indels_nearby", 0) > 0.1 * k:
        spots.append(f"{c['other_indels_nearby']} other indel observations overlap this one "
                     "(within 5 bases): if some are the same event written differently by noisy "
                     "reads, the true fraction is higher than af")
    if c["type"] != "SNV":
        ref, contigs = seq_for
        run = _homopolymer(ref, c["contig"], c["pos"] - 1, contigs[c["contig"]])
        if run >= 4:
            spots.append(f"indel next to a {run}-base homopolymer: nanopore and some "
                         "short-read chemistries make such indels as errors")
    return bounded(conf, max(0.0, c["af"] - min_af) / max(1e-9, 1 - min_af),
                   blind_spots=spots, remedy="more depth here, or confirm in an independent library")


def _summary_competence(median_depth, median_covered, assessed, min_depth, min_af, n_calls,
                        truncated):
    if median_covered == 0:
        return not_applicable("no reads cover the region", "check --region and --reference")
    spots = []
    if assessed < 1:
        spots.append(f"{1 - assessed:.1%} of positions have depth below {min_depth}: variants "
                     "there are not assessed at all (use --region for the part the reads cover)")
    typical = median_depth or median_covered
    detectable = max(min_af, 3 / typical)
    spots.append(f"at the median depth {typical:g}{'' if median_depth else ' (covered positions)'}, "
                 f"alleles below AF {detectable:.2f} cannot be seen (the floor, and ~3 supporting "
                 "reads)")
    spots.append("structural variants and indels longer than the reads are not called "
                 "(see biotool breakpoints)")
    if truncated:
        spots.append("time budget ran out: counts cover only part of the reads")
    conf = assessed * (1 - math.exp(-typical / (2 * min_depth)))
    return bounded(conf, assessed, alternatives=n_calls, blind_spots=spots,
                   remedy="more reads (raise depth), --region for the covered part, or "
                          "--min-af/--min-depth with care")
