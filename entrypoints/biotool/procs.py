"""The one way biotool runs an external tool: as a subprocess, or a pipeline of them, within a
command's time budget. Every tool gets its own process group and asks Linux to kill it when
biotool dies, and is killed, with everything it started, when the deadline passes, so
`--timeout` bounds the command and a killed biotool leaves no tool running."""

from __future__ import annotations

import ctypes
import functools
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import IO, Callable

from biotool.deadline import BudgetRefusal
from biotool.output import ToolFailure

_PR_SET_PDEATHSIG = 1
# Looked up in the parent: after fork only the call itself runs (no dlopen in the child).
_prctl = ctypes.CDLL(None).prctl if sys.platform.startswith("linux") else None
# The last bytes of a tool's stderr hold its error; bwa index logs many lines before it.
_TAIL_BYTES = 8192
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class OutOfTime(Exception):
    """The deadline passed before the work finished; the caller names the work and the way out."""

    def refusal(self, work: str, remedy: str = "give a longer --timeout") -> BudgetRefusal:
        """The one translation of a budget that ran out before any result: exit 2 (the work is
        local and deterministic, so the same budget fails the same way again; the remedy is
        the caller's, docs/contract.md), naming `work` (what did not finish within what), why,
        and the way out."""
        return BudgetRefusal(f"{work} ({self}); {remedy}")


@dataclass(frozen=True)
class Finished:
    """A tool that ran to its end: its exit code, its stdout (when captured), the end of its
    stderr."""

    rc: int
    out: str
    err: str

    @property
    def said(self) -> str:
        return last_line(self.err)


def run_bounded(cmd: list[str], deadline: float | None) -> tuple[int, str]:
    """Run `cmd` to its end, or until `deadline` (a time.monotonic() value; None: no bound).

    Returns (exit code, last line of its stderr). On expiry, or anything that interrupts the
    wait, the tool's whole process group is killed and reaped before OutOfTime (or the
    interruption) is raised, so no tool outlives the budget."""
    done = _bounded(cmd, deadline, None, subprocess.DEVNULL)
    return done.rc, done.said


def capture(cmd: list[str], deadline: float | None, env: dict | None = None,
            into: IO[bytes] | None = None) -> Finished:
    """As run_bounded, keeping the tool's stdout as text (or writing it into the open file
    `into`) and the end of its stderr."""
    return _bounded(cmd, deadline, env, into)


def _bounded(cmd: list[str], deadline: float | None, env: dict | None, into) -> Finished:
    if deadline is not None and time.monotonic() >= deadline:
        raise OutOfTime(f"the budget was spent before {cmd[0]} started")
    # Files, not pipes: a tool that fills its output is never blocked on a reader.
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        proc = _start(cmd, err, stdout=out if into is None else into, env=env)
        try:
            rc = proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        except BaseException as exc:
            _kill_group(proc.pid, [proc])
            if isinstance(exc, subprocess.TimeoutExpired):
                raise OutOfTime(f"{cmd[0]} was stopped at the deadline") from None
            raise
        out.seek(0)
        return Finished(rc, out.read().decode(errors="replace"), _end(err))


def run_pipeline(stages: list[list[str]], deadline: float | None, *,
                 feed: Callable[[IO[bytes]], None] | None = None,
                 read: Callable[[IO[bytes]], None] | None = None,
                 names: list[str] | None = None) -> None:
    """Run `stages` as one pipe (each one's stdout into the next one's stdin), all in one new
    process group and each asking to die with biotool, until the last ends or `deadline`.

    `feed(stdin)` writes the first stage's input (none: /dev/null) and `read(stdout)` reads
    the last one's output (none: /dev/null); both run in this process, so their errors are
    biotool's own. At the deadline every stage is killed (a blocked write or read then ends)
    and OutOfTime is raised; on anything that interrupts feeding, reading or waiting, every
    stage is killed and reaped before the interruption goes on. A stage that fails is
    reported as ToolFailure with the end of its stderr, named by `names` (default its
    command): the first one that failed on its own, not by the broken pipe of a later one."""
    names = names or [cmd[0] for cmd in stages]
    if deadline is not None and time.monotonic() >= deadline:
        raise OutOfTime(f"the budget was spent before {names[0]} started")
    procs: list[subprocess.Popen] = []
    errs = [tempfile.TemporaryFile() for _ in stages]
    try:
        try:
            # Every stage is started from this thread before any other is: see _die_with_parent.
            for i, cmd in enumerate(stages):
                last = i == len(stages) - 1
                procs.append(_start(
                    cmd, errs[i], group=procs[0].pid if procs else 0,
                    stdin=procs[-1].stdout if procs else (subprocess.PIPE if feed else subprocess.DEVNULL),
                    stdout=subprocess.PIPE if read or not last else subprocess.DEVNULL))
                if i:  # the next stage holds the read end: a writer sees SIGPIPE if it dies
                    procs[-2].stdout.close()
            stop = _watch(procs[0].pid, deadline)
            try:
                _drive(procs, feed, read)
            finally:
                expired = stop()
            rcs = [p.wait(None if deadline is None or expired
                          else max(0.0, deadline - time.monotonic())) for p in procs]
        except BaseException as exc:
            if procs:
                _kill_group(procs[0].pid, procs)
            if isinstance(exc, subprocess.TimeoutExpired):
                raise OutOfTime(f"{' | '.join(names)} was stopped at the deadline") from None
            raise
        failed = [i for i, rc in enumerate(rcs) if rc != 0]
        if failed and expired:  # stages that all ended by themselves just then still count
            raise OutOfTime(f"{' | '.join(names)} was stopped at the deadline")
        if failed:
            own = [i for i in failed if rcs[i] != -signal.SIGPIPE]
            i = (own or failed)[0]
            raise ToolFailure(f"{names[i]} failed ({how_it_ended(rcs[i])}): {_tail(errs[i])}")
    finally:
        for err in errs:
            err.close()


def _drive(procs: list[subprocess.Popen], feed, read) -> None:
    """Feed the first stage and read the last; the feeding is in a thread when both are given."""
    fed: list[BaseException] = []

    def feeding() -> None:
        try:
            feed(procs[0].stdin)
        except BrokenPipeError:
            pass  # a stage ended (or was killed) before taking all of its input: its exit says why
        except BaseException as exc:
            fed.append(exc)
        finally:
            try:
                procs[0].stdin.close()
            except BrokenPipeError:
                pass

    if feed is None:
        pass
    elif read is None:
        feeding()
    else:
        writer = threading.Thread(target=feeding, daemon=True)
        writer.start()
    if read is not None:
        try:
            read(procs[-1].stdout)
        finally:
            procs[-1].stdout.close()
    if feed is not None and read is not None:
        writer.join()
    if fed:
        raise fed[0]


def _watch(pgid: int, deadline: float | None) -> Callable[[], bool]:
    """Kill process group `pgid` at `deadline` from a thread, unless stopped first; the
    returned stop() says whether it did. Nothing is reaped while it watches, so the group's
    id cannot be reused under it."""
    if deadline is None:
        return lambda: False
    lock, wake, fired = threading.Lock(), threading.Event(), []

    def watch() -> None:
        if wake.wait(max(0.0, deadline - time.monotonic())):
            return
        with lock:
            if not wake.is_set():
                fired.append(True)
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()

    def stop() -> bool:
        with lock:
            wake.set()
        watcher.join()
        return bool(fired)

    return stop


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
                except ToolFailure as exc:
                    err.close()
                    results[i] = str(exc)
            for i, (proc, err, deadline) in list(running.items()):
                rc = proc.poll()
                if rc is None and time.monotonic() < deadline:
                    continue
                if rc is None:
                    _kill_group(proc.pid, [proc])
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
            _kill_group(proc.pid, [proc])
            err.close()
    return results


def _start(cmd: list[str], err, *, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
           group: int = 0, env: dict | None = None) -> subprocess.Popen:
    """`cmd` in process group `group` (0: a new one it leads), dying with biotool."""
    try:
        return subprocess.Popen(cmd, stdin=stdin, stdout=stdout, stderr=err, env=env,
                                process_group=group,
                                preexec_fn=functools.partial(_die_with_parent, os.getpid()))
    except FileNotFoundError:
        raise ToolFailure(f"{cmd[0]} is not installed (not found on PATH)") from None
    except (OSError, subprocess.SubprocessError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise ToolFailure(f"{cmd[0]} cannot be started ({why})") from None


def how_it_ended(rc: int) -> str:
    """A tool's exit in words: "exit 1", or "killed by SIGKILL"."""
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit {rc}"


def _tail(err) -> str:
    return last_line(_end(err))


def _end(err) -> str:
    err.seek(max(0, err.seek(0, os.SEEK_END) - _TAIL_BYTES))
    return err.read().decode(errors="replace")


def last_line(text: str) -> str:
    """The last non-empty line of a tool's message, uncoloured (minimap2 colours its errors)
    and cut to fit a one-line error."""
    lines = [l for l in _ANSI.sub("", text).splitlines() if l.strip()]
    return (lines or ["no message"])[-1].strip()[:300]


def _kill_group(pgid: int, procs: list[subprocess.Popen]) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for proc in procs:
        proc.wait()


def _die_with_parent(parent: int) -> None:
    """In the child: its own group keeps it out of signals sent to ours, so ask Linux to
    kill it if biotool dies (a harness's SIGKILL) instead of leaving it to run on. Linux
    ties the request to the thread that forked, so tools are started from the thread that
    waits on them; a parent already gone before the request is caught by the check after it."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)
