"""A cache keyed by the content of inputs, with atomic writes (DESIGN.md section 2).

A file in the cache is published by `os.replace` from a temp file in the same directory,
so a concurrent or interrupted run never leaves a half-written file a later run trusts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Iterator

_CHUNK = 1 << 20


def cache_root() -> Path:
    """BIOTOOL_CACHE, else $XDG_CACHE_HOME/biotool, else /tmp/biotool-cache (always writable)."""
    env = os.environ.get("BIOTOOL_CACHE")
    if env:
        root = Path(env)
    elif os.environ.get("XDG_CACHE_HOME"):
        root = Path(os.environ["XDG_CACHE_HOME"]) / "biotool"
    else:
        root = Path(tempfile.gettempdir()) / "biotool-cache"
    root.mkdir(parents=True, exist_ok=True)
    return root


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def sha256_tree(path: str | Path) -> str:
    """A directory's digest: the sorted relative paths and contents of all its files."""
    path = Path(path)
    if path.is_file():
        return sha256_file(path)
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(path)).encode() + b"\0" + sha256_file(f).encode() + b"\n")
    return h.hexdigest()


def content_key(*paths: str | Path, **params) -> str:
    """A key over the contents of `paths` and the JSON of `params` (order-sensitive paths)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(sha256_file(p).encode() + b"\n")
    h.update(json.dumps(params, sort_keys=True, default=str).encode())
    return h.hexdigest()[:32]


def entry_dir(namespace: str, key: str) -> Path:
    d = cache_root() / namespace / key
    d.mkdir(parents=True, exist_ok=True)
    return d


@contextlib.contextmanager
def atomic_path(final: str | Path, suffix: str = "") -> Iterator[Path]:
    """Yield a temp path beside `final`; on success rename it into place, else remove it."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=suffix or ".part", dir=final.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise
