"""JSON Lines in and out: every unreadable line reported with its number, writes atomic."""

from __future__ import annotations

import json
from pathlib import Path

from biotool.output import InputError


def read_text(path: str | Path, what: str = "file") -> str:
    """A UTF-8 input file's text, or one InputError naming the file and why not."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read {what}: {exc}") from None


def read(path: str | Path, what: str = "file") -> list[tuple[int, dict]]:
    """(line number, object) for each non-blank line; one error naming every bad line."""
    path = Path(path)
    text = read_text(path, what)
    out, bad = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            bad.append(f"line {number} ({exc.msg})")
            continue
        if not isinstance(obj, dict):
            bad.append(f"line {number} (not a JSON object)")
            continue
        out.append((number, obj))
    if bad:
        shown = ", ".join(bad[:10]) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
        raise InputError(f"{path}: unreadable JSONL {what}: {shown}")
    if not out:
        raise InputError(f"{path}: empty {what} (no JSON lines)")
    return out


def write(path: str | Path, rows) -> int:
    """Write rows as JSONL atomically (temp file beside it, renamed on success)."""
    from biotool.cache import atomic_path
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a directory; --out must name a file", culprit=str(path))
    n = 0
    try:
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
                n += 1
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}", culprit=str(path)) \
            from None
    return n
