"""Scoring: perfect predictions give 100%, same molecule written differently is correct, wrong is wrong."""

import copy
import json

import pytest
from biotool.output import InputError, RefusedError

from molperceive import label, score


def perfect(rows):
    """The right answer to every row: labels, a SMILES for graph rows, abstention for invalid."""
    from rdkit import Chem
    preds = []
    for r in rows:
        if r["status"] != "ok":
            preds.append({"id": r["id"], "abstain": True, "reason": r["reason"]})
            continue
        answers = dict(r["labels"])
        if "smiles_from_graph" in answers:
            answers["smiles_from_graph"] = Chem.MolToSmiles(label.mol_from_graph(r["input"]["graph"]))
        preds.append({"id": r["id"], "answers": answers})
    return preds


def test_perfect_predictions_score_100(corpus, rows_io, tmp_path):
    read, write = rows_io
    rows = read(corpus[0])
    report = score.score(corpus[0], write(tmp_path / "p.jsonl", perfect(rows)))
    assert report["headline"]["accuracy"] == 100.0 and report["headline"]["total"] > 50
    for s in ("eval", "mp_para", "diag"):
        assert report["slices"][s]["headline"]["accuracy"] == 100.0
    assert report["abstention"]["headline_chemistry"]["rate"] == 100.0
    assert report["abstention"]["syntax"]["rate"] == 100.0
    assert report["abstention"]["false_abstentions_on_valid_rows"] == 0
    assert report["label_drift"] == {}
    assert report["rdkit"]["matches_pin"] and "warnings" not in report
    assert all(b["accuracy"] == 100.0 for b in report["by_heavy_atoms"]["diag"])
    assert all(41 <= int(b["heavy_atoms"].split("-")[0]) <= 70 for b in report["by_heavy_atoms"]["diag"])


def test_smiles_written_differently_scores_correct_and_a_wrong_formula_wrong(corpus, rows_io, tmp_path):
    from rdkit import Chem
    read, write = rows_io
    rows = [r for r in read(corpus[0]) if r["slice"] == "eval" and r["status"] == "ok"]
    graph_row = next(r for r in rows if "smiles_from_graph" in r["fields"])
    formula_row = next(r for r in rows if "formula" in r["fields"])
    mol = label.mol_from_graph(graph_row["input"]["graph"])
    canonical = Chem.MolToSmiles(mol)
    other = next(s for s in (Chem.MolToSmiles(mol, kekuleSmiles=True, canonical=False),
                             Chem.MolToSmiles(mol, doRandom=True)) if s != canonical)
    assert score.correct("smiles_from_graph", other, graph_row["labels"]["smiles_from_graph"])
    assert not score.correct("smiles_from_graph", "CCCC", graph_row["labels"]["smiles_from_graph"])
    wrong = {**formula_row["labels"], "formula": formula_row["labels"]["formula"] + "O"}
    preds = [{"id": graph_row["id"], "answers": {"smiles_from_graph": other}},
             {"id": formula_row["id"], "answers": wrong}]
    report = score.score(corpus[0], write(tmp_path / "p.jsonl", preds), slices=["eval"])
    fields = report["slices"]["eval"]["fields"]
    assert fields["smiles_from_graph"]["correct"] >= 1
    assert fields["formula"]["correct"] == 0
    assert report["predictions"]["missing_for_scored_rows"] == report["predictions"]["scored_rows"] - 2


def test_exact_match_rules():
    assert score.correct("element_counts", {"C": 6, "H": 6, "O": 1, "N": 0}, {"C": 6, "H": 6, "O": 1})
    assert not score.correct("element_counts", {"C": 6, "H": 5, "O": 1}, {"C": 6, "H": 6, "O": 1})
    assert score.correct("heavy_atom_count", "7", 7) and not score.correct("heavy_atom_count", 7.5, 7)
    assert not score.correct("heavy_atom_count", True, 1)
    assert not score.correct("formula", "C6 H6 O", "C6H6O")
    assert not score.correct("smiles_from_graph", "not a smiles((", "ISWSIDIOOBJBQZ-UHFFFAOYSA-N")


def test_reported_fields_are_scored_apart_from_the_headline(corpus, rows_io, tmp_path):
    read, write = rows_io
    rows = read(corpus[0])
    preds = perfect(rows)
    for p, r in zip(preds, rows):
        if r["status"] == "ok":
            p["answers"]["ring_count"] = r["reported"]["ring_count"] + 1   # all wrong, apart
    report = score.score(corpus[0], write(tmp_path / "p.jsonl", preds))
    assert report["headline"]["accuracy"] == 100.0
    assert report["slices"]["eval"]["reported"]["ring_count"]["accuracy"] == 0.0


def test_abstaining_on_valid_rows_scores_wrong(corpus, rows_io, tmp_path):
    read, write = rows_io
    rows = read(corpus[0])
    preds = [{"id": r["id"], "abstain": True, "reason": "valence_error"} for r in rows]
    report = score.score(corpus[0], write(tmp_path / "p.jsonl", preds))
    assert report["headline"]["accuracy"] == 0.0
    assert report["abstention"]["false_abstentions_on_valid_rows"] > 0
    chem = report["abstention"]["headline_chemistry"]
    assert chem["rate"] == 100.0 and 0 < chem["reason_correct"] < chem["rows"]


def test_label_drift_is_counted_per_field(corpus, rows_io, tmp_path):
    read, write = rows_io
    rows = read(corpus[0])
    preds = perfect(rows)
    drifted = copy.deepcopy(rows)
    target = next(r for r in drifted if r["slice"] == "eval" and "bond_count" in r["fields"])
    target["labels"]["bond_count"] += 1
    report = score.score(write(tmp_path / "rows.jsonl", drifted), write(tmp_path / "p.jsonl", preds))
    assert report["label_drift"] == {"bond_count": 1}


def _first_id(corpus) -> str:
    return json.loads(corpus[0].read_text().splitlines()[0])["id"]


def test_strict_refuses_unknown_ids_unknown_fields_and_excluded_fields(corpus, tmp_path):
    first = _first_id(corpus)
    p = tmp_path / "p.jsonl"
    p.write_text('{"id": "mp-999999", "answers": {}}\n')
    with pytest.raises(InputError, match=r"unknown row ids: mp-999999 \(line 1\)"):
        score.score(corpus[0], p, strict=True)
    p.write_text('{"id": "%s", "answers": {"atom_count": 3}}\n' % first)
    with pytest.raises(InputError, match="line 1: unknown field name.*atom_count"):
        score.score(corpus[0], p, strict=True)
    p.write_text('{"id": "%s", "answers": {"inchikey": "X"}}\n' % first)
    with pytest.raises(RefusedError, match="inchikey"):
        score.score(corpus[0], p, strict=True)
    p.write_text('{"id": "%s", "answers": {"InChIKey": "X"}}\n' % first)
    with pytest.raises(RefusedError, match="InChIKey .*= inchikey: a hash"):
        score.score(corpus[0], p, strict=True)


def test_stray_answers_are_listed_and_every_valid_row_still_scored(corpus, rows_io, tmp_path):
    read, write = rows_io
    rows = read(corpus[0])
    preds = perfect(rows)
    ok = [p for p, r in zip(preds, rows) if r["status"] == "ok"]
    ok[0]["answers"]["inchikey"] = "X"            # excluded: the key is dropped, the row scored
    ok[1]["answers"]["LogP"] = 1.2                # excluded in another letter case
    ok[2]["answers"]["atom_count"] = 3            # unknown field name
    preds.append({"id": "mp-999999", "answers": {}})          # unknown row id
    preds.append({"id": rows[0]["id"], "answers": {}})        # a second prediction
    path = write(tmp_path / "p.jsonl", preds)
    with path.open("a") as fh:
        fh.write("{not json\n")
    report = score.score(corpus[0], path)
    assert report["headline"]["accuracy"] == 100.0
    inv = report["invalid_predictions"]
    assert inv["count"] == 6 and inv["listed"] == 6
    items = {(i["row"], i["key"]): i["why"] for i in inv["items"]}
    assert items[(ok[0]["id"], "inchikey")].startswith("excluded field")
    assert "= logp" in items[(ok[1]["id"], "LogP")]
    assert items[(ok[2]["id"], "atom_count")] == "unknown field name"
    assert items[("mp-999999", None)] == "unknown row id"
    assert items[(rows[0]["id"], None)].startswith("second prediction")
    assert items[(None, None)].startswith("not a JSON object line")
    assert inv["by_why"] == {"excluded field, never a model output": 2, "unknown field name": 1,
                             "unknown row id": 1, "second prediction for this row": 1,
                             "not a JSON object line": 1}


def test_unreadable_and_empty_prediction_files(corpus, tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text('{"id": "%s", "answers": {}}\n{"id": \nnot json\n' % _first_id(corpus))
    with pytest.raises(InputError, match="line 2 .*line 3"):
        score.score(corpus[0], p, strict=True)
    assert score.score(corpus[0], p)["invalid_predictions"]["count"] == 2
    p.write_text("\n\n")
    with pytest.raises(InputError, match="empty predictions"):
        score.score(corpus[0], p)
    p.write_text("{not json\n[1]\n")
    with pytest.raises(InputError, match="no valid prediction line"):
        score.score(corpus[0], p)


def test_version_other_than_the_pin_warns_and_still_scores(corpus, rows_io, tmp_path, monkeypatch):
    import rdkit
    read, write = rows_io
    monkeypatch.setattr(rdkit, "__version__", "2025.09.1")
    report = score.score(corpus[0], write(tmp_path / "p.jsonl", perfect(read(corpus[0]))))
    assert report["rdkit"]["matches_pin"] is False
    assert "2025.09.1" in report["warnings"][0] and report["headline"]["accuracy"] == 100.0


def test_a_second_prediction_for_one_row_is_refused_naming_the_line(corpus, tmp_path):
    first = _first_id(corpus)
    p = tmp_path / "p.jsonl"
    p.write_text('{"id": "%s", "answers": {}}\n{"id": "%s", "answers": {}}\n' % (first, first))
    with pytest.raises(InputError, match=f"line 2: second prediction for {first}"):
        score.score(corpus[0], p, strict=True)


def test_duplicated_row_ids_in_the_corpus_are_refused_naming_both_lines(corpus, rows_io, tmp_path):
    read, write = rows_io
    rows = read(corpus[0])
    doubled = write(tmp_path / "rows.jsonl", rows + [rows[0]])
    preds = write(tmp_path / "p.jsonl", perfect(rows))
    with pytest.raises(InputError, match=rf"duplicated row id\(s\) {rows[0]['id']} "
                                         rf"\(lines 1 and {len(rows) + 1}\)"):
        score.score(doubled, preds)


def test_abstention_must_be_a_boolean_with_a_known_reason(corpus, tmp_path):
    first = _first_id(corpus)
    p = tmp_path / "p.jsonl"
    p.write_text('{"id": "%s", "abstain": "no"}\n' % first)
    with pytest.raises(InputError, match="line 1: abstain must be true or false"):
        score.score(corpus[0], p)
    p.write_text('{"id": "%s", "abstain": true, "reason": "bad_smiles"}\n' % first)
    with pytest.raises(InputError, match="line 1: unknown reason 'bad_smiles'"):
        score.score(corpus[0], p)


def test_rows_and_predictions_swapped_is_a_clear_error(corpus, rows_io, tmp_path):
    read, write = rows_io
    rows = read(corpus[0])
    # The corpus given as predictions: every id is known, but no line answers anything.
    with pytest.raises(InputError, match="line 1: neither answers nor abstain; it looks like "
                                         "a corpus row: are rows and predictions swapped"):
        score.score(write(tmp_path / "rows.jsonl", rows), corpus[0])
