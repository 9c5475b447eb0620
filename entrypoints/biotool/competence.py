"""The competence vocabulary shared by every tool: what an answer could not see.

Every finding carries `competence` with the same seven fields, so an agent can compare
a cut site, a cell-type call and a taxonomy summary on one scale. `competence` is a hedge
wherever it sits: each answer declares it, with its other hedge fields (biotool.arms), and the
control arm (`BIOTOOL_CONFIDENT=1`) leaves them out.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
