"""`biotool call` as the agent runs it: one JSON object, schemas, bounded output, and exit 2
with the field named for bad input."""

from __future__ import annotations

import json

import pytest

from biotool_testing.contract import error_line


def test_call_prints_one_json_object(biotool):
    res = biotool("call", "translate", '{"sequence": "ATGGCCTAA"}')
    assert res.code == 0, res.stderr
    assert res.json["frames"][0]["protein"] == "MA*" and res.json["tool"] == "translate"


def test_arguments_from_stdin_and_file(biotool, tmp_path):
    assert biotool("call", "reverse_complement", "-",
                   input='{"sequence": "AACG"}').json["reverse_complement"] == "CGTT"
    f = tmp_path / "args.json"
    f.write_text('{"sequence": "AACG"}')
    assert biotool("call", "reverse_complement", f"@{f}").json["reverse_complement"] == "CGTT"


def test_schema_shows_arguments_and_result(biotool):
    res = biotool("call", "variant_annotate", "--schema")
    assert res.code == 0
    assert {"hgvs", "gene", "cds_sequence", "position"} <= set(res.json["arguments"]["properties"])
    assert res.json["offered"] is True and res.json["result"]["type"] == "object"


def test_invalid_json_is_exit_2(biotool):
    res = biotool("call", "translate", '{"sequence": ')
    assert error_line(res).startswith("biotool: error: args: invalid JSON")


def test_wrong_type_names_the_field(biotool):
    res = biotool("call", "translate", '{"sequence": "ATG", "table": "eleven"}')
    assert res.code == 2 and "args.table: expected integer, got string" in res.stderr
    res = biotool("call", "find_orfs", '{"sequence": "ATG", "min_protein_length": 0}')
    assert res.code == 2 and "args.min_protein_length: 0 is below the minimum 1" in res.stderr
    res = biotool("call", "translate", '{"sequence": "ATG", "colour": "red"}')
    assert res.code == 2 and "args.colour: unknown field" in res.stderr


def test_missing_required_field(biotool):
    res = biotool("call", "gene_lookup", "{}")
    assert res.code == 2 and "args.query: required field is missing" in res.stderr


def test_invalid_sequence_characters_exit_2(biotool):
    res = biotool("call", "seq_stats", '{"sequence": "ACGT123ACG!T"}')
    assert res.code == 2 and "args.sequence: invalid character '!'" in res.stderr


def test_unknown_tool_suggests_a_close_name(biotool):
    res = biotool("call", "translat", "{}")
    assert res.code == 2
    assert "unknown tool 'translat'; did you mean translate" in res.stderr


def test_max_chars_bounds_output_and_keeps_it_json(biotool):
    full = biotool("call", "translate", '{"reference": "phiX174", "frame": "all"}')
    bounded = biotool("call", "translate", '{"reference": "phiX174", "frame": "all"}',
                      "--max-chars", "1500")
    assert len(full.stdout) > 5000
    assert len(bounded.stdout.strip()) <= 1500
    out = json.loads(bounded.stdout)
    assert out["truncated"] is True and out["truncated_fields"]
    assert "competence" in out and "provenance" in out


def test_list_shows_offered_and_refused_tools_with_reasons(biotool):
    res = biotool("call", "--list", "--filter", "pubmed")
    assert res.code == 0
    rows = res.json["tools"]
    assert rows and all(not r["offered"] and "deny" in r["rule"] for r in rows)


def test_biotool_list_shows_the_builtin_tools(biotool):
    res = biotool("list")
    fam = next(f for f in res.json["families"] if f["family"] == "annotate")
    # Offered tools by name; a built-in the policy refuses would be under not_offered.
    assert {"translate", "variant_annotate", "gene_lookup"} <= set(fam["tools"])
    assert fam["not_offered"] == []


def test_the_control_arm_leaves_out_competence(biotool):
    res = biotool("call", "gene_lookup", '{"query": "HA"}', env={"BIOTOOL_CONFIDENT": "1"})
    assert res.code == 0 and "competence" not in res.stdout


def test_binary_arguments_from_a_file_or_stdin_are_bad_input(biotool, biotool_env, tmp_path):
    import subprocess
    import sys

    blob = tmp_path / "args with space.json"
    blob.write_bytes(b"\x00\xff\xfe")
    res = biotool("call", "seq_stats", f"@{blob}")
    assert res.code == 2 and res.stdout == "" and str(blob) in res.stderr
    assert "not UTF-8" in res.stderr and res.stderr.count("\n") == 1
    proc = subprocess.run([sys.executable, "-m", "biotool", "call", "seq_stats", "-"],
                          input=b"\xff\xfe{}", capture_output=True, env=biotool_env)
    assert proc.returncode == 2 and proc.stdout == b"" and b"stdin is not UTF-8" in proc.stderr


@pytest.mark.parametrize("limit", ["1", "40", "300", "2000"])
def test_any_max_chars_still_gives_one_valid_json_object(biotool, limit):
    res = biotool("call", "find_orfs", '{"reference": "phiX174", "min_protein_length": 30}',
                  "--max-chars", limit)
    assert res.code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["truncated"] is True and "competence" in out and "provenance" in out
    assert isinstance(out["truncated_fields"], list) and out["truncated_fields"]


def test_schema_output_is_bounded_by_max_chars_too(biotool):
    full = biotool("call", "variant_annotate", "--schema")
    res = biotool("call", "variant_annotate", "--schema", "--max-chars", "400")
    assert res.code == 0 and len(res.stdout) < len(full.stdout)
    assert res.json["truncated"] is True and res.json["name"] == "variant_annotate"
