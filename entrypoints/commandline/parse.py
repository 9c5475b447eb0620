"""argv against a command's declared options and arguments: values by key, or a UsageError.

Every option gets the checks it shares with every other: given once unless repeatable, no
empty value (unless empty is its default), valid UTF-8 text of bounded length, numbers
converted and held to their kind (commandline.kinds: finite, within its range) with the
option named, and integers within what a C long holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from commandline.errors import UsageError
from commandline.kinds import invalid
from commandline.spec import Argument, Command, Option

HELP_FLAGS = ("-h", "--help")
MAX_OPTION_CHARS = 10_000  # an option value: a path, a name, a region, a gene list
MAX_OPTION_INT = 2 ** 63 - 1  # what the tools underneath (numpy, C) can hold


@dataclass
class Parsed:
    """What argv said: values by key, whether help was asked, global flags seen."""

    values: dict[str, Any] = field(default_factory=dict)
    help: bool = False
    globals: set[str] = field(default_factory=set)


def no_such_option(name: str, known: Sequence[str], command: str) -> UsageError:
    import difflib  # on a usage error only

    close = difflib.get_close_matches(name, known)
    hint = f" (Possible options: {', '.join(sorted(close))})" if close else ""
    return UsageError(f"No such option: {name}{hint}", command)


def refuse_repeats(options: Sequence[Option], args: list[str], command: str) -> None:
    """A single-valued option given twice is refused: keeping the last, as parsers do, would
    make `--fastq a --fastq b` ignore a."""
    words = args[:args.index("--")] if "--" in args else args
    for opt in options:
        if opt.multiple or opt.flag:
            continue
        spellings = (*opt.flags, *opt.aliases)
        n = sum(1 for w in words for s in spellings if w == s or w.startswith(s + "="))
        if n > 1:
            raise UsageError(f"option {opt.name} given {n} times; it takes one value", command)


def tokens(command: Command, args: list[str], global_flags: Sequence[Option]):
    """(option, raw value) pairs in argv order, the positional words, and what else was seen."""
    lookup = {s: o for o in (*command.options, *global_flags) for s in (*o.flags, *o.aliases)}
    shown = [s for o in command.options for s in o.flags] + list(HELP_FLAGS)
    given: list[tuple[Option, Any]] = []
    words: list[str] = []
    parsed = Parsed()
    where = command.name

    def take(opt: Option, spelled: str, value: str | None, rest: list[str]) -> None:
        if opt.flag:
            if value is not None:
                raise UsageError(f"Option '{spelled}' does not take a value.", where)
            if opt in global_flags:
                parsed.globals.add(opt.key)
            else:
                given.append((opt, True))
            return
        if value is None:
            if not rest:
                raise UsageError(f"Option '{spelled}' requires an argument.", where)
            value = rest.pop(0)  # the option's own value, whatever it looks like
        values = [value]
        while opt.gather and rest and not rest[0].startswith("-"):
            values.append(rest.pop(0))
        if opt.gather == "grouped":
            values = [",".join(values)]
        given.extend((opt, v) for v in values)

    rest = list(args)
    while rest:
        word = rest.pop(0)
        if word == "--":
            words += rest
            break
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            if name == "--help" and not eq:
                parsed.help = True
            elif name in lookup:
                take(lookup[name], name, value if eq else None, rest)
            else:
                raise no_such_option(name, shown, where)
        elif word.startswith("-") and len(word) > 1:
            # Short options, bundled or not: -q, -qh, -m FILE, -mFILE.
            for i, ch in enumerate(word[1:], start=1):
                name = "-" + ch
                if name == "-h":
                    parsed.help = True
                    continue
                if name not in lookup:
                    raise no_such_option(name, shown, where)
                opt = lookup[name]
                if opt.flag:
                    take(opt, name, None, rest)
                    continue
                take(opt, name, word[i + 1:] or None, rest)
                break
        else:
            words.append(word)
    return given, words, parsed


def _hint(opt: Option) -> str:
    return " / ".join(f"'{s}'" for s in opt.flags)


def value(opt: Option, raw: str, where: str) -> Any:
    """One option value, checked and converted; each problem a UsageError naming the option."""
    def refuse(shown: str, problem: str) -> UsageError:
        return UsageError(f"{opt.name} {shown}: {problem}", where)

    if not raw.strip() and opt.default != "":
        hint = "" if opt.required else " (leave the option out for its default)"
        raise refuse(repr(raw), f"empty value{hint}")
    if len(raw) > MAX_OPTION_CHARS:
        raise refuse(raw[:20] + "...", f"{len(raw):,} characters, at most {MAX_OPTION_CHARS:,}")
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise refuse(ascii(raw)[:60], "not valid UTF-8 text") from None
    if opt.choices is not None and raw not in opt.choices:
        raise UsageError(invalid(_hint(opt), f"{raw!r} is not one of "
                                 f"{', '.join(map(repr, opt.choices))}."), where)
    try:
        out = (opt.number or opt.kind)(raw)
    except ValueError as exc:
        raise UsageError(invalid(_hint(opt), str(exc)), where) from None
    if isinstance(out, int) and not isinstance(out, bool) and abs(out) > MAX_OPTION_INT:
        raise refuse(f"{str(out)[:12]}...", f"a {len(str(abs(out)))}-digit integer is out of range")
    return out


def _utf8(arguments: Sequence[Argument], words: list[str], where: str) -> None:
    """Every positional word is valid UTF-8 text, as every option value is: a byte the shell
    passed through (0xFF arrives as a lone surrogate) must not reach a tool name, a SMILES or
    a JSON document, nor be echoed back raw."""
    names = [a.name.upper() for a in arguments if not a.many]
    rest = next((a.name.upper() for a in arguments if a.many), None)
    for i, word in enumerate(words):
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            name = names[i] if i < len(names) else (rest or "argument")
            raise UsageError(f"argument {name} {ascii(word)[:60]}: not valid UTF-8 text",
                             where) from None


def _arguments(arguments: Sequence[Argument], words: list[str], where: str) -> dict[str, Any]:
    _utf8(arguments, words, where)
    out: dict[str, Any] = {}
    words = list(words)
    for arg in arguments:
        if arg.many:
            out[arg.key], words = words, []
        elif words:
            out[arg.key] = words.pop(0)
        else:
            out[arg.key] = arg.default
        if arg.required and out[arg.key] in (None, []):  # '' is given: its owner names it
            raise UsageError(f"Missing argument '{arg.name.upper()}'.", where)
    if words:
        raise UsageError(f"Got unexpected extra argument(s) ({' '.join(words)})", where)
    return out


def parse(command: Command, args: list[str], global_flags: Sequence[Option] = ()) -> Parsed:
    """The values `command.run` receives, in the order a parser reports problems: options as
    they appear in argv, then the others as declared, then the positional arguments."""
    where = command.name
    refuse_repeats(command.options, args, where)
    given, words, parsed = tokens(command, args, global_flags)
    if parsed.help:
        return parsed
    seen = list(dict.fromkeys(o for o, _ in given))
    for opt in seen + [o for o in command.options if o not in seen]:
        raws = [v for o, v in given if o is opt]
        if opt.flag:
            parsed.values[opt.key] = bool(raws)
        elif not raws:
            if opt.required:
                raise UsageError(f"Missing option {_hint(opt)}.", where)
            parsed.values[opt.key] = opt.default
        else:
            got = [value(opt, raw, where) for raw in raws]
            parsed.values[opt.key] = got if opt.multiple else got[0]
    parsed.values.update(_arguments(command.arguments, words, where))
    return parsed
