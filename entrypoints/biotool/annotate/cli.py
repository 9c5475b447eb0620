"""`biotool call`: annotation tools (built-in and ToolUniverse) under the tool policy."""

from __future__ import annotations

import sys

from biotool.arms import hedge
from biotool.family import Family
from biotool.files import read_bounded
from biotool.output import InputError
from commandline.kinds import count
from commandline.spec import Argument, Command, Option

MAX_ARGS_BYTES = 8 * 2 ** 20  # a tool's JSON arguments; a sequence of a few megabases fits


def args_text(data: bytes, source: str) -> str:
    """The JSON text of arguments read from a file or stdin, refused (exit 2) when it is
    over the bound, empty, or not UTF-8, naming `source` and what is accepted."""
    if len(data) > MAX_ARGS_BYTES:
        raise InputError(f"args: {source} is over the limit of {MAX_ARGS_BYTES:,} bytes")
    if not data.strip():
        raise InputError(f"args: {source} is empty (give a JSON object, e.g. {{}})")
    if data.startswith(b"\xef\xbb\xbf"):
        raise InputError(f"args: {source} starts with a UTF-8 byte-order mark; save it as "
                         "plain UTF-8 JSON")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(f"args: {source} is not UTF-8 JSON (it starts with a UTF-16 "
                         "byte-order mark)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"args: {source} is not UTF-8 JSON ({exc.reason} at byte "
                         f"{exc.start})") from None


CALL_HELP = """Call one annotation tool by name with JSON arguments.

\b
  biotool call --list                  every tool, offered here or not, and why not
  biotool call NAME --schema           the tool's argument and result JSON schemas
  biotool call NAME '{"sequence": "ATG..."}'
  biotool call NAME @args.json         arguments from a file ('-' reads stdin)

Built-in tools (local, no network): seq_stats, reverse_complement, translate, find_orfs,
align_pairwise, primer_tm, restriction_sites, gene_lookup, variant_annotate. Sequence tools
take `sequence` or a staged `reference` (+ seqid, start, end, strand; 1-based inclusive).

\b
Examples:
  biotool call translate '{"sequence": "ATGGCC", "frame": "all", "table": 11}'
  biotool call gene_lookup '{"query": "S"}'
  biotool call variant_annotate '{"gene": "S", "hgvs": "c.1841A>G"}'
  biotool call variant_annotate '{"reference": "MN908947.3", "position": 23403,
                                  "ref": "A", "alt": "G"}'

With the optional extra biotool[tooluniverse], ToolUniverse tools are listed and called the
same way (prefix tu: to prefer one over a built-in of the same name); only its offline compute
tools are offered here.

The tool policy (rules file [tools]) refuses dataset, accession and literature look-ups by
category, by name whatever the spelling (case, look-alike letters, separators), and by the
URLs a ToolUniverse tool calls; a tool that needs a host not on the egress allowlist is not
offered. variant_annotate's genomic `position` takes ref/alt on the reference's plus strand
(as in a VCF), also for minus-strand genes. Exit codes: 2 bad JSON, a field
that does not fit the schema (named), or an unknown tool (with close names); 3 refused by the
policy or the allowlist (the rule is named); 4 the tool failed."""


# An agent reads the output into its context: bounded by default (0 lifts the bound).
DEFAULT_MAX_CHARS = 8000


def describe() -> Family:
    return Family(
        commands=("call",),
        summary="annotation tools via `biotool call NAME JSON`: sequence statistics, "
                "translation, ORFs, alignment, primer Tm, restriction sites, gene "
                "look-up, variant annotation (HGVS); ToolUniverse when installed",
        # Built-in tools' arguments are pydantic models; ToolUniverse's are JSON Schemas.
        python=("Bio", "pydantic", "jsonschema"), listing=_tools)


def _tools() -> dict:
    from biotool.annotate import tooluniverse_bridge
    from biotool.annotate.calls import summary

    tools = summary()
    # Names only (categories and policy: `biotool call --list`): the listing stays small.
    return {"tools": [t["name"] for t in tools if t.get("offered")],
            "not_offered": [t["name"] for t in tools if not t.get("offered")],
            # Counting ToolUniverse's offered tools reads ~700 configs; --list does that.
            "tooluniverse": {"installed": tooluniverse_bridge.installed(),
                             "listed_by": "biotool call --list"}}


def call_cmd(name, args, schema, list_, filter_, offered, max_chars) -> dict:
    from biotool.annotate import calls

    if list_:
        return calls.shrink(calls.list_tools(filter_, offered), max_chars)
    if not name:
        raise InputError("name: give a tool name, or --list to see them")
    if schema:
        return calls.shrink(calls.schema(name), max_chars)
    text, source = args, None
    if text == "-":
        source = "stdin"
        text = args_text(sys.stdin.buffer.read(MAX_ARGS_BYTES + 1), source)
    elif text and text.startswith("@"):
        source = text[1:]
        text = args_text(read_bounded(source, "args @FILE", MAX_ARGS_BYTES), source)
    try:
        return calls.call(name, text, max_chars)
    except InputError as exc:
        if source is None or not str(exc).startswith("args"):
            raise
        # The agent must know which file held the bad arguments.
        raise InputError(f"{exc} (arguments from {source})") from None


def commands() -> list[Command]:
    return [Command("call", call_cmd, help=CALL_HELP, arguments=(
        Argument("name", "Tool name (see --list)."),
        Argument("args", "Arguments as a JSON object, @FILE, or - for stdin (default {})."),
    ), options=(
        Option(("--schema",), "Print the tool's JSON schemas.", flag=True),
        Option(("--list",), "List every tool and whether it is offered here (with the reason "
               "when not).", flag=True, dest="list_"),
        Option(("--filter",), "With --list: only names or categories containing this text.",
               default="", dest="filter_"),
        Option(("--offered",), "With --list: offered tools only.", flag=True),
        Option(("--max-chars",), "Bound the JSON output to about this many characters by "
               "cutting the longest strings and lists (marked truncated, truncated_fields); 0 = "
               "no bound (narrow --list with --filter instead). Provenance is never cut"
               + hedge(", nor competence") + ", so a tiny bound is exceeded, but the output is "
               "always one JSON object.", kind=count(0), default=DEFAULT_MAX_CHARS),
    ))]
