"""The built-in tools' argument models: defaults, bounds, unknown fields, and the one-line
refusal that names the field; and the schemas agents see, derived from the models."""

from __future__ import annotations

import json

import pytest

from biotool.annotate import arguments
from biotool.annotate.registry import BUILTIN
from biotool.output import InputError


def _refusal(model, args: dict) -> str:
    with pytest.raises(InputError) as exc:
        arguments.parse(model, args)
    assert exc.value.exit_code == 2 and "\n" not in str(exc.value)
    return str(exc.value)


def test_defaults_fill_what_is_not_given():
    t = arguments.parse(arguments.Translate, {"sequence": "ATG"})
    assert (t.table, t.frame, t.to_stop, t.strand, t.reference, t.start) == (1, 1, False, "+",
                                                                            None, None)
    orfs = arguments.parse(arguments.FindOrfs, {"reference": "phiX174"})
    assert (orfs.min_protein_length, orfs.max_orfs, orfs.start_codons) == (30, 50, "ATG")
    tm = arguments.parse(arguments.PrimerTm, {"sequence": "ACGT"})
    assert (tm.na_mM, tm.mg_mM, tm.dntps_mM, tm.primer_nM) == (50.0, 0.0, 0.0, 250.0)
    align = arguments.parse(arguments.AlignPairwise, {"seq_a": "A", "seq_b": "C"})
    assert (align.match, align.mismatch, align.gap_open, align.gap_extend) == (2, -3, -5, -2)


@pytest.mark.parametrize("model,args,message", [
    (arguments.Translate, {"table": 0}, "args.table: 0 is below the minimum 1"),
    (arguments.Translate, {"table": 34}, "args.table: 34 is above the maximum 33"),
    (arguments.FindOrfs, {"max_orfs": 1001}, "args.max_orfs: 1001 is above the maximum 1000"),
    (arguments.PrimerTm, {"sequence": "ACGT", "primer_nM": 0},
     "args.primer_nM: 0 is below the minimum 0.001"),
    (arguments.VariantAnnotate, {"position": 0}, "args.position: 0 is below the minimum 1"),
    (arguments.GeneLookup, {"query": ""}, "args.query: shorter than 1 characters"),
    (arguments.RestrictionSites, {"enzymes": []}, "args.enzymes: needs at least 1 items"),
])
def test_bounds(model, args, message):
    assert _refusal(model, args) == message


def test_unknown_field_is_refused_with_the_allowed_ones():
    assert _refusal(arguments.GeneLookup, {"query": "S", "colour": "red"}) == \
        "args.colour: unknown field (allowed: query, reference)"


def test_missing_required_field():
    assert _refusal(arguments.AlignPairwise, {"seq_a": "ACGT"}) == \
        "args.seq_b: required field is missing"


@pytest.mark.parametrize("model,args,message", [
    # Nothing is coerced: a numeric string, a whole float, a boolean are not integers.
    (arguments.Translate, {"table": "11"}, "args.table: expected integer, got string"),
    (arguments.Translate, {"table": 11.0}, "args.table: expected integer, got number"),
    (arguments.Translate, {"table": True}, "args.table: expected integer, got boolean"),
    (arguments.PrimerTm, {"sequence": "ACGT", "na_mM": False},
     "args.na_mM: expected number, got boolean"),
    # An optional field may be left out, not given as null.
    (arguments.Translate, {"sequence": None}, "args.sequence: expected string, got null"),
    (arguments.SeqStats, {"alphabet": "rna"}, 'args.alphabet: "rna" is not one of "dna", '
     '"protein"'),
])
def test_wrong_types_name_the_field(model, args, message):
    assert _refusal(model, args) == message


@pytest.mark.parametrize("frame,message", [
    (7, "args.frame: 7 is not one of 1, 2, 3, -1, -2, -3"),
    ("two", 'args.frame: "two" is not one of "all"'),
    ([1, 7], "args.frame[1]: 7 is not one of 1, 2, 3, -1, -2, -3"),
    ([1, True], "args.frame[1]: expected integer, got boolean"),
    (True, "args.frame: expected integer or string or array, got boolean"),
    ([], "args.frame: needs at least 1 items"),
])
def test_a_union_is_judged_in_the_form_of_the_values_json_type(frame, message):
    assert _refusal(arguments.Translate, {"sequence": "ATG", "frame": frame}) == message


def test_union_forms_are_accepted():
    for frame in (-2, "all", [1, -3]):
        assert arguments.parse(arguments.Translate, {"frame": frame}).frame == frame
    assert arguments.parse(arguments.RestrictionSites, {"enzymes": ["EcoRI"]}).enzymes == \
        ["EcoRI"]
    assert _refusal(arguments.RestrictionSites, {"enzymes": [1]}) == \
        "args.enzymes[0]: expected string, got integer"


def test_every_builtin_schema_is_derived_from_its_model_in_the_plain_shape():
    from jsonschema import Draft202012Validator

    for tool in BUILTIN:
        schema = tool.args_schema
        assert tool.model is not None and schema == arguments.json_schema(tool.model)
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert isinstance(schema["required"], list)
        text = json.dumps(schema)
        # What agents read: no pydantic titles, no null defaults or null forms, no $refs.
        for noise in ('"title"', '"null"', "$ref", "$defs", '"default": null'):
            assert noise not in text, (tool.name, noise)


def test_the_reference_fields_are_shared_by_the_sequence_tools():
    props = arguments.json_schema(arguments.Translate)["properties"]
    assert props["start"] == {"type": "integer", "minimum": 1,
                              "description": "1-based first base (default 1)."}
    assert props["strand"]["enum"] == ["+", "-"] and props["strand"]["default"] == "+"
    assert arguments.json_schema(arguments.SeqStats)["properties"]["sequence"]["description"] \
        == "DNA/RNA or protein sequence."
