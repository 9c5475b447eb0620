"""biotool.procs.run_pipeline: stages streamed one into the next, fed and read by biotool,
bounded by the deadline (every stage killed, even while a write or read blocks), every stage
killed and reaped on an interruption, and a failing stage named with the end of its stderr
(the one that failed, not the one its failure broke)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from biotool.output import ToolFailure
from biotool.procs import OutOfTime, capture, run_pipeline


def _sleeper(pid_file: Path, then: str = "wait") -> list[str]:
    """A stage that starts a child it records (a tool's helper process), then `then`."""
    return ["sh", "-c", f"sleep 30 & echo $! > {pid_file}; {then}"]


def _pids(*files: Path) -> list[int]:
    until = time.monotonic() + 5
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


def test_expiry_kills_every_stage_and_what_each_started(tmp_path, gone_within):
    a, b = tmp_path / "a", tmp_path / "b"
    t0 = time.monotonic()
    with pytest.raises(OutOfTime, match="sh | sh was stopped at the deadline"):
        run_pipeline([_sleeper(a), _sleeper(b, "cat > /dev/null; wait")], t0 + 0.5)
    assert time.monotonic() - t0 < 5
    assert all(gone_within(pid, 5) for pid in _pids(a, b))


@pytest.mark.parametrize("blocked", ["feeding", "reading"])
def test_expiry_ends_a_feed_or_read_that_blocks(tmp_path, gone_within, blocked):
    # The stage never reads its input nor writes output: biotool's write or read blocks.
    a = tmp_path / "a"
    forever = (lambda stdin: [stdin.write(b"x" * 65536) for _ in iter(int, 1)])
    t0 = time.monotonic()
    with pytest.raises(OutOfTime, match="was stopped at the deadline"):
        run_pipeline([_sleeper(a)], t0 + 0.5,
                     **({"feed": forever} if blocked == "feeding" else {"read": lambda o: o.read()}))
    assert time.monotonic() - t0 < 5
    assert gone_within(_pids(a)[0], 5)


def test_an_interrupted_feed_leaves_no_stage_running(tmp_path, gone_within):
    a, b = tmp_path / "a", tmp_path / "b"

    def feed(stdin):
        _pids(a, b)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_pipeline([_sleeper(a, "cat; wait"), _sleeper(b, "cat > /dev/null; wait")], None,
                     feed=feed)
    assert all(gone_within(pid, 5) for pid in _pids(a, b))


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
