"""How a command run in a sandbox is bounded: GNU timeout inside the container (by absolute
path, never through the image's PATH), and the host's own wait on the stream beside it."""

from __future__ import annotations

import re

from commandline.kinds import invalid, seconds

from .errors import LauncherError

# A year: far past any command, and inside every clock on the way (a socket's timeout
# overflows near 9.2e9 s, the host's wait adds HOST_GRACE).
MAX_TIMEOUT_S = 365 * 86400
SECONDS = seconds(max=MAX_TIMEOUT_S, zero_ok=True)  # exec --timeout: 0, as for timeout(1), is no limit

TIMEOUT_BIN = "/usr/bin/timeout"
KILL_AFTER = 5
# The host's own wait allows for the in-container kill and the stream's end.
HOST_GRACE = KILL_AFTER + 25


def with_timeout(argv: list[str], timeout: float | None) -> list[str]:
    """argv under GNU timeout (TERM, KILL after KILL_AFTER s, its whole process group)."""
    return [TIMEOUT_BIN, "-k", str(KILL_AFTER), str(timeout), *argv] if timeout else list(argv)


def host_deadline(timeout: float | None) -> float | None:
    return timeout + HOST_GRACE if timeout else None


def timed_out(code: int, elapsed: float, timeout: float | None) -> bool:
    """timeout(1) exits 124 after TERM, 137 when KILL was needed (a quick self-kill is no timeout)."""
    return bool(timeout) and (code == 124 or (code == 137 and elapsed >= timeout))


def wrapper_refused(line: str, wrapper: str, cmd0: str) -> bool:
    """GNU coreutils' `wrapper` (timeout, env) saying it could not start cmd0: permission denied."""
    # It quotes the argv it was handed: a nested `timeout ./x` of the caller's is no match.
    quoted = re.fullmatch(f"{re.escape(wrapper)}: (?:failed to run command )?[‘'](.*)[’']: "
                          "permission denied", line, re.IGNORECASE)
    return bool(quoted) and quoted.group(1) == cmd0


def checked(timeout: float | None, option: str = "--timeout") -> float | None:
    """A timeout as GNU timeout and the host's wait can honour it (SECONDS), for a caller of
    `agent.exec_` that is not the command line; refused in the command line's words."""
    if timeout is None:
        return None
    try:
        return SECONDS.check(timeout)
    except ValueError as exc:
        raise LauncherError(invalid(f"'{option}'", str(exc))) from None
