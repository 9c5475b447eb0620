"""The cache sweeper: litter of killed runs goes, anything a live process holds stays.

Real processes throughout: writers are children really killed with SIGKILL (the kernel drops
their flocks, as it does for an agent's killed command), holders are children still running,
and concurrent sweepers and writers race on one cache."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from biotool import cache

HOUR_AGO = time.time() - 2 * 3600
CTX = mp.get_context("fork")


def _age(*paths: Path) -> None:
    """Make litter look older than the sweep threshold (a killed run from hours ago)."""
    for p in paths:
        for q in ([p, *p.rglob("*")] if p.is_dir() else [p]):
            os.utime(q, (HOUR_AGO, HOUR_AGO), follow_symlinks=False)


def _temp_writer(final: str, ready, release) -> None:
    with cache.atomic_path(Path(final), suffix=".mmi") as tmp:
        Path(tmp).write_bytes(b"half")
        Path(str(tmp) + ".fai").write_text("side file\n")  # as faidx leaves beside a temp
        ready.set()
        release.wait(600)
        Path(tmp).write_bytes(b"whole")
        Path(str(tmp) + ".fai").unlink()


def _work_holder(parent: str, ready, release) -> None:
    with cache.work_dir(Path(parent)) as work:
        (work / "sorttmp.0000.bam").write_bytes(b"x" * 100)
        ready.set()
        release.wait(600)


def _lock_holder(lock: str, ready, release) -> None:
    from filelock import FileLock

    with FileLock(lock):
        ready.set()
        release.wait(600)


def _start(target, *args, release=None):
    """Start `target` and wait until it holds what it holds; it lets go when `release` is set
    (an event the test sets when it is done looking, never a guess at how long that takes)."""
    ready = CTX.Event()
    p = CTX.Process(target=target, args=(*args, ready, release or CTX.Event()))
    p.start()
    assert ready.wait(300), "child did not start"
    return p


def _kill(p) -> None:
    os.kill(p.pid, signal.SIGKILL)
    p.join(300)
    assert p.exitcode == -signal.SIGKILL


def _entry(root: Path, ns: str = "bam", key: str = "k" * 32) -> Path:
    d = root / ns / key
    d.mkdir(parents=True, exist_ok=True)
    return d


def test_litter_of_killed_runs_is_swept(tmp_path):
    root = tmp_path / "cache"
    ref = _entry(root, "reference")
    bam = _entry(root, "bam")
    for target, arg in ((_temp_writer, ref / "reference.sr.mmi"), (_work_holder, bam),
                        (_lock_holder, bam / "align.lock"), (_lock_holder, ref / "bwa.lock")):
        _kill(_start(target, str(arg)))
    (ref / "reference.map-ont.mmi").write_bytes(b"")  # a 0-byte index is never trusted
    (ref / "reference.fasta").write_text(">a\nACGT\n")  # published results stay
    (bam / "full").mkdir()
    (bam / "full" / "aligned.bam").write_bytes(b"bam")
    empty = _entry(root, "reference", "e" * 32)
    litter = [p for p in [*ref.iterdir(), *bam.iterdir()] if p.name.startswith(".")
              or p.name.endswith(".lock")]
    assert len(litter) == 5, litter  # temp, its side file, work folder, two locks
    # Young litter stays (its writer may be between creating and locking it); a 0-byte
    # published index goes at once, as no run ever publishes one.
    counts = cache.sweep(root)
    assert counts == {"work folders": 0, "temp files": 1, "locks": 0, "empty folders": 0}
    assert not (ref / "reference.map-ont.mmi").exists()
    assert all(p.exists() for p in litter)
    _age(*litter, empty)
    counts = cache.sweep(root)
    assert counts == {"work folders": 1, "temp files": 2, "locks": 2, "empty folders": 1}
    assert not any(p.exists() for p in litter) and not empty.exists()
    assert (ref / "reference.fasta").exists() and (bam / "full" / "aligned.bam").exists()


def test_nothing_a_live_process_holds_is_swept_however_old(tmp_path):
    root = tmp_path / "cache"
    ref, bam = _entry(root, "reference"), _entry(root, "bam")
    release = CTX.Event()
    holders = [_start(_temp_writer, str(ref / "reference.sr.mmi"), release=release),
               _start(_work_holder, str(bam), release=release),
               _start(_lock_holder, str(bam / "align.lock"), release=release)]
    live = [p for p in [*ref.iterdir(), *bam.iterdir()]]
    assert len(live) == 4
    _age(*live, ref, bam)
    assert not any(cache.sweep(root).values())
    assert all(p.exists() for p in live)
    release.set()
    for h in holders:
        h.join(300)
        assert h.exitcode == 0
    # The writer finished normally: its file was published whole, its temp files are gone.
    assert (ref / "reference.sr.mmi").read_bytes() == b"whole"
    assert not [p for p in ref.iterdir() if p.name.startswith(".")]


def _sweeper(root: str, stop, errors) -> None:
    try:
        while not stop.is_set():
            cache.sweep(Path(root), max_age=0.3)
        # One more pass begun after every writer ended: the killed writers' litter is older
        # than max_age by then however slowly the sweepers were scheduled.
        cache.sweep(Path(root), max_age=0.3)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        errors.put(repr(exc))


def _writer(root: str, i: int, rounds: int, errors) -> None:
    try:
        d = Path(root) / "vcf" / f"{i:032d}"
        for n in range(rounds):
            d.mkdir(parents=True, exist_ok=True)
            with cache.atomic_path(d / "out.txt") as tmp:
                with open(tmp, "w") as fh:
                    fh.write(f"{i} {n} ")
                    fh.flush()
                    time.sleep(0.4 + 0.05 * (n % 3))  # older than the sweep threshold
                    fh.write("done\n")
            with cache.work_dir(d) as work:
                (work / "part").write_text("x")
                time.sleep(0.1)
                assert (work / "part").read_text() == "x"
            assert (d / "out.txt").read_text() == f"{i} {n} done\n"
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        errors.put(f"writer {i}: {exc!r}")


def test_concurrent_sweepers_never_break_live_writers(tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    # Litter for the sweepers to race over, from really killed writers.
    for k in range(3):
        _kill(_start(_temp_writer, str(_entry(root, "reference", f"{k}" * 32) / "x.mmi")))
        _kill(_start(_work_holder, str(_entry(root, "bam", f"{k}" * 32))))
    stop, errors = CTX.Event(), CTX.Queue()
    sweepers = [CTX.Process(target=_sweeper, args=(str(root), stop, errors)) for _ in range(3)]
    writers = [CTX.Process(target=_writer, args=(str(root), i, 8, errors)) for i in range(4)]
    for p in sweepers + writers:
        p.start()
    for p in writers:
        p.join(600)
    stop.set()
    for p in sweepers:
        p.join(300)
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert found == []
    assert all(p.exitcode == 0 for p in sweepers + writers)
    for i in range(4):
        assert (root / "vcf" / f"{i:032d}" / "out.txt").read_text() == f"{i} 7 done\n"
    leftover = [p for p in root.rglob("*") if p.name.startswith(".")]
    assert leftover == []  # the killed writers' litter was swept by the racing sweepers


def test_unwritable_cache_root_is_input_error(tmp_path, monkeypatch):
    from biotool.output import InputError

    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("BIOTOOL_CACHE", str(blocker / "cache"))
    with pytest.raises(InputError, match="BIOTOOL_CACHE.*cannot be created"):
        cache.entry_dir("bam", "k")
    assert cache.cache_root() == blocker / "cache"  # doctor can still name it


def _big_fastq(src: Path, out: Path, copies: int) -> Path:
    text = src.read_text()
    with open(out, "w") as fh:
        for i in range(copies):
            fh.write(text.replace("@", f"@c{i}_"))
    return out


def test_a_killed_alignment_is_swept_and_the_rerun_is_correct(biotool_env, tmp_path):
    import random

    from biotool_testing import simulate as sim

    ref = sim.genome(6000, seed=5)
    c = sim.cut_site(ref, random.Random(5))
    reads, _truth = sim.cas9_reads(ref, c, seed=5)
    fasta = sim.write_fasta(tmp_path / "g.fa", "chr", ref)
    fq = _big_fastq(sim.write_fastq(tmp_path / "r.fq", reads), tmp_path / "big.fq", 60)
    cache_dir = tmp_path / "cache"
    env = {**biotool_env, "BIOTOOL_CACHE": str(cache_dir)}
    args = [sys.executable, "-m", "biotool", "breakpoints", "--fastq", str(fq),
            "--reference", str(fasta), "--threads", "1"]
    victim = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True)
    deadline = time.monotonic() + 120
    work = []
    while not work and time.monotonic() < deadline and victim.poll() is None:
        work = list(cache_dir.glob("bam/*/.work.*"))
        time.sleep(0.005)
    assert work, "the alignment finished before it could be killed"
    os.killpg(victim.pid, signal.SIGKILL)  # the command and its minimap2 | samtools pipeline
    victim.communicate()
    litter = list(cache_dir.glob("bam/*/.work.*")) + list(cache_dir.glob("bam/*/align.lock"))
    assert litter and not list(cache_dir.glob("bam/*/full"))
    _age(*litter, cache_dir / cache.SWEEP_STAMP)  # hours later: litter old, a sweep due
    again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "cache: swept" in again.stderr and "1 work folders" in again.stderr
    assert not list(cache_dir.glob("bam/*/.work.*"))
    clean = subprocess.run(args, env={**env, "BIOTOOL_CACHE": str(tmp_path / "clean")},
                           capture_output=True, text=True, timeout=300)
    import json

    got, want = json.loads(again.stdout), json.loads(clean.stdout)
    assert got["consensus"] == want["consensus"] and got["reads_used"] == want["reads_used"]
    assert got["consensus"][0]["pos"] == c


def test_commands_sweep_at_most_every_few_minutes(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("BIOTOOL_CACHE", str(root))
    bam = _entry(root, "bam")
    _kill(_start(_work_holder, str(bam)))
    [work] = list(bam.glob(".work.*"))
    _age(work)
    monkeypatch.setattr(cache, "_ready_root", None)
    (root / cache.SWEEP_STAMP).touch()  # another command swept a moment ago
    cache.ready()
    assert work.exists()  # not due: one stat, no scandir
    monkeypatch.setattr(cache, "_ready_root", None)
    _age(root / cache.SWEEP_STAMP)
    before = time.time()
    cache.ready()
    assert not work.exists()
    # Stamped anew by this sweep (not two hours ago); the second allows for the file system's
    # coarser clock, whatever the host's speed.
    assert (root / cache.SWEEP_STAMP).stat().st_mtime >= before - 1
