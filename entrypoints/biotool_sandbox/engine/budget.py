"""Memory a run may take: its tmpfs against its own limit, and every run against the host.

A run's /work, /tmp and /var/tmp are tmpfs: their pages are charged to the sandbox's memory
cgroup and cannot be swapped or reclaimed while the files exist. So a run whose tmpfs caps
reach its memory limit can be made to kill every process in it, and runs started without
regard to each other can pin more of the host's memory than it has. The defaults come from
compose.yaml itself (`${VAR:-default}`), so there is one declaration of each size.
"""

from __future__ import annotations

import fcntl
import re
import time
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path

from .. import settings
from ..errors import LauncherError
from .variables import Variables

SHARE_ENV = settings.HOST_MEMORY_SHARE.name
DEFAULT_SHARE = settings.HOST_MEMORY_SHARE.default
PROCESS_HEADROOM = 1 << 30   # memory a run keeps for processes with every tmpfs full
DOCKER_SHM = 64 << 20        # Docker's default /dev/shm, a tmpfs in the same cgroup
TMPFS_VARS = {"/work": settings.WORK_SIZE.name, "/tmp": settings.TMP_SIZE.name,
              "/var/tmp": settings.VARTMP_SIZE.name}
RESERVATION = "memory-reserved"  # in a run's state dir, from its check until `down`
UP_GRACE_S = 900.0               # a reservation whose run never got containers, then ignored


def to_bytes(size: str, source: str = "") -> int:
    """Bytes of a size like 4g (commandline.kinds.size_bytes); LauncherError naming `source`
    (the option, variable or file it came from)."""
    from commandline.kinds import size_bytes

    try:
        return size_bytes(size)
    except ValueError as exc:
        raise LauncherError(f"{source}: {exc}" if source else str(exc)) from None


def size_source(var: str, variables: Variables) -> str:
    """Who set compose variable var: its option, the caller's environment, or the file."""
    return variables.set_by(var) or f"{var} (the default in {variables.compose})"


def shown(n: int) -> str:
    return f"{n / (1 << 30):.1f}g" if n >= 1 << 30 else f"{n >> 20}m"


def egress_limit(compose: Path) -> int:
    m = re.search(r"^  egress:\n(?:    .*\n|\s*\n)*?    mem_limit:\s*([0-9]+[bkmg]?)",
                  compose.read_text(encoding="utf-8"), re.M)
    return to_bytes(m.group(1)) if m else 0


def run_memory(variables: Variables) -> dict:
    """The run's sizes in bytes as compose will apply them, checked so that full tmpfs still
    leave PROCESS_HEADROOM of the memory limit; a refusal names the option or variable that
    set each size."""
    compose = variables.compose

    def value(var: str) -> int:
        return to_bytes(variables.value(var) or "0", size_source(var, variables))

    memory = value(settings.MEM_LIMIT.name)
    tmpfs = {path: value(var) for path, var in TMPFS_VARS.items()}
    tmpfs["/dev/shm"] = DOCKER_SHM
    total = sum(tmpfs.values())
    if total + PROCESS_HEADROOM > memory:
        parts = ", ".join(f"{p} {shown(n)}" for p, n in tmpfs.items())
        work, mem = (size_source(v, variables)
                     for v in (settings.WORK_SIZE.name, settings.MEM_LIMIT.name))
        raise LauncherError(
            f"{work.split(' (')[0]} {shown(tmpfs['/work'])} is too large for "
            f"{mem.split(' (')[0]} {shown(memory)}"
            f"{f' (defaults of {compose})' if '(' in work + mem else ''}: "
            f"the run's tmpfs ({parts}) count against its memory limit, and full they would "
            f"leave {shown(max(0, memory - total))} for processes (at least "
            f"{shown(PROCESS_HEADROOM)} is needed, or a full /work kills every command in the "
            f"run); lower --work-size or raise --memory")
    return {"sandbox": memory, "egress": egress_limit(compose), "tmpfs": total}


def host_share(environ: Mapping[str, str]) -> float:
    """The share of host memory all runs may reserve, from the caller's environment."""
    raw = environ.get(SHARE_ENV, "").strip()
    if not raw:
        return DEFAULT_SHARE
    try:
        share = float(raw)
    except ValueError:
        share = -1.0
    if not 0 < share <= 4:
        raise LauncherError(f"{SHARE_ENV}={raw!r} is not a share of host memory (a number in "
                            f"(0, 4], e.g. 0.9)")
    return share


def _reserved(run_dir: Path) -> int:
    try:
        return int((run_dir / RESERVATION).read_text().strip())
    except (OSError, ValueError):
        return 0


def in_use(dc, state_root: Path, project_label: str) -> int:
    """Memory limits of this engine's running containers, and the reservations of runs that
    are starting and have no containers yet (a run counts once, by its reservation)."""
    reserved = {}
    now = time.time()
    for d in (state_root.iterdir() if state_root.is_dir() else ()):
        n = _reserved(d)
        if n:
            reserved[d.name] = (n, now - (d / RESERVATION).stat().st_mtime)
    total, live = 0, set()
    # A container removed between the engine's list and its inspect holds no memory now.
    for c in dc.containers.list(filters={"status": "running"}, ignore_removed=True):
        project = c.labels.get(project_label, "")
        if project in reserved:
            live.add(project)
            continue
        total += int((c.attrs.get("HostConfig") or {}).get("Memory") or 0)
    for run, (n, age) in reserved.items():
        if run in live or age < UP_GRACE_S:
            total += n
    return total


@contextmanager
def host_lock(state_root: Path):
    """One check-and-reserve at a time on this host, so two runs starting together both count."""
    state_root.mkdir(parents=True, exist_ok=True)
    with open(state_root / ".memory.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def reserve(dc, run_dir: Path, need: int, environ: Mapping[str, str],
            project_label: str) -> dict:
    """Reserve `need` bytes for the run in run_dir, or LauncherError with the figures."""
    share = host_share(environ)
    host = int(dc.info().get("MemTotal") or 0)
    state_root = run_dir.parent
    with host_lock(state_root):
        used = in_use(dc, state_root, project_label)
        limit = int(host * share)
        if host and used + need > limit:
            raise LauncherError(
                f"this run's {shown(need)} (sandbox and egress memory limits) would bring the "
                f"memory limits of running runs and containers on this engine to "
                f"{shown(used + need)}, over {share:g} of the host's {shown(host)} "
                f"({shown(limit)}, {SHARE_ENV}); take a run down (biotool-sandbox down RUN), "
                f"lower --memory, or raise {SHARE_ENV}")
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / RESERVATION).write_text(f"{need}\n")
    return {"host": host, "share": share, "in_use": used, "run": need}


def concurrency(dc, variables: Variables) -> int:
    """How many default runs fit this host's budget now (Inspect's sample concurrency)."""
    need = sum(v for k, v in run_memory(variables).items() if k != "tmpfs")
    host = int(dc.info().get("MemTotal") or 0)
    return max(1, int(host * host_share(variables.environ)) // need) if host and need else 1
