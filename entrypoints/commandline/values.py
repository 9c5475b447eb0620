"""What Typer cannot check for the project: the checks every option value and positional word
shares, as the `parser=` each parameter gets, and the argv rules of docs/contract.md that a
click parser has no setting for (a single-valued option given twice, old spellings, the files
after `--bam`, `--` where a program only lets it separate a command line).

Every refusal is a UsageError in today's words, naming the option as written.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from commandline.errors import UsageError
from commandline.kinds import invalid
from commandline.spec import Argument, Command, Option

MAX_OPTION_CHARS = 10_000  # an option value: a path, a name, a region, a gene list
MAX_OPTION_INT = 2 ** 63 - 1  # what the tools underneath (numpy, C) can hold


def _hint(opt: Option) -> str:
    return " / ".join(f"'{s}'" for s in opt.flags)


def option_parser(opt: Option, where: str) -> Callable[[str], Any]:
    """The `parser=` of one option: its value checked and converted, each problem a
    UsageError naming the option."""
    def refuse(shown: str, problem: str) -> UsageError:
        return UsageError(f"{opt.name} {shown}: {problem}", where)

    def parse(raw: str) -> Any:
        if not raw.strip() and opt.default != "":
            hint = "" if opt.required else " (leave the option out for its default)"
            raise refuse(repr(raw), f"empty value{hint}")
        if len(raw) > MAX_OPTION_CHARS:
            raise refuse(raw[:20] + "...",
                         f"{len(raw):,} characters, at most {MAX_OPTION_CHARS:,}")
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
            raise refuse(f"{str(out)[:12]}...",
                         f"a {len(str(abs(out)))}-digit integer is out of range")
        return out

    return parse


def argument_parser(arg: Argument, where: str) -> Callable[[str], str]:
    """The `parser=` of a positional argument: valid UTF-8 text, as every option value is (a
    byte the shell passed through arrives as a lone surrogate and must not reach a tool name,
    a SMILES or a JSON document, nor be echoed back raw)."""
    def parse(word: str) -> str:
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(f"argument {arg.name.upper()} {ascii(word)[:60]}: not valid UTF-8 "
                             "text", where) from None
        return word

    return parse


def _refuse_repeats(options: Sequence[Option], words: list[str], where: str) -> None:
    """A single-valued option given twice is refused: keeping the last, as parsers do, would
    make `--fastq a --fastq b` ignore a."""
    for opt in options:
        if opt.multiple or opt.flag:
            continue
        spellings = (*opt.flags, *opt.aliases)
        n = sum(1 for w in words for s in spellings if w == s or w.startswith(s + "="))
        if n > 1:
            raise UsageError(f"option {opt.name} given {n} times; it takes one value", where)


def prepare(command: Command, args: list[str],
            tails: Sequence[str]) -> tuple[list[str], list[str]]:
    """argv as click should read it, and the command line after `--` of a command that takes
    one (it goes to its last argument whole, never to the others): repeats refused, old
    spellings (aliases) written as the option they name, and the words after a gathering
    option (`--bam a b`, `--fastq R1 R2`) given to it, each or joined with commas into one."""
    where = command.name
    cut = args.index("--") if "--" in args else len(args)
    if cut < len(args) and not command.tail and tails:
        raise UsageError(f"'--' only separates the command of {', '.join(tails)}, not of "
                         f"{where}")
    words, rest = args[:cut], args[cut:]
    tail = rest[1:] if command.tail else []
    if command.tail:
        rest = []
    _refuse_repeats(command.options, words, where)
    by_spelling = {s: o for o in command.options for s in (*o.flags, *o.aliases)}
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        name, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        opt = by_spelling.get(name)
        if opt is None or opt.flag:
            out.append(word)
            continue
        if not eq:
            if i == len(words) and word in opt.flags:
                out.append(word)  # click says it lacks a value
                continue
            if i == len(words):  # an old spelling, which click does not know
                raise UsageError(f"Option '{word}' requires an argument.", where)
            value, i = words[i], i + 1  # the option's own value, whatever it looks like
        values = [value]
        while opt.gather and i < len(words) and not words[i].startswith("-"):
            values.append(words[i])
            i += 1
        if opt.gather == "grouped":
            values = [",".join(values)]
        for v in values:
            out += [f"{opt.name}={v}"] if opt.name.startswith("--") else [opt.name, v]
    return out + rest, tail
