"""Progress and logs on stderr: a bar on a terminal, plain lines otherwise, nothing when quiet."""

from __future__ import annotations

import os
import sys
import time

_QUIET_ENV = "BIOTOOL_QUIET"


def set_quiet(quiet: bool) -> None:
    # An environment variable so that subprocesses and library callbacks see it too.
    if quiet:
        os.environ[_QUIET_ENV] = "1"
    else:
        os.environ.pop(_QUIET_ENV, None)


def quiet() -> bool:
    return os.environ.get(_QUIET_ENV) == "1"


def log(message: str) -> None:
    if not quiet():
        sys.stderr.write(f"biotool: {message}\n")
        sys.stderr.flush()


class Progress:
    """`with Progress("aligning", total=n) as p: p.advance(k)`; throttled to ~5 updates/s."""

    def __init__(self, label: str, total: int | None = None):
        self.label, self.total, self.done = label, total, 0
        self._tty = sys.stderr.isatty()
        self._last = 0.0

    def __enter__(self) -> "Progress":
        if not self._tty:
            log(f"{self.label}...")
        return self

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self._tty and not quiet() and now - self._last > 0.2:
            self._last = now
            if self.total:
                frac = min(1.0, self.done / self.total)
                bar = "#" * int(frac * 30)
                sys.stderr.write(f"\r{self.label} [{bar:<30}] {self.done}/{self.total}")
            else:
                sys.stderr.write(f"\r{self.label} {self.done}")
            sys.stderr.flush()

    def __exit__(self, *exc) -> None:
        if self._tty and not quiet():
            sys.stderr.write("\n")
        elif not exc[0]:
            log(f"{self.label}: done ({self.done})")
