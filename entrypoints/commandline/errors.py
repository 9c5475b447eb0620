"""The exit codes of every program of this project (docs/contract.md) and the error they raise."""

from __future__ import annotations

from typing import Any

EXIT_OK = 0
EXIT_INPUT = 2
EXIT_REFUSED = 3
EXIT_FAILED = 4


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


class UsageError(ProgramError):
    """The command line itself is wrong (exit 2); `command` names the subcommand, if any."""

    exit_code = EXIT_INPUT

    def __init__(self, message: str, command: str = ""):
        super().__init__(message)
        self.command = command
