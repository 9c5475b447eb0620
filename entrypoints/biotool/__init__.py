"""biotool: structured biology tools for shell-only agents (see docs/contract.md)."""

__version__ = "0.1.0"
