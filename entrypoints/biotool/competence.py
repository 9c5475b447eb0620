"""The competence vocabulary shared by every tool: what an answer could not see.

Every finding carries `competence` with the same seven fields, so an agent can compare
a cut site, a cell-type call and a taxonomy summary on one scale. HEDGES names every field,
inside or beside `competence`, that says what an answer could not see: `BIOTOOL_CONFIDENT=1`
(the experimental control) removes exactly these, at every depth of every command's output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The design's set first, then this project's own hedges; a new hedge field is added here, once.
HEDGES = frozenset({
    "caveat", "can_see_minority", "detection_floor", "dominant_fraction", "competence",
    "reference_is_conclusive", "blind_spots", "margin",
    "p_minority_seen", "minority_abundance", "host_dominated", "hosts", "note", "notes",
    "n_below_floor", "other_indels_nearby", "fraction_assessed", "no_hit_caveat",
})


def strip_hedges(obj):
    """`obj` without any HEDGES field, at any depth (the confident-mode answer)."""
    if isinstance(obj, dict):
        return {k: strip_hedges(v) for k, v in obj.items() if k not in HEDGES}
    if isinstance(obj, (list, tuple)):
        return [strip_hedges(v) for v in obj]
    return obj


def _unit(x: float) -> float:
    x = float(x)
    if x != x:  # NaN means "unknown": report no confidence rather than a poisoned value
        return 0.0
    return round(min(1.0, max(0.0, x)), 4)


@dataclass(frozen=True)
class Competence:
    applicable: bool
    confidence: float
    margin: float
    alternatives: int = 0
    ties: int = 0
    blind_spots: tuple[str, ...] = field(default_factory=tuple)
    remedy: str = ""

    def explain(self) -> dict:
        return {
            "applicable": self.applicable,
            "confidence": self.confidence,
            "margin": self.margin,
            "alternatives": self.alternatives,
            "ties": self.ties,
            "blind_spots": list(self.blind_spots),
            "remedy": self.remedy,
        }


def bounded(
    confidence: float,
    margin: float,
    alternatives: int = 0,
    ties: int = 0,
    blind_spots=(),
    remedy: str = "",
    applicable: bool = True,
) -> Competence:
    """A competence with confidence and margin clamped to 0..1 and counts to >= 0."""
    spots = (blind_spots,) if isinstance(blind_spots, str) else tuple(blind_spots)
    return Competence(
        applicable=bool(applicable),
        confidence=_unit(confidence),
        margin=_unit(margin),
        alternatives=max(0, int(alternatives)),
        ties=max(0, int(ties)),
        blind_spots=tuple(str(s) for s in spots if s),
        remedy=str(remedy),
    )


def not_applicable(reason: str, remedy: str = "") -> Competence:
    """The tool cannot answer this question at all; `reason` says why."""
    return bounded(0.0, 0.0, blind_spots=(reason,), remedy=remedy, applicable=False)
