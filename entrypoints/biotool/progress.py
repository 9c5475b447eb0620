"""Progress and logs on stderr: plain lines, nothing when quiet (`--quiet`/`-q`)."""

from __future__ import annotations

import os
import sys

from biotool.settings import QUIET


def set_quiet(quiet: bool) -> None:
    # An environment variable so that subprocesses and library callbacks see it too.
    if quiet:
        os.environ[QUIET.name] = "1"
    else:
        os.environ.pop(QUIET.name, None)


def quiet() -> bool:
    return QUIET.get()


def log(message: str) -> None:
    if not quiet():
        from commandline.errors import one_line  # a file name's ESC never reaches a terminal

        sys.stderr.write(f"biotool: {one_line(message)}\n")
        sys.stderr.flush()
