"""The agent-facing output contract: one JSON object on stdout, one-line errors, exit codes.

Exit codes (docs/contract.md, with the code for each condition): 0 success; 2 bad input or usage; 3 refused by the rules;
4 a tool, model or remote service failed or timed out.
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any

# The exit codes and the error every program raises are the command-line layer's (one
# ladder for biotool, molperceive and biotool-sandbox); biotool's errors are its kinds.
from commandline.errors import EXIT_FAILED, EXIT_INPUT, EXIT_OK, EXIT_REFUSED, ProgramError

__all__ = ["EXIT_OK", "EXIT_INPUT", "EXIT_REFUSED", "EXIT_FAILED", "BiotoolError",
           "InputError", "RefusedError", "ToolFailure", "confident_mode", "render", "emit"]


class BiotoolError(ProgramError):
    """An error the agent can act on; its message is one line naming the culprit."""

    exit_code = EXIT_FAILED


class InputError(BiotoolError):
    """Bad input or usage: missing file, malformed data, bad JSON (exit 2)."""

    exit_code = EXIT_INPUT


class RefusedError(BiotoolError):
    """Refused by the rules: forbidden tool, host not on the allowlist (exit 3)."""

    exit_code = EXIT_REFUSED


class ToolFailure(BiotoolError):
    """A tool, model or remote service failed or timed out (exit 4)."""

    exit_code = EXIT_FAILED


def confident_mode() -> bool:
    """`BIOTOOL_CONFIDENT=1` is the experimental control: answers without competence or any
    other hedge (biotool.competence.HEDGES)."""
    return os.environ.get("BIOTOOL_CONFIDENT", "").strip().lower() in {"1", "true", "yes"}


def _jsonable(obj: Any) -> Any:
    """Plain JSON types only: numpy scalars, sets, paths and NaN become portable values."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    if hasattr(obj, "explain"):
        return _jsonable(obj.explain())
    if hasattr(obj, "item"):  # numpy scalar
        return _jsonable(obj.item())
    if hasattr(obj, "tolist"):
        return _jsonable(obj.tolist())
    return str(obj)


def render(result: dict) -> str:
    """The exact text written to stdout for a result."""
    from biotool.competence import strip_hedges
    from biotool.provenance import provenance

    result = dict(result)
    result.setdefault("provenance", provenance())
    # Hedges are stripped after _jsonable so that objects rendered through .explain() lose
    # theirs too.
    result = _jsonable(result)
    if confident_mode():
        result = strip_hedges(result)
    return json.dumps(result, sort_keys=False, ensure_ascii=False)


def emit(result: dict) -> None:
    sys.stdout.write(render(result) + "\n")
    sys.stdout.flush()
