"""Launcher errors: each carries the exit code the CLI returns (the biotool convention)."""


class LauncherError(Exception):
    """Bad input or usage (exit 2); the message names the argument or run at fault."""

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class EngineError(LauncherError):
    """Docker or compose failed (exit 4)."""

    exit_code = 4
