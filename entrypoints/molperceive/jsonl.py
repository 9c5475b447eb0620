"""JSON Lines in and out: every unreadable line reported with its number, writes atomic.

Inputs go through biotool.files (stat before open, so a FIFO never blocks; a size bound before
reading); outputs are checked before any work and published readable by others.
"""

from __future__ import annotations

import json
from pathlib import Path

from biotool import files
from biotool.output import InputError

# A corpus of 100,000 rows is about 100 MB; anything larger is not a corpus we can hold anyway.
MAX_INPUT_BYTES = 512 * 1024 * 1024
# Rows nest four levels (row > input > graph > atoms); anything deeper is not a row.
MAX_DEPTH = 32


def read_text(path: str | Path, what: str = "file") -> str:
    """A UTF-8 input file's text, or one InputError naming the file and why not."""
    data = files.read_bounded(path, what, MAX_INPUT_BYTES)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {path}: not UTF-8 text (byte {exc.start})") from None


def _depth(obj) -> int:
    """Nesting depth of a parsed JSON value, walked without recursion."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        value, d = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, d)
            if d > MAX_DEPTH:
                return d
            stack.extend((v, d + 1) for v in (value.values() if isinstance(value, dict) else value))
    return deepest


def _unique(pairs: list) -> dict:
    """A JSON object whose keys are all different: with a key given twice (`"id"` twice), which
    value counts is the parser's choice, so the line is refused instead."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"key {twice[:40]!r} given twice")
    return obj


def _parse(line: str):
    """(object, None) or (None, why) for one line; never raises."""
    try:
        obj = json.loads(line, object_pairs_hook=_unique)
    except RecursionError:
        return None, f"nested deeper than {MAX_DEPTH} levels"
    except ValueError as exc:
        # JSONDecodeError has .msg; the integer-digit limit raises a plain ValueError.
        return None, " ".join(getattr(exc, "msg", str(exc)).split())[:120]
    if not isinstance(obj, dict):
        return None, "not a JSON object"
    if _depth(obj) > MAX_DEPTH:
        return None, f"nested deeper than {MAX_DEPTH} levels"
    return obj, None


def read_lines(path: str | Path, what: str = "file") -> tuple[list[tuple[int, dict]], list[tuple[int, str]]]:
    """(line number, object) for each readable non-blank line, and (line number, why) for the rest."""
    text = read_text(path, what)
    out, bad = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        obj, why = _parse(line)
        if why:
            bad.append((number, why))
        else:
            out.append((number, obj))
    if not out and not bad:
        raise InputError(f"{path}: empty {what} (no JSON lines)")
    return out, bad


def read(path: str | Path, what: str = "file") -> list[tuple[int, dict]]:
    """(line number, object) for each non-blank line; one error naming every bad line."""
    out, bad = read_lines(path, what)
    if bad:
        shown = ", ".join(f"line {n} ({why})" for n, why in bad[:10])
        shown += f" and {len(bad) - 10} more" if len(bad) > 10 else ""
        raise InputError(f"{path}: unreadable JSONL {what}: {shown}")
    return out


def check_output(path: str | Path, what: str = "--out") -> Path:
    """The output path, checked before any work (folder exists and is writable, not a dir)."""
    return files.output_file(path, what)


def write(path: str | Path, rows) -> int:
    """Write rows as JSONL atomically, readable by others as the umask allows."""
    path = check_output(path)
    n = 0
    try:
        with files.published(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
                n += 1
    except OSError as exc:
        raise InputError(f"--out {path}: cannot write: {exc.strerror or exc}") \
            from None
    return n
