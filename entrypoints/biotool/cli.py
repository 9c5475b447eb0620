"""`biotool`: the agent's command line. A thin layer: parse, call one domain function, emit.

Each tool family declares its commands in `biotool/<family>/cli.py` so that families stay
apart; heavy libraries are imported inside the domain functions, never here.
"""

from __future__ import annotations

import importlib
import sys

from biotool import __version__, options
from biotool.family import FAMILIES
from commandline import program
from commandline.ladder import run_process
from commandline.spec import Command

HELP = f"""biotool {__version__}: structured biology tools for agents with a shell.

Every command prints exactly one JSON object on stdout; progress and errors go to stderr.
Exit codes: 0 success; 2 bad input or usage; 3 refused by the rules (forbidden tool, host
not on the egress allowlist); 4 a tool, model or remote service failed or timed out; 130
interrupted (Ctrl-C).
⟦Every finding carries `competence` (applicable, confidence, margin, alternatives, ties,
blind_spots, remedy): read blind_spots before trusting an answer.⟧ Every result carries
`provenance` (the references, indexes and models used, with sha256).
Environment: BIOTOOL_CACHE sets the cache directory. BIOTOOL_REQUIRE_ENFORCED=1 refuses
every command (exit 3) when the network is not enforced; BIOTOOL_REQUIRE_RUNTIME=gvisor when
the container shares the host's kernel (not under gVisor).⟦ BIOTOOL_CONFIDENT=1 is the
experiment's control arm: the same tool without its hedges (competence, caveats, detection
floors, ...: docs/contract.md), in its answers and in these help texts.⟧
Start with `biotool list` to see what is staged and usable here."""

# Agents write `biotool CMD ... --quiet` as often as `biotool --quiet CMD`: the layer takes both.
QUIET = options.QUIET


def commands() -> list[Command]:
    return [c for family in FAMILIES
            for c in importlib.import_module(f"biotool.{family}.cli").commands()]


def _refuse(why: str, code: int = 3) -> None:
    sys.stderr.write(f"biotool: error: {why}\n")
    raise SystemExit(code)


def _refuse_where_required(args: list[str]) -> None:
    """A grader's settings: BIOTOOL_REQUIRE_ENFORCED=1, no command runs on an open network;
    BIOTOOL_REQUIRE_RUNTIME=gvisor, none runs on the host's kernel."""
    if args in ([], ["--help"], ["-h"]):
        return
    # Neither set, nothing to check: the checks' modules cost every call ~10 ms to import.
    from biotool import settings

    if not any(s.raw() for s in (settings.REQUIRE_RUNTIME, settings.REQUIRE_ENFORCED)):
        return
    from biotool.system import enforcement, runtime

    try:
        want = runtime.required()
    except ValueError as exc:
        _refuse(str(exc), 2)
    if want:
        st = runtime.status()
        if st["runtime"] != want:
            _refuse(f"refused: BIOTOOL_REQUIRE_RUNTIME={want} and {st['reason']}; {runtime.HOW}")
    if enforcement.required():
        st = enforcement.status()
        if not st["enforced"]:
            _refuse(f"refused: BIOTOOL_REQUIRE_ENFORCED is set and the network is not "
                    f"enforced: {st['reason']}; {enforcement.HOW}")


def _setup(flags: set[str]) -> None:
    options.apply_program_flags(flags)


def main(argv: list[str] | None = None) -> None:
    from biotool.arms import help_for_arm
    from biotool.output import emit

    args = list(sys.argv[1:] if argv is None else argv)
    _refuse_where_required(args)
    # Every help text is shown in this process's arm: the control (BIOTOOL_CONFIDENT=1)
    # without the sentences declared hedges, so its manual differs by them and nothing else.
    program.main("biotool", commands(), help=HELP, emit=emit, argv=args, options=(QUIET,),
                 setup=_setup, text=help_for_arm)


def run() -> None:
    """The `biotool` process: main, then out without the interpreter's teardown."""
    run_process(main)


__all__ = ["FAMILIES", "commands", "main", "run"]

if __name__ == "__main__":
    run()
