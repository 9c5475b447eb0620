"""The competence vocabulary shared by every tool: what an answer could not see.

Every finding carries `competence` with the same seven fields, so an agent can compare
a cut site, a cell-type call and a taxonomy summary on one scale. HEDGES names every field,
inside or beside `competence`, that says what an answer could not see: `BIOTOOL_CONFIDENT=1`
(the experimental control) removes exactly these, at every depth of every command's output.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

# The design's set first, then this project's own hedges; a new hedge field is added here, once.
HEDGES = frozenset({
    "caveat", "can_see_minority", "detection_floor", "dominant_fraction", "competence",
    "reference_is_conclusive", "blind_spots", "margin",
    "p_minority_seen", "minority_abundance", "host_dominated", "hosts", "note", "notes",
    "n_below_floor", "other_indels_nearby", "fraction_assessed", "no_hit_caveat",
})


# What the help texts teach about hedges (the fields above, the lessons beside them, and the
# control itself): in confident mode a help text reads like a conventional tool's, so every
# sentence that says any of this is left out of it (plain_help).
HEDGE_TALK = re.compile(
    r"\b(?:" + "|".join([*(re.escape(h).replace("_", "[_ ]") for h in
                           sorted(HEDGES, key=len, reverse=True)),
                         r"blind[_ ]?spots?", r"unobserved", r"not absent", r"deplet\w*",
                         r"hedge\w*", r"confiden\w*", r"\w*conclusive", r"could not see",
                         r"trust\w*", r"minority", r"BIOTOOL_CONFIDENT"]) + r")\b",
    re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")  # "e.g. x" splits too: harmless, pieces rejoin


def _plain_item(lines: list[str], width: int = 92) -> list[str]:
    """One help item (a prose paragraph, a definition or an option) without its hedge
    sentences; unchanged when it has none, rewrapped at its own indentation when it had."""
    text = " ".join(l.strip() for l in lines)
    if not HEDGE_TALK.search(text):
        return lines
    first = lines[0]
    lead = first[:len(first) - len(first.lstrip())]
    term = re.match(r"(\S+(?: \S+)?\s{2,})", first.lstrip())  # a definition's term column
    prefix = lead + (term.group(1) if term else "")
    hang = (lines[1][:len(lines[1]) - len(lines[1].lstrip())] if len(lines) > 1
            else " " * len(prefix))
    body = " ".join([first[len(prefix):].strip(), *(l.strip() for l in lines[1:])]).strip()
    kept = " ".join(x for x in _SENTENCE.split(body) if not HEDGE_TALK.search(x))
    if not kept:
        return [prefix.rstrip()] if term else []
    return textwrap.wrap(kept, width, initial_indent=prefix, subsequent_indent=hang,
                         break_on_hyphens=False) or [prefix.rstrip()]


def plain_help(text: str | None) -> str | None:
    """A help text (a docstring, click's `\\b` blocks and definition lists included) with no
    sentence about hedges or the control: paragraph by paragraph, item by item."""
    if not text:
        return text
    out = []
    for para in text.split("\n\n"):
        lines = para.split("\n")
        marker = [lines.pop(0)] if lines and lines[0].strip() == "\b" else []
        # A line less indented than the deepest starts an item (a heading, a term, an
        # option); the deepest lines continue it; a one-level paragraph is one item.
        deepest = max((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
        items: list[list[str]] = []
        for line in lines:
            if not items or len(line) - len(line.lstrip()) < deepest:
                items.append([line])
            else:
                items[-1].append(line)
        kept = [l for item in items for l in _plain_item(item)]
        if kept:
            out.append("\n".join(marker + kept))
    return "\n\n".join(out)


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
