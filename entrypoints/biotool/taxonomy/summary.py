"""What a set of per-read hits says, and what it could not see: dominant organism, detection floor.

A sample of n reads sees an organism only if at least one of its reads was drawn: below
about 1/n of the reads an organism was probably not sampled at all, and a confident
answer about the majority (often the host) says nothing about a rare organism. The design's
rule: a minority can be relied on only when the dominant organism holds under half the reads
and at least 200 were searched (`can_see_minority`); otherwise the caveat says how much the
dominant organism holds, which other organisms the reads did show, and how to see rarer ones.
`p_minority_seen` (the chance an organism at 5% of reads was drawn at all) is extra detail
beside that rule, never a substitute for it.

Dominance and the rule are over reads with a named best hit, as the design computes them:
reads that matched nothing say nothing about who dominates, so they are reported on their
own (`no_hit`, `no_hit_caveat`), and a sample with no named hit at all establishes nothing.
A read whose best hit ties between names is counted for each of them (stated in the caveat),
so reads tied between human and macaque still count as host.

Whole input or sample: when every searchable record of the input was searched
(`whole_input`), the shares are the input's own, not estimates, so they are used as they are
and no remedy asks for more of a sample; when a sample was searched, the dominant share is
replaced by what its reads vouch for: the lower end of its 95% Wilson interval, k/(k + 3.84)
for k of k reads. That shrinks small samples smoothly (3 reads 0.44, 19 reads 0.83, 200 reads
0.98) instead of cutting at a count.

Competence, unlike dominance, is over every record searched: an organism that holds every
named read is not "the organism" when most reads were never identified. Confidence is the
dominant share of the named reads (its Wilson lower bound for a sample) times the share of the
searched records that were identified (for FASTA records, each weighted by how much of it its
best hit aligns); the margin is the lead over the runner-up (lower bound against upper bound
for a sample) that the no-hit reads could not overturn (they might all be the runner-up), over
all searched reads. With no named hit at all the question has no answer here: competence is
not applicable and the detection floor is 1.0.
"""

from __future__ import annotations

import math
import re

from biotool.arms import Hedges
from biotool.competence import bounded

MINORITY_ABUNDANCE = 0.05  # "a minority organism": 5% of reads, a typical pathogen-in-host share
MIN_READS_FOR_MINORITY = 200  # below it a minority is a handful of reads at best
Z95 = 1.96  # the sampled share's interval: 95%, two-sided
MIN_ALIGNED = 0.5  # a record whose best hit aligns under half of it is named by a part of it
MAX_ORGANISMS = 20  # organisms listed by name; the rest are counted (bounded output)
# Hosts whose reads swamp a clinical or cultured sample (NCBI taxids).
HOST_TAXIDS = {9606: "Homo sapiens", 9544: "Macaca mulatta", 10090: "Mus musculus",
               10116: "Rattus norvegicus", 9913: "Bos taurus", 9031: "Gallus gallus",
               60711: "Chlorocebus sabaeus", 9823: "Sus scrofa", 9615: "Canis lupus familiaris"}
# What the summary could not see: the design's dominance and floor fields, this project's
# minority and host fields, and organisms[].fraction (the first is dominant_fraction again).
# whole_input, named_reads, no_hit and aligned_fraction say what was searched and found: kept.
HEDGES = Hedges.of("dominant_fraction", "organisms[].fraction", "caveat", "no_hit_caveat",
                   "detection_floor", "can_see_minority", "minority_abundance",
                   "p_minority_seen", "host_dominated", "hosts", "competence")
_STRAIN = re.compile(r"^(Influenza [ABCD] virus)\s*\(.*\)\s*$")


def organism_of(hit: dict) -> str:
    """The organism a hit names, with influenza strains pooled to their species."""
    name = (hit.get("sciname") or hit.get("title") or hit.get("accession") or "?").strip()
    m = _STRAIN.match(name)
    return m.group(1) if m else name


def assign(hits: dict[str, list], searched: list[str]) -> dict[str, list[str]]:
    """Each searched query's organisms: its best hit's name, every name tied at the best
    score, or [] without hits."""
    out = {}
    for q in searched:
        qh = hits.get(q) or []
        best = max((h.get("bit_score") or 0 for h in qh), default=0)
        out[q] = sorted({organism_of(h) for h in qh if (h.get("bit_score") or 0) >= best})
    return out


def aligned_share(query_hits: list) -> float | None:
    """How much of the query its best hit aligns (0..1), or None when the hit does not say."""
    if not query_hits:
        return None
    best = max(query_hits, key=lambda h: h.get("bit_score") or 0)
    length = best.get("query_len")
    start, end = best.get("query_from"), best.get("query_to")
    if not length:
        return None
    span = abs(end - start) + 1 if start and end else best.get("align_len")
    return min(1.0, span / length) if span else None


def _count(k: int, noun: str) -> str:
    return f"{k} {noun[:-1]}" if k == 1 else f"{k} {noun}"


def p_seen(abundance: float, n: int) -> float:
    """Chance that at least one of n sampled reads comes from an organism at `abundance`."""
    return 1.0 - (1.0 - abundance) ** n if n else 0.0


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a share seen as k of n sampled reads."""
    if n <= 0:
        return 0.0, 1.0
    p, z2 = k / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def can_see_minority(dominant_fraction: float, n: int) -> bool:
    """The design's rule: a minority can show only when no organism holds half the reads and at
    least MIN_READS_FOR_MINORITY reads were searched."""
    return dominant_fraction < 0.5 and n >= MIN_READS_FOR_MINORITY


def sample_competence(top: int, second: int, named: int, n: int, whole: bool = False,
                      identified: float | None = None) -> tuple[float, float]:
    """(confidence, margin) of a dominance call over the n searched records, of which `named`
    had a named hit, `top` and `second` the two leading organisms' counts. `whole`: the n are
    the whole input, so the shares are exact; otherwise a sample's shares are taken at the
    end of their 95% interval that is against the call. `identified`: the identified weight
    of the named records (default `named`; FASTA records count by their aligned share)."""
    if not named or not n:
        return 0.0, 0.0
    if whole:
        low, high = top / named, second / named
    else:
        low, high = wilson(top, named)[0], wilson(second, named)[1]
    confidence = low * (named if identified is None else identified) / n
    # Every no-hit read might belong to the runner-up: only the lead beyond them is secure.
    margin = max(0.0, (low - high) * named - (n - named)) / n
    return confidence, margin


def _others(organisms: list[dict], noun: str) -> str:
    """What the list beside the caveat shows besides the dominant organism, in words."""
    rest = organisms[1:]
    if not rest:
        return f"; no other organism is among the named {noun}"
    first = rest[0]
    if len(rest) == 1:
        return f"; {first['name']} is also seen, at {first['fraction']:.0%}"
    return (f"; {len(rest)} other organisms are also seen, the largest {first['name']} at "
            f"{first['fraction']:.0%}")


def summarize(hits: dict[str, list], searched: list[str], total_reads: int, local_db: str | None,
              minority: float = MINORITY_ABUNDANCE, max_organisms: int = MAX_ORGANISMS,
              fmt: str = "fastq") -> dict:
    """`total_reads`: the input's searchable records; when every one was searched the answer
    is about the whole input, not a sample. `fmt`: "fasta" records (contigs, segments) are
    weighed by how much of each its best hit aligns; "fastq" reads are not."""
    calls = assign(hits, searched)
    n = len(searched)
    whole = n >= total_reads
    noun = "sequences" if fmt == "fasta" else "reads"
    counts: dict[str, int] = {}
    taxids: dict[str, object] = {}
    for orgs in calls.values():
        for org in orgs:  # a tie counts for each name
            counts[org] = counts.get(org, 0) + 1
    for qh in hits.values():
        for h in qh:
            taxids.setdefault(organism_of(h), h.get("taxid"))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    named = sum(1 for v in calls.values() if v)
    no_hit = n - named
    ambiguous = sum(1 for v in calls.values() if len(v) > 1)
    organisms = [{"name": k, "taxid": taxids.get(k), "reads": v, "fraction": round(v / named, 4)}
                 for k, v in ranked]
    dominant = ranked[0][0] if ranked else None
    dom_frac = round(ranked[0][1] / named, 4) if ranked else 0.0
    # With no named hit nothing at all was observed: the floor is the whole sample.
    floor = round(1.0 / n, 4) if n and named else 1.0
    seen_minority = round(p_seen(minority, named), 4)
    can_see = bool(named) and can_see_minority(dom_frac, named)
    host = [o["name"] for o in organisms if o["taxid"] in HOST_TAXIDS]
    host_dominated = bool(dominant and taxids.get(dominant) in HOST_TAXIDS)
    shares = [aligned_share(hits.get(q) or []) for q in searched if calls[q]]
    aligned = None
    identified = None
    partial = 0
    if fmt == "fasta" and named:
        # A contig named by a hit over a tenth of it is a tenth identified.
        weights = [1.0 if s is None else s for s in shares]
        identified = sum(weights)
        aligned = round(identified / named, 4)
        partial = sum(1 for w in weights if w < MIN_ALIGNED)
    of_named = f"the {named} {noun} with a named hit"
    scope = (f"Every {noun[:-1]} of the input was searched ({named} of {n} identified): the "
             f"whole input, not a sample. " if whole else "")
    if not named:
        caveat = (f"No named hits among the {n} {noun} searched; this establishes nothing about "
                  f"the sample. ")
    elif can_see:
        caveat = (f"{scope}{named} {noun} with a named hit and no organism holds half of them: an "
                  f"organism below about {floor:.2%} of the {noun} (1/n) is unobserved, not "
                  f"absent. ")
    else:
        why = (f"it dominates the {named} named {noun}" if dom_frac >= 0.5 else
               f"fewer than {MIN_READS_FOR_MINORITY} {noun} have a named hit")
        if no_hit:
            why += f"; {no_hit} of {n} {noun} matched nothing"
        floor_is = (f"A dominance call from {n} {noun} has a floor of 1/{n}: anything below "
                    f"about {floor:.2%} of the {noun} is unobserved, not absent" if whole else
                    f"Anything below about {floor:.2%} of the {noun} (1/n) is unobserved, not "
                    f"absent")
        caveat = (f"{scope}{dominant} is {dom_frac:.0%} of {of_named} ({why})"
                  f"{_others(organisms, noun)}. {floor_is}. ")
        if whole:
            caveat += (f"Only more sequence would show a rarer organism (sequence deeper, or "
                       f"deplete {dominant} before sequencing). ")
        else:
            caveat += (f"To see a rarer organism, deplete {dominant} (map the {noun} to its "
                       f"genome and keep the unmapped {noun}) or search far more {noun} "
                       f"(--sample). ")
    if named and no_hit * 2 > n:
        caveat += (f"Only {named} of {n} {noun} ({named / n:.1%}) were identified: {dominant} "
                   f"is not established as the sample's organism. ")
    if partial:
        caveat += (f"{_count(partial, noun)} of {named} align over under half their length at "
                   f"their best hit: their name rests on part of the sequence. ")
    if ambiguous:
        caveat += (f"{_count(ambiguous, noun)} tied between names at their best hit and count "
                   f"for each name. ")
    if host_dominated:
        caveat += (f"The dominant organism is a host ({dominant}); the organism asked about may "
                   f"be a minority. ")
    if local_db:
        caveat += (f"Searched the staged panel {local_db}, not nt: an organism absent from the "
                   f"panel is unobserved, not absent.")
    second = ranked[1][1] if len(ranked) > 1 else 0
    ties = sum(1 for _, v in ranked[1:] if ranked and v == ranked[0][1])
    if not named:
        blind = [f"every organism: none of the {n} {noun} searched has a named hit"]
    elif whole:
        blind = [f"organisms below ~{floor:.2%} of the {noun}: the whole input was searched "
                 f"and a dominance call from {n} {noun} has a floor of 1/{n}"]
    else:
        blind = [f"organisms below ~{floor:.2%} of {noun} (detection floor 1/n, n={n})"]
        low = wilson(ranked[0][1], named)[0]
        if dom_frac - low >= 0.005:
            blind.append(f"{named} named {noun} are a sample: {dominant}'s share is at least "
                         f"{low:.0%} (95% lower bound), which the confidence uses, not "
                         f"{dom_frac:.0%}")
    if named and not can_see:
        blind.append(f"organisms rarer than that beside {dominant}, which holds {dom_frac:.0%} of "
                     f"{of_named} (the design relies on a minority only below 50% dominance "
                     f"and from {MIN_READS_FOR_MINORITY} {noun} with a named hit)")
    if no_hit:
        blind.append(f"what the {no_hit} {noun} that matched nothing come from")
    if partial:
        blind.append(f"the unaligned parts of {_count(partial, noun)} whose best hit aligns "
                     f"under half of them")
    if local_db:
        blind.append(f"the database is the panel {local_db}, not nt: organisms outside it "
                     f"cannot be named, and their {noun} show as no-hit or as a wrong relative")
    if host_dominated:
        blind.append(f"host {noun} ({dominant}) dominate the sample")
    if not whole:
        blind.append(f"{total_reads - n} of {total_reads} input {noun} were not searched")
    wider = ("search nt remotely (--remote) for organisms outside the panel" if local_db
             else "search a wider database (--database) for what matched nothing")
    if not named:
        # Nothing to be competent about: no dominant organism, so nothing to deplete.
        competence = bounded(0.0, 0.0, blind_spots=blind, applicable=False, remedy=(
            "search nt remotely (--remote) or a wider staged database (--database)" if local_db
            else "search a wider database (--database)") + f"; check that the {noun} are "
            "nucleotide sequence of what was asked about")
    else:
        if whole:  # nothing more to draw from this input: --sample cannot help
            remedy = ("" if can_see else
                      f"to see organisms rarer than 1/{n}, sequence deeper (every "
                      f"{noun[:-1]} of the input was searched)")
        else:
            remedy = (f"deplete {dominant} (map to it, keep the unmapped {noun}) or raise "
                      f"--sample" if not can_see else "raise --sample to lower the detection "
                      f"floor")
        if no_hit * 2 > n:  # most of the sample is unidentified: that comes first
            remedy = f"{wider} ({no_hit} of {n} {noun} matched nothing)" + (
                f"; {remedy}" if remedy else "")
        elif local_db:
            remedy = f"{remedy}; {wider}" if remedy else wider
        confidence, margin = sample_competence(ranked[0][1], second, named, n, whole,
                                               identified)
        competence = bounded(
            confidence=confidence, margin=margin, alternatives=max(0, len(ranked) - 1),
            ties=ties, blind_spots=blind, remedy=remedy)
    out = {"dominant": dominant, "dominant_fraction": dom_frac, "whole_input": whole,
           "named_reads": named, "organisms": organisms[:max_organisms], "no_hit": no_hit,
           "ambiguous": ambiguous}
    if aligned is not None:
        out["aligned_fraction"] = aligned
    if no_hit:
        out["no_hit_caveat"] = (f"{_count(no_hit, noun)} matched nothing in this database: "
                                f"unobserved, not absent")
    if len(organisms) > max_organisms:
        rest = organisms[max_organisms:]
        out["other_organisms"] = {"organisms": len(rest), "reads": sum(o["reads"] for o in rest)}
    out.update({"detection_floor": floor, "can_see_minority": can_see,
                "minority_abundance": minority, "p_minority_seen": seen_minority,
                "host_dominated": host_dominated, "hosts": host, "caveat": caveat.strip(),
                "competence": competence.explain()})
    return out
