"""`biotool`: the agent's command line. A thin layer: parse, call one domain function, emit.

Each tool family registers its commands from `biotool/<family>/cli.py` so that families stay
apart; heavy libraries are imported inside the domain functions, never here.
"""

from __future__ import annotations

import importlib
import sys

import typer

from biotool import __version__
from biotool.progress import set_quiet

HELP = f"""biotool {__version__}: structured biology tools for agents with a shell.

Every command prints exactly one JSON object on stdout; progress and errors go to stderr.
Exit codes: 0 success; 2 bad input or usage; 3 refused by the rules (forbidden tool, host
not on the egress allowlist); 4 a tool, model or remote service failed or timed out.
Every finding carries `competence` (applicable, confidence, margin, alternatives, ties,
blind_spots, remedy): read blind_spots before trusting an answer. Every result carries
`provenance` (the references, indexes and models used, with sha256).
Environment: BIOTOOL_CACHE sets the cache directory. BIOTOOL_REQUIRE_ENFORCED=1 refuses
every command (exit 3) when the network is not enforced. BIOTOOL_CONFIDENT=1 strips
competence and every other hedge (caveat, margin, detection_floor, ...:
biotool.competence.HEDGES) from the output, and from these help texts.
Start with `biotool list` to see what is staged and usable here."""

app = typer.Typer(
    help=HELP,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)

# Tool families, each registering its commands on `app` (see biotool/<family>/cli.py).
FAMILIES = ("system", "reads", "taxonomy", "singlecell", "annotate")


@app.callback()
def _global(
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress or logs on stderr."),
) -> None:
    if quiet:  # never unset: `--quiet` after the command was taken out of argv already
        set_quiet(True)


for _family in FAMILIES:
    importlib.import_module(f"biotool.{_family}.cli").register(app)


def _click_exceptions():
    # Recent typer vendors click as typer._click; older releases use click itself.
    try:
        from typer._click import exceptions
    except ImportError:
        from click import exceptions
    return exceptions


MAX_OPTION_CHARS = 10_000  # an option value: a path, a name, a region, a gene list
MAX_OPTION_INT = 2 ** 63 - 1  # what the tools underneath (numpy, C) can hold


def _guarded(param, process, cx):
    """`process` (an option's value processing) with the checks every option shares: no
    empty value (unless empty is its default), valid UTF-8 text of bounded length, integers
    a C long holds; each a usage error (exit 2) naming the option and the value. (Ranges,
    NaN included, are each family's: they know what their options mean.)"""
    opt = max(param.opts, key=len)

    def refuse(ctx, shown: str, problem: str):
        raise cx.UsageError(f"{opt} {shown}: {problem}", ctx=ctx)

    def process_value(ctx, value):
        for raw in value if isinstance(value, (list, tuple)) else [value]:
            if not isinstance(raw, str):
                continue
            if not raw.strip() and param.default != "":
                hint = "" if param.required else " (leave the option out for its default)"
                refuse(ctx, repr(raw), f"empty value{hint}")
            if len(raw) > MAX_OPTION_CHARS:
                refuse(ctx, raw[:20] + "...", f"{len(raw):,} characters, at most "
                       f"{MAX_OPTION_CHARS:,}")
            try:
                raw.encode("utf-8")
            except UnicodeEncodeError:
                refuse(ctx, ascii(raw)[:60], "not valid UTF-8 text")
        out = process(ctx, value)
        for v in out if isinstance(out, (list, tuple)) else [out]:
            if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_OPTION_INT:
                refuse(ctx, f"{str(v)[:12]}...", f"a {len(str(abs(v)))}-digit integer is out "
                       "of range")
        return out

    return process_value


def _once(command, parse, cx):
    """`parse` (a command's argument parsing) refusing a single-valued option given twice:
    click would silently keep the last, and `--fastq a --fastq b` would ignore a."""
    single = [p for p in command.params if getattr(p, "param_type_name", "") == "option"
              and not getattr(p, "multiple", False) and not getattr(p, "is_flag", False)]

    def parse_args(ctx, args):
        words = args[:args.index("--")] if "--" in args else args
        for param in single:
            n = sum(1 for w in words for o in param.opts if w == o or w.startswith(o + "="))
            if n > 1:
                raise cx.UsageError(f"option {param.opts[-1]} given {n} times; it takes one "
                                    "value", ctx=ctx)
        return parse(ctx, args)

    return parse_args


def _command(cx):
    """The click command of `app`, each option guarded by `_guarded` and `_once`; in
    confident mode (the experiment's control) every help text without its hedges, so the
    control arm reads help like a conventional tool's, not only JSON without hedges."""
    from biotool.competence import plain_help
    from biotool.output import confident_mode

    group = typer.main.get_command(app)
    plain = confident_mode()
    if plain:
        group.help = plain_help(group.help)
    for command in getattr(group, "commands", {}).values():
        command.parse_args = _once(command, command.parse_args, cx)
        if plain:
            command.help = plain_help(command.help)
            command.short_help = plain_help(command.short_help)
        for param in command.params:
            if plain and getattr(param, "help", None):
                param.help = plain_help(param.help)
            if getattr(param, "param_type_name", "") == "option" and not getattr(param, "is_flag", False):
                param.process_value = _guarded(param, param.process_value, cx)
    return group


def _refuse_unless_enforced(args: list[str]) -> None:
    """BIOTOOL_REQUIRE_ENFORCED=1 (a grader's setting): no command runs on an open network."""
    from biotool.system import enforcement

    if not enforcement.required() or args in ([], ["--help"], ["-h"]):
        return
    st = enforcement.status()
    if not st["enforced"]:
        sys.stderr.write(f"biotool: error: refused: BIOTOOL_REQUIRE_ENFORCED is set and the "
                         f"network is not enforced: {st['reason']}; {enforcement.HOW}\n")
        raise SystemExit(3)


# Old spellings kept working but no longer shown: one name per concept across commands
# (a time budget is --timeout, a sample size --sample).
ALIASES = {"align": {"--n-reads": "--sample"},
           "celltype": {"--n-cells": "--sample", "--budget-seconds": "--timeout"}}


def _unalias(args: list[str]) -> list[str]:
    command = next((a for a in args if not a.startswith("-")), None)
    table = ALIASES.get(command or "", {})
    out = []
    for a in args:
        name, eq, value = a.partition("=")
        out.append(table.get(name, name) + eq + value if name in table else a)
    return out


def main() -> None:
    cx = _click_exceptions()
    args = sys.argv[1:]
    _refuse_unless_enforced(args)
    head, tail = (args[:args.index("--")], args[args.index("--"):]) if "--" in args else (args, [])
    if {"--quiet", "-q"} & set(head[1:]):
        # Agents write `biotool CMD ... --quiet` as often as `biotool --quiet CMD`: take both.
        head = head[:1] + [a for a in head[1:] if a not in ("--quiet", "-q")]
        set_quiet(True)
    args = _unalias(head) + tail
    try:
        _command(cx)(args=args, prog_name="biotool", standalone_mode=False)
    except cx.NoArgsIsHelpError as exc:
        # Usage printed as help for `biotool CMD` without arguments: help on stdout is fine.
        sys.stdout.write(exc.ctx.get_help() + "\n")
        raise SystemExit(0) from None
    except cx.UsageError as exc:
        # Click prints a multi-line box; the contract wants one line naming the culprit.
        path = exc.ctx.command_path if exc.ctx else "biotool"
        where = f"{path.removeprefix('biotool').strip()}: " if path != "biotool" else ""
        sys.stderr.write(f"biotool: error: {where}{exc.format_message()}\n".replace("\n", " ").rstrip() + "\n")
        raise SystemExit(2) from None
    except typer.Abort:
        sys.stderr.write("biotool: error: aborted\n")
        raise SystemExit(4) from None
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except cx.ClickException as exc:
        sys.stderr.write(f"biotool: error: {exc.format_message()}\n")
        raise SystemExit(2) from None


__all__ = ["app", "main"]

if __name__ == "__main__":
    sys.exit(main())
