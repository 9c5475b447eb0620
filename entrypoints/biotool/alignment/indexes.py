"""Aligner and quantifier indexes of a reference, named as staging and provenance name them:
bwa's for short reads ("bwa"), minimap2's per long-read preset ("minimap2:<preset>"), and the
toolbox's own ("bowtie2", "hisat2", "salmon", "kallisto"; `biotool index` hands them to agents).

Staged with the reference at build time (biotool.staging), else built on first use into the
content-keyed cache: once per host (a lock per index), published whole by a rename, and
within the command's time budget (the build is killed at the deadline).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from biotool.cache import entry_dir, sha256_tree, work_dir
from biotool.deadline import UNBOUNDED, Deadline
from biotool.output import InputError, ToolFailure
from biotool.procs import OutOfTime, how_it_ended, run_bounded
from biotool.alignment.aligners import SHORT, index_label

BWA = index_label(SHORT)
# Folder indexes hold <folder>/reference.*, staged or cached alike, so the same FASTA gives the
# same folder digest either way; the tool is given that prefix (bwa, bowtie2, hisat2) or the
# folder itself (salmon).
PREFIX = "reference"
PREFIXED = (BWA, "bowtie2", "hisat2")
FOLDERS = (*PREFIXED, "salmon")
LONG_READ_PRESETS = ("map-ont", "map-pb", "map-hifi", "asm5", "asm10", "asm20", "splice")
KINDS = (*FOLDERS, "kallisto", *(f"minimap2:{p}" for p in LONG_READ_PRESETS))


# How each kind is used, for the agent that asked for its path.
USE = {BWA: "bwa mem {p} reads.fq > out.sam",
       "bowtie2": "bowtie2 -x {p} -U reads.fq -S out.sam",
       "hisat2": "hisat2 -x {p} -U reads.fq -S out.sam",
       "salmon": "salmon quant -i {p} -l A -r reads.fq -o quant",
       "kallisto": "kallisto quant -i {p} -o quant --single -l 200 -s 20 reads.fq",
       "minimap2": "minimap2 -a {p} reads.fq > out.sam"}


def check_kind(label: str) -> None:
    if label not in KINDS:
        raise InputError(f"--kind {label!r} is not an index kind; use one of {', '.join(KINDS)}")


def artifact_name(label: str, stem: str = PREFIX) -> str:
    """The file or folder an index is kept as, beside its FASTA or in the cache."""
    if label.startswith("minimap2:"):
        return f"{stem}.{label.split(':', 1)[1]}.mmi"
    if label == "kallisto":
        return f"{stem}.kallisto.idx"
    return label


# Inputs an indexer or its aligner is known to crash or fail on, refused before it runs.
# bwa 0.7.17 reads each name back from its .ann with fscanf("%s") into char[8192] (bntseq.c,
# bns_restore_core): a longer name overruns that buffer (from 8,201 characters `bwa mem`
# fails, a 1 MB name is a SIGSEGV).
BWA_NAME_MAX = 8191
# salmon 1.10 (k = 31) aborts (SIGABRT, "terminate called without an active exception")
# when no record is longer than k: 31 bases or fewer everywhere, 32 is indexed.
MIN_LONGEST = {"salmon": 32}
# bowtie2-build and hisat2-build drop every N: with no A, C, G or T left they fail ("empty
# reference").
NEEDS_BASES = ("bowtie2", "hisat2")
_NOT_ACGT = bytes(b for b in range(256) if b not in b"ACGTacgt")


def _acgt_bases(fasta: Path) -> int:
    """A, C, G and T in the sequence lines of fasta (names left out), in one streaming pass."""
    import re

    header = re.compile(rb"(?m)^>.*$")
    total, carry = 0, b""
    with open(fasta, "rb") as fh:
        while chunk := fh.read(1 << 22):
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            data, carry = (data[:cut], data[cut:]) if cut else (b"", data)
            total += len(header.sub(b"", data).translate(None, _NOT_ACGT))
            if total:
                return total  # one is enough to know it is not all N
    return total + len(header.sub(b"", carry).translate(None, _NOT_ACGT))


def _lengths(fasta: Path) -> dict[bytes, int]:
    """Record name -> length, from the .fai written beside every usable reference."""
    lengths = {}
    with open(str(fasta) + ".fai", "rb") as fai:
        for line in fai:
            name, length = line.split(b"\t", 2)[:2]
            lengths[name] = int(length)
    return lengths


def check_indexable(label: str, fasta: Path, shown: str) -> None:
    """Refuse (exit 2, naming the caller's reference) what `label`'s tool is known to crash or
    fail on, before it runs: names longer than bwa reads back, no record longer than
    salmon's k, no A/C/G/T at all for bowtie2 and hisat2."""
    lengths = _lengths(fasta)
    if label == BWA:
        longest = max(lengths, key=len)
        if len(longest) > BWA_NAME_MAX:
            raise InputError(f"{shown}: a record name of {len(longest):,} characters "
                             f"({longest[:40].decode(errors='replace')}...); bwa reads names of at "
                             f"most {BWA_NAME_MAX:,}: shorten the names")
    need = MIN_LONGEST.get(label)
    if need and max(lengths.values()) < need:
        raise InputError(f"{shown}: no record is {need} bases long (the longest is "
                         f"{max(lengths.values())}); {label} indexes 31-mers and needs a "
                         f"record of at least {need}")
    if label in NEEDS_BASES and not _acgt_bases(fasta):
        raise InputError(f"{shown}: no A, C, G or T in any record (all N); {label} has nothing "
                         f"to index")


def build(label: str, fasta: Path, out: Path, deadline: Deadline = UNBOUNDED,
          shown: str | None = None) -> None:
    """Build index `label` of `fasta` at `out` (a new folder, or one file) by `deadline`
    (OutOfTime once the tool is killed); ToolFailure if the tool fails, naming `shown` (the
    caller's --reference) rather than the cache's copy."""
    check_kind(label)
    if label in PREFIXED:
        out.mkdir()
        prefix = str(out / PREFIX)
        cmd = {BWA: ["bwa", "index", "-p", prefix, str(fasta)],
               "bowtie2": ["bowtie2-build", "--quiet", str(fasta), prefix],
               "hisat2": ["hisat2-build", "-q", str(fasta), prefix]}[label]
    elif label == "salmon":
        cmd = ["salmon", "index", "--threads", "2", "-t", str(fasta), "-i", str(out)]
    elif label == "kallisto":
        cmd = ["kallisto", "index", "-i", str(out), str(fasta)]
    else:
        cmd = ["minimap2", "-x", label.split(":", 1)[1], "-d", str(out), str(fasta)]
    rc, said = run_bounded(cmd, deadline.at)
    if rc != 0:
        shown = shown or str(fasta)
        raise ToolFailure(f"{shown}: {cmd[0]} could not index it for {label} "
                          f"({how_it_ended(rc)}): {said.replace(str(fasta), 'it')}")


def aligner_path(label: str, path: Path) -> Path:
    """What the tool is given for the index at `path`: the prefix inside its folder (bwa,
    bowtie2, hisat2), or the folder or file itself."""
    return path / PREFIX if label in PREFIXED else path


def cached(name: str, fasta: Path, digest: str, label: str,
           deadline: Deadline = UNBOUNDED) -> tuple[Path, str]:
    """Index `label` of reference `name` from the cache, built there first when no run has:
    (aligner path, sha256). A build the deadline cuts short fails the command (exit 2)."""
    d = entry_dir("reference", digest[:32])
    final = d / artifact_name(label)
    if not _complete(final):
        shown = f"--reference {name}"
        check_indexable(label, fasta, shown)
        _background_failure(final)
        bases = sum(_lengths(fasta).values())
        if not deadline.bounded and bases >= background_from(label):
            from biotool.lifetime import one_shot

            shape = one_shot()
            if shape:  # a background build would die with this command: no promise
                raise InputError(no_background(name, label, bases, shape))
            building = start_background(label, fasta, final, shown)
            raise InputError(
                f"{shown}: its {label} index ({bases / 1e6:.1f} Mb) is not staged; it is "
                f"{'now being' if building else 'still being'} built in the background (one "
                f"this large takes minutes) and kept in the cache once built: run the same "
                f"command again in a few minutes, or give --timeout SECONDS to wait for the "
                f"build in this command instead")
        try:
            _build_once(fasta, label, final, deadline, shown)
        except OutOfTime as why:
            raise why.refusal(
                f"reference {name}: its {label} index is not staged and was not built within "
                f"--timeout", f"give a longer --timeout (once built it is kept in the cache for "
                f"later runs), or stage it with the reference (indexes = [\"{label}\"] in "
                f"refs/references.toml)") from None
    return aligner_path(label, final), sha256_tree(final)


def _complete(final: Path) -> bool:
    # Every kind is published by one rename, so being there means being whole; a 0-byte
    # file is an older run's litter, never trusted.
    return final.is_dir() or (final.is_file() and final.stat().st_size > 0)


# First use of an index of a reference this large (bases, from its .fai) with no --timeout:
# built in the background, and the command returns at once saying to run it again. bwa
# indexes ~30 Mb in 74-200 s on a loaded 2-core host (docs/reads.md), past what an agent's
# command may take; minimap2 indexes a genome of that size in seconds.
BACKGROUND_FROM = 8_000_000
BACKGROUND_FROM_MINIMAP2 = 256_000_000
FAILED_SUFFIX = ".failed"  # beside `final`: a background build's error line, said once


def background_from(label: str) -> int:
    return BACKGROUND_FROM_MINIMAP2 if label.startswith("minimap2:") else BACKGROUND_FROM


# Seconds per Mb a first-use build may take on a loaded 2-core host: bwa's 196 s for 30 Mb
# (docs/reads.md); minimap2 indexes a 256 Mb genome in well under a minute; the others have
# no measure here and are given bwa's.
BUILD_S_PER_MB = {"bwa": 6.5, "minimap2": 0.25}


def expected_build_s(label: str, bases: int) -> int:
    """A rough upper estimate of the build's seconds, for the advice a refusal gives."""
    rate = BUILD_S_PER_MB.get(label.split(":", 1)[0], BUILD_S_PER_MB["bwa"])
    return max(10, math.ceil(bases / 1e6 * rate))


def no_background(name: str, label: str, bases: int, shape: str) -> str:
    """The refusal where a background build cannot outlive the command (biotool.lifetime):
    the ways to the index instead of a promise that cannot come true."""
    est = expected_build_s(label, bases)
    budget = 60 * math.ceil((2 * est + 60) / 60)  # room for the command's own work
    return (f"--reference {name}: its {label} index ({bases / 1e6:.1f} Mb) is not staged or "
            f"cached, and a build in the background would not outlive this command ({shape}). "
            f"Give --timeout {budget} to build it in this command (about {est} s; kept in the "
            f"cache, BIOTOOL_CACHE, for later runs where the cache outlives the container), or "
            f"build it once with `biotool index --kind {label} --reference {name} --timeout "
            f"{budget}`, or stage it (indexes = [\"{label}\"] in refs/references.toml)")


def start_background(label: str, fasta: Path, final: Path, shown: str) -> bool:
    """Start the build of `final` in a process of its own session, which outlives this
    command; False when a build is already under way. The index's lock is taken here and
    handed to that process (an inherited descriptor), so a run that comes meanwhile finds it
    held: it is told the build is under way, or waits within its --timeout."""
    import fcntl
    import subprocess
    import sys

    fd = os.open(f"{final}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        subprocess.Popen([sys.executable, "-m", "biotool.alignment.background", label,
                          str(fasta), str(final), shown, str(fd)], pass_fds=(fd,),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
        return True
    finally:
        os.close(fd)  # the lock stays with the background process's copy


def _background_failure(final: Path) -> None:
    """The error of a background build that failed, raised once (the next run tries again)."""
    failed = Path(str(final) + FAILED_SUFFIX)
    try:
        code, _, message = failed.read_text(encoding="utf-8").partition("\t")
        failed.unlink()
    except OSError:
        return
    cls = InputError if code.strip() == "2" else ToolFailure
    raise cls(f"{message.strip()} (in the background build started by an earlier run)")


def build_in_background(label: str, fasta: Path, final: Path, shown: str) -> None:
    """The background process, holding the index's lock (start_background): build `final`;
    a failure is left beside it (FAILED_SUFFIX) for the next run to say."""
    try:
        _build_locked(fasta, label, final, UNBOUNDED, shown)
    except Exception as exc:  # noqa: BLE001 - whatever it was, the next run says it
        from biotool.cache import atomic_path

        code = getattr(exc, "exit_code", 4)
        message = getattr(exc, "message", None) or f"{shown}: {label} index build failed " \
            f"({type(exc).__name__}: {exc})"
        with atomic_path(Path(str(final) + FAILED_SUFFIX)) as tmp:
            Path(tmp).write_text(f"{code}\t{' '.join(message.split())}\n", encoding="utf-8")


def _build_once(fasta: Path, label: str, final: Path, deadline: Deadline,
                shown: str | None = None) -> None:
    """Build `final` unless another run did while this one waited for the lock; the wait and
    the build together end at the deadline."""
    from filelock import FileLock, Timeout

    lock = FileLock(f"{final}.lock")
    try:
        lock.acquire(timeout=max(0.0, deadline.left()) if deadline.bounded else -1)
    except Timeout:
        raise OutOfTime("another run is still building it") from None
    try:
        _build_locked(fasta, label, final, deadline, shown)
    finally:
        lock.release()


def _build_locked(fasta: Path, label: str, final: Path, deadline: Deadline,
                  shown: str | None) -> None:
    """Build and publish `final`, its lock held, unless a run before got there."""
    if _complete(final):
        return
    with work_dir(final.parent) as work:
        out = work / final.name
        build(label, fasta, out, deadline, shown)
        try:
            os.replace(out, final)
        except OSError:  # another host sharing the cache without working flocks was first
            if not _complete(final):
                raise ToolFailure(f"could not publish the {label} index into {final}") from None
