"""Option kinds: what a number option accepts, how its help shows it, and the one wording of
each refusal (not a number, not finite, out of range), so that every program's `--timeout`,
`--top` or `--threads` is held to the same rule and refused in the same words.

Each kind is what a click ParamType would be (a conversion, a metavar and a range), kept here
on the standard library; `Option(kind=int)` and `Option(kind=float)` are `Number(int)` and
`Number(float)`, so a float option never takes NaN or infinity, whatever its command.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional


def invalid(names: str, why: str) -> str:
    """The one wording of a refused option value: `Invalid value for '--top': why`."""
    return f"Invalid value for {names}: {why}"


def _echo(value: object) -> str:
    """A refused value as the error echoes it: its first 20 characters name it well enough."""
    text = str(value)
    return text if len(text) <= 20 else text[:20] + "..."


def _shown(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)


@dataclass(frozen=True)
class Number:
    """An int or a finite float within [min, max]; `min_open`: min itself is refused."""

    type: type
    min: Optional[float] = None
    max: Optional[float] = None
    min_open: bool = False

    @property
    def __name__(self) -> str:  # the metavar's word, as for `int` and `float`
        return self.type.__name__

    @property
    def ranged(self) -> bool:
        return self.min is not None or self.max is not None

    def bounds(self) -> str:
        """The range as help and errors show it: x>=1, x>0, 1<=x<=256, 0<x<=604800."""
        low = "" if self.min is None else _shown(self.min) + ("<" if self.min_open else "<=")
        if self.max is None:
            return f"x{'>' if self.min_open else '>='}{_shown(self.min)}" if low else "x"
        return f"{low}x<={_shown(self.max)}"

    def check(self, value: Any, written: str | None = None) -> Any:
        """value itself, or ValueError saying why it is refused (no option named); `written`:
        the value as the caller wrote it, which the refusal echoes (0, not 0.0)."""
        shown = _echo(value if written is None else written)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{shown} is not a finite number.")
        below = self.min is not None and (value < self.min
                                          or (self.min_open and value == self.min))
        if below or (self.max is not None and value > self.max):
            raise ValueError(f"{shown} is not in the range {self.bounds()}.")
        return value

    def __call__(self, raw: str) -> Any:
        try:
            value = self.type(raw)
        except ValueError:
            raise ValueError(f"{_echo(raw)!r} is not a valid {self.type.__name__}.") from None
        return self.check(value, raw)


def seconds(max: Optional[float] = None, zero_ok: bool = False) -> Number:
    """A time budget in seconds: finite, above 0 (or 0 too when zero_ok: 0 is no limit, as for
    timeout(1)), at most max."""
    return Number(float, 0, max, min_open=not zero_ok)


def count(min: int = 1, max: Optional[int] = None) -> Number:
    """A whole number of things (hits, threads, cells, a MAPQ floor) from min to max."""
    return Number(int, min, max)


def fraction(zero_ok: bool = True) -> Number:
    """A share: a finite float from 0 (or just above it) to 1."""
    return Number(float, 0, 1, min_open=not zero_ok)
