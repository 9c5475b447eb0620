"""Whether the kernel's out-of-memory killer ended a command the agent ran: a SIGKILL (exit 137)
alone looks the same as `kill -9`, so the sandbox cgroup's own `oom_kill` counter is read from
inside (cgroup v2's memory.events, v1's memory.oom_control) and compared with the count this
host last reported for the container."""

from __future__ import annotations

import re
from pathlib import Path

from .budget import shown
from .runs import state_root

_COUNTERS = "cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null"


def kills(container) -> int | None:
    """The container cgroup's OOM kills so far, or None where no counter can be read (gVisor's
    own cgroupfs, a kernel older than 4.13)."""
    try:
        ran = container.exec_run(["sh", "-c", _COUNTERS], user="0")
    except Exception:  # the SDK raises APIError and friends; no counter is no answer
        return None
    found = re.search(rb"^oom_kill (\d+)$", ran.output or b"", re.MULTILINE)
    return int(found.group(1)) if found else None


def _seen_file(container) -> Path:
    return state_root().parent / "oom-kills" / container.id


def reason(container) -> str | None:
    """The one-line reason for a command's exit 137 when the OOM killer acted since the last one
    reported for this container, else None (then the SIGKILL came from elsewhere)."""
    now = kills(container)
    if now is None:
        return None
    seen_file = _seen_file(container)
    try:
        seen = int(seen_file.read_text())
    except (OSError, ValueError):
        seen = 0
    if now <= seen:
        return None
    try:
        seen_file.parent.mkdir(parents=True, exist_ok=True)
        seen_file.write_text(str(now))
    except OSError:
        pass  # a read-only state folder: the next 137 may repeat the reason, never hide it
    limit = (container.attrs.get("HostConfig") or {}).get("Memory") or 0
    where = f"its memory limit ({shown(limit)})" if limit else "the host's memory"
    return (f"exit 137: the sandbox reached {where} and the kernel's out-of-memory killer ended "
            f"a process ({now} in this sandbox so far); docs/toolbox.md lists the tools' peaks")
