"""Parsing a call's JSON arguments, and validating them against a tool's JSON Schema.

Errors are InputError (exit 2) naming the field by its path, e.g. `args.frame`.
Validation is jsonschema's (every keyword ToolUniverse schemas use); this module only puts
its errors into one line that names the field (`say`, which the built-in tools' pydantic
models share, annotate/arguments.py), and fills in defaults.
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


def kind(value) -> str:
    """The JSON type name of a parsed value (`boolean` for True, though Python's bool is an
    int)."""
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
            raise InputError(f"{where}: nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, _BadNumber):
            raise InputError(f"{where}: {node}")
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                raise InputError(f"{where}: not valid Unicode (a lone surrogate escape)") from None
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
                         f"{exc.msg}") from None
    except RecursionError:
        raise InputError(f"args: JSON nested too deeply (at most {MAX_DEPTH} levels)") from None
    if not isinstance(value, dict):
        raise InputError(f"args: expected a JSON object, got {kind(value)}")
    _check_tree(value)
    return value


def _where(path: str, parts) -> str:
    """`args.a[0].b` from jsonschema's absolute path."""
    out = path
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def say(keyword: str, where: str, want, value) -> str | None:
    """One line in this project's words for `value` at `where` failing the JSON Schema
    `keyword` whose value is `want`; None for a keyword it has no words for. Shared by
    jsonschema's errors here and the built-in tools' pydantic errors (annotate/arguments.py)."""
    if keyword == "type":
        wanted = [want] if isinstance(want, str) else list(want)
        return f"{where}: expected {' or '.join(wanted)}, got {kind(value)}"
    if keyword == "enum":
        return f"{where}: {json.dumps(value)} is not one of {', '.join(json.dumps(c) for c in want)}"
    if keyword == "const":
        return f"{where}: must be {json.dumps(want)}, got {json.dumps(value)}"
    if keyword in ("minimum", "exclusiveMinimum"):
        return f"{where}: {value} is below the minimum {want}"
    if keyword in ("maximum", "exclusiveMaximum"):
        return f"{where}: {value} is above the maximum {want}"
    if keyword == "minLength":
        return f"{where}: shorter than {want} characters"
    if keyword == "maxLength":
        return f"{where}: longer than {want} characters"
    if keyword == "pattern":
        return f"{where}: does not match the pattern {want}"
    if keyword == "minItems":
        return f"{where}: needs at least {want} items"
    if keyword == "maxItems":
        return f"{where}: at most {want} items"
    if keyword == "required":
        return f"{where}: required field is missing"
    if keyword == "additionalProperties":
        return f"{where}: unknown field (allowed: {', '.join(want)})"
    return None


def _message(error, path: str) -> str:
    """One line for a jsonschema error, naming the field."""
    where = _where(path, error.absolute_path)
    keyword, want, value = error.validator, error.validator_value, error.instance
    if keyword == "required":
        missing = next((n for n in want if isinstance(value, dict) and n not in value), want[0])
        return say(keyword, f"{where}.{missing}", want, value)
    if keyword == "additionalProperties":
        allowed = sorted((error.schema.get("properties") or {}))
        extra = sorted(set(value) - set(allowed)) if isinstance(value, dict) else []
        return say(keyword, f"{where}.{extra[0] if extra else '?'}", allowed, value)
    if keyword in ("oneOf", "anyOf"):
        inner = min(error.context, key=lambda e: len(list(e.absolute_path)), default=None)
        detail = f" ({_message(inner, path)})" if inner is not None else ""
        if keyword == "oneOf" and not error.context:
            return f"{where}: matches more than one of the allowed forms"
        return f"{where}: matches none of the allowed forms{detail}"
    if keyword == "not":
        return f"{where}: is a form that is not allowed here"
    return say(keyword, where, want, value) or f"{where}: {error.message}"


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
