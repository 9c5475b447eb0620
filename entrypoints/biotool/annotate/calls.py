"""`biotool call`: resolve a tool name, apply the policy, validate arguments, run, bound output.

Order matters: the requested name is checked against the policy before it is looked up, so a
forbidden name is refused (exit 3) whether or not such a tool is installed here.
"""

from __future__ import annotations

import difflib
import importlib
import json
import re

from biotool.annotate import policy, tooluniverse_bridge
from biotool.annotate.registry import BUILTIN, Tool
from biotool.annotate.schema import parse_args, validate
from biotool.arms import Hedges, declared
from biotool.output import InputError, RefusedError


MAX_NAME = 200  # characters of a requested tool name
# Every tool's answer, built-in or ToolUniverse's, and the listing: the competence beside it.
HEDGES = Hedges.of("competence")


def rules():
    from biotool import rules as rules_mod
    from biotool.output import ToolFailure

    try:
        return rules_mod.load()
    except rules_mod.RulesError as exc:
        # Without a readable policy nothing may be offered.
        raise ToolFailure(f"tool policy unavailable: {exc}") from None


def all_tools() -> list[Tool]:
    """Built-ins, then ToolUniverse's tools when the optional extra is installed."""
    return [*BUILTIN, *tooluniverse_bridge.tools()]


def _strip_prefix(name: str) -> tuple[str, str | None]:
    low = policy.fold(name).casefold().strip()
    for prefix in tooluniverse_bridge.PREFIXES:
        if low.startswith(prefix):
            return name.strip()[len(prefix):], "tooluniverse"
    for prefix in ("biotool:", "biotool."):
        if low.startswith(prefix):
            return name.strip()[len(prefix):], "builtin"
    return name.strip(), None


def decision_for(tool: Tool, rules_=None, requested: str | None = None) -> policy.Decision:
    rules_ = rules_ or rules()
    names = tool.names() + ([requested] if requested else [])
    return policy.decide(names, tool.category, tool.hosts, rules_, tool.labels, tool.endpoints)


_DISPATCH_SEP = re.compile(r"[-_.\s]+")


def dispatch_key(name: str) -> str:
    """What must equal a tool's name for a call to run it: case and the separators - _ . and
    spaces aside, the same characters. The policy's fold (look-alikes, fullwidth, invisibles)
    decides refusals only: a name that only looks like a tool's is answered with "did you
    mean", never run as that tool."""
    return _DISPATCH_SEP.sub("", name.casefold())


def resolve(requested: str) -> Tool:
    """The tool a requested name means; RefusedError if the name itself is forbidden,
    InputError with close names if there is no such tool."""
    r = rules()
    if not requested or not requested.strip():
        raise InputError("name: empty tool name (see `biotool call --list`)")
    if len(requested) > MAX_NAME:
        # No tool has such a name, and matching every span of it would take minutes.
        raise InputError(f"name: {len(requested)} characters; tool names are at most "
                         f"{MAX_NAME} (see `biotool call --list`)")
    verdict = policy.check([requested], "", r)
    if not verdict.permitted:
        raise RefusedError(f"tool {requested!r} refused: {verdict.reason} "
                           f"(rule: {verdict.rule})")
    bare, source = _strip_prefix(requested)
    want = dispatch_key(bare)
    # Built-ins first, and ToolUniverse's ~3000 configs read only when the name is not one.
    loaders = []
    if source != "tooluniverse":
        loaders.append(lambda: BUILTIN)
    if source != "builtin":
        loaders.append(tooluniverse_bridge.tools)
    pools = []
    for load in loaders:
        pools.append(load())
        for tool in pools[-1]:
            if any(dispatch_key(n) == want for n in tool.names()):
                return tool
    candidates = [t.name for pool in pools for t in pool]
    close = difflib.get_close_matches(bare, candidates, n=3, cutoff=0.6)
    if not close:  # a look-alike or fullwidth spelling: the name it folds to is the hint
        by_key = {policy.key(c): c for c in candidates}
        close = [by_key[k] for k in difflib.get_close_matches(policy.key(bare), list(by_key),
                                                               n=3, cutoff=0.6)]
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    extra = "" if tooluniverse_bridge.installed() else \
        " (ToolUniverse tools need the optional extra biotool[tooluniverse])"
    raise InputError(f"name: unknown tool {requested!r}{hint} (see `biotool call --list`)"
                     f"{extra}")


def permitted(tool: Tool, requested: str) -> policy.Decision:
    verdict = decision_for(tool, requested=requested)
    if not verdict.offered:
        what = "refused" if not verdict.permitted else "not offered here"
        raise RefusedError(f"tool {tool.name!r} {what}: {verdict.reason} "
                           f"(rule: {verdict.rule})")
    return verdict


def schema(requested: str) -> dict:
    tool = resolve(requested)
    verdict = decision_for(tool, requested=requested)
    if not verdict.permitted:
        raise RefusedError(f"tool {tool.name!r} refused: {verdict.reason} "
                           f"(rule: {verdict.rule})")
    # The result schema's competence property describes a field the control arm leaves out.
    return declared({**tool.schema(), **verdict.explain()},
                    Hedges.of("result.properties.competence"))


def shrink(result: dict, max_chars: int) -> dict:
    """Cut the longest strings and lists until the JSON fits in max_chars; competence and
    provenance are never cut, and `truncated` says what was. Measured as the tool arm prints
    it, so both arms cut the same (biotool.arms); the answer keeps its declared hedges."""
    from biotool.arms import cut as cut_text
    from biotool.output import plain, render

    result = declared(result, HEDGES)
    if max_chars <= 0 or len(render(result, as_tool=True)) <= max_chars:
        return result
    hedges = result.hedges
    result = dict(plain(result))
    cut = []
    protected = ("competence", "provenance", "truncated_fields")
    for _ in range(200):
        best, best_size, where = None, 0, None
        stack = [(result, "")]
        while stack:
            node, path = stack.pop()
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for k, v in items:
                if isinstance(node, dict) and path == "" and k in protected:
                    continue
                sub = f"{path}.{k}" if isinstance(node, dict) else f"{path}[{k}]"
                if isinstance(v, (dict, list)):
                    stack.append((v, sub))
                size = len(json.dumps(v, ensure_ascii=False))
                if isinstance(v, (str, list)) and size > best_size and size > 16:
                    best, best_size, where = (node, k), size, sub
        if best is None:
            break
        node, k = best
        v = node[k]
        if isinstance(v, str):
            keep = max(0, len(v) // 2 - 20)
            node[k] = cut_text(v, keep) + f"...[{len(v) - keep} chars cut]"
        else:
            node[k] = v[: len(v) // 2]
        if where.lstrip(".") not in cut:
            cut.append(where.lstrip("."))
        result["truncated"] = True
        result["truncated_fields"] = cut
        if len(render(declared(result, hedges), as_tool=True)) <= max_chars:
            break
    return declared(result, hedges)


def call(requested: str, args_text: str | None, max_chars: int = 0) -> dict:
    tool = resolve(requested)
    permitted(tool, requested)
    args = parse_args(args_text)
    if tool.model is not None:
        from biotool.annotate import arguments

        module, _, func = tool.target.partition(":")
        out = getattr(importlib.import_module(module), func)(arguments.parse(tool.model, args))
    else:
        out = tooluniverse_bridge.call(tool, validate(args, tool.args_schema or {}, "args"))
    result = {"tool": tool.name, "source": tool.source, **out}
    return shrink(result, max_chars)


def list_tools(name_filter: str = "", offered_only: bool = False) -> dict:
    from biotool.competence import bounded
    from biotool.provenance import provenance

    r = rules()
    rows = []
    counts = {"offered": 0, "refused_by_policy": 0, "unreachable": 0}
    want = policy.key(name_filter) if name_filter else ""
    for tool in all_tools():
        verdict = decision_for(tool, r)
        state = ("offered" if verdict.offered else
                 "refused_by_policy" if not verdict.permitted else "unreachable")
        counts[state] += 1
        if offered_only and not verdict.offered:
            continue
        if want and want not in policy.key(tool.name) and want not in policy.key(tool.category):
            continue
        row = {"name": tool.name, "source": tool.source, "category": tool.category,
               **verdict.explain()}
        if verdict.offered:
            row["description"] = tool.description[:300]
        rows.append(row)
    extra = {"installed": tooluniverse_bridge.installed()}
    if extra["installed"]:
        extra["version"] = tooluniverse_bridge.version()
    return {"rules": r.path, "counts": counts, "tooluniverse": extra, "tools": rows,
            "competence": bounded(1.0, 1.0, blind_spots=[] if extra["installed"] else [
                "ToolUniverse is not installed here (optional extra biotool[tooluniverse])"]),
            "provenance": provenance()}


def summary() -> list[dict]:
    """Built-in tools with whether each is offered here and why not (for `biotool list`)."""
    try:
        r = rules()
    except Exception as exc:  # noqa: BLE001 - `biotool list` must still answer
        return [{"name": t.name, "offered": False, "reason": str(exc)} for t in BUILTIN]
    return [{"name": t.name, "category": t.category, **decision_for(t, r).explain()}
            for t in BUILTIN]
