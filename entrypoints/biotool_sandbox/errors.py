"""Launcher errors: each carries the exit code the CLI returns (the biotool convention)."""

from commandline.errors import InputError, ToolFailure


class LauncherError(InputError):
    """Bad input or usage (exit 2); the message names the argument or run at fault."""


class EngineError(ToolFailure):
    """Docker, compose or Apptainer failed (exit 4): never the caller's input, so no
    `except LauncherError` (nor InputError) catches it."""
