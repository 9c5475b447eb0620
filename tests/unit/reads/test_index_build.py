"""Aligner indexes: a staged bwa index is used as it is; a first-use build into the cache ends
at the command's deadline (killed, nothing kept, one line, exit 2), and two runs building the
same index at once build it once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from biotool.deadline import Deadline
from biotool.output import InputError

from biotool_testing.contract import error_line

REPO = Path(__file__).resolve().parents[3]
SARS = REPO / "refs" / "demo" / "sarscov2" / "MN908947.3.reference.fasta"
# bwa index takes ~3 s on 5 Mb here, ~1.5 s on a fast core: far past the budgets below.
# Under biotool's background threshold (8 Mb), and seconds of bwa index here: a host ten
# times faster still needs longer than the cut test's --timeout.
SLOW_MB = 7.5


def _short_reads(path: Path, genome: str, n: int = 200, length: int = 150) -> Path:
    step = (len(genome) - length) // n
    with open(path, "w") as fh:
        for i in range(n):
            fh.write(f"@r{i}\n{genome[i * step:i * step + length]}\n+\n{'I' * length}\n")
    return path


@pytest.fixture(scope="module")
def slow(tmp_path_factory) -> dict:
    """A random genome bwa takes seconds to index, and short reads cut from it."""
    d = tmp_path_factory.mktemp("slow")
    acgt = bytes.maketrans(bytes(range(256)), b"ACGT" * 64)
    seq = os.urandom(int(SLOW_MB * 1_000_000)).translate(acgt).decode()
    fasta = d / "slow.fasta"
    fasta.write_text(">slow\n" + "\n".join(seq[i:i + 80] for i in range(0, len(seq), 80)) + "\n")
    return {"fasta": fasta, "fastq": _short_reads(d / "reads.fastq", seq)}


def _no_build(monkeypatch):
    from biotool.alignment import indexes

    def refuse(cmd, deadline):
        raise AssertionError(f"an index was built: {cmd}")

    monkeypatch.setattr(indexes, "run_bounded", refuse)


def _tools_on(path: Path) -> list[str]:
    """Command lines of live (not zombie) processes naming `path`: a killed build's leftovers."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(path) in cmd and state != "Z" and int(pid) != os.getpid():
            found.append(cmd)
    return found


def test_the_staged_bwa_index_is_used_without_a_build(biotool_env, monkeypatch, tmp_path):
    from biotool import staging
    from biotool.alignment.reference import resolve

    _no_build(monkeypatch)
    rec = staging.find("reference", "MN908947.3")
    assert "minimap2:sr" not in rec.files
    folder = rec.path("bwa")
    assert sorted(p.name for p in folder.iterdir()) == [
        f"reference.{x}" for x in ("amb", "ann", "bwt", "pac", "sa")]
    prefix, digest = resolve("sars-cov-2").index("sr")
    assert prefix == folder / "reference" and digest == rec.files["bwa"].sha256
    assert not (tmp_path / "cache" / "reference").exists()


def test_align_on_a_staged_reference_builds_nothing(biotool, tmp_path):
    genome = "".join(SARS.read_text().splitlines()[1:])
    reads = _short_reads(tmp_path / "reads.fastq", genome)
    r = biotool("align", "--fastq", str(reads), "--reference", "MN908947.3")
    assert r.code == 0, r.stderr
    out = r.json
    assert out["aligner"] == "bwa mem" and out["mapped"] == 200
    bwa = next(u for u in out["provenance"]["used"] if u["name"] == "bwa")
    assert bwa["path"].startswith(os.environ["BIOTOOL_HOME"])
    assert not list((tmp_path / "cache").rglob("*.bwt"))


def test_a_built_index_has_the_staged_digest(biotool_env):
    # bwa's files name no path, so the cache's copy of a staged FASTA's index is the same bytes.
    from biotool import staging
    from biotool.alignment.reference import resolve

    built = resolve(str(SARS)).index("sr")
    assert built[0].parent.parent.parent.name == "reference"
    assert built[1] == staging.find("reference", "MN908947.3").files["bwa"].sha256


def test_a_tool_past_the_deadline_is_killed_with_its_children(marked):
    # A real deadline: the outcome (stopped, nothing it started alive) is asserted, and the
    # time only against the 600 s its child would sleep if the kill missed it; the child is
    # found by its mark, so a kill that lands before sh started it is no race.
    from biotool.procs import OutOfTime, run_bounded

    t0 = time.monotonic()
    with pytest.raises(OutOfTime, match="sh was stopped at the deadline"):
        run_bounded(["sh", "-c", "sleep 600 & wait"], t0 + 1.0)
    assert time.monotonic() - t0 < 120
    assert marked() == []
    with pytest.raises(OutOfTime, match="spent before sleep started"):
        run_bounded(["sleep", "600"], time.monotonic() - 1)


@pytest.mark.parametrize("command", ["align", "variants"])
def test_a_first_use_build_ends_at_the_deadline(biotool, slow, tmp_path, leftovers, command):
    t0 = time.monotonic()
    # 0.3 s: past biotool's own start-up on a fast host, far short of this build there; on a
    # slow host the budget is spent before bwa starts, the same refusal with nothing built.
    r = biotool(command, "--fastq", str(slow["fastq"]), "--reference", str(slow["fasta"]),
                "--timeout", "0.3")
    took = time.monotonic() - t0
    last = error_line(r)
    assert last.startswith(f"biotool: error: reference {slow['fasta']}: its bwa index is not "
                           "staged and was not built within --timeout"), last
    assert "longer --timeout" in last and 'indexes = ["bwa"]' in last
    # The build was cut, not waited out: no index is there (below) and the error says so; the
    # time is only bounded against a hang, wide enough for a host ten times slower.
    assert took < 120, took
    # Nothing half-built is left: no bwa folder, no work folder, no bwa process.
    entry = next((tmp_path / "cache" / "reference").iterdir())
    assert sorted(p.name for p in entry.iterdir()) == ["bwa.lock", "reference.fasta",
                                                       "reference.fasta.fai"]
    assert leftovers(tmp_path / "cache") == []
    assert _tools_on(entry) == []


def test_a_waiter_gives_up_at_its_own_deadline_while_another_run_builds(biotool_env, slow,
                                                                          monkeypatch):
    # Another run holds the index's lock (as a building run does, for as long as the test
    # says): the wait is bounded by the waiter's own budget and says why, on any host.
    from filelock import FileLock

    from biotool.alignment.reference import resolve
    from biotool.cache import entry_dir

    _no_build(monkeypatch)
    ref = resolve(str(slow["fasta"]))
    entry = entry_dir("reference", ref.sha256[:32])
    with FileLock(str(entry / "bwa.lock")):
        with pytest.raises(InputError, match="another run is still building it"):
            ref.index("sr", Deadline.from_now(0.3))
    assert not (entry / "bwa").exists()


def test_a_second_build_waits_for_the_first_and_reuses_it(biotool, biotool_env, slow, tmp_path,
                                                          monkeypatch):
    from biotool.alignment.reference import resolve

    cache = tmp_path / "cache"
    first = subprocess.Popen([sys.executable, "-m", "biotool", "align", "--fastq",
                              str(slow["fastq"]), "--reference", str(slow["fasta"])],
                             env=biotool_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        # The first run is building (its work folder is there), or, on a fast host, is done:
        # either way this run must not build and must end with the first one's index.
        until = time.monotonic() + 300
        while not list(cache.glob("reference/*/.work.*")) and first.poll() is None:
            assert time.monotonic() < until, "the first run never started its build"
            time.sleep(0.02)
        _no_build(monkeypatch)
        prefix, digest = resolve(str(slow["fasta"])).index("sr")
        out, err = first.communicate(timeout=600)
    finally:
        first.kill()
    assert first.returncode == 0, err
    used = next(u for u in json.loads(out)["provenance"]["used"] if u["name"] == "bwa")
    assert (used["path"], used["sha256"]) == (str(prefix), digest)
    assert len(list(cache.rglob("reference.bwt"))) == 1


def test_a_large_first_use_index_is_built_in_the_background_and_the_command_returns_at_once(
        biotool_env, slow, tmp_path, monkeypatch):
    """Past BACKGROUND_FROM bases and with no --timeout, the build goes on in a process of its
    own (holding the same lock) and the command says to run again; the next run uses it."""
    from biotool.alignment import indexes
    from biotool.alignment.reference import resolve

    monkeypatch.setattr(indexes, "BACKGROUND_FROM", int(SLOW_MB * 1_000_000) // 2)
    with pytest.raises(InputError, match="now being built in the background") as first:
        resolve(str(slow["fasta"])).index("sr")
    assert f"--reference {slow['fasta']}" in str(first.value) and "run the same command again" \
        in str(first.value)
    with pytest.raises(InputError, match="still being built in the background"):
        resolve(str(slow["fasta"])).index("sr")
    entry = next((tmp_path / "cache" / "reference").iterdir())
    from filelock import FileLock

    with FileLock(str(entry / "bwa.lock")).acquire(timeout=300):  # the build is over
        assert (entry / "bwa").is_dir(), sorted(p.name for p in entry.iterdir())
    prefix, digest = resolve(str(slow["fasta"])).index("sr")
    assert prefix == entry / "bwa" / "reference" and len(digest) == 64
    assert not list(entry.glob(".work.*")) and not list(entry.glob("*.failed"))


def test_a_failed_background_build_is_said_once_by_the_next_run(tmp_path):
    from biotool.alignment import indexes
    from biotool.output import ToolFailure

    final = tmp_path / "bwa"
    indexes.build_in_background("bwa", tmp_path / "gone.fasta", final, "--reference mine.fa")
    assert not final.exists()
    with pytest.raises(ToolFailure, match=r"^--reference mine.fa: bwa could not index it for "
                                          r"bwa .*in the background build"):
        indexes._background_failure(final)
    indexes._background_failure(final)  # said once: the next run builds again
