"""`main(prog, commands)`: the one entry of every program's command line."""

from __future__ import annotations

import sys
from typing import Any, Callable, NoReturn, Sequence

from commandline.errors import EXIT_INPUT, EXIT_OK, UsageError
from commandline.helptext import command_help, program_help
from commandline.ladder import emit as emit_json, fail_line, finish
from commandline.parse import HELP_FLAGS, no_such_option, parse
from commandline.spec import Command, Option


def _print(text: str) -> NoReturn:
    sys.stdout.write(text)
    sys.stdout.flush()
    raise SystemExit(EXIT_OK)


def main(prog: str, commands: Sequence[Command], *, help: str,
         emit: Callable[[Any], None] = emit_json,
         argv: Sequence[str] | None = None, options: Sequence[Option] = (),
         setup: Callable[[set[str]], None] = lambda flags: None, epilog: str = "",
         text: Callable[[str], str] = str) -> NoReturn:
    """Parse argv (default sys.argv[1:]) and run the command it names through the ladder.

    options: the program's own flags (e.g. --quiet), taken before the command or among its
    options; `setup` receives the keys of those given before the command runs. text: applied
    to every help text shown (biotool's arm: biotool.arms). A usage error is one line naming
    the command, exit 2; no arguments at all, or -h/--help, print help on stdout, exit 0."""
    args = list(sys.argv[1:] if argv is None else argv)
    by_name = {c.name: c for c in commands}
    lookup = {s: o for o in options for s in o.flags}
    seen: set[str] = set()
    try:
        if not args:
            _print(program_help(prog, help, commands, options, epilog, text))
        while args and args[0].startswith("-") and args[0] != "-":
            word = args.pop(0)
            if word in HELP_FLAGS:
                _print(program_help(prog, help, commands, options, epilog, text))
            if word not in lookup or not lookup[word].flag:
                raise no_such_option(word, [*lookup, *HELP_FLAGS], "")
            seen.add(lookup[word].key)
        if not args:
            raise UsageError("Missing command.")
        name = args.pop(0)
        if name not in by_name:
            import difflib  # on a usage error only

            close = difflib.get_close_matches(name, list(by_name))
            raise UsageError(f"No such command {name!r}." + (
                f" Did you mean {close[0]!r}?" if close else f" Commands: {', '.join(by_name)}."))
        command = by_name[name]
        tail: list[str] = []
        if "--" in args:
            cut = args.index("--")
            if command.tail:
                args, tail = args[:cut], args[cut + 1:]
            elif any(c.tail for c in commands):
                tails = ", ".join(c.name for c in commands if c.tail)
                raise UsageError(f"'--' only separates the command of {tails}, not of "
                                 f"{name}")
        parsed = parse(command, args, options)
    except UsageError as exc:
        where = f"{exc.command}: " if exc.command else ""
        fail_line(prog, where + exc.message, EXIT_INPUT)
    if parsed.help:
        _print(command_help(prog, command, text))
    setup(seen | parsed.globals)
    values = parsed.values
    if tail:
        last = command.arguments[-1].key
        values[last] = [*(values[last] or []), *tail]
    finish(prog, lambda: command.run(**values), emit)
