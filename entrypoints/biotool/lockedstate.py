"""A small JSON state file that several processes update in turn under an exclusive flock.

The one mechanism behind both NCBI schedules: biotool's polite client-side pacing
(taxonomy/pacing.py) and the egress gate's host-wide fair schedule (image/egress/schedule.py).
Each caller keeps its own policy (what the state means, what damage reads as); this module
holds what must be right in both: the file is opened without following a link or blocking on
a FIFO planted in its place, it must be a regular file, the lock is taken within a deadline
(never an unbounded wait), reads are size-bounded and writes cannot leave an empty file.
Standard library only: the Dockerfile copies this file into the egress image too.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator


class LockTimeout(Exception):
    """Another process held the lock past the caller's wait."""


class NotRegular(OSError):
    """Something other than a regular file (a FIFO, a device, a directory) sits at the path."""


@dataclass
class Locked:
    """The open, locked state file; `created` when this open made it."""
    fd: int
    created: bool

    def read(self, limit: int) -> bytes:
        """Up to limit + 1 bytes, so a caller can tell an oversized file from a full one."""
        return os.pread(self.fd, limit + 1, 0)

    def write(self, data: bytes) -> None:
        # Overwrite, then cut: a writer killed in between leaves unparsable JSON, which each
        # caller reads as "a contact just happened", never an empty file (read as "never").
        os.pwrite(self.fd, data, 0)
        os.ftruncate(self.fd, len(data))


def _open(path: Path) -> tuple[int, bool]:
    # O_NOFOLLOW: a planted link must not redirect the writes; O_NONBLOCK: a FIFO must not hang.
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd, created = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600), True
    except FileExistsError:
        fd, created = os.open(path, flags), False
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegular(errno.EINVAL, f"{path} is not a regular file")
    return fd, created


@contextmanager
def locked(path: Path, wait_s: float, poll_s: float = 0.01) -> Iterator[Locked]:
    """The state file at `path`, created 0600 if missing, locked for the `with` block.

    OSError when it cannot be opened (NotRegular for what is not a regular file), LockTimeout
    when the lock is not free within `wait_s`. Closing the file releases the lock.
    """
    fd, created = _open(path)
    try:
        end = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= end:
                    raise LockTimeout(f"{path} still locked after {wait_s:g} s") from None
                time.sleep(poll_s)
        yield Locked(fd, created)
    finally:
        os.close(fd)
