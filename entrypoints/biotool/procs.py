"""A tool run as a subprocess within a command's time budget: killed, with everything it
started, when the deadline passes, so `--timeout` bounds the command."""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from biotool.output import ToolFailure

_PR_SET_PDEATHSIG = 1
# Looked up in the parent: after fork only the call itself runs (no dlopen in the child).
_prctl = ctypes.CDLL(None).prctl if sys.platform.startswith("linux") else None
# The last bytes of a tool's stderr hold its error; bwa index logs many lines before it.
_TAIL_BYTES = 8192
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class OutOfTime(Exception):
    """The deadline passed before the work finished; the caller names the work and the way out."""


def run_bounded(cmd: list[str], deadline: float | None) -> tuple[int, str]:
    """Run `cmd` to its end, or until `deadline` (a time.monotonic() value; None: no bound).

    Returns (exit code, last line of its stderr). On expiry, or anything that interrupts the
    wait, the tool's whole process group is killed and reaped before OutOfTime (or the
    interruption) is raised, so no tool outlives the budget."""
    if deadline is not None and time.monotonic() >= deadline:
        raise OutOfTime(f"the budget was spent before {cmd[0]} started")
    with tempfile.TemporaryFile() as err:
        proc = _start(cmd, err)
        try:
            rc = proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        except BaseException as exc:
            _kill_group(proc)
            if isinstance(exc, subprocess.TimeoutExpired):
                raise OutOfTime(f"{cmd[0]} was stopped at the deadline") from None
            raise
        return rc, _tail(err)


def run_each_bounded(cmds: list[list[str]], seconds: float, width: int = 8,
                     meanwhile=None) -> list[tuple[int, str] | str]:
    """Run every command, `width` at a time, each for at most `seconds`: per command its
    (exit code, last line of stderr), or why it did not finish (one line).

    All are started and waited on from this thread, not from a pool: a fork that runs
    Python code before exec (the parent-death request) can deadlock beside other threads.
    `meanwhile`, if given, is other work for this thread while the commands run: called
    between polls instead of sleeping, one step at a time, it returns False when none is
    left (a step only delays noticing a command's end; a command's bound is still checked)."""
    width = max(1, width)
    results: list[tuple[int, str] | str] = [""] * len(cmds)
    pending, running = list(range(len(cmds)))[::-1], {}
    try:
        while pending or running:
            while pending and len(running) < width:
                i = pending.pop()
                err = tempfile.TemporaryFile()
                try:
                    running[i] = (_start(cmds[i], err), err, time.monotonic() + seconds)
                except (ToolFailure, OSError, subprocess.SubprocessError) as exc:
                    err.close()
                    results[i] = (str(exc) if isinstance(exc, ToolFailure) else
                                  f"{cmds[i][0]}: {getattr(exc, 'strerror', None) or exc}")
            for i, (proc, err, deadline) in list(running.items()):
                rc = proc.poll()
                if rc is None and time.monotonic() < deadline:
                    continue
                if rc is None:
                    _kill_group(proc)
                    results[i] = f"{cmds[i][0]} was stopped after {seconds:g} s"
                else:
                    results[i] = (rc, _tail(err))
                err.close()
                del running[i]
            if meanwhile is not None and meanwhile():
                continue
            meanwhile = None
            time.sleep(0.01)
    finally:  # an interruption leaves no tool running
        for proc, err, _ in running.values():
            _kill_group(proc)
            err.close()
    return results


def _start(cmd: list[str], err) -> subprocess.Popen:
    try:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, start_new_session=True, preexec_fn=_die_with_parent)
    except FileNotFoundError:
        raise ToolFailure(f"{cmd[0]} is not installed (not found on PATH)") from None


def _tail(err) -> str:
    err.seek(max(0, err.seek(0, os.SEEK_END) - _TAIL_BYTES))
    return last_line(err.read().decode(errors="replace"))


def last_line(text: str) -> str:
    """The last non-empty line of a tool's message, uncoloured (minimap2 colours its errors)
    and cut to fit a one-line error."""
    lines = [l for l in _ANSI.sub("", text).splitlines() if l.strip()]
    return (lines or ["no message"])[-1].strip()[:300]


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _die_with_parent() -> None:
    """In the child: its own group keeps it out of signals sent to ours, so ask Linux to
    kill it if biotool dies (a harness's SIGKILL) instead of leaving it to run on."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
