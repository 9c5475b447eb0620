"""Influenza subtype evidence in two tiers: strong from HA/NA hits, weak from internal segments.

Only hemagglutinin (segment 4) and neuraminidase (segment 6) establish a subtype. The strain
label on a hit to an internal segment is weak evidence, not none (reassortment and what the
database holds both bias it). RefSeq titles often name only "segment 4" or "segment 6".

Competence follows the design: confidence = min(1, n_strong / 10) over the reads that typed HA or
NA; margin 1.0 only when a strong H x N subtype exists (HA-only reads, "H5N?", give 0.0)
and no weak-only subtype sits outside them;
alternatives = ties = candidates beyond the first; and below 20 strong reads, subtypes below
the read-depth floor are unobserved. A staged panel adds two limits, and each takes the margin
to 0: a panel of one subtype cannot name another, and reads of a subtype it does not hold come
back as no-hit, so when many reads had no hit the HA/NA reads of another subtype may be among
them, whatever HA/NA reads were typed.
"""

from __future__ import annotations

import re

from biotool.arms import Hedges
from biotool.competence import bounded

HA, NA = 4, 6
_SEGMENT = re.compile(r"\bsegment\s+(\d)\b", re.I)
# Gene names in GenBank titles, checked when the title names no segment number.
_GENES = [
    (HA, re.compile(r"hemagglutinin|haemagglutinin|\(HA\d?\)|\bHA\d? gene", re.I)),
    (NA, re.compile(r"neuraminidase|\(NA\)|\bNA gene", re.I)),
    (1, re.compile(r"\bPB2\b", re.I)),
    (2, re.compile(r"\bPB1\b", re.I)),
    (3, re.compile(r"\(PA\)|polymerase PA\b|\bPA gene", re.I)),
    (5, re.compile(r"nucleoprotein|\(NP\)|\bNP gene", re.I)),
    (7, re.compile(r"matrix protein|\(M[12]?\)|\bM gene", re.I)),
    (8, re.compile(r"nonstructural|non-structural|nuclear export|\(NS[12]?\)|\bNS gene", re.I)),
]
# "(H1N1)" in a strain name; GenBank also has H-only labels such as "(H9)" on partly typed strains.
_SUBTYPE = re.compile(r"\((H\d{1,2})(N\d{1,2})?\)", re.I)
_FLU = re.compile(r"influenza [ab] virus", re.I)
# The tiers' bases say what each tier is, in both arms; the competence judges the subtype.
HEDGES = Hedges.of("competence")
CONFIDENT_STRONG_READS = 10  # confidence = min(1, n_strong / 10)
DEPTH_FLOOR_READS = 20       # fewer strong reads: subtypes below the read-depth floor unseen
MANY_NO_HIT = 0.1            # no-hit reads at this share of the searched reads are "many"
MAX_CANDIDATES = 10          # candidates listed (bounded output); competence counts them all


def is_influenza(hit: dict) -> bool:
    return bool(_FLU.search(f"{hit.get('sciname', '')} {hit.get('title', '')}"))


def segment_of(hit: dict) -> int | None:
    title = hit.get("title", "") or ""
    m = _SEGMENT.search(title)
    if m:
        return int(m.group(1))
    for seg, pattern in _GENES:
        if pattern.search(title):
            return seg
    return None


def subtype_of(hit: dict) -> tuple[str, str] | None:
    """(H, N) from the strain label in a hit's title or organism name, e.g. ("H1", "N1");
    N is "N?" when the label names only the H ("(H9)")."""
    m = _SUBTYPE.search(f"{hit.get('title', '')} {hit.get('sciname', '')}")
    return (m.group(1).upper(), (m.group(2) or "N?").upper()) if m else None


def database_subtypes(taxa: dict) -> set[str]:
    """The influenza subtypes a staged database holds, from its organisms' strain labels."""
    out = set()
    for entry in (taxa or {}).values():
        st = subtype_of({"sciname": entry.get("sciname", "")}) if isinstance(entry, dict) else None
        if st:
            out.add(st[0] + st[1])
    return out


def _add(counter: dict, key: str) -> None:
    counter[key] = counter.get(key, 0) + 1


def tiers(hits: dict[str, list], panel: str | None = None,
          panel_subtypes: set[str] | None = None) -> dict | None:
    """The tiered influenza block for per-query hits, or None when no query hit influenza.

    `panel` names the staged database searched (None for nt), `panel_subtypes` the subtypes it
    holds (database_subtypes); queries with an empty hit list count as no-hit reads.
    """
    strong_h: dict[str, int] = {}
    strong_n: dict[str, int] = {}
    weak: dict[str, int] = {}
    segments: dict[str, int] = {}
    reads = unlabelled = n_strong = 0
    for qh in hits.values():
        flu = [h for h in qh if is_influenza(h)]
        if not flu:
            continue
        reads += 1
        best = max(h.get("bit_score") or 0 for h in flu)
        top = [h for h in flu if (h.get("bit_score") or 0) >= best]
        segs = {segment_of(h) for h in top} - {None}
        seg = segs.pop() if len(segs) == 1 else None
        _add(segments, str(seg) if seg else "unknown")
        labels = {subtype_of(h) for h in top} - {None}
        if not labels:
            unlabelled += 1
            continue
        # A read tied across strains of different subtypes supports each of them once.
        if seg == HA:
            n_strong += 1
            for h_part in sorted({h for h, _ in labels}):
                _add(strong_h, h_part)
        elif seg == NA:
            n_parts = {n for _, n in labels} - {"N?"}
            if not n_parts:
                unlabelled += 1  # an NA hit whose label names only the H says nothing of N
            else:
                n_strong += 1
            for n_part in sorted(n_parts):
                _add(strong_n, n_part)
        else:
            for h_part, n_part in sorted(labels):
                _add(weak, h_part + n_part)
    if reads == 0:
        return None
    candidates = _candidates(strong_h, strong_n, weak)
    no_hit = sum(1 for qh in hits.values() if not qh)
    return {
        "reads": reads,
        "strong_reads": n_strong,
        "segments": dict(sorted(segments.items())),
        "strong": {"basis": "hits to HA (segment 4) and NA (segment 6)", "H": strong_h,
                   "N": strong_n},
        "weak": {"basis": "strain labels of hits to internal segments (1, 2, 3, 5, 7, 8)",
                 "subtypes": dict(sorted(weak.items(), key=lambda kv: -kv[1]))},
        "unlabelled_reads": unlabelled,
        "candidates": candidates[:MAX_CANDIDATES],
        "candidates_total": len(candidates),
        "competence": _competence(strong_h, strong_n, candidates, n_strong, no_hit, len(hits),
                                  panel, panel_subtypes).explain(),
    }


def _candidates(strong_h: dict, strong_n: dict, weak: dict) -> list[dict]:
    out: list[dict] = []
    hs = sorted(strong_h, key=lambda k: -strong_h[k]) or ["H?"]
    ns = sorted(strong_n, key=lambda k: -strong_n[k]) or ["N?"]
    if strong_h or strong_n:
        for h in hs:
            for n in ns:
                out.append({"subtype": h + n, "tier": "strong" if "?" not in h + n else "partial",
                            "ha_reads": strong_h.get(h, 0), "na_reads": strong_n.get(n, 0),
                            "internal_reads": weak.get(h + n, 0)})
        out.sort(key=lambda c: -(c["ha_reads"] + c["na_reads"]))
    named = {c["subtype"] for c in out}
    for subtype, k in sorted(weak.items(), key=lambda kv: -kv[1]):
        if subtype not in named:
            out.append({"subtype": subtype, "tier": "weak", "ha_reads": 0, "na_reads": 0,
                        "internal_reads": k})
    return out


def _competence(strong_h: dict, strong_n: dict, candidates: list[dict], n_strong: int,
                no_hit: int, n: int, panel: str | None, panel_subtypes: set[str] | None):
    blind: list[str] = []
    remedies: list[str] = []
    # A panel of one subtype "finds no alternative" whatever the sample holds.
    single = panel is not None and panel_subtypes is not None and len(panel_subtypes) <= 1
    untyped = not strong_h or not strong_n
    # Typed HA/NA reads of one subtype say nothing of another subtype's HA/NA among the no-hits.
    missing = panel is not None and no_hit >= max(2, MANY_NO_HIT * n)
    if single:
        held = ", ".join(sorted(panel_subtypes)) or "no labelled subtype"
        blind.append(f"the panel {panel} holds one influenza subtype ({held}): any other "
                     f"subtype cannot be named from it, so the margin is 0 and at least one "
                     f"alternative is counted")
    if missing:
        blind.append(f"{no_hit} of {n} reads had no hit in the panel {panel}: the HA/NA reads "
                     f"may be among them (the database may lack this sample's subtype), so "
                     f"the margin is 0")
        remedies.append("search nt remotely (--remote) or a wider database (--database): reads "
                        "of a subtype the panel lacks come back as no-hit")
    elif single:
        remedies.append("search nt remotely (--remote) or a wider database (--database) to "
                        "weigh subtypes the panel does not hold")
    if not candidates:
        return bounded(0.0, 0.0, alternatives=1 if single else 0,
                       blind_spots=["influenza hits carry no subtype label", *blind],
                       remedy="; ".join(remedies + ["type HA and NA directly (assemble "
                                                    "segments 4 and 6)"]))
    # There is no ranking axis between candidates: every candidate beyond the first is both
    # an alternative and a tie.
    extra = len(candidates) - 1
    # The design's margin needs a strong H x N subtype: HA-only reads ("H5N?") leave N open.
    strong = [c for c in candidates if c["tier"] == "strong"]
    weak_outside = [c for c in candidates if c["tier"] == "weak"]
    blind.insert(0, "only HA (segment 4) and NA (segment 6) establish a subtype; "
                    "internal-segment strain labels are weak evidence (reassortants, what the "
                    "database holds)")
    if n_strong < DEPTH_FLOOR_READS:
        blind.append(f"subtypes below the read-depth floor are unobserved ({n_strong} reads "
                     f"typed HA or NA; fewer than {DEPTH_FLOOR_READS})")
    if not strong_h:
        blind.append("no read hit HA (segment 4): the H subtype is not established")
    if not strong_n:
        blind.append("no read hit NA (segment 6): the N subtype is not established")
    if extra:
        blind.append(f"{len(candidates)} candidate subtypes (a mixture, a reassortant, or "
                     f"ambiguous hits)")
    if n_strong < DEPTH_FLOOR_READS or untyped:
        remedies.append("search more reads (--sample) so that segment 4 and 6 reads are drawn, "
                        "or assemble HA and NA and type them directly")
    return bounded(min(1.0, n_strong / CONFIDENT_STRONG_READS),
                   1.0 if strong and not weak_outside and not single and not missing else 0.0,
                   alternatives=max(extra, 1) if single else extra, ties=extra,
                   blind_spots=blind, remedy="; ".join(remedies))
