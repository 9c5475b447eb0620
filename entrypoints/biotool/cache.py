"""A cache keyed by the content of inputs, with atomic writes (docs/contract.md).

A file in the cache is published by `os.replace` from a temp file in the same directory,
so a concurrent or interrupted run never leaves a half-written file a later run trusts.
Every temp file and work folder is flock-ed by its live writer, so the sweeper, run at the
start of each cached command, removes only litter whose holder is gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Iterator

from biotool.files import published
from biotool.output import InputError
from biotool.progress import log
from biotool.settings import CACHE

_CHUNK = 1 << 20
# Litter younger than this is never swept, even when unlocked: a writer may be between
# creating a file and locking it. One hour is far beyond that window.
STALE_AFTER_S = 3600
# The namespaces biotool writes (other tools' folders under the root are left alone).
NAMESPACES = ("reference", "bam", "vcf")
# Locks: align.lock per BAM entry, <index>.lock per reference index built on first use.
LOCK_SUFFIX = ".lock"
# Litter only becomes sweepable after STALE_AFTER_S, so sweeping more often than this finds
# nothing new; the stamp keeps a command's start to one stat when a sweep is not due.
SWEEP_EVERY_S = 600
SWEEP_STAMP = "last-sweep"
WORK_PREFIX = ".work."
HELD = ".held"

_ready_root: Path | None = None


def cache_root() -> Path:
    """BIOTOOL_CACHE, else $XDG_CACHE_HOME/biotool, else /tmp/biotool-cache.

    Created when possible; a root that cannot be created is returned as is, so `biotool
    doctor` can report it (commands that write get an InputError from `ready`)."""
    root = CACHE.get()
    if root is None and os.environ.get("XDG_CACHE_HOME"):
        root = Path(os.environ["XDG_CACHE_HOME"]) / "biotool"
    elif root is None:
        root = Path(tempfile.gettempdir()) / "biotool-cache"
    with contextlib.suppress(OSError):
        root.mkdir(parents=True, exist_ok=True)
    return root


def _unwritable(root: Path, why: str) -> InputError:
    return InputError(f"cache {root} (BIOTOOL_CACHE): {why}; set BIOTOOL_CACHE to a writable "
                      "folder")


def ready() -> Path:
    """The cache root, checked writable and swept once per process (before any cached work).

    An unwritable cache is the caller's setting, not a tool failure: InputError (exit 2)."""
    global _ready_root
    root = cache_root()
    if _ready_root == root:
        return root
    try:
        st = os.stat(root)
    except OSError as exc:
        raise _unwritable(root, f"cannot be created ({exc.strerror})") from None
    if not os.path.isdir(root):
        raise _unwritable(root, "is not a folder")
    if not os.access(root, os.W_OK | os.X_OK):
        raise _unwritable(root, "is not writable (read-only file system or permission "
                                f"denied, owner uid {st.st_uid})")
    stamp = root / SWEEP_STAMP
    try:
        due = time.time() - stamp.stat().st_mtime > SWEEP_EVERY_S
    except OSError:
        due = True
    if not due:
        _ready_root = root
        return root
    with contextlib.suppress(OSError):
        stamp.touch()  # first, so runs starting meanwhile skip the sweep
    swept = sweep(root)
    if any(swept.values()):
        log("cache: swept what killed or failed runs left: " +
            ", ".join(f"{n} {what}" for what, n in swept.items() if n))
    _ready_root = root
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
    root = ready()
    d = root / namespace / key
    try:
        d.mkdir(parents=True, exist_ok=True)
        os.utime(d)  # fresh, so a concurrent sweep never takes it for an old empty folder
    except OSError as exc:
        raise _unwritable(root, f"cannot create {d} ({exc.strerror})") from None
    return d


def _lock_nb(fd: int) -> bool:
    """True when the exclusive flock was taken (the file's holder, if any, is gone); False
    when it is held, or when the file system has no flock (then nothing is swept)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


def _hold(fd: int) -> None:
    """Mark a file live for the sweeper; on a file system without flock the age threshold
    alone protects it."""
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_EX)


@contextlib.contextmanager
def atomic_path(final: str | Path, suffix: str = "") -> Iterator[Path]:
    """Yield a temp path beside `final`; on success rename it into place, else remove it.

    The temp file stays flock-ed while it is written, which tells the sweeper it is live
    (files.published, the one atomic publication)."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    with published(final, mode=None, suffix=suffix or ".part", hold=_hold) as tmp_path:
        yield tmp_path


@contextlib.contextmanager
def work_dir(parent: str | Path) -> Iterator[Path]:
    """A private `.work.*` folder in `parent`, flock-ed (via its .held file) while in use and
    removed after; a killed run's folder is left unlocked for the sweeper."""
    work = Path(tempfile.mkdtemp(dir=parent, prefix=WORK_PREFIX))
    fd = os.open(work / HELD, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        _hold(fd)
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)
        os.close(fd)


def _holder_gone(path: Path) -> bool:
    """True when no live process holds an flock on `path` (or it vanished meanwhile)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return True
    except OSError:
        return False  # cannot tell (another user's file, a link): leave it
    try:
        return _lock_nb(fd)
    finally:
        os.close(fd)  # closing drops the flock we may have taken


def _old(st: os.stat_result, now: float, max_age: float) -> bool:
    return now - st.st_mtime > max_age


def _sweep_entry(d: Path, now: float, max_age: float, counts: dict) -> None:
    """One key folder: stale work folders, unlocked temp files, orphaned locks, 0-byte
    indexes; then the folder itself when that left it empty and old. Published files are
    only listed, never stat-ed, so a folder of results costs one scandir."""
    try:
        entries = list(os.scandir(d))
    except OSError:
        return
    dotted = sorted((e.name for e in entries if e.name.startswith(".")
                     and not e.name.startswith(WORK_PREFIX)), key=len)
    removed = 0
    for e in entries:
        name = e.name
        if not (name[:1] == "." or name.endswith((LOCK_SUFFIX, ".mmi"))):
            continue
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        path = Path(e.path)
        if name.startswith(WORK_PREFIX) and e.is_dir(follow_symlinks=False):
            if _old(st, now, max_age) and _holder_gone(path / HELD):
                shutil.rmtree(path, ignore_errors=True)
                counts["work folders"] += 1
                removed += 1
        elif name[:1] == "." and e.is_file(follow_symlinks=False):
            # A side file (e.g. tmp.fasta.fai beside tmp.fasta) is live while the temp file
            # whose name it extends (the shortest such name still there) is locked.
            owner = next(n for n in dotted if name.startswith(n) and
                         (n == name or (d / n).exists()))
            if _old(st, now, max_age) and _holder_gone(d / owner):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    counts["temp files"] += 1
                    removed += 1
        elif name.endswith(LOCK_SUFFIX) and e.is_file(follow_symlinks=False):
            if _old(st, now, max_age) and _holder_gone(path):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    counts["locks"] += 1
                    removed += 1
        elif name.endswith(".mmi") and st.st_size == 0 and e.is_file(follow_symlinks=False):
            # Never published by a live run (indexes are renamed in whole), so never trusted.
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                counts["temp files"] += 1
                removed += 1
    if removed < len(entries):
        return
    try:
        if _old(os.stat(d), now, max_age) and not any(os.scandir(d)):
            os.rmdir(d)  # fails, harmlessly, if a run put something in it meanwhile
            counts["empty folders"] += 1
    except OSError:
        pass


def sweep(root: str | Path | None = None, max_age: float = STALE_AFTER_S) -> dict:
    """Remove litter of killed or failed runs from biotool's cache namespaces; returns counts.

    One scandir per namespace and per key folder; never removes anything younger than
    `max_age` seconds or flock-ed by a live process, so it is safe beside running commands."""
    root = Path(root) if root is not None else cache_root()
    counts = {"work folders": 0, "temp files": 0, "locks": 0, "empty folders": 0}
    now = time.time()
    for ns in NAMESPACES:
        try:
            keys = [Path(e.path) for e in os.scandir(root / ns) if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for d in keys:
            _sweep_entry(d, now, max_age, counts)
    return counts
