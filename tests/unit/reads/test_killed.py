"""A biotool killed by SIGKILL mid-alignment (a harness's kill, an OOM kill) takes its tools
with it: no aligner or samtools process survives it, and nothing more is written into its
work folder in the cache; an aligner that outlasts its grace past --timeout is stopped too.
Real biotool processes, real bwa, minimap2 and samtools."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

GENOME = 2_000_000
# Noisy 1 kb reads: bwa mem takes seconds per 10 Mb batch (~15 s here), so a tool that outlived
# biotool would still be running when the checks look, and minimap2's sort would write its BAM.
READS, LENGTH, ERRORS = 12_000, 1000, 80


def _noisy(seq: str, rng: random.Random) -> str:
    """`seq` with ERRORS substitutions, deletions and insertions (a third each)."""
    bases = list(seq)
    for at in sorted(rng.sample(range(len(bases)), ERRORS), reverse=True):
        kind = rng.randrange(3)
        if kind == 0:
            bases[at] = rng.choice("ACGT")
        elif kind == 1:
            del bases[at]
        else:
            bases.insert(at, rng.choice("ACGT"))
    return "".join(bases)


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> dict:
    """A random genome and noisy reads cut from it, enough to keep an aligner busy."""
    d = tmp_path_factory.mktemp("killed")
    acgt = bytes.maketrans(bytes(range(256)), b"ACGT" * 64)
    seq = os.urandom(GENOME).translate(acgt).decode()
    fasta = d / "genome.fasta"
    fasta.write_text(">chr\n" + "\n".join(seq[i:i + 80] for i in range(0, len(seq), 80)) + "\n")
    rng = random.Random(5)
    with open(d / "reads.fastq", "w") as fh:
        for i in range(READS):
            at = rng.randrange(GENOME - LENGTH)
            read = _noisy(seq[at:at + LENGTH], rng)
            fh.write(f"@r{i}\n{read}\n+\n{'I' * len(read)}\n")
    return {"fasta": fasta, "fastq": d / "reads.fastq"}


def _children(pid: int) -> dict[int, str]:
    """{pid: command line} of the live processes whose parent is `pid`."""
    found = {}
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat[1]) == pid and stat[0] not in ("Z", "X"):
            found[int(p)] = cmd.strip()
    return found


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for p in folder.rglob("*"):
        try:
            st = p.stat()
        except FileNotFoundError:
            continue
        out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


def _kill_when_running(argv: list[str], env: dict, tools: set[str]) -> dict[int, str]:
    """Start biotool, wait until every one of `tools` runs under it, SIGKILL biotool alone
    (not its group) at once and reap it; the tools it had started. At once: the work takes
    seconds (~15 s here), so even a host many times faster is still in it when the kill lands,
    where a fixed wait first would let a fast host finish."""
    proc = subprocess.Popen([sys.executable, "-m", "biotool", *argv], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        until = time.monotonic() + 120
        while True:
            running = _children(proc.pid)
            # A child caught mid-exec has no command line yet.
            if tools <= {cmd.split()[0] for cmd in running.values() if cmd}:
                break
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < until, f"the tools never ran together: {running}"
            time.sleep(0.02)
        assert proc.poll() is None, "the work ended before the kill"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(120)
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()
    return running


def test_a_killed_align_leaves_no_bwa_running(biotool, biotool_env, library, gone_within):
    args = ["--fastq", str(library["fastq"]), "--reference", str(library["fasta"]),
            "--preset", "sr"]
    # The index first, so the kill lands in the alignment itself.
    assert biotool("align", *args, "--n-reads", "10").code == 0
    started = _kill_when_running(["align", *args, "--n-reads", str(READS)], biotool_env,
                                 {"bwa"})
    assert all(gone_within(pid) for pid in started), started


@pytest.mark.parametrize("preset, aligner", [("sr", "bwa"), ("map-ont", "minimap2")])
def test_a_killed_whole_library_alignment_leaves_no_tool_and_writes_nothing_more(
        biotool_env, library, tmp_path, gone_within, preset, aligner):
    started = _kill_when_running(["variants", "--fastq", str(library["fastq"]), "--reference",
                                  str(library["fasta"]), "--preset", preset, "--threads", "1"],
                                 biotool_env, {aligner, "samtools"})
    work = list((tmp_path / "cache" / "bam").glob("*/.work.*"))
    assert len(work) == 1, work  # the killed run's folder, left for the sweeper
    before = _snapshot(work[0])
    assert all(gone_within(pid) for pid in started), started
    time.sleep(1)  # a survivor would write on: every tool is already gone, this only adds a look
    assert _snapshot(work[0]) == before


def test_an_aligner_past_its_grace_is_stopped_with_a_one_line_error(library, tmp_path,
                                                                      monkeypatch):
    from biotool.output import InputError
    from biotool.alignment import aligners, indexes
    from biotool.deadline import Deadline
    from biotool.reads import fastq, shortreads

    indexes.build("bwa", library["fasta"], tmp_path / "bwa")
    recs = list(fastq.records(library["fastq"]))
    # No grace: bwa, fed until the deadline, cannot have finished the batch it was still being
    # fed at that moment, however fast the host (a grace that a fast host's bwa beats would
    # make the verdict the host's).
    monkeypatch.setattr(aligners, "FINISH_GRACE", 0.0)
    t0 = time.monotonic()
    with pytest.raises(InputError, match=r"^bwa mem did not finish the \d+ reads given within "
                                         r"--timeout and 0 s \(bwa mem was stopped at the "
                                         r"deadline\); give a longer --timeout$"):
        shortreads.map_sample(tmp_path / "bwa" / indexes.PREFIX, recs, fastq.as_text,
                              deadline=Deadline.from_now(0.3))
    # The error says bwa was stopped at the deadline; the time is bounded only against a hang
    # (the whole library takes ~15 s here), wide enough for a host ten times slower.
    assert time.monotonic() - t0 < 120
