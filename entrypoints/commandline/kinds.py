"""Option kinds: what a number option accepts, how its help shows it, and the one wording of
each refusal (not a number, not finite, out of range), so that every program's `--timeout`,
`--top` or `--threads` is held to the same rule and refused in the same words.

Each kind is what a click ParamType would be (a conversion, a metavar and a range), kept here
on the standard library; `Option(kind=int)` and `Option(kind=float)` are `Number(int)` and
`Number(float)`, so a float option never takes NaN or infinity, whatever its command.
Path kinds (`existing_file`, `existing_folder`, `output_file`, `output_folder`) judge a named
file by its kind before anything opens it, and `Size` bounds a size like 4g by what the
engine holds.
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


# ------------------------------------------------------------------ paths

def _what(mode: int) -> str:
    """A file's kind in words, as a refusal says it."""
    import stat

    for test, words in ((stat.S_ISDIR, "a folder"), (stat.S_ISREG, "a regular file"),
                        (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                        (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):
        if test(mode):
            return words
    return "a special file"


def path_problem(path: str, want: str, missing_ok: bool = False) -> Optional[str]:
    """Why `path` is not what an option that names a `want` ("file": a readable regular
    file; "folder": a folder) takes, judged by stat alone (a FIFO is never opened, so
    nothing hangs), or None when it is. missing_ok: a path that does not exist yet is
    taken (an output to create) when its parent folder does."""
    import errno
    import os
    import stat

    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT and os.path.islink(path):
            return f"{path} is a broken link"
        if exc.errno == errno.ENOENT:
            if not missing_ok:
                return f"{path} does not exist"
            parent = os.path.dirname(os.path.abspath(path))
            return None if os.path.isdir(parent) else f"{path}: its folder {parent} does not exist"
        if exc.errno == errno.ELOOP:
            return f"{path} is a link loop"
        if exc.errno == errno.ENOTDIR:
            return f"{path}: a part of it is not a folder"
        return f"{path} cannot be read ({exc.strerror})"
    if want == "folder":
        if not stat.S_ISDIR(st.st_mode):
            return f"{path} is {_what(st.st_mode)}, not a folder"
        return None
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is {_what(st.st_mode)}, not a regular file"
    if not missing_ok and not os.access(path, os.R_OK):
        return f"{path} is not readable (permission denied)"
    return None


@dataclass(frozen=True)
class PathKind:
    """An option that names a file: an existing readable regular file ("file"), an existing
    folder ("folder"); `output`: it may also not exist yet (its folder must). The value is the
    path as written; the refusal names it whole (it is the culprit)."""

    want: str
    output: bool = False

    @property
    def metavar(self) -> str:
        return "DIR" if self.want == "folder" else "FILE"

    def __call__(self, raw: str) -> str:
        why = path_problem(raw, self.want, missing_ok=self.output)
        if why:
            raise ValueError(why)
        return raw


def existing_file() -> PathKind:
    """A file the command reads: it exists and is a readable regular file."""
    return PathKind("file")


def existing_folder() -> PathKind:
    """A folder the command reads: it exists and is a folder."""
    return PathKind("folder")


def output_file() -> PathKind:
    """A file the command writes: a regular file to replace, or a new one in an existing
    folder (never a folder, a FIFO or a device)."""
    return PathKind("file", output=True)


def output_folder() -> PathKind:
    """A folder the command writes into: an existing folder, or a new one in an existing
    folder (never a file)."""
    return PathKind("folder", output=True)


# ------------------------------------------------------------------ sizes

MAX_BYTES = 2 ** 63 - 1  # what the engine's int64 byte counts hold
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def size_bytes(text: str) -> int:
    """Bytes of a size like 4g (b, k, m, g; 1024-based), or ValueError saying why: not a
    size, zero, or more than MAX_BYTES."""
    import re

    m = re.fullmatch(r"\s*([0-9]{1,30})([bkmgBKMG]?)\s*", str(text))
    if not m:
        raise ValueError(f"{_echo(text)!r} is not a size like 4g (a number, then b, k, m or g)")
    n = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if n > MAX_BYTES:
        raise ValueError(f"{_echo(text)} is more bytes than the engine can hold "
                         f"(at most {MAX_BYTES >> 30:,}g)")
    return n


@dataclass(frozen=True)
class Size:
    """A size like 4g above 0, at most MAX_BYTES; the value is the text as written."""

    metavar: str = "SIZE"

    def __call__(self, raw: str) -> str:
        if size_bytes(raw) == 0:
            raise ValueError(f"{_echo(raw)} is not above 0")
        return raw.strip()
