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


def parse_args(text: str | None) -> dict:
    """The JSON text of a call's arguments as a dict; empty or missing means {}."""
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"args: invalid JSON at line {exc.lineno} column {exc.colno}: "
                         f"{exc.msg}", culprit="args") from None
    if not isinstance(value, dict):
        raise InputError(f"args: expected a JSON object, got {_kind(value)}", culprit="args")
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
