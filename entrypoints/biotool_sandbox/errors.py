"""Launcher errors: each carries the exit code the CLI returns (the biotool convention)."""

from commandline.errors import EXIT_FAILED, EXIT_INPUT, ProgramError


class LauncherError(ProgramError):
    """Bad input or usage (exit 2); the message names the argument or run at fault."""

    exit_code = EXIT_INPUT


class EngineError(LauncherError):
    """Docker or compose failed (exit 4)."""

    exit_code = EXIT_FAILED
