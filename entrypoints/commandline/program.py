"""`main(prog, commands)`: the one entry of every program's command line."""

from __future__ import annotations

import sys
from typing import Any, Callable, NoReturn, Sequence

import typer

from commandline.errors import EXIT_INPUT, EXIT_INTERRUPTED, UsageError
from commandline.ladder import emit as emit_json, fail_line, finish
from commandline.spec import Command, Option
from commandline.typed import build_program, run_values


def main(prog: str, commands: Sequence[Command], *, help: str,
         emit: Callable[[Any], None] = emit_json,
         argv: Sequence[str] | None = None, options: Sequence[Option] = (),
         setup: Callable[[set[str]], None] = lambda flags: None, epilog: str = "",
         text: Callable[[str], str] = str) -> NoReturn:
    """Parse argv (default sys.argv[1:]) with Typer and run the command it names through the
    ladder.

    options: the program's own flags (e.g. --quiet), taken before the command or among its
    options; `setup` receives the keys of those given before the command runs. text: applied
    to every help text shown (biotool's arm: biotool.arms). A usage error is one line naming
    the command, exit 2; no arguments at all, or -h/--help, print help on stdout, exit 0."""
    args = list(sys.argv[1:] if argv is None else argv) or ["--help"]
    seen: set[str] = set()
    group = build_program(prog, commands, help, epilog, options, text, seen)
    try:
        got = group.main(args, prog_name=prog, standalone_mode=False)
    except UsageError as exc:
        where = f"{exc.command}: " if exc.command else ""
        fail_line(prog, where + exc.message, EXIT_INPUT)
    except typer.TyperException as exc:
        fail_line(prog, exc.format_message(), EXIT_INPUT)
    if not isinstance(got, tuple):  # Typer's exit code: Ctrl-C while parsing
        fail_line(prog, "interrupted", EXIT_INTERRUPTED)
    name, given = got
    command = next(c for c in commands if c.name == name)
    seen.update(o.key for o in options if given.pop(o.key, False))
    values = run_values(command, given)
    setup(seen)
    finish(prog, lambda: command.run(**values), emit)
