"""Launcher errors: each carries the exit code the CLI returns (the biotool convention)."""

from commandline.errors import EXIT_FAILED, InputError


class LauncherError(InputError):
    """Bad input or usage (exit 2); the message names the argument or run at fault."""


class EngineError(LauncherError):
    """Docker or compose failed (exit 4)."""

    exit_code = EXIT_FAILED
