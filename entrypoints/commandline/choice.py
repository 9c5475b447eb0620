"""Options of which a command takes exactly one (`--fasta` or `--fastq`): the one rule and its
one wording, callable from any command-line layer (this one or a framework's)."""

from __future__ import annotations

from typing import Mapping

from commandline.errors import UsageError


def _given(value: object) -> bool:
    # A repeatable option left out arrives as an empty list, a single one as None.
    return bool(value) if isinstance(value, (list, tuple)) else value is not None


def exactly_one(options: Mapping[str, object]) -> str:
    """The spelling of the one option of `options` (spelling -> value as parsed) that was
    given; UsageError (exit 2) naming every one of them when none or several were."""
    given = [name for name, value in options.items() if _given(value)]
    if len(given) != 1:
        names = list(options)
        listed = ", ".join(names[:-1]) + " or " + names[-1]
        raise UsageError(f"give exactly one of {listed}")
    return given[0]
