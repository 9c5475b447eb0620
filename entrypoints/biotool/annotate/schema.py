"""Validating a tool's JSON arguments against its JSON Schema.

Errors are InputError (exit 2) naming the field by its path, e.g. `args.frame`.
Validation is jsonschema's (every keyword ToolUniverse schemas use); this module only puts
its errors into one line that names the field, and fills in defaults.
"""

from __future__ import annotations

import json

from biotool.output import InputError, ToolFailure

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


def _where(path: str, parts) -> str:
    """`args.a[0].b` from jsonschema's absolute path."""
    out = path
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _message(error, path: str) -> str:
    """One line in this project's words for a jsonschema error, naming the field."""
    where = _where(path, error.absolute_path)
    kind, want, value = error.validator, error.validator_value, error.instance
    if kind == "type":
        wanted = [want] if isinstance(want, str) else list(want)
        return f"{where}: expected {' or '.join(wanted)}, got {_kind(value)}"
    if kind == "enum":
        return f"{where}: {json.dumps(value)} is not one of {', '.join(json.dumps(c) for c in want)}"
    if kind == "const":
        return f"{where}: must be {json.dumps(want)}, got {json.dumps(value)}"
    if kind in ("minimum", "exclusiveMinimum"):
        return f"{where}: {value} is below the minimum {want}"
    if kind in ("maximum", "exclusiveMaximum"):
        return f"{where}: {value} is above the maximum {want}"
    if kind == "minLength":
        return f"{where}: shorter than {want} characters"
    if kind == "maxLength":
        return f"{where}: longer than {want} characters"
    if kind == "pattern":
        return f"{where}: does not match the pattern {want}"
    if kind == "minItems":
        return f"{where}: needs at least {want} items"
    if kind == "maxItems":
        return f"{where}: at most {want} items"
    if kind == "required":
        missing = next((n for n in want if isinstance(value, dict) and n not in value), want[0])
        return f"{where}.{missing}: required field is missing"
    if kind == "additionalProperties":
        allowed = sorted((error.schema.get("properties") or {}))
        extra = sorted(set(value) - set(allowed)) if isinstance(value, dict) else []
        name = extra[0] if extra else "?"
        return f"{where}.{name}: unknown field (allowed: {', '.join(allowed)})"
    if kind in ("oneOf", "anyOf"):
        inner = min(error.context, key=lambda e: len(list(e.absolute_path)), default=None)
        detail = f" ({_message(inner, path)})" if inner is not None else ""
        if kind == "oneOf" and not error.context:
            return f"{where}: matches more than one of the allowed forms"
        return f"{where}: matches none of the allowed forms{detail}"
    if kind == "not":
        return f"{where}: is a form that is not allowed here"
    return f"{where}: {error.message}"


def _fill_defaults(value, schema: dict):
    """Defaults of missing properties, at every depth of objects (jsonschema only checks)."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        out = dict(value)
        for name, sub in (schema.get("properties") or {}).items():
            if not isinstance(sub, dict):
                continue
            if name in out:
                out[name] = _fill_defaults(out[name], sub)
            elif "default" in sub:
                out[name] = sub["default"]
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_fill_defaults(v, schema["items"]) for v in value]
    return value


def validate(value, schema: dict, path: str = "args"):
    """Check `value` against `schema` (full JSON Schema: $ref, const, not, oneOf, ...);
    return it with defaults filled in for missing properties. InputError names the field."""
    if not schema:
        return value
    from jsonschema import exceptions, validators

    try:
        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        cls.check_schema(schema)
    except exceptions.SchemaError as exc:
        # The tool's own schema is broken: not the caller's fault, so exit 4.
        raise ToolFailure(f"{path}: the tool's argument schema is invalid: "
                          f"{exc.message}") from None
    error = exceptions.best_match(cls(schema).iter_errors(value))
    if error is not None:
        raise InputError(_message(error, path))
    return _fill_defaults(value, schema)
