"""Files read and written in a sample's sandbox as small /bin/sh scripts over its exec channel,
with the errors Inspect expects, and paths as the sample sees them."""

from __future__ import annotations

import errno
import shlex

from inspect_ai.util import OutputLimitExceededError, SandboxEnvironmentLimits

from ..engine.execute import WORKDIR
SHELL = "/bin/sh"  # run by absolute path, as the timeout wrapper is (timeouts.py)
# read_file's exit status for "larger than Inspect's limit" (no tool exits 27 in the script).
TOO_LARGE = 27


def resolve(path: str, workdir: str = WORKDIR) -> str:
    """A path as the sample sees it: relative ones are under workdir (the agent's /work)."""
    return path if path.startswith("/") else f"{workdir.rstrip('/')}/{path}"


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
