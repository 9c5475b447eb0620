"""What biotool's Inspect providers do alike over their exec channel: paths, timeouts, output
limits, and files read and written as small /bin/sh scripts, with the errors Inspect expects.

`biotool` (inspect_sandbox.py, docker SDK) and `biotool-apptainer` (apptainer_sandbox.py,
`apptainer exec instance://`) differ only in how a command reaches the container.
"""

from __future__ import annotations

import errno
import re
import shlex

from inspect_ai.util import ExecResult, OutputLimitExceededError, SandboxEnvironmentLimits

WORKDIR = "/work"
# Wrappers the providers insert run by absolute path, never through the image's PATH.
TIMEOUT_BIN, SHELL = "/usr/bin/timeout", "/bin/sh"
KILL_AFTER = 5
# The host's own wait allows for the in-container kill and the stream's end.
HOST_GRACE = KILL_AFTER + 25
# read_file's exit status for "larger than Inspect's limit" (no tool exits 27 in the script).
TOO_LARGE = 27


def resolve(path: str, workdir: str = WORKDIR) -> str:
    """A path as the sample sees it: relative ones are under workdir (the agent's /work)."""
    return path if path.startswith("/") else f"{workdir.rstrip('/')}/{path}"


def with_timeout(argv: list[str], timeout: int | None) -> list[str]:
    """argv under GNU timeout (TERM, KILL after KILL_AFTER s, its whole process group)."""
    return [TIMEOUT_BIN, "-k", str(KILL_AFTER), str(timeout), *argv] if timeout else list(argv)


def host_deadline(timeout: int | None) -> float | None:
    return timeout + HOST_GRACE if timeout else None


def timed_out(code: int, elapsed: float, timeout: int | None) -> bool:
    """timeout(1) exits 124 after TERM, 137 when KILL was needed (a quick self-kill is no timeout)."""
    return bool(timeout) and (code == 124 or (code == 137 and elapsed >= timeout))


def wrapper_refused(line: str, wrapper: str, cmd0: str) -> bool:
    """GNU coreutils' `wrapper` (timeout, env) saying it could not start cmd0: permission denied."""
    # It quotes the argv it was handed: a nested `timeout ./x` of the caller's is no match.
    quoted = re.fullmatch(f"{re.escape(wrapper)}: (?:failed to run command )?[‘'](.*)[’']: "
                          "permission denied", line, re.IGNORECASE)
    return bool(quoted) and quoted.group(1) == cmd0


def result(code: int, out: bytes, err: bytes) -> ExecResult[str]:
    """Inspect's ExecResult, refusing a stream past its exec output limit."""
    limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
    for stream in (out, err):
        if len(stream) > limit:
            raise OutputLimitExceededError(SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR,
                                           stream[-limit:].decode("utf-8", "replace"))
    return ExecResult(success=code == 0, returncode=code,
                      stdout=out.decode("utf-8", "replace"), stderr=err.decode("utf-8", "replace"))


def write_argv(path: str) -> list[str]:
    """The command that writes its stdin to path, creating the parent folders."""
    script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
    return [SHELL, "-c", script, "sh", path]


def read_argv(path: str) -> list[str]:
    """The command that prints path, refusing a directory and (by size, before any byte is
    streamed to the host) a file past Inspect's read limit."""
    script = ('[ -d "$1" ] && { echo "$1: Is a directory" >&2; exit 21; }; '
              'size=$(stat -c %s -- "$1") || exit 2; '
              f'[ "$size" -gt "$2" ] && {{ echo "$size" >&2; exit {TOO_LARGE}; }}; exec cat -- "$1"')
    return [SHELL, "-c", script, "sh", path, str(SandboxEnvironmentLimits.MAX_READ_FILE_SIZE)]


def check_write(path: str, code: int, err: bytes) -> None:
    if code != 0:
        raise_file_error(path, err.decode("utf-8", "replace"))


def read_result(path: str, code: int, out: bytes, err: bytes, text: bool) -> str | bytes:
    if code == TOO_LARGE:
        raise OutputLimitExceededError(SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, None)
    if code != 0:
        raise_file_error(path, err.decode("utf-8", "replace"))
    return out.decode("utf-8") if text else out


def raise_file_error(path: str, stderr: str) -> None:
    if "No such file" in stderr:
        raise FileNotFoundError(path)
    if "Permission denied" in stderr or "Read-only file system" in stderr:
        raise PermissionError(f"{path}: {stderr.strip()}")
    if "Is a directory" in stderr:
        # Inspect's callers read "directory" in the message, not only the type.
        raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
    raise RuntimeError(f"{shlex.quote(path)}: {stderr.strip() or 'failed'}")
