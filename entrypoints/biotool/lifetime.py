"""Whether a process this command leaves behind can outlive it: the shape of the container
(or host) the command runs in, read from /proc and the environment.

A background build (biotool.alignment.indexes.start_background) keeps its promise only where
the process tree it joins stays up after the command returns:

- a command exec'd into a running container (`docker exec`, compose and Harbor's `main`,
  Kubernetes, an Apptainer instance with its own PID namespace) has no ancestor in the
  container: its chain of parents ends outside, and the container's own PID 1 (compose's
  init running `sleep infinity`) lives on. It outlives the command.
- a one-shot container (`docker run --rm IMAGE biotool ...`) runs the command under the
  image's init (tini, Dockerfile's ENTRYPOINT; docker-init under --init): PID 1 exits when
  its one child does, and the kernel kills every process left in the namespace. So does a
  command that is PID 1 itself, and an Apptainer `exec` of the image (APPTAINER_CONTAINER /
  SINGULARITY_CONTAINER set and the chain reaching PID 1).
- an interactive shell as that child (`docker run -it IMAGE`, the image's CMD bash) lives as
  long as the session, and a host's own init (systemd, init) as long as the host.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

# Inits that exist to forward signals to one child and exit with it.
FORWARDING_INITS = {"tini", "tini-static", "docker-init", "dumb-init", "catatonit", "sinit"}
SHELLS = {"sh", "bash", "dash", "ash", "zsh", "ksh"}
APPTAINER_VARS = ("APPTAINER_CONTAINER", "SINGULARITY_CONTAINER")


@dataclass(frozen=True)
class Process:
    """One process as /proc shows it: its id, its parent's, its argv."""

    pid: int
    ppid: int
    argv: tuple[str, ...]

    @property
    def name(self) -> str:
        return os.path.basename(self.argv[0]) if self.argv else ""


def read(proc: Path, pid: int) -> Optional[Process]:
    """The process `pid` under the proc root `proc`, or None when it cannot be read."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
        argv = (proc / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # the name in parentheses may hold spaces
    try:
        ppid = int(fields[1])
    except (IndexError, ValueError):
        return None
    return Process(pid, ppid, tuple(a.decode("utf-8", "replace") for a in argv if a))


def ancestry(proc: Path, pid: int) -> list[Process]:
    """pid and its parents, nearest first, up to the one whose parent is outside (ppid 0)."""
    chain: list[Process] = []
    seen: set[int] = set()
    while pid and pid not in seen:
        seen.add(pid)
        found = read(proc, pid)
        if found is None:
            break
        chain.append(found)
        pid = found.ppid
    return chain


def _interactive_shell(p: Process) -> bool:
    """A shell reading its commands from a terminal or a session (no -c, no script)."""
    return p.name.lstrip("-") in SHELLS and all(a.startswith("-") and a != "-c"
                                                for a in p.argv[1:])


def one_shot(env: Mapping[str, str] | None = None, proc: Path = Path("/proc"),
             pid: int | None = None) -> Optional[str]:
    """Why nothing this command leaves running outlives it here (the shape, in words), or
    None when a background process can (exec'd into a running container, an interactive
    shell, a host)."""
    env = os.environ if env is None else env
    chain = ancestry(proc, pid or os.getpid())
    if not chain or chain[-1].pid != 1:
        return None  # exec'd from outside: the container's own PID 1 lives on
    if any(env.get(v) for v in APPTAINER_VARS):
        return "an Apptainer exec: the container ends with the command"
    if len(chain) == 1:
        return "the command is the container's PID 1: the container ends with it"
    init = chain[-1]
    if init.name in FORWARDING_INITS:
        # docker run --init with the image's tini: an init may run another init.
        below = [p for p in reversed(chain[:-1]) if p.name not in FORWARDING_INITS]
        main = below[0] if below else chain[0]
        if _interactive_shell(main):
            return None
        return (f"a one-shot container: its init ({init.name}, PID 1) exits with "
                f"{main.name or 'its command'}, and takes every process left with it")
    if init.name.lstrip("-") in SHELLS and not _interactive_shell(init) or \
            init.name.startswith("python"):
        return (f"PID 1 is the command's own {init.name}: the container ends with it")
    return None
