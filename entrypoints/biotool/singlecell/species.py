"""Which species a matrix comes from, read from the way its genes are written.

Human symbols are upper case (CD3E, MT-CO1), mouse symbols title case (Cd3e, mt-Co1) with
mouse-only families (Gm12345, 1700001C19Rik); Ensembl ids say it outright (ENSG / ENSMUSG).
When the evidence is thin or mixed the answer is "unknown", which widens the reference
panel; it never defaults to human (a mouse sample scored against human models is noise).
"""

from __future__ import annotations

import re

from biotool.arms import Hedges
from biotool.competence import bounded

_MOUSE_ONLY = re.compile(r"^(Gm\d+|.+Rik\d*)$")
_HUMAN_ORF = re.compile(r"^C(\d+|X|Y)orf\d+$")  # C1orf112: human despite its lower case
_ENS_HUMAN = re.compile(r"^ENSG\d{6,}")
_ENS_MOUSE = re.compile(r"^ENSMUSG\d{6,}")
MIN_INFORMATIVE = 20
MIN_SHARE = 0.8
# share and evidence are what the call is read from, in both arms; note (the gene names
# overruling --organism) says what was done, in both arms too.
HEDGES = Hedges.of("competence")
ORGANISM_NAMES = {"human": "Homo sapiens", "mouse": "Mus musculus"}


def _vote(symbol: str) -> str | None:
    s = symbol.strip()
    if _ENS_MOUSE.match(s):
        return "mouse"
    if _ENS_HUMAN.match(s):
        return "human"
    letters = [c for c in s if c.isalpha()]
    if len(letters) < 2:
        return None  # "7SK", "U6": no case to read
    if _HUMAN_ORF.match(s):
        return "human"
    if _MOUSE_ONLY.match(s):
        return "mouse"
    if all(c.isupper() for c in letters):
        return "human"
    if s[0].isupper() and any(c.islower() for c in letters[1:]):
        return "mouse"
    if s.lower().startswith("mt-") and s[3:4].isupper() and any(c.islower() for c in s[4:]):
        return "mouse"
    return None


def detect(symbols, min_informative: int = MIN_INFORMATIVE) -> dict:
    """{"species": "human"|"mouse"|"unknown", "evidence": {...}, "competence": ...}."""
    counts = {"human": 0, "mouse": 0}
    mouse_only = 0
    total = 0
    for sym in symbols:
        total += 1
        v = _vote(str(sym))
        if v:
            counts[v] += 1
            if v == "mouse" and _MOUSE_ONLY.match(str(sym).strip()):
                mouse_only += 1
    informative = counts["human"] + counts["mouse"]
    evidence = {"genes": total, "informative": informative,
                "upper_case_like_human": counts["human"],
                "title_case_like_mouse": counts["mouse"], "mouse_only_families": mouse_only}
    if informative == 0:
        share, species = 0.0, "unknown"
    else:
        top = max(counts, key=counts.get)
        share = counts[top] / informative
        species = top if informative >= min_informative and share >= MIN_SHARE else "unknown"
    if species == "unknown":
        reason = (f"only {informative} genes carry case evidence (need {min_informative})"
                  if informative < min_informative else
                  f"gene-name case is mixed ({counts['human']} human-like, {counts['mouse']} "
                  "mouse-like)")
        comp = bounded(0.0, 0.0, alternatives=2, blind_spots=(reason,),
                       remedy="pass --organism human or --organism mouse if you know it; "
                              "otherwise both species' references are scored")
    else:
        comp = bounded(share, 2 * share - 1, alternatives=1,
                       blind_spots=("species read from gene-name conventions only",))
    return {"species": species, "share": round(share, 4), "evidence": evidence,
            "competence": comp.explain()}
