"""What a set of per-read hits says, and what it could not see: dominant organism, detection floor.

A sample of n reads sees an organism only if at least one of its reads was drawn: below
about 1/n of the reads an organism was probably not sampled at all, and a confident
answer about the majority (often the host) says nothing about a minority.
"""

from __future__ import annotations

import re

from biotool.competence import bounded

MINORITY_ABUNDANCE = 0.05  # "a minority organism": 5% of reads, a typical pathogen-in-host share
# Hosts whose reads swamp a clinical or cultured sample (NCBI taxids).
HOST_TAXIDS = {9606: "Homo sapiens", 9544: "Macaca mulatta", 10090: "Mus musculus",
               10116: "Rattus norvegicus", 9913: "Bos taurus", 9031: "Gallus gallus",
               60711: "Chlorocebus sabaeus", 9823: "Sus scrofa", 9615: "Canis lupus familiaris"}
_STRAIN = re.compile(r"^(Influenza [ABCD] virus)\s*\(.*\)\s*$")


def organism_of(hit: dict) -> str:
    """The organism a hit names, with influenza strains pooled to their species."""
    name = (hit.get("sciname") or hit.get("title") or hit.get("accession") or "?").strip()
    m = _STRAIN.match(name)
    return m.group(1) if m else name


def assign(hits: dict[str, list], searched: list[str]) -> dict[str, str | None]:
    """Each searched query's organism: the best hit's, None without hits, "" when tied."""
    out = {}
    for q in searched:
        qh = hits.get(q) or []
        if not qh:
            out[q] = None
            continue
        best = max(h.get("bit_score") or 0 for h in qh)
        names = {organism_of(h) for h in qh if (h.get("bit_score") or 0) >= best}
        out[q] = names.pop() if len(names) == 1 else ""
    return out


def p_seen(abundance: float, n: int) -> float:
    """Chance that at least one of n sampled reads comes from an organism at `abundance`."""
    return 1.0 - (1.0 - abundance) ** n if n else 0.0


def summarize(hits: dict[str, list], searched: list[str], total_reads: int, local_db: str | None,
              minority: float = MINORITY_ABUNDANCE) -> dict:
    calls = assign(hits, searched)
    n = len(searched)
    counts: dict[str, int] = {}
    taxids: dict[str, object] = {}
    for q, org in calls.items():
        if org:
            counts[org] = counts.get(org, 0) + 1
    for qh in hits.values():
        for h in qh:
            taxids.setdefault(organism_of(h), h.get("taxid"))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    no_hit = sum(1 for v in calls.values() if v is None)
    ambiguous = sum(1 for v in calls.values() if v == "")
    organisms = [{"name": k, "taxid": taxids.get(k), "reads": v, "fraction": round(v / n, 4)}
                 for k, v in ranked]
    dominant = ranked[0][0] if ranked else None
    dom_frac = round(ranked[0][1] / n, 4) if ranked else 0.0
    floor = round(1.0 / n, 4) if n else 1.0
    seen_minority = round(p_seen(minority, n), 4)
    can_see = seen_minority >= 0.95
    host = [o["name"] for o in organisms if o["taxid"] in HOST_TAXIDS]
    host_dominated = bool(dominant and taxids.get(dominant) in HOST_TAXIDS)
    caveat = (f"{n} reads searched: an organism below about {floor:.1%} of the reads (1/n) was "
              f"probably not sampled at all; one at {minority:.0%} had a {seen_minority:.0%} chance "
              f"of being seen. ")
    if host_dominated:
        caveat += f"The dominant organism is a host ({dominant}); the organism asked about may be a minority. "
    if not can_see or host_dominated:
        caveat += ("To see a minority organism, deplete the host reads first (map to the host "
                   "genome and keep the unmapped reads) or search far more reads (--sample).")
    else:
        caveat += "Absence of an organism below that floor is not evidence it is absent."
    if local_db:
        caveat += (f" Searched the staged panel {local_db}, not nt: an organism absent from the "
                   f"panel is unobserved, not absent.")
    if not ranked:
        caveat = "No query matched anything. " + caveat
    second = ranked[1][1] if len(ranked) > 1 else 0
    ties = sum(1 for _, v in ranked[1:] if ranked and v == ranked[0][1])
    blind = [f"organisms below ~{floor:.1%} of reads (detection floor 1/n, n={n})"]
    if local_db:
        blind.append(f"the database is the panel {local_db}, not nt: organisms outside it "
                     f"cannot be named, and their reads show as no-hit or as a wrong relative")
    if host_dominated:
        blind.append(f"host reads ({dominant}) dominate the sample")
    if total_reads > n:
        blind.append(f"{total_reads - n} of {total_reads} input reads were not searched")
    remedy = ("deplete host reads, or raise --sample" if (not can_see or host_dominated)
              else "raise --sample to lower the detection floor")
    if local_db:
        remedy += "; search nt remotely (--remote) for organisms outside the panel"
    competence = bounded(
        confidence=dom_frac, margin=(ranked[0][1] - second) / n if ranked and n else 0.0,
        alternatives=max(0, len(ranked) - 1), ties=ties, blind_spots=blind, remedy=remedy)
    return {"dominant": dominant, "dominant_fraction": dom_frac, "organisms": organisms,
            "no_hit": no_hit, "ambiguous": ambiguous, "detection_floor": floor,
            "minority_abundance": minority, "p_minority_seen": seen_minority,
            "can_see_minority": can_see, "host_dominated": host_dominated, "hosts": host,
            "caveat": caveat.strip(), "competence": competence.explain()}
