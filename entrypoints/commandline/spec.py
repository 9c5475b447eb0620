"""What a program declares: its commands, their options and positional arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from commandline.kinds import Number


@dataclass(frozen=True)
class Option:
    """One option. `kind` is str, int, float or a number kind (commandline.kinds: converted
    and range-checked by the parser), or a function from the text to the value that raises
    UsageError naming what is wrong.

    flag: takes no value (True when given). multiple: may be repeated (a list; otherwise
    given twice is refused). gather: "each" takes the files after the flag as more values
    (`--bam a b`), "grouped" joins them with commas into one (`--fastq R1 R2`: one library).
    aliases: old spellings still accepted, never shown. dest: the keyword the command
    receives (default: the longest flag without dashes, '-' as '_')."""

    flags: tuple[str, ...]
    help: str = ""
    kind: Any = str
    default: Any = None
    required: bool = False
    flag: bool = False
    multiple: bool = False
    gather: Optional[str] = None
    choices: Optional[tuple[str, ...]] = None
    metavar: Optional[str] = None
    aliases: tuple[str, ...] = ()
    dest: str = ""

    @property
    def name(self) -> str:
        """The spelling errors name: the longest flag."""
        return max(self.flags, key=len)

    @property
    def number(self) -> Optional[Number]:
        """The number kind this option's values are held to, None for text."""
        if isinstance(self.kind, Number):
            return self.kind
        return Number(self.kind) if self.kind in (int, float) else None

    @property
    def key(self) -> str:
        return self.dest or self.name.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Argument:
    """One positional argument: one value, or any number (`many`); optional unless required."""

    name: str
    help: str = ""
    required: bool = False
    many: bool = False
    default: Any = None

    @property
    def key(self) -> str:
        return self.name.replace("-", "_")


@dataclass(frozen=True)
class Command:
    """One subcommand: `run(**values)` returns what the program emits. `tail`: everything
    after the first `--` is appended to the last argument (a command line to execute)."""

    name: str
    run: Callable[..., Any]
    help: str = ""
    short_help: str = ""
    options: Sequence[Option] = ()
    arguments: Sequence[Argument] = ()
    epilog: str = ""
    tail: bool = False
