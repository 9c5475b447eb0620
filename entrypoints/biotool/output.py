"""The agent-facing output contract: one JSON object on stdout, one-line errors, exit codes.

Exit codes (docs/contract.md, with the code for each condition): 0 success; 2 bad input or usage; 3 refused by the rules;
4 a tool, model or remote service failed or timed out.
"""

from __future__ import annotations

import json
import math
from typing import Any

# The exit codes and the errors are the command-line layer's (one ladder for biotool,
# molperceive and biotool-sandbox), named here too for biotool's modules.
from commandline.errors import (EXIT_FAILED, EXIT_INPUT, EXIT_OK, EXIT_REFUSED, InputError,
                                ProgramError, RefusedError, ToolFailure)

__all__ = ["EXIT_OK", "EXIT_INPUT", "EXIT_REFUSED", "EXIT_FAILED", "ProgramError",
           "InputError", "RefusedError", "ToolFailure", "plain", "render", "emit"]


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


def plain(result: dict) -> dict:
    """A result as plain JSON with its provenance, still declared: hedge marks in its text and
    its declaration of hedge fields kept (biotool.arms), for either arm to be rendered from."""
    from biotool import arms
    from biotool.provenance import provenance

    hedges = getattr(result, "hedges", arms.NONE)  # the answer's declaration (arms.declared)
    result = dict(result)
    result.setdefault("provenance", provenance())
    # Objects rendered through .explain() become plain JSON whose declared fields can be dropped.
    return arms.declared(_jsonable(result), hedges)


def render(result: dict, as_tool: bool = False) -> str:
    """The exact text written to stdout for a result, in this process's arm (as_tool: as the
    tool arm prints it, whatever this process's arm)."""
    from biotool import arms

    result = plain(result)
    shown = (arms.for_arm(result, result.hedges, False) if as_tool
             else arms.render(result, result.hedges))
    return json.dumps(shown, sort_keys=False, ensure_ascii=False)


def emit(result: dict) -> None:
    """A result on stdout through the one emitter, rendered in this process's arm."""
    from commandline.ladder import emit as emit_json

    emit_json(render(result))
