"""biotool.procs.run_pipeline: stages streamed one into the next, fed and read by biotool,
bounded by the deadline (every stage killed, even while a write or read blocks), every stage
killed and reaped on an interruption, and a failing stage named with the end of its stderr
(the one that failed, not the one its failure broke)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from biotool.output import ToolFailure
from biotool.procs import OutOfTime, capture, run_pipeline


def _sleeper(pid_file: Path, then: str = "wait") -> list[str]:
    """A stage that starts a child it records (a tool's helper process), then `then`. The
    child sleeps far past any bound below, so a kill that missed it cannot pass for an end."""
    return ["sh", "-c", f"sleep 600 & echo $! > {pid_file}; {then}"]


def _pids(*files: Path) -> list[int]:
    until = time.monotonic() + 120  # started from here, on a host ten times slower and loaded
    while not all(f.is_file() and f.read_text().strip() for f in files):
        assert time.monotonic() < until, "a stage never started"
        time.sleep(0.01)
    return [int(f.read_text()) for f in files]


def test_stages_stream_into_each_other_from_the_feed_to_the_reader():
    got: list[bytes] = []
    lines = [b"%d\n" % i for i in range(200_000)]  # past any pipe buffer, both ways

    run_pipeline([["cat"], ["tr", "0-9", "a-j"]], time.monotonic() + 60,
                 feed=lambda stdin: stdin.writelines(lines), read=got.extend)
    assert got == [l.translate(bytes.maketrans(b"0123456789", b"abcdefghij")) for l in lines]


# A real deadline: the outcome kind (stopped, every process gone) is asserted, and the time
# only against the 600 s the stages would take if not killed. Every process the pipeline
# started is found by its mark (conftest.marked), so a deadline that lands before a stage
# wrote its child's pid, on a slow host, is no race.
DEADLINE_S, WAITED_OUT_S = 1.0, 120


def test_expiry_kills_every_stage_and_what_each_started(tmp_path, marked):
    a, b = tmp_path / "a", tmp_path / "b"
    t0 = time.monotonic()
    with pytest.raises(OutOfTime, match="sh | sh was stopped at the deadline"):
        run_pipeline([_sleeper(a), _sleeper(b, "cat > /dev/null; wait")], t0 + DEADLINE_S)
    assert time.monotonic() - t0 < WAITED_OUT_S
    assert marked() == []


@pytest.mark.parametrize("blocked", ["feeding", "reading"])
def test_expiry_ends_a_feed_or_read_that_blocks(tmp_path, marked, blocked):
    # The stage never reads its input nor writes output: biotool's write or read blocks.
    a = tmp_path / "a"
    forever = (lambda stdin: [stdin.write(b"x" * 65536) for _ in iter(int, 1)])
    t0 = time.monotonic()
    with pytest.raises(OutOfTime, match="was stopped at the deadline"):
        run_pipeline([_sleeper(a)], t0 + DEADLINE_S,
                     **({"feed": forever} if blocked == "feeding" else {"read": lambda o: o.read()}))
    assert time.monotonic() - t0 < WAITED_OUT_S
    assert marked() == []


def test_an_interrupted_feed_leaves_no_stage_running(tmp_path, gone_within):
    a, b = tmp_path / "a", tmp_path / "b"

    def feed(stdin):
        _pids(a, b)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_pipeline([_sleeper(a, "cat; wait"), _sleeper(b, "cat > /dev/null; wait")], None,
                     feed=feed)
    assert all(gone_within(pid) for pid in _pids(a, b))


def test_a_failing_first_stage_is_named_with_its_stderr(tmp_path):
    # bwa cannot load the index; samtools sort then fails too on no input: bwa is the culprit.
    reads = b"@r\nACGTACGTAC\n+\nIIIIIIIIII\n" * 20_000
    with pytest.raises(ToolFailure) as err:
        run_pipeline([["bwa", "mem", "-v", "1", str(tmp_path / "none"), "-"],
                      ["samtools", "sort", "-o", str(tmp_path / "x.bam"), "-"]], None,
                     feed=lambda stdin: stdin.write(reads), names=["bwa mem", "samtools sort"])
    assert str(err.value) == ("bwa mem failed (exit 1): [E::bwa_idx_load_from_disk] fail to "
                              "locate the index files")


def test_a_failing_later_stage_is_named_not_the_writer_its_end_broke(tmp_path):
    with pytest.raises(ToolFailure, match=r"^head failed \(exit 1\): Try .head --help."):
        run_pipeline([["yes"], ["head", "--no-such-option"]], time.monotonic() + 30)
    with pytest.raises(ToolFailure, match=r"^no-such-tool-here is not installed"):
        run_pipeline([["yes"], ["no-such-tool-here"]], time.monotonic() + 30)


def test_capture_keeps_stdout_and_the_end_of_stderr(tmp_path):
    done = capture(["sh", "-c", "echo out; echo one >&2; echo two >&2; exit 3"], None,
                   env={**os.environ, "X": "1"})
    assert (done.rc, done.out, done.err, done.said) == (3, "out\n", "one\ntwo\n", "two")
    with open(tmp_path / "o", "w") as fh:
        assert capture(["echo", "into"], time.monotonic() + 10, into=fh).out == ""
    assert (tmp_path / "o").read_text() == "into\n"


def test_the_mark_finds_what_a_test_started_and_lets_go_of_what_ended(marked):
    # conftest.marked, which the expiry tests rely on, is not blind: a live child is found.
    import subprocess

    proc = subprocess.Popen(["sh", "-c", "sleep 600 & wait"])
    try:
        until = time.monotonic() + 120
        while len(marked(0)) < 2:  # sh and its sleep
            assert time.monotonic() < until, marked(0)
            time.sleep(0.01)
        assert proc.pid in marked(0)
    finally:
        for pid in marked(0):
            os.kill(pid, signal.SIGKILL)
        proc.wait()
    assert marked() == []
