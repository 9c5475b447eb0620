"""Validating a tool's JSON arguments against its JSON Schema (the subset tools use).

Errors are InputError (exit 2) naming the field by its path, e.g. `args.frame`.
Standard library only: jsonschema is not in the default image, and the messages must name
the field in one line.
"""

from __future__ import annotations

import json
import re

from biotool.output import InputError

_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _kind(value) -> str:
    for name in ("boolean", "integer", "number", "string", "array", "object", "null"):
        if _TYPES[name](value):
            return name
    return type(value).__name__


MAX_DEPTH = 32  # nesting of a call's arguments; no tool takes more than a list of strings
MAX_DIGITS = 30  # digits of a JSON integer; every count and coordinate fits in far fewer


class _BadNumber(str):
    """A JSON number refused at parse time, kept so the tree walk can name its field."""


def _int(text: str):
    return _BadNumber(f"an integer of {len(text.lstrip('-')):,} digits (at most {MAX_DIGITS})") \
        if len(text.lstrip("-")) > MAX_DIGITS else int(text)


def _float(text: str):
    value = float(text)
    return _BadNumber(f"the number {text[:40]} is out of range") \
        if value in (float("inf"), float("-inf")) else value


def _constant(name: str):
    return _BadNumber(f"{name} is not a JSON number (give a finite number)")


def _check_tree(value, path: str = "args") -> None:
    """Refuse nesting deeper than MAX_DEPTH and strings that are not valid Unicode (lone
    surrogates from \\ud800-style escapes) and the numbers the parser set aside, naming the
    field; iterative, so no recursion."""
    stack = [(value, path, 0)]
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InputError(f"{where}: nested more than {MAX_DEPTH} levels deep", culprit=where)
        if isinstance(node, _BadNumber):
            raise InputError(f"{where}: {node}", culprit=where)
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                raise InputError(f"{where}: not valid Unicode (a lone surrogate escape)",
                                 culprit=where) from None
        elif isinstance(node, dict):
            for k, v in node.items():
                stack.append((k, f"{where} key", depth + 1))
                stack.append((v, f"{where}.{k}", depth + 1))
        elif isinstance(node, list):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(node))


def parse_args(text: str | None) -> dict:
    """The JSON text of a call's arguments as a dict; empty or missing means {}.

    Bad JSON of every kind is exit 2 naming the field: nesting beyond MAX_DEPTH (the C parser
    would otherwise hit the interpreter's recursion limit), integers beyond MAX_DIGITS digits,
    NaN/Infinity and overflowing floats, lone surrogates.
    """
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"args: invalid JSON at line {exc.lineno} column {exc.colno}: "
                         f"{exc.msg}", culprit="args") from None
    except RecursionError:
        raise InputError(f"args: JSON nested too deeply (at most {MAX_DEPTH} levels)",
                         culprit="args") from None
    if not isinstance(value, dict):
        raise InputError(f"args: expected a JSON object, got {_kind(value)}", culprit="args")
    _check_tree(value)
    return value


def validate(value, schema: dict, path: str = "args"):
    """Check `value` against `schema`; return it with defaults filled in for missing properties."""
    if not schema:
        return value
    for combo in ("anyOf", "oneOf"):
        if combo in schema:
            errors = []
            for option in schema[combo]:
                try:
                    return validate(value, option, path)
                except InputError as exc:
                    errors.append(str(exc))
            raise InputError(errors[0] if len(errors) == 1 else
                             f"{path}: matches none of the allowed forms ({errors[0]})",
                             culprit=path)
    types = schema.get("type")
    if types:
        types = [types] if isinstance(types, str) else list(types)
        if not any(_TYPES.get(t, lambda v: True)(value) for t in types):
            raise InputError(f"{path}: expected {' or '.join(types)}, got {_kind(value)}",
                             culprit=path)
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(json.dumps(c) for c in schema["enum"])
        raise InputError(f"{path}: {json.dumps(value)} is not one of {choices}", culprit=path)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise InputError(f"{path}: {value} is below the minimum {schema['minimum']}",
                             culprit=path)
        if "maximum" in schema and value > schema["maximum"]:
            raise InputError(f"{path}: {value} is above the maximum {schema['maximum']}",
                             culprit=path)
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            raise InputError(f"{path}: shorter than {schema['minLength']} characters",
                             culprit=path)
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise InputError(f"{path}: longer than {schema['maxLength']} characters",
                             culprit=path)
        if "pattern" in schema and not re.search(schema["pattern"], value):
            raise InputError(f"{path}: does not match the pattern {schema['pattern']}",
                             culprit=path)
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            raise InputError(f"{path}: needs at least {schema['minItems']} items", culprit=path)
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise InputError(f"{path}: at most {schema['maxItems']} items", culprit=path)
        if isinstance(schema.get("items"), dict):
            value = [validate(v, schema["items"], f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        props = schema.get("properties", {}) or {}
        for name in schema.get("required", []) or []:
            if name not in value:
                raise InputError(f"{path}.{name}: required field is missing", culprit=name)
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(props))
            if extra:
                raise InputError(f"{path}.{extra[0]}: unknown field (allowed: "
                                 f"{', '.join(sorted(props))})", culprit=extra[0])
        out = dict(value)
        for name, sub in props.items():
            if not isinstance(sub, dict):
                continue
            if name in out:
                out[name] = validate(out[name], sub, f"{path}.{name}")
            elif "default" in sub:
                out[name] = sub["default"]
        value = out
    return value
