"""The exit codes of every program of this project (docs/contract.md) and the errors they raise,
one class per exit code."""

from __future__ import annotations

import unicodedata
from typing import Any

EXIT_OK = 0
EXIT_INPUT = 2
EXIT_REFUSED = 3
EXIT_FAILED = 4
# Ctrl-C (SIGINT): the shell's 128 + signal number, so a caller can tell it from a failure.
EXIT_INTERRUPTED = 130


class ProgramError(Exception):
    """An error the user can act on: one line naming the culprit, and its exit code.

    `result`, when given, is printed on stdout before the error line (a report that failed,
    such as doctor's or the gate's, is still worth reading whole)."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, result: Any = None):
        # Errors are printed on one line, so embedded newlines are flattened here once.
        self.message = " ".join(str(message).split())
        super().__init__(self.message)
        self.result = result


class InputError(ProgramError):
    """Bad input or usage: missing file, malformed data, bad JSON (exit 2)."""

    exit_code = EXIT_INPUT


class RefusedError(ProgramError):
    """Refused by the rules: forbidden tool, host not on the allowlist (exit 3)."""

    exit_code = EXIT_REFUSED


class ToolFailure(ProgramError):
    """A tool, model, engine or remote service failed or timed out (exit 4)."""

    exit_code = EXIT_FAILED


class UsageError(InputError):
    """The command line itself is wrong (exit 2); `command` names the subcommand, if any."""

    def __init__(self, message: str, command: str = ""):
        super().__init__(message)
        self.command = command


MAX_LINE_CHARS = 2_000  # an error or progress line an agent reads into its context
_HEAD, _TAIL = 1_500, 300


def one_line(message: object) -> str:
    """message as one line an agent and a terminal can take: whitespace runs flattened,
    control characters (ESC, DEL, C1) and lone surrogates escaped rather than sent to the
    terminal, and input it echoes cut to MAX_LINE_CHARS (its start, which names the culprit,
    and its end kept)."""
    text = " ".join(str(message).split())
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in text):
        text = "".join(ascii(ch)[1:-1] if unicodedata.category(ch) in ("Cc", "Cs") else ch
                       for ch in text)
    if len(text) > MAX_LINE_CHARS:
        cut = len(text) - _HEAD - _TAIL
        text = f"{text[:_HEAD]} ... [{cut:,} characters cut] ... {text[-_TAIL:]}"
    return text
