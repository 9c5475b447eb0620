"""biotool: structured biology tools for shell-only agents (see DESIGN.md section 2)."""

__version__ = "0.1.0"
