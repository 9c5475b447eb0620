"""Aligner indexes of a reference: bwa's for short reads ("bwa"), minimap2's per long-read
preset ("minimap2:<preset>"), named as staging and provenance name them.

Staged with the reference at build time (biotool.staging), else built on first use into the
content-keyed cache: once per host (a lock per index), published whole by a rename, and
within the command's time budget (the build is killed at the deadline).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from biotool.cache import entry_dir, sha256_tree, work_dir
from biotool.output import InputError, ToolFailure
from biotool.procs import OutOfTime, run_bounded
from biotool.reads.shortreads import SHORT, index_label

BWA = index_label(SHORT)
# bwa's files are <folder>/reference.{amb,ann,bwt,pac,sa}, staged or cached alike, so the same
# FASTA gives the same folder digest either way.
BWA_PREFIX = "reference"


def build(label: str, fasta: Path, out: Path, deadline: float | None = None) -> None:
    """Build index `label` of `fasta` at `out` (bwa's: a new folder; minimap2's: the .mmi) by
    `deadline` (OutOfTime once the tool is killed); ToolFailure if the tool fails."""
    if label == BWA:
        out.mkdir()
        cmd = ["bwa", "index", "-p", str(out / BWA_PREFIX), str(fasta)]
    else:
        cmd = ["minimap2", "-x", label.split(":", 1)[1], "-d", str(out), str(fasta)]
    rc, said = run_bounded(cmd, deadline)
    if rc != 0:
        raise ToolFailure(f"{cmd[0]} could not index {fasta} for {label} (exit {rc}): {said}")


def aligner_path(label: str, path: Path) -> Path:
    """What the aligner is given for the index at `path`: bwa's prefix inside its folder, or
    the .mmi itself."""
    return path / BWA_PREFIX if label == BWA else path


def cached(name: str, fasta: Path, digest: str, label: str,
           deadline: float | None = None) -> tuple[Path, str]:
    """Index `label` of reference `name` from the cache, built there first when no run has:
    (aligner path, sha256). A build the deadline cuts short fails the command (exit 2)."""
    d = entry_dir("reference", digest[:32])
    final = d / (BWA if label == BWA else f"reference.{label.split(':', 1)[1]}.mmi")
    if not _complete(final):
        try:
            _build_once(fasta, label, final, deadline)
        except OutOfTime as why:
            raise InputError(
                f"reference {name}: its {label} index is not staged and was not built within "
                f"--timeout ({why}); give a longer --timeout (once built it is kept in the "
                f"cache for later runs), or stage it with the reference "
                f"(indexes = [\"{label}\"] in refs/references.toml)") from None
    return aligner_path(label, final), sha256_tree(final)


def _complete(final: Path) -> bool:
    # Both kinds are published by one rename, so being there means being whole; a 0-byte
    # .mmi is an older run's litter, never trusted.
    return final.is_dir() or (final.is_file() and final.stat().st_size > 0)


def _build_once(fasta: Path, label: str, final: Path, deadline: float | None) -> None:
    """Build `final` unless another run did while this one waited for the lock; the wait and
    the build together end at the deadline."""
    from filelock import FileLock, Timeout

    lock = FileLock(f"{final}.lock")
    try:
        lock.acquire(timeout=-1 if deadline is None else max(0.0, deadline - time.monotonic()))
    except Timeout:
        raise OutOfTime("another run is still building it") from None
    try:
        if _complete(final):
            return
        with work_dir(final.parent) as work:
            out = work / final.name
            build(label, fasta, out, deadline)
            try:
                os.replace(out, final)
            except OSError:  # another host sharing the cache without working flocks was first
                if not _complete(final):
                    raise ToolFailure(f"could not publish the {label} index into {final}") from None
    finally:
        lock.release()
