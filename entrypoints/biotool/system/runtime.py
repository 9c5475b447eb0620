"""Which kernel this container runs on, from evidence read here: gVisor's own kernel (the
runsc runtime) or the host's Linux kernel shared through namespaces (runc, crun).

gVisor answers system calls itself, so what it shows differs from any host kernel in three
ways this module reads, none of them settable from inside the container: /proc/version is
gVisor's fixed identity ("Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016"), its kernel
log opens with "Starting gVisor...", and the host kernel's symbol table (/proc/kallsyms,
which every host kernel shows a container) does not exist. All three must agree for
`gvisor`; a host kernel shows none of them. BIOTOOL_REQUIRE_RUNTIME=gvisor (a grader's setting) makes every command refuse (exit 3)
anywhere else, the way BIOTOOL_REQUIRE_ENFORCED does for the network.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

from biotool.settings import REQUIRE_RUNTIME

GVISOR = "gvisor"
HOST_KERNEL = "host-kernel"
RUNTIMES = (GVISOR,)
# gVisor reports this fixed kernel identity whatever the host runs (pkg/sentry/kernel/version).
GVISOR_VERSION = "Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016"
GVISOR_LOG = "Starting gVisor..."
# A host kernel exposes this to every container; gVisor does not implement it (its /sys/kernel,
# from 2024 on, is its own, so no evidence either way).
HOST_INTERFACES = ("/proc/kallsyms",)
# syslog(2)'s READ_ALL action; gVisor serves it to any user, a host kernel may refuse (EPERM).
_SYSLOG_READ_ALL = 3

HOW = ("run the sandbox under gVisor: `biotool-sandbox up --runtime runsc`, `docker run "
       "--runtime runsc ...`, or a Kubernetes RuntimeClass gvisor (docs/rules.md, the runtime "
       "layer)")


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _kernel_log(size: int = 4096) -> str | None:
    """The start of the kernel log through syslog(2), None where it cannot be read."""
    try:
        libc = _libc()
        buf = ctypes.create_string_buffer(size)
        n = libc.klogctl(_SYSLOG_READ_ALL, buf, size)
    except (OSError, AttributeError):
        return None
    return buf.raw[:n].decode("ascii", "replace") if n > 0 else None


# statx(2) as coreutils 9 calls it (ls -l, stat): AT_NO_AUTOMOUNT with the basic fields.
_AT_FDCWD, _AT_NO_AUTOMOUNT, _STATX_BASIC_STATS = -100, 0x800, 0x7FF


def _statx_answers(path: bytes = b"/") -> bool | None:
    """Whether statx(2) with AT_NO_AUTOMOUNT answers (gVisor before 2024 says EINVAL, and
    then `ls -l` and `stat` fail on every file); None where libc has no statx."""
    try:
        statx = _libc().statx
    except (OSError, AttributeError):
        return None
    buf = ctypes.create_string_buffer(256)  # struct statx is 256 bytes
    return statx(_AT_FDCWD, path, _AT_NO_AUTOMOUNT, _STATX_BASIC_STATS, buf) == 0


def _exists(path: str) -> bool:
    # gVisor answers EINVAL, not ENOENT, for some host-only paths: any error is absence.
    try:
        os.stat(path)
        return True
    except OSError:
        return False


def evidence(proc_version: Path = Path("/proc/version"), kernel_log=_kernel_log,
             exists=_exists, statx=_statx_answers) -> dict:
    """Each marker as read here: the kernel identity, the log's first words, host interfaces."""
    try:
        version = proc_version.read_text(errors="replace").strip()
    except OSError:
        version = ""
    log = kernel_log()
    first = log.splitlines()[0] if log else ""
    return {"proc_version": version[:200],
            "gvisor_version": version == GVISOR_VERSION,
            "gvisor_log": None if log is None else GVISOR_LOG in first,
            "host_interfaces": [p for p in HOST_INTERFACES if exists(p)],
            "statx": statx()}


def status(**kw) -> dict:
    """runtime (gvisor or host-kernel), the evidence, and the reason in one sentence."""
    ev = evidence(**kw)
    markers = [ev["gvisor_version"], ev["gvisor_log"] is not False, not ev["host_interfaces"]]
    if all(markers):
        log = "its kernel log opens with gVisor's line" if ev["gvisor_log"] else \
              "the kernel log is unreadable"
        # A gVisor too old for coreutils: every `ls -l` and `stat` an agent runs would fail.
        defect = None if ev["statx"] is not False else (
            "this gVisor refuses statx(2) with AT_NO_AUTOMOUNT, so `ls -l` and `stat` fail on "
            "every file: run runsc 20240729 or newer (image/runtime/install-runsc.sh)")
        return {"runtime": GVISOR, "evidence": ev, "defect": defect,
                "reason": f"the kernel is gVisor's: /proc/version is gVisor's fixed identity, "
                          f"{log}, and no host kernel interface ({', '.join(HOST_INTERFACES)}) "
                          f"exists"}
    seen = ", ".join(ev["host_interfaces"]) or "none"
    return {"runtime": HOST_KERNEL, "evidence": ev, "defect": None,
            "reason": f"the host's kernel is shared with this container ({ev['proc_version'][:80]}; "
                      f"host kernel interfaces present: {seen})"}


def required(env: dict | None = None) -> str | None:
    """The runtime BIOTOOL_REQUIRE_RUNTIME asks for (gvisor), None when unset; a ValueError for
    any other value."""
    want = (REQUIRE_RUNTIME.get(env) or "").strip().lower()
    if not want:
        return None
    if want not in RUNTIMES:
        raise ValueError(f"{REQUIRE_RUNTIME.name}={want[:40]!r} is not a runtime biotool can "
                         f"check (choose from: {', '.join(RUNTIMES)})")
    return want
