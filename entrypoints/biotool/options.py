"""The options several families share, declared once so that each is held to one rule:
--timeout (seconds above 0), --top (at least one), --threads (1 to 256), --min-mapq (0 to 255),
--quiet/-q (every program).
A family gives its own help text (what the number means there) and default."""

from __future__ import annotations

from typing import Any, Optional

from commandline.kinds import count, seconds
from commandline.spec import Option

MAX_THREADS = 256
# Every program's flag (biotool, molperceive), before or after the command.
QUIET = Option(("--quiet", "-q"), "No progress, logs or warnings on stderr (errors still "
               "print).", flag=True)


def apply_program_flags(flags: set[str]) -> None:
    """What the program-wide flags given set for this process (and its subprocesses)."""
    from biotool.progress import set_quiet

    if "quiet" in flags:
        set_quiet(True)


def timeout(help: str, default: Optional[float] = None, max: Optional[float] = None,
            **more: Any) -> Option:
    """--timeout SECONDS: finite and above 0 (0 would be no time at all; leave it out for no
    budget where the command has none), at most max."""
    return Option(("--timeout",), help, kind=seconds(max=max), default=default, **more)


def top(help: str, default: int, max: Optional[int] = None) -> Option:
    return Option(("--top",), help, kind=count(1, max), default=default)


def threads(help: str, default: int) -> Option:
    return Option(("--threads",), help, kind=count(1, MAX_THREADS), default=default)


def min_mapq(help: str = "Ignore alignments below this MAPQ.", default: int = 20) -> Option:
    return Option(("--min-mapq",), help, kind=count(0, 255), default=default)
