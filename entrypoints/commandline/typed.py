"""A program's declared commands (`commandline.spec`) as Typer commands, on Typer's public API:
each option a `typer.Option` with the shared checks as its `parser=`, each command a
`TyperCommand` subclass (argv rules, usage and help layout), the program a lazy `TyperGroup`
subclass that builds only the command it runs.

Typer only parses: the command's function returns its values, and the program runs the command
through the ladder outside Typer, so no exception of the command passes through click.
"""

from __future__ import annotations

import inspect
import sys
from typing import Annotated, Any, Callable, Sequence

import typer
from typer.core import TyperCommand, TyperGroup

from commandline.errors import UsageError
from commandline.spec import Argument, Command, Option
from commandline.values import argument_parser, option_parser, prepare

HELP_TEXT = "Show this message and exit."
# Help is as wide as the terminal up to 100 columns (78 where there is none: agents read pipes).
SETTINGS = {"max_content_width": 100, "help_option_names": []}


def _show_help(ctx: typer.Context, value: bool) -> None:
    """The program's own -h/--help: Typer's would convert every value of the command first."""
    if value:
        sys.stdout.write(ctx.get_help() + "\n")
        sys.stdout.flush()
        raise SystemExit(0)


def _help_parameter() -> inspect.Parameter:
    return inspect.Parameter("help_", inspect.Parameter.KEYWORD_ONLY, default=False,
                             annotation=Annotated[bool, typer.Option(
                                 "--help", "-h", help=HELP_TEXT, is_eager=True,
                                 expose_value=False, callback=_show_help)])


def _metavar(opt: Option) -> str:
    if opt.metavar:
        return opt.metavar
    if getattr(opt.kind, "metavar", None):  # a path or size kind (commandline.kinds)
        return opt.kind.metavar
    if opt.choices:
        return "[" + "|".join(opt.choices) + "]"
    number = opt.number
    if number is None:
        return "<str>"
    return f"<{number.__name__} range>" if number.ranged else f"<{number.__name__}>"


def _bracket(opt: Option) -> str:
    """The default and range an option's help ends with (Typer adds `required` itself)."""
    empty = isinstance(opt.default, (str, tuple, list)) and not opt.default
    extra = [f"default: {opt.default}"] if opt.default is not None and not empty else []
    if opt.number and opt.number.ranged:
        extra.append(opt.number.bounds())
    return f"[{'; '.join(extra)}]" if extra else ""


def _option(opt: Option, where: str, text: Callable[[str], str],
            hidden: bool = False) -> inspect.Parameter:
    if opt.flag:
        info = typer.Option(*opt.flags, help=text(opt.help), hidden=hidden)
        return inspect.Parameter(opt.key, inspect.Parameter.KEYWORD_ONLY, default=False,
                                 annotation=Annotated[bool, info])
    help_ = text(opt.help)
    bracket = _bracket(opt)
    if bracket:
        help_ = f"{help_}  {bracket}" if help_ else bracket
    info = typer.Option(*opt.flags, help=help_, hidden=hidden, show_default=False,
                        metavar=_metavar(opt), parser=option_parser(opt, where))
    # Not given is None (never parsed); the command then receives the declared default.
    # A required option has no default at all: with one, click >= 8.3 would not require it.
    default = inspect.Parameter.empty if opt.required else None
    kind = list[str] if opt.multiple else str
    return inspect.Parameter(opt.key, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=Annotated[kind, info])


def _argument(arg: Argument, where: str) -> inspect.Parameter:
    info = typer.Argument(metavar=arg.name.upper(), parser=argument_parser(arg, where),
                          show_default=False)
    default = inspect.Parameter.empty if arg.required else None
    return inspect.Parameter(arg.key, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=Annotated[list[str] if arg.many else str, info])


def _values_function(name: str, params: list[inspect.Parameter]) -> Callable[..., tuple]:
    """A function Typer reads `params` from, returning the command's name and its values."""
    def values(**given: Any) -> tuple[str, dict]:
        given.pop("help_")  # Typer passes every parameter of the signature, exposed or not
        return name, given

    values.__signature__ = inspect.Signature(params)
    return values


class SpecCommand(TyperCommand):
    """One declared command on Typer: argv prepared by the project's rules, every usage error
    a UsageError naming the command, usage and arguments laid out as the manual shows them."""

    spec: Command
    tails: Sequence[str] = ()
    arguments_help: Sequence[tuple[str, str]] = ()

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        try:
            words, tail = prepare(self.spec, args, self.tails)
            rest = super().parse_args(ctx, words)
        except typer.TyperException as exc:
            raise UsageError(exc.format_message(), self.spec.name) from None
        if tail:
            last = self.spec.arguments[-1].key
            ctx.params[last] = [*(ctx.params[last] or []), *tail]
        return rest

    def collect_usage_pieces(self, ctx: typer.Context) -> list[str]:
        pieces = [self.options_metavar or ""]
        for arg in self.spec.arguments:
            name = arg.name.upper() if arg.required else f"[{arg.name}]"
            pieces.append(name + ("..." if arg.many else ""))
        return pieces

    def format_options(self, ctx: typer.Context, formatter: Any) -> None:
        if self.arguments_help:
            with formatter.section("Arguments"):
                formatter.write_dl(self.arguments_help)
        rows = [r for r in (p.get_help_record(ctx) for p in self.get_params(ctx)
                            if p.param_type_name == "option") if r is not None]
        with formatter.section("Options"):
            formatter.write_dl(rows)


def build_command(command: Command, tails: Sequence[str], global_flags: Sequence[Option],
                  text: Callable[[str], str]) -> TyperCommand:
    where = command.name
    params = [_option(o, where, text) for o in command.options]
    params += [_option(o, where, text, hidden=True) for o in global_flags]
    params += [_argument(a, where) for a in command.arguments]
    params.append(_help_parameter())
    arguments_help = [(a.name, text(a.help)) for a in command.arguments] if any(
        a.help for a in command.arguments) else []
    cls = type("SpecCommand", (SpecCommand,), {
        "spec": command, "tails": tuple(tails), "arguments_help": arguments_help})
    app = typer.Typer(add_completion=False, rich_markup_mode=None)
    app.command(command.name, cls=cls, help=text(command.help or command.short_help),
                short_help=text(command.short_help) or None, epilog=text(command.epilog) or None,
                add_help_option=False, context_settings=SETTINGS)(_values_function(command.name, params))
    return typer.main.get_command(app)


class LazyGroup(TyperGroup):
    """The program: lists its declared commands and builds only the one it runs (building
    every command's parameters would cost each call time that only one of them needs)."""

    specs: dict[str, Command] = {}
    global_flags: Sequence[Option] = ()
    text: Callable[[str], str] = staticmethod(str)

    def list_commands(self, ctx: typer.Context) -> list[str]:
        return list(self.specs)

    def get_command(self, ctx: typer.Context, cmd_name: str) -> TyperCommand | None:
        spec = self.specs.get(cmd_name)
        if spec is None:
            return None
        tails = [c.name for c in self.specs.values() if c.tail]
        return build_command(spec, tails, self.global_flags, self.text)

    def resolve_command(self, ctx: typer.Context, args: list[str]):
        name = args[0]
        if name not in self.specs:
            import difflib  # on a usage error only

            close = difflib.get_close_matches(name, list(self.specs))
            raise UsageError(f"No such command {name!r}." + (
                f" Did you mean {close[0]!r}?" if close else
                f" Commands: {', '.join(self.specs)}."))
        return name, self.get_command(ctx, name), args[1:]

    def format_commands(self, ctx: typer.Context, formatter: Any) -> None:
        """Each command's short help, from a bare command: none of them is built for it."""
        limit = formatter.width - 6 - max(len(n) for n in self.specs)
        rows = [(name, TyperCommand(name, help=self.text(c.help) or None,
                                    short_help=self.text(c.short_help) or None)
                 .get_short_help_str(limit)) for name, c in self.specs.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def build_program(prog: str, commands: Sequence[Command], help_: str, epilog: str,
                  global_flags: Sequence[Option], text: Callable[[str], str],
                  seen: set[str]) -> TyperGroup:
    """The program's group; the program flags given before the command are added to `seen`."""
    params = [_option(o, "", text) for o in global_flags] + [_help_parameter()]

    def program_flags(**given: Any) -> None:
        given.pop("help_")  # Typer passes every parameter of the signature, exposed or not
        seen.update(k for k, v in given.items() if v)

    program_flags.__signature__ = inspect.Signature(params)
    cls = type("LazyGroup", (LazyGroup,), {
        "specs": {c.name: c for c in commands}, "global_flags": tuple(global_flags),
        "text": staticmethod(text)})
    app = typer.Typer(name=prog, cls=cls, add_completion=False, rich_markup_mode=None,
                      add_help_option=False, context_settings=SETTINGS, help=text(help_),
                      epilog=text(epilog) or None)
    app.callback()(program_flags)
    return typer.main.get_group(app)


def run_values(command: Command, given: dict[str, Any]) -> dict[str, Any]:
    """The keywords `command.run` receives from what Typer parsed: what was not given is the
    declared default (Typer saw None, so never parsed it), many words a list."""
    values = dict(given)
    for opt in command.options:
        if not opt.flag and values[opt.key] in (None, [], ()):
            values[opt.key] = opt.default
    for arg in command.arguments:
        if arg.many:
            values[arg.key] = list(values[arg.key] or [])
        elif values[arg.key] is None:
            values[arg.key] = arg.default
    return values


def parse(command: Command, args: list[str]) -> dict[str, Any]:
    """The keywords `command.run` receives for `args`, or the UsageError they make."""
    group = build_program(command.name, [command], "", "", (), str, set())
    name, given = group.main([command.name, *args], prog_name=command.name,
                             standalone_mode=False)
    return run_values(command, given)
