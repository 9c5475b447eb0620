"""The molperceive command line: JSON on stdout, one-line errors, exit codes as biotool."""

import json
import subprocess
import sys

from biotool_testing.contract import error_line
from biotool_testing.ran import Ran


def test_help_is_fast_because_rdkit_is_not_imported():
    code = ("import sys, molperceive.cli as c\ntry:\n    c.main(['--help'])\nexcept SystemExit:\n"
            "    print(sorted(m for m in ('rdkit', 'numpy') if m in sys.modules), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("Usage: molperceive") and out.stderr.strip() == "[]"


def test_selftest_passes(molperceive):
    code, out, err = molperceive("selftest")
    assert code == 0, err
    report = json.loads(out)
    assert report["passed"] and len(report["checks"]) >= 20
    assert {c["check"] for c in report["checks"]} >= {f"corrupt_reaches_{r}" for r in
                                                      ("valence_error", "kekulization_failure",
                                                       "unbalanced_parenthesis", "unclosed_ring_bond",
                                                       "unknown_element", "element_not_supported",
                                                       "size_out_of_range")}


def test_label_and_refusal_exit_codes(molperceive):
    code, out, _ = molperceive("label", "Oc1ccccc1", "CC(C", "--fields", "formula,bond_count")
    assert code == 0
    mols = json.loads(out)["molecules"]
    assert mols[0]["labels"] == {"formula": "C6H6O", "bond_count": 7}
    assert mols[1]["reason"] == "unbalanced_parenthesis"
    code, out, err = molperceive("label", "CCO", "--fields", "tpsa")
    assert code == 3 and out == "" and err.count("\n") == 1 and "tpsa" in err
    code, _, err = molperceive("label", "CCO", "--fields", "atom_count")
    assert code == 2 and "atom_count" in err and err.count("\n") == 1


def test_gate_failure_exit_2_names_rows(molperceive, corpus, rows_io, tmp_path):
    read, write = rows_io
    rows = read(corpus[0])
    rows[3]["fields"] = rows[3]["fields"] + ["logp"]
    path = write(tmp_path / "bad.jsonl", rows)
    code, out, err = molperceive("gate", path)
    assert code == 2
    assert rows[3]["id"] in err and "excluded_field" in err and err.count("\n") == 1
    assert json.loads(out)["failing_rows"] == [rows[3]["id"]]


def test_unreadable_jsonl_lines_are_reported_with_line_numbers(molperceive, tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_text('{"id": "a"}\n{oops\n\n[1, 2]\n')
    code, out, err = molperceive("gate", p)
    assert code == 2 and out == ""
    assert "line 2" in err and "line 4 (not a JSON object)" in err and err.count("\n") == 1


def test_empty_file_and_missing_file(molperceive, tmp_path):
    p = tmp_path / "empty.jsonl"
    p.write_text("")
    code, _, err = molperceive("gate", p)
    assert code == 2 and "empty corpus" in err
    code, _, err = molperceive("score", tmp_path / "nope.jsonl", p)
    assert code == 2 and "nope.jsonl" in err
    code, _, err = molperceive("build", p, "--out", tmp_path / "o.jsonl")
    assert code == 2 and "empty SMILES list" in err and not (tmp_path / "o.jsonl").exists()


def test_build_out_a_directory_is_bad_input_naming_it_and_leaves_nothing(molperceive, tmp_path):
    from pathlib import Path
    smi = Path(__file__).parent / "data" / "nci_first_400.smi"
    outdir = tmp_path / "out dir"
    outdir.mkdir()
    ran = Ran(*molperceive("build", smi, "--out", outdir))
    error_line(ran, outdir, "directory", prog="molperceive", alone=True)
    assert list(outdir.iterdir()) == [] and not list(tmp_path.glob(".*.part"))


def test_usage_error_is_one_line_exit_2(molperceive):
    error_line(Ran(*molperceive("score", "only-one.jsonl")), prog="molperceive", alone=True)


def test_build_then_gate_then_score_through_the_cli(molperceive, tmp_path):
    from pathlib import Path
    nci = Path(__file__).parent / "data" / "nci_first_400.smi"
    rows = tmp_path / "rows.jsonl"
    code, out, err = molperceive("build", nci, "--out", rows, "--limit", "60")
    assert code == 0, err
    assert json.loads(out)["molecules"] == 60
    code, out, err = molperceive("gate", rows)
    assert code == 0 and json.loads(out)["passed"], err
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"id": json.loads(l)["id"], "answers": {}}) + "\n"
                             for l in rows.read_text().splitlines()))
    code, out, err = molperceive("score", rows, preds)
    assert code == 0, err
    report = json.loads(out)
    assert report["headline"]["accuracy"] == 0.0 and report["rdkit"]["version"] == "2026.03.4"


def test_score_with_stray_answers_exits_0_listing_them_and_strict_refuses(molperceive, corpus, tmp_path):
    rows = [json.loads(l) for l in corpus[0].read_text().splitlines()]
    ok = [r for r in rows if r["status"] == "ok"]
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"id": ok[0]["id"], "answers": {**ok[0]["labels"], "InChIKey": "X"}}) + "\n"
                     + json.dumps({"id": "mp-999999", "answers": {}}) + "\n")
    code, out, err = molperceive("score", corpus[0], preds)
    assert code == 0, err
    report = json.loads(out)
    assert report["invalid_predictions"]["count"] == 2 and report["predictions"]["given"] == 1
    assert err.count("\n") == 1 and err.startswith("molperceive: warning: 2 prediction")
    code, out, err = molperceive("score", corpus[0], preds, "--strict")
    assert code == 3 and out == "" and err.count("\n") == 1 and "InChIKey" in err


def test_an_unrequested_headline_answer_costs_the_row_unless_lenient(molperceive, corpus, tmp_path):
    # The same perfect answers twice; in the second an unasked headline field rides along.
    rows = [json.loads(l) for l in corpus[0].read_text().splitlines()]
    ok = [r for r in rows if r["status"] == "ok" and r["slice"] == "eval"]
    row = next(r for r in ok if "heavy_atom_count" not in r["fields"])
    clean, greedy = tmp_path / "clean.jsonl", tmp_path / "greedy.jsonl"
    clean.write_text(json.dumps({"id": row["id"], "answers": row["labels"]}) + "\n")
    greedy.write_text(json.dumps({"id": row["id"], "answers": {**row["labels"],
                                                                "heavy_atom_count": 1}}) + "\n")
    scored = {}
    for name, path, extra in (("clean", clean, ()), ("greedy", greedy, ()),
                              ("lenient", greedy, ("--lenient-fields",))):
        code, out, err = molperceive("score", corpus[0], path, "--slices", "eval", *extra)
        assert code == 0, err
        scored[name] = json.loads(out)
    n = len(row["fields"])
    assert scored["clean"]["headline"]["correct"] == n
    assert scored["greedy"]["headline"]["correct"] == 0
    assert scored["greedy"]["field_selection"]["rows_answering_unrequested_fields"] == 1
    assert scored["lenient"]["headline"]["correct"] == n
    assert scored["lenient"]["field_selection"]["penalised"] is False


def test_prompts_show_the_model_the_request_and_the_input_only(molperceive, corpus, tmp_path):
    out = tmp_path / "prompts.jsonl"
    code, text, err = molperceive("prompts", corpus[0], "--out", out)
    assert code == 0, err
    lines = [json.loads(l) for l in out.read_text().splitlines()]
    rows = [json.loads(l) for l in corpus[0].read_text().splitlines()]
    assert len(lines) == len(rows) == json.loads(text)["rows"]
    assert all(set(l) == {"id", "request", "input"} for l in lines)
    assert {r["id"]: r["request"] for r in rows} == {l["id"]: l["request"] for l in lines}


def _same_molecule_neighbours(ids: list[str], source: dict[str, str]) -> int:
    return sum(source[a] == source[b] for a, b in zip(ids, ids[1:]))


def test_prompts_are_shuffled_and_their_ids_carry_no_molecule_order(molperceive, corpus,
                                                                      tmp_path):
    """The corpus keeps a molecule's rows together (its SMILES row, graph row, invalid mutant);
    the prompts file must not, neither in its line order nor in the order of its ids."""
    rows = [json.loads(l) for l in corpus[0].read_text().splitlines()]
    source = {r["id"]: r["source"] for r in rows}
    in_corpus = _same_molecule_neighbours([r["id"] for r in rows], source)
    assert in_corpus >= 50  # the failure this guards against exists in the corpus order

    orders = {}
    for seed in (0, 1):
        out = tmp_path / f"prompts-{seed}.jsonl"
        code, text, err = molperceive("prompts", corpus[0], "--out", out, "--seed", seed)
        assert code == 0, err
        answer = json.loads(text)
        assert answer["seed"] == seed and answer["order"] == "shuffled"
        assert "on its own" in answer["presentation"]
        orders[seed] = [json.loads(l)["id"] for l in out.read_text().splitlines()]
        assert sorted(orders[seed]) == sorted(source)
        # A random order of ~470 rows from ~400 molecules puts a handful of pairs side by side.
        assert _same_molecule_neighbours(orders[seed], source) <= in_corpus // 5
        assert _same_molecule_neighbours(sorted(orders[seed]), source) <= in_corpus // 5
    assert orders[0] != orders[1]
    again = tmp_path / "again.jsonl"
    assert molperceive("prompts", corpus[0], "--out", again, "--seed", 0)[0] == 0
    assert [json.loads(l)["id"] for l in again.read_text().splitlines()] == orders[0]


def test_quiet_silences_the_warning_before_or_after_the_command_and_not_errors(molperceive,
                                                                                corpus, tmp_path):
    # docs/contract.md: every program takes --quiet/-q before or after its command.
    rows = [json.loads(l) for l in corpus[0].read_text().splitlines()]
    ok = [r for r in rows if r["status"] == "ok"]
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"id": "mp-999999", "answers": {}}) + "\n"
                     + json.dumps({"id": ok[0]["id"], "answers": ok[0]["labels"]}) + "\n")
    loud = molperceive("score", corpus[0], preds)
    assert loud[0] == 0 and loud[2].startswith("molperceive: warning: 1 prediction")
    for args in (("-q", "score", corpus[0], preds), ("score", corpus[0], preds, "--quiet")):
        code, out, err = molperceive(*args)
        assert code == 0 and err == "" and json.loads(out) == json.loads(loud[1])
    # An error is not progress: it still prints its one line.
    code, out, err = molperceive("-q", "score", corpus[0], tmp_path / "missing.jsonl")
    assert code == 2 and out == "" and err.count("\n") == 1 and "missing.jsonl" in err
