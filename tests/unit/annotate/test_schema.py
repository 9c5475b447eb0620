"""Tool arguments are checked with full JSON Schema: the keywords a hand-written subset missed."""

import pytest

from biotool.annotate.schema import validate
from biotool.output import InputError, ToolFailure

REF = {
    "$defs": {"seq": {"type": "string", "minLength": 3}},
    "type": "object",
    "properties": {"sequence": {"$ref": "#/$defs/seq"}, "frame": {"type": "integer", "default": 1}},
    "required": ["sequence"],
    "additionalProperties": False,
}


def _err(value, schema) -> str:
    with pytest.raises(InputError) as exc:
        validate(value, schema)
    assert exc.value.exit_code == 2
    return str(exc.value)


def test_ref_is_followed():
    assert "args.sequence: shorter than 3 characters" in _err({"sequence": "AC"}, REF)
    assert "args.sequence: expected string, got integer" in _err({"sequence": 5}, REF)
    assert validate({"sequence": "ACGT"}, REF) == {"sequence": "ACGT", "frame": 1}


def test_const_and_not():
    schema = {"type": "object", "properties": {
        "mode": {"const": "dna"}, "name": {"type": "string", "not": {"pattern": "^rs"}}}}
    assert 'args.mode: must be "dna", got "rna"' in _err({"mode": "rna"}, schema)
    assert "args.name: is a form that is not allowed here" in _err({"name": "rs123"}, schema)
    assert validate({"mode": "dna", "name": "TP53"}, schema) == {"mode": "dna", "name": "TP53"}


def test_one_of_means_exactly_one():
    schema = {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}
    assert "matches more than one" in _err(3, schema)  # an integer >= 0 fits both forms
    assert validate(-2, schema) == -2  # only the first form
    assert validate(2.5, schema) == 2.5  # only the second form
    assert "matches none of the allowed forms" in _err("x", schema)


def test_nested_path_and_defaults():
    schema = {"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"n": {"type": "integer"}, "k": {"default": 7}}}}}}
    assert "args.items[1].n: expected integer, got string" in _err(
        {"items": [{"n": 1}, {"n": "x"}]}, schema)
    assert validate({"items": [{"n": 1}]}, schema) == {"items": [{"n": 1, "k": 7}]}


def test_a_broken_tool_schema_is_the_tools_failure():
    with pytest.raises(ToolFailure):
        validate({}, {"type": "no-such-type"})
