"""What a set of per-read hits says, and what it could not see: dominant organism, detection floor.

A sample of n reads sees an organism only if at least one of its reads was drawn: below
about 1/n of the reads an organism was probably not sampled at all, and a confident
answer about the majority (often the host) says nothing about a minority. The design's rule:
a minority can be seen only when the dominant organism holds under half the reads and at
least 200 were searched (`can_see_minority`); otherwise the caveat says how much the
dominant organism holds and how to get past it. `p_minority_seen` (the chance an organism at
5% of reads was drawn at all) is extra detail beside that rule, never a substitute for it.

Dominance and the rule are over reads with a named best hit, as the design computes them:
reads that matched nothing say nothing about who dominates, so they are reported on their
own (`no_hit`, `no_hit_caveat`), and a sample with no named hit at all establishes nothing.
A read whose best hit ties between names is counted for each of them (stated in the caveat),
so reads tied between human and macaque still count as host.

Competence, unlike dominance, is over the whole sample: an organism that holds every named
read is not "the organism" when most reads were never identified. Confidence is the dominant
share of the named reads times the share of the searched reads that were named; the margin is
the lead over the runner-up that the no-hit reads could not overturn (they might all be the
runner-up), over all searched reads; and below MIN_CONFIDENT_NAMED named reads nothing is
confident (confidence under 0.5, margin 0) whatever the shares. With no named hit at all the
question has no answer here: competence is not applicable and the detection floor is 1.0.
"""

from __future__ import annotations

import re

from biotool.arms import Hedges
from biotool.competence import bounded

MINORITY_ABUNDANCE = 0.05  # "a minority organism": 5% of reads, a typical pathogen-in-host share
MIN_READS_FOR_MINORITY = 200  # below it a minority is a handful of reads at best
MIN_CONFIDENT_NAMED = 20  # fewer named reads: a handful of hits, never a confident call
MAX_ORGANISMS = 20  # organisms listed by name; the rest are counted (bounded output)
# Hosts whose reads swamp a clinical or cultured sample (NCBI taxids).
HOST_TAXIDS = {9606: "Homo sapiens", 9544: "Macaca mulatta", 10090: "Mus musculus",
               10116: "Rattus norvegicus", 9913: "Bos taurus", 9031: "Gallus gallus",
               60711: "Chlorocebus sabaeus", 9823: "Sus scrofa", 9615: "Canis lupus familiaris"}
# What the summary could not see: the design's dominance and floor fields, this project's
# minority and host fields, and organisms[].fraction (the first is dominant_fraction again).
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


def _reads(k: int) -> str:
    return f"{k} read" if k == 1 else f"{k} reads"


def p_seen(abundance: float, n: int) -> float:
    """Chance that at least one of n sampled reads comes from an organism at `abundance`."""
    return 1.0 - (1.0 - abundance) ** n if n else 0.0


def can_see_minority(dominant_fraction: float, n: int) -> bool:
    """The design's rule: a minority can show only when no organism holds half the reads and at
    least MIN_READS_FOR_MINORITY reads were searched."""
    return dominant_fraction < 0.5 and n >= MIN_READS_FOR_MINORITY


def sample_competence(top: int, second: int, named: int, n: int) -> tuple[float, float]:
    """(confidence, margin) of a dominance call over the whole sample of n searched reads, of
    which `named` had a named hit, `top` and `second` the two leading organisms' reads."""
    if not named or not n:
        return 0.0, 0.0
    identified = named / n
    depth = 1.0 if named >= MIN_CONFIDENT_NAMED else named / (2 * MIN_CONFIDENT_NAMED)
    confidence = (top / named) * identified * depth
    # Every no-hit read might belong to the runner-up: only the lead beyond them is secure.
    margin = (max(0, top - second - (n - named)) / n if named >= MIN_CONFIDENT_NAMED else 0.0)
    return confidence, margin


def summarize(hits: dict[str, list], searched: list[str], total_reads: int, local_db: str | None,
              minority: float = MINORITY_ABUNDANCE, max_organisms: int = MAX_ORGANISMS) -> dict:
    calls = assign(hits, searched)
    n = len(searched)
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
    of_named = f"the {named} reads with a named hit"
    if not named:
        caveat = (f"No named hits among the {n} reads searched; this establishes nothing about "
                  f"the sample. ")
    elif can_see:
        caveat = (f"{named} reads with a named hit and no organism holds half of them: an "
                  f"organism below about {floor:.2%} of the reads (1/n) is unobserved, not "
                  f"absent. ")
    else:
        why = (f"it dominates the {named} named reads" if dom_frac >= 0.5 else
               f"fewer than {MIN_READS_FOR_MINORITY} reads have a named hit")
        if no_hit:
            why += f"; {no_hit} of {n} reads matched nothing"
        caveat = (f"{dominant} is {dom_frac:.0%} of {of_named}, so a minority organism cannot be "
                  f"seen ({why}): anything below about {floor:.2%} of the reads (1/n) is "
                  f"unobserved, not absent. To see a minority, deplete {dominant} (map the "
                  f"reads to its genome and keep the unmapped reads) or search far more reads "
                  f"(--sample). ")
    if named and (named < MIN_CONFIDENT_NAMED or no_hit * 2 > n):
        caveat += (f"Only {named} of {n} reads ({named / n:.1%}) were identified: {dominant} "
                   f"is not established as the sample's organism"
                   + (f" (fewer than {MIN_CONFIDENT_NAMED} named reads)"
                      if named < MIN_CONFIDENT_NAMED else "") + ". ")
    if ambiguous:
        caveat += (f"{_reads(ambiguous)} tied between names at their best hit and count for "
                   f"each name. ")
    if host_dominated:
        caveat += (f"The dominant organism is a host ({dominant}); the organism asked about may "
                   f"be a minority. ")
    if local_db:
        caveat += (f"Searched the staged panel {local_db}, not nt: an organism absent from the "
                   f"panel is unobserved, not absent.")
    second = ranked[1][1] if len(ranked) > 1 else 0
    ties = sum(1 for _, v in ranked[1:] if ranked and v == ranked[0][1])
    blind = ([f"organisms below ~{floor:.2%} of reads (detection floor 1/n, n={n})"] if named
             else [f"every organism: none of the {n} reads searched has a named hit"])
    if named and named < MIN_CONFIDENT_NAMED:
        blind.append(f"{named} named reads are too few for a confident call (the floor is "
                     f"{MIN_CONFIDENT_NAMED})")
    elif named and not can_see:
        blind.append(f"a minority organism: {dominant} holds {dom_frac:.0%} of {of_named} (a "
                     f"minority shows only below 50% dominance and from "
                     f"{MIN_READS_FOR_MINORITY} reads with a named hit)")
    if no_hit:
        blind.append(f"what the {no_hit} reads that matched nothing come from")
    if local_db:
        blind.append(f"the database is the panel {local_db}, not nt: organisms outside it "
                     f"cannot be named, and their reads show as no-hit or as a wrong relative")
    if host_dominated:
        blind.append(f"host reads ({dominant}) dominate the sample")
    if total_reads > n:
        blind.append(f"{total_reads - n} of {total_reads} input reads were not searched")
    wider = ("search nt remotely (--remote) for organisms outside the panel" if local_db
             else "search a wider database (--database) for what matched nothing")
    if not named:
        # Nothing to be competent about: no dominant organism, so nothing to deplete.
        competence = bounded(0.0, 0.0, blind_spots=blind, applicable=False, remedy=(
            "search nt remotely (--remote) or a wider staged database (--database)" if local_db
            else "search a wider database (--database)") + "; check that the reads are "
            "nucleotide sequence of what was asked about")
    else:
        remedy = (f"deplete {dominant} (map to it, keep the unmapped reads) or raise --sample"
                  if not can_see else "raise --sample to lower the detection floor")
        if no_hit * 2 > n:  # most of the sample is unidentified: that comes first
            remedy = f"{wider} ({no_hit} of {n} reads matched nothing); {remedy}"
        elif local_db:
            remedy += f"; {wider}"
        confidence, margin = sample_competence(ranked[0][1], second, named, n)
        competence = bounded(
            confidence=confidence, margin=margin, alternatives=max(0, len(ranked) - 1),
            ties=ties, blind_spots=blind, remedy=remedy)
    out = {"dominant": dominant, "dominant_fraction": dom_frac, "named_reads": named,
           "organisms": organisms[:max_organisms], "no_hit": no_hit, "ambiguous": ambiguous}
    if no_hit:
        out["no_hit_caveat"] = (f"{_reads(no_hit)} matched nothing in this database: "
                                f"unobserved, not absent")
    if len(organisms) > max_organisms:
        rest = organisms[max_organisms:]
        out["other_organisms"] = {"organisms": len(rest), "reads": sum(o["reads"] for o in rest)}
    out.update({"detection_floor": floor, "can_see_minority": can_see,
                "minority_abundance": minority, "p_minority_seen": seen_minority,
                "host_dominated": host_dominated, "hosts": host, "caveat": caveat.strip(),
                "competence": competence.explain()})
    return out
