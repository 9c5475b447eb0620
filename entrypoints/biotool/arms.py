"""The experiment's two arms: the tool, and its control (`BIOTOOL_CONFIDENT=1`), which is the
same tool minus its declared hedges and nothing else.

A hedge says what an answer could not see, how far to trust it, or how to read it with care.
It is declared where it is written, in one of two forms:

- text (a help sentence, or a clause inside a string of an answer) is wrapped in HEDGE_OPEN
  and HEDGE_CLOSE, written literally in a help text or with `hedge()` in code;
- a field of an answer is named in the `Hedges` of the module that writes it (a dotted path,
  `[]` for every item of a list, `*` for every value of a mapping), and the answer returned
  carries its command's declaration (`declared()`).

`for_arm()` and `help_for_arm()` render both arms from the one declared answer or help text:
the tool drops the marks, the control drops what they mark. Nothing is filtered by keyword.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from biotool import settings

HEDGE_OPEN, HEDGE_CLOSE = "\u27e6", "\u27e7"  # ⟦ ⟧: never in a tool's own text
_SPAN = re.compile(f"{HEDGE_OPEN}([^{HEDGE_OPEN}{HEDGE_CLOSE}]*){HEDGE_CLOSE}")
_CUT = "\x00"  # where a span was, while the control's text is tidied
# A span followed by one of these takes the blank before it along ("a ⟦b⟧." -> "a.").
_CLOSES = ("", "\n", " ", "\t", ".", ",", ";", ":", ")")

# `BIOTOOL_ARMS=marked`: both arms at once, for the test that proves they differ only by the
# declarations (tests/unit/system/test_arms.py): help shows the marks, an answer keeps them and
# lists its declared fields under MARKED_KEY.
MARKED_KEY = "hedges_declared"


def control() -> bool:
    """`BIOTOOL_CONFIDENT=1`: this process answers as the control arm."""
    return settings.CONFIDENT.get()


def marked() -> bool:
    return (settings.ARMS.get() or "").strip().lower() == "marked"


def hedge(text: str) -> str:
    """`text` declared a hedge: shown by the tool, left out of the control arm."""
    if HEDGE_OPEN in text or HEDGE_CLOSE in text:
        raise ValueError(f"a hedge inside a hedge: {text!r}")
    return f"{HEDGE_OPEN}{text}{HEDGE_CLOSE}"


def check_marks(text: str) -> None:
    """Raise ValueError when `text` has an unclosed, stray or nested mark."""
    rest = _SPAN.sub("", text)
    if HEDGE_OPEN in rest or HEDGE_CLOSE in rest:
        raise ValueError(f"unbalanced hedge marks in {text[:120]!r}")


def cut(text: str, keep: int) -> str:
    """The first `keep` characters of `text`, a hedge cut open there closed again."""
    head = text[:keep]
    return head + HEDGE_CLOSE if head.count(HEDGE_OPEN) > head.count(HEDGE_CLOSE) else head


def text_for_arm(text: str, is_control: bool) -> str:
    """One text in one arm: the tool's without the marks, the control's without the spans,
    tidied (the blank before a span at a clause's end, a line or paragraph left empty)."""
    if HEDGE_OPEN not in text and HEDGE_CLOSE not in text:
        return text
    check_marks(text)
    if not is_control:
        return text.replace(HEDGE_OPEN, "").replace(HEDGE_CLOSE, "")
    out, pos = [], 0
    for m in _SPAN.finditer(text):
        before, after = text[pos:m.start()], text[m.end():m.end() + 1]
        if after in _CLOSES:
            # Before punctuation even a line break goes (help text wrapped around the marks).
            before = before.rstrip() if after and after in ".,;:)" else before.rstrip(" \t")
        out += [before, _CUT]
        pos = m.end()
    out.append(text[pos:])
    lines = []
    for line in "".join(out).split("\n"):
        if _CUT in line:
            if not line.replace(_CUT, "").strip():
                continue  # the whole line was a hedge
            line = re.sub(f"^(\\s*){_CUT}+[ \\t]*", r"\1", line).replace(_CUT, "")
        lines.append(line)
    # A `\b` block whose lines were all hedges goes with its marker; no run of blank lines.
    tidy = re.sub(r"(?m)^\x08\n(?=\s*\n|\s*$)", "", "\n".join(lines))
    return re.sub(r"\n[ \t]*\n(?:[ \t]*\n)+", "\n\n", tidy).strip("\n") if lines else ""


def help_for_arm(text: str) -> str:
    """A help text as this process's arm shows it (the marks themselves when marked)."""
    return text if marked() or not text else text_for_arm(text, control())


@dataclass(frozen=True)
class Hedges:
    """The hedge fields of one answer (or of one block of it, placed with `under`)."""

    paths: frozenset[str] = frozenset()

    @classmethod
    def of(cls, *paths: str) -> "Hedges":
        for p in paths:
            # A field's name at the end: `list[]` alone would name no field.
            if not re.fullmatch(r"(?:(?:[\w-]+|\*)(?:\[\])?\.)*(?:[\w-]+|\*)", p):
                raise ValueError(f"not a field path: {p!r}")
        return cls(frozenset(paths))

    def under(self, key: str) -> "Hedges":
        return Hedges(frozenset(f"{key}.{p}" for p in self.paths))

    def __or__(self, other: "Hedges") -> "Hedges":
        return Hedges(self.paths | other.paths)


NONE = Hedges()


class Answer(dict):
    """A command's answer with the declaration of its hedge fields (`declared`)."""

    hedges: Hedges = NONE


def declared(answer: dict, hedges: Hedges) -> Answer:
    out = Answer(answer)
    out.hedges = getattr(answer, "hedges", NONE) | hedges
    return out


def _drop(obj: Any, steps: list[str]) -> None:
    """Remove the field at `steps` (already split) from `obj`, wherever it exists."""
    if not steps:
        return
    step, rest = steps[0], steps[1:]
    each = step.endswith("[]")
    key = step[:-2] if each else step
    if not isinstance(obj, dict):
        return
    keys = list(obj) if key == "*" else [key] if key in obj else []
    for k in keys:
        if not rest and not each:
            del obj[k]
            continue
        targets = obj[k] if each and isinstance(obj[k], list) else [obj[k]] if not each else []
        for t in targets:
            _drop(t, rest)


def _texts(obj: Any, is_control: bool) -> Any:
    if isinstance(obj, str):
        return text_for_arm(obj, is_control)
    if isinstance(obj, dict):
        return {k: _texts(v, is_control) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_texts(v, is_control) for v in obj]
    return obj


def for_arm(answer: dict, hedges: Hedges, is_control: bool) -> dict:
    """A plain-JSON answer in one arm: the tool's with the text marks dropped, the control's
    without its declared fields and marked text."""
    if is_control:
        answer = copy.deepcopy(answer)
        for path in sorted(hedges.paths):
            _drop(answer, path.split("."))
    return _texts(answer, is_control)


def render(answer: dict, hedges: Hedges) -> dict:
    """A plain-JSON answer as this process's arm shows it."""
    if marked():
        return {**answer, MARKED_KEY: sorted(hedges.paths)}
    return for_arm(answer, hedges, control())
