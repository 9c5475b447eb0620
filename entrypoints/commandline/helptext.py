"""Help pages: usage line, the help text rewrapped by paragraph (a paragraph whose first
line is `\\b` is kept as written), arguments, options with their defaults and ranges, commands.
"""

from __future__ import annotations

import inspect
import shutil
import textwrap
from typing import Callable, Sequence

from commandline.spec import Argument, Command, Option

HELP_ROW = ("-h, --help", "Show this message and exit.")
MAX_WIDTH = 100  # on a wide terminal; 78 where there is none (agents read pipes)


def width() -> int:
    return max(min(shutil.get_terminal_size().columns, MAX_WIDTH) - 2, 50)


def wrap(text: str, cols: int, indent: str = "") -> str:
    """Paragraphs rewrapped to `cols` (indent included), each keeping its own extra indent."""
    paragraphs: list[tuple[int, bool, str]] = []
    buf: list[str] = []
    lead = None

    def flush() -> None:
        if buf:
            raw = buf[0].strip() == "\b"
            paragraphs.append((lead or 0, raw, "\n".join(buf[1:]) if raw else " ".join(buf)))
            buf.clear()

    for line in text.expandtabs().splitlines():
        if not line:
            flush()
            lead = None
            continue
        if lead is None:
            lead = len(line) - len(line.lstrip())
            line = line.lstrip()
        buf.append(line)
    flush()
    out = []
    for extra, raw, body in paragraphs:
        pad = indent + " " * extra
        if raw:
            out.append("\n".join(pad + ln for ln in body.splitlines()))
        else:
            out.append(textwrap.fill(body, cols, initial_indent=pad, subsequent_indent=pad,
                                     replace_whitespace=False))
    return "\n\n".join(out)


def short_help(help_: str, limit: int) -> str:
    """The first sentence of the first paragraph, cut with '...' to `limit` characters."""
    words = help_.split("\n\n")[0].split()
    if words and words[0] == "\b":
        words = words[1:]
    total = 0
    for i, word in enumerate(words):
        total += len(word) + (i > 0)
        if total > limit:
            break
        if word.endswith("."):
            return " ".join(words[:i + 1])
        if total == limit and i != len(words) - 1:
            break
    else:
        return " ".join(words)
    total += 3
    while i > 0:
        total -= len(words[i]) + 1
        if total <= limit:
            break
        i -= 1
    return " ".join(words[:i]) + "..."


def table(rows: Sequence[tuple[str, str]], cols: int, indent: int = 2) -> str:
    """A two-column definition list: names, then their text wrapped beside them."""
    first = min(max(len(r[0]) for r in rows), 30) + 2
    out = []
    for name, text in rows:
        line = " " * indent + name
        if not text:
            out.append(line)
            continue
        lines = wrap(text, max(cols - first - 2, 10)).splitlines() or [""]
        if len(name) <= first - 2:
            out.append(line + " " * (first - len(name)) + lines[0])
        else:
            out += [line, " " * (first + indent) + lines[0]]
        out += [" " * (first + indent) + ln for ln in lines[1:]]
    return "\n".join(out)


def _metavar(opt: Option) -> str:
    if opt.flag:
        return ""
    if opt.metavar:
        return " " + opt.metavar
    if getattr(opt.kind, "metavar", None):  # a path or size kind (commandline.kinds)
        return " " + opt.kind.metavar
    if opt.choices:
        return " [" + "|".join(opt.choices) + "]"
    number = opt.number
    if number is None:
        return " <str>"
    return f" <{number.__name__} range>" if number.ranged else f" <{number.__name__}>"


def option_row(opt: Option, text: Callable[[str], str]) -> tuple[str, str]:
    flags = sorted(opt.flags, key=lambda f: len(f) - len(f.lstrip("-")))
    extra = []
    empty = isinstance(opt.default, (str, tuple, list)) and not opt.default
    shown = not opt.flag and opt.default is not None and not empty
    bounds = opt.number.bounds() if opt.number and opt.number.ranged else ""
    if shown:
        extra.append(f"default: {opt.default}")
    if bounds:
        extra.append(bounds)
    if opt.required:
        extra.append("required")
    help_ = text(opt.help)
    if extra:
        help_ = f"{help_}  [{'; '.join(extra)}]" if help_ else f"[{'; '.join(extra)}]"
    return ", ".join(flags) + _metavar(opt), help_


def _argument_usage(arg: Argument) -> str:
    name = arg.name.upper() if arg.required else f"[{arg.name}]"
    return name + ("..." if arg.many else "")


def _sections(head: str, body: str, sections: list[tuple[str, list[tuple[str, str]]]],
              epilog: str, cols: int) -> str:
    parts = [head]
    if body:
        parts.append(wrap(inspect.cleandoc(body), cols, "  "))
    for title, rows in sections:
        if rows:
            parts.append(f"{title}:\n" + table(rows, cols))
    if epilog:
        parts.append(wrap(inspect.cleandoc(epilog), cols, "  "))
    return "\n\n".join(parts) + "\n"


def command_help(prog: str, command: Command, text: Callable[[str], str] = str) -> str:
    cols = width()
    usage = f"Usage: {prog} {command.name} [OPTIONS]"
    usage += "".join(" " + _argument_usage(a) for a in command.arguments)
    args = [(a.name, text(a.help)) for a in command.arguments] if any(
        a.help for a in command.arguments) else []
    opts = [option_row(o, text) for o in command.options] + [HELP_ROW]
    # A command declared with a short help only shows it on its own page too.
    return _sections(usage, text(command.help or command.short_help),
                     [("Arguments", args), ("Options", opts)],
                     text(command.epilog), cols)


def program_help(prog: str, help_: str, commands: Sequence[Command],
                 options: Sequence[Option] = (), epilog: str = "",
                 text: Callable[[str], str] = str) -> str:
    cols = width()
    limit = cols - 6 - max(len(c.name) for c in commands)
    rows = [(c.name, text(c.short_help).strip() if c.short_help
             else short_help(text(c.help), limit)) for c in commands]
    opts = [option_row(o, text) for o in options] + [HELP_ROW]
    return _sections(f"Usage: {prog} [OPTIONS] COMMAND [ARGS]...", text(help_),
                     [("Options", opts), ("Commands", rows)], text(epilog), cols)
