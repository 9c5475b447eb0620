"""The one exec of a command in a run's container, for the CLI and the Inspect provider alike:
under GNU timeout, bounded on the host too, stdin fed and closed, and the engine's or the
wrapper's refusal to start it told apart from the command's own exit."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from ..errors import EngineError
from ..timeouts import TIMEOUT_BIN, host_deadline, timed_out, with_timeout, wrapper_refused
from . import oom

WORKDIR = "/work"  # the agent's working folder in every sandbox (compose.yaml's working_dir)


@dataclass(frozen=True)
class Exec:
    """One engine exec as the engine reports it: the exit code, the output, and whether the
    exec's process started at all (the engine gave it a PID); one that never started carries
    the engine's own exit code (126/127) and message, never the command's."""

    code: int
    stdout: bytes
    stderr: bytes
    started: bool


@dataclass(frozen=True)
class Ran:
    """One command run as the agent: its exit code and output, its wall time, whether the
    timeout ended it, the engine's or the wrapper's one-line refusal to start it (None
    when it started), whether the out-of-memory killer ended it, and whether the engine
    started the exec's process (the command, or our timeout wrapper)."""

    code: int
    stdout: bytes
    stderr: bytes
    duration_s: float
    timed_out: bool
    refusal: str | None
    oom_killed: bool = False
    started: bool = True


def run_in(container, cmd: list[str], *, stdin: bytes | None = None, workdir: str = WORKDIR,
           env: dict | None = None, user: str | None = None, timeout: float | None = None) -> Ran:
    """The one exec of an agent's command, for the CLI and the Inspect provider alike: under
    GNU timeout by its absolute path when `timeout` is given, and bounded on the host too
    (exec_bytes' deadline), so neither the image's PATH nor a child holding the output open
    decides when it ends."""
    start = time.monotonic()
    done = exec_process(container, with_timeout(cmd, timeout), stdin=stdin, workdir=workdir,
                        env=env, user=user, deadline=host_deadline(timeout))
    code, out, err = done.code, done.stdout, done.stderr
    elapsed = time.monotonic() - start
    if code == 126 and not (out or err) and user:
        # Docker 20.10 at times drops its own message for an unknown user: it is said here.
        out = _unknown_user(container, user) or out
    late = timed_out(code, elapsed, timeout)
    # A SIGKILL the agent cannot tell from `kill -9`: the cgroup says when memory was the cause.
    why = oom.reason(container) if code == 137 and not late else None
    if why:
        err += (b"" if not err or err.endswith(b"\n") else b"\n") + f"biotool-sandbox: {why}\n".encode()
    refusal = _exec_refusal(code, out, err, cmd, wrapped=bool(timeout), started=done.started)
    return Ran(code, out, err, elapsed, late, refusal, oom_killed=bool(why), started=done.started)


def _engine_line(code: int, out: bytes, err: bytes) -> str:
    """What the engine said of an exec it could not start, as one line."""
    said = " ".join((out + err).decode("utf-8", "replace").split())
    return said or f"the engine did not start it (exit {code})"


def _exec_refusal(code: int, out: bytes, err: bytes, cmd: list[str], wrapped: bool, *,
                  started: bool) -> str | None:
    """The engine's or our timeout wrapper's one-line refusal to execute cmd (permission
    denied), else None. The engine's counts only when it started no process (its own report,
    whatever the text); a started command's output is its own, whatever it prints."""
    if code != 126 or not cmd:
        return None
    if not started:
        # Wrapped, the engine failed to start our wrapper (its workdir, say), not cmd.
        line = _engine_line(code, out, err)
        return line if not wrapped and "permission denied" in line.lower() else None
    if not wrapped or out:
        return None
    line = err.decode("utf-8", "replace").strip()
    if "\n" in line or "permission denied" not in line.lower():
        return None
    return line if wrapper_refused(line, TIMEOUT_BIN, cmd[0]) else None


def not_started(code: int, out: bytes, err: bytes, cmd: list[str], wrapped: bool, *,
                started: bool) -> str | None:
    """The engine's or our timeout wrapper's one line saying cmd never started (not found,
    not executable, no such working directory), else None. The engine's is known by what it
    reports (no process started), never by the text, so a command that prints the engine's
    words and exits 126 is a result; our wrapper's is its exact line naming cmd[0], alone on
    stderr (exit 126/127 is also what a shell says of a script it cannot run)."""
    if not cmd:
        return None
    if not started:
        return _engine_line(code, out, err)
    if code not in (126, 127) or out:
        return None
    line = err.decode("utf-8", "replace").strip()
    if not line or "\n" in line:
        return None
    if wrapped:
        quoted = re.fullmatch(f"{re.escape(TIMEOUT_BIN)}: failed to run command [‘'](.*)[’']: (.*)",
                              line, re.IGNORECASE)
        if quoted and quoted.group(1) == cmd[0]:
            return line
    return None


def _unknown_user(container, user: str) -> bytes | None:
    """The engine's message for a USER[:GROUP] name missing from the image's files, else None."""
    name, _, group = user.partition(":")
    for kind, db, key in (("user", "passwd", name), ("group", "group", group)):
        if key and not key.isdigit() and exec_bytes(container, ["getent", db, key])[0] != 0:
            return f"unable to find {kind} {key}: no matching entries in {db} file\r\n".encode()
    return None


def exec_bytes(container, argv: list[str], *, stdin: bytes | None = None, workdir: str = WORKDIR,
               env: dict | None = None, user: str | None = None,
               deadline: float | None = None) -> tuple[int, bytes, bytes]:
    """exec_process's exit code, stdout and stderr."""
    done = exec_process(container, argv, stdin=stdin, workdir=workdir, env=env, user=user,
                        deadline=deadline)
    return done.code, done.stdout, done.stderr


def exec_process(container, argv: list[str], *, stdin: bytes | None = None,
                 workdir: str = WORKDIR, env: dict | None = None, user: str | None = None,
                 deadline: float | None = None) -> Exec:
    """One exec with stdin fed and closed (exec_run cannot): exit code, stdout and stderr as
    bytes, and whether its process started (exec inspect's Pid: the engine sets it only once
    the runtime started the process; a failed start keeps 0 and its own 126/127).

    deadline bounds the wait on the host too (a child holding the output open would keep the
    stream alive past any in-container timeout); past it, TimeoutError.
    """
    import socket
    import threading

    from docker.utils.socket import consume_socket_output, demux_adaptor, frames_iter

    api = container.client.api
    try:
        ex = api.exec_create(container.id, argv, stdin=True, stdout=True, stderr=True,
                             workdir=workdir, environment=env or None, user=user or "")
        sock = api.exec_start(ex["Id"], socket=True)
    except Exception as exc:  # the SDK raises APIError and friends
        raise EngineError(f"exec in {container.name} failed ({exc})") from None
    raw = getattr(sock, "_sock", sock)
    raw.settimeout(deadline)

    def feed() -> None:
        try:
            if stdin:
                raw.sendall(stdin)
            raw.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the command exited without reading all of its input

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        frames = (demux_adaptor(*f) for f in frames_iter(sock, tty=False))
        out, err = consume_socket_output(frames, demux=True)
    except (socket.timeout, TimeoutError):
        raise TimeoutError(f"no end of output from {argv[0]} within {deadline:g}s") from None
    finally:
        sock.close()
    writer.join(timeout=5)
    state = api.exec_inspect(ex["Id"])
    code = state.get("ExitCode")
    return Exec(code if code is not None else -1, out or b"", err or b"",
                started=bool(state.get("Pid")))
