"""A corpus built from a real molecule list passes the gate; a hand-broken copy fails it, naming rows."""

import copy
import json
from pathlib import Path

import pytest
from biotool.output import InputError, RefusedError

from molperceive import contract, gate, label


def test_built_corpus_has_every_slice_and_passes_the_gate(corpus):
    path, summary = corpus
    assert summary["molecules"] > 350 and summary["skipped_molecules"]
    assert all(summary["rows_by_slice"][s] > 0 for s in contract.SLICES)
    assert set(summary["invalid_rows_by_reason"]) == set(contract.CHEMISTRY_REASONS + contract.SYNTAX_REASONS)
    report = gate.gate(path)
    assert report["passed"], report["failures"][:5]
    assert report["failing_rows"] == []
    # The entropy gate sees what the contract says: formal_charge is near constant, flagged.
    assert report["label_entropy"]["reported"]["formal_charge"]["near_constant"] is True
    assert any("formal_charge" in f for f in report["flags"])


def test_corpus_rows_keep_the_contract(corpus, rows_io):
    rows = rows_io[0](corpus[0])
    train_keys = {r["inchikey"] for r in rows if r["slice"] == "train" and r["status"] == "ok"}
    eval_keys = {r["inchikey"] for r in rows if r["slice"] != "train" and r["status"] == "ok"}
    assert train_keys and eval_keys and not train_keys & eval_keys
    for r in rows:
        fams = set(r["families"].values())
        assert fams <= set(contract.RESERVED_FAMILIES if r["slice"] == "mp_para" else contract.OPEN_FAMILIES)
        assert contract.recover_fields(r["request"]) == set(r["fields"])
        if r["status"] == "ok":
            assert set(r["fields"]) & contract.GRAPH_DETERMINED
            if "smiles_from_graph" in r["fields"]:
                assert "smiles" not in r["input"] and r["input"]["graph"]["atoms"]
        if r["slice"] == "diag":
            assert 41 <= r["heavy_atom_count"] <= 70


def test_build_is_deterministic_and_seeded(corpus, tmp_path):
    from molperceive import build
    nci = Path(__file__).parent / "data" / "nci_first_400.smi"
    again = build.build(nci, tmp_path / "again.jsonl", seed=0, graph_fraction=0.3,
                        invalid_fraction=0.15, para_fraction=0.4)
    assert again["output_sha256"] == corpus[1]["output_sha256"]
    other = build.build(nci, tmp_path / "other.jsonl", seed=1, graph_fraction=0.3,
                        invalid_fraction=0.15, para_fraction=0.4)
    assert other["output_sha256"] != corpus[1]["output_sha256"]


def test_hand_broken_copy_fails_naming_each_row(corpus, rows_io, tmp_path):
    read, write = rows_io
    rows = read(corpus[0])
    ok_smiles = [r for r in rows if r["status"] == "ok" and "smiles" in r["input"]]
    broken = copy.deepcopy(rows)
    by_id = {r["id"]: r for r in broken}

    excl = by_id[ok_smiles[0]["id"]]                       # an excluded field asked
    excl["fields"] = excl["fields"] + ["inchikey"]
    prose = next(r for r in ok_smiles[1:] if "formula" not in r["fields"])
    by_id[prose["id"]]["request"] += " Also give the molecular formula."   # prose/claim mismatch
    changed = next(r for r in ok_smiles if "heavy_atom_count" in r["fields"] or "path_len" in r["fields"])
    f = "heavy_atom_count" if "heavy_atom_count" in changed["fields"] else "path_len"
    by_id[changed["id"]]["labels"][f] += 1                 # a changed label
    ev = next(r for r in ok_smiles if r["slice"] == "eval" and r["id"] not in (prose["id"], changed["id"]))
    leak = copy.deepcopy(ev)                               # an eval molecule copied into train
    leak["id"], leak["slice"] = "mp-leak01", "train"
    broken.append(leak)

    report = gate.gate(write(tmp_path / "broken.jsonl", broken))
    assert not report["passed"]
    named = {(f["id"], f["check"]) for f in report["failures"]}
    assert (excl["id"], "excluded_field") in named
    assert (prose["id"], "prose_claim_mismatch") in named
    assert (changed["id"], "label_mismatch") in named
    assert (ev["id"], "inchikey_leak") in named
    leak_detail = next(f["detail"] for f in report["failures"] if f["check"] == "inchikey_leak")
    assert "mp-leak01" in leak_detail
    # Nothing else was touched, so nothing else is named.
    assert set(report["failing_rows"]) == {excl["id"], prose["id"], changed["id"], ev["id"]}


def test_reserved_family_outside_mp_para_fails(corpus, rows_io, tmp_path):
    read, write = rows_io
    rows = read(corpus[0])
    r = next(r for r in rows if r["slice"] == "train" and r["status"] == "ok")
    field = r["fields"][0]
    r["families"][field] = 10
    from molperceive import requests
    r["request"] = requests.compose(r["fields"], r["families"], r["args"])
    report = gate.gate(write(tmp_path / "fam.jsonl", rows))
    assert (r["id"], "reserved_family") in {(f["id"], f["check"]) for f in report["failures"]}


def test_invalid_row_with_a_wrong_reason_and_a_row_without_graph_field_fail(corpus, rows_io, tmp_path):
    read, write = rows_io
    rows = read(corpus[0])
    bad = next(r for r in rows if r["reason"] == "valence_error")
    bad["reason"] = "kekulization_failure"
    comp = next(r for r in rows if r["status"] == "ok" and "smiles" in r["input"])
    comp["fields"], comp["families"], comp["args"] = ["formula"], {"formula": 1}, {}
    comp["request"] = contract.phrasing("formula", 1)
    comp["labels"] = label.label(comp["input"]["smiles"], fields=["formula"])["labels"]
    report = gate.gate(write(tmp_path / "x.jsonl", rows))
    named = {(f["id"], f["check"]) for f in report["failures"]}
    assert (bad["id"], "status_mismatch") in named
    assert (comp["id"], "no_graph_determined_field") in named
    assert len(report["failing_rows"]) == 2


def test_near_constant_headline_field_fails(tmp_path, rows_io):
    from molperceive import build
    # Forty copies of one skeleton with different isotopes would dedup; use homologous alkanes
    # of equal size instead: every formula request gets the same answer.
    smi = tmp_path / "same.smi"
    isomers = ["CCCCCCCC", "CC(C)CCCCC", "CCC(C)CCCC", "CCCC(C)CCC", "CC(C)(C)CCCC", "CC(C)C(C)CCC",
               "CC(C)CC(C)CC", "CC(C)CCC(C)C", "CCC(C)(C)CCC", "CCC(C)C(C)CC", "CC(C)(C)C(C)CC",
               "CC(C)C(C)(C)CC", "CC(C)(C)CC(C)C", "CCC(CC)CCC", "CCC(C)(CC)CC", "CC(C)C(C)C(C)C",
               "CC(C)(C)C(C)(C)C", "CCC(CC)C(C)C"]
    smi.write_text("\n".join(isomers) + "\n")
    out = tmp_path / "rows.jsonl"
    build.build(smi, out, rows_per_molecule=5, graph_fraction=0, invalid_fraction=0, para_fraction=0,
                eval_fraction=0)
    report = gate.gate(out)
    constant = {f["detail"].split(":")[0] for f in report["failures"] if f["check"] == "near_constant_field"}
    # Every octane isomer is C8H18 with 8 heavy atoms, all carbon: these fields say nothing.
    assert {"element_counts", "atom_at_index"} <= constant
    assert "path_len" not in constant and not report["passed"]


def test_generator_refuses_excluded_and_non_graph_field_sets(tmp_path):
    from molperceive import build
    nci = Path(__file__).parent / "data" / "nci_first_400.smi"
    out = tmp_path / "rows.jsonl"
    with pytest.raises(RefusedError, match="canonical_smiles"):
        build.build(nci, out, fields=["formula", "canonical_smiles"])
    with pytest.raises(InputError, match="graph-determined"):
        build.build(nci, out, fields=["formula", "bond_count"])
    with pytest.raises(InputError, match="ring_count"):
        build.build(nci, out, fields=["path_len", "ring_count"])
    assert not out.exists()
    summary = build.build(nci, out, fields=["path_len", "formula"], limit=40)
    assert summary["rows"] and gate.gate(out)["passed"]
    asked = {f for line in out.read_text().splitlines() for f in json.loads(line)["fields"]}
    assert asked == {"path_len", "formula"}


def test_molecules_keeping_a_hydrogen_atom_are_left_out_of_the_corpus(tmp_path):
    # [2H] survives parsing as an atom, so mol.GetNumBonds() counts its bond: the contract's
    # "bond_count: bonds between heavy atoms only" would be false for such a row.
    from molperceive import build

    smi = tmp_path / "m.smi"
    smi.write_text("[2H]C(=O)c1ccccc1 deuterated\nO=Cc1ccccc1 benzaldehyde\n")
    summary = build.build(smi, tmp_path / "rows.jsonl", seed=0)
    assert summary["molecules"] == 1
    assert summary["skipped_molecules"] == {"hydrogen_atom_in_graph": 1}


def test_limit_stops_reading_once_enough_molecules_are_found(tmp_path):
    # Everything after the limit is left unread: no classification, no skip counted.
    from molperceive import build

    smi = tmp_path / "m.smi"
    smi.write_text("O=Cc1ccccc1 benzaldehyde\nOc1ccccc1 phenol\n[Xe] xenon\n")
    summary = build.build(smi, tmp_path / "rows.jsonl", seed=0, limit=2)
    assert summary["molecules"] == 2 and summary["skipped_molecules"] == {}
    full = build.build(smi, tmp_path / "all.jsonl", seed=0)
    assert full["molecules"] == 2 and sum(full["skipped_molecules"].values()) == 1


def _rewrite(row):
    """Prose a paraphrasing service might write: new wording, each field's first trigger kept."""
    parts = [f"Kindly state the {contract.TRIGGERS[f][0]} for this input" for f in row["fields"]]
    return " and ".join(parts) + " (indices are 0-based)."


def test_rewritten_prose_passes_and_is_only_reported(corpus, rows_io, tmp_path):
    read, write = rows_io
    rows = read(corpus[0])
    rewritten = [r for r in rows[::3]]
    for r in rewritten:
        r["request"] = _rewrite(r)
    report = gate.gate(write(tmp_path / "rw.jsonl", rows))
    assert report["passed"], report["failures"][:3]
    assert report["report_items_by_check"] == {"phrasing_not_in_table": len(rewritten)}
    assert {i["id"] for i in report["report_items"]} == {r["id"] for r in rewritten}


def test_rewrite_carrying_another_fields_trigger_fails(corpus, rows_io, tmp_path):
    read, write = rows_io
    rows = read(corpus[0])
    r = next(r for r in rows if r["status"] == "ok" and "formula" not in r["fields"]
             and "smiles" in r["input"])
    r["request"] = _rewrite(r) + " Mind the molecular formula."
    report = gate.gate(write(tmp_path / "rw.jsonl", rows))
    assert {(f["id"], f["check"]) for f in report["failures"]} == {(r["id"], "prose_claim_mismatch")}


def test_excluded_fields_in_another_letter_case_fail_as_excluded(corpus, rows_io, tmp_path):
    read, write = rows_io
    rows = read(corpus[0])
    r = next(r for r in rows if r["status"] == "ok")
    r["fields"] = r["fields"] + ["InChIKey"]
    report = gate.gate(write(tmp_path / "x.jsonl", rows))
    details = [f["detail"] for f in report["failures"] if f["id"] == r["id"] and f["check"] == "excluded_field"]
    assert details and "InChIKey (= inchikey: a hash" in details[0]
    assert not [f for f in report["failures"] if f["check"] == "unknown_field"]


def test_build_skips_a_molecule_whose_graph_cannot_be_rebuilt(tmp_path):
    # A triple bond in an aromatic ring sanitises, but its Kekulé graph does not: the pinned
    # smiles_from_graph call has no label for it, so build counts it and leaves it out.
    from molperceive import build
    src = tmp_path / "m.smi"
    src.write_text("Oc#1ccccc1CCCC\nCCCCCCO\nNCCc1ccccc1\n")
    summary = build.build(src, tmp_path / "rows.jsonl", seed=0)
    assert summary["skipped_molecules"] == {"graph_not_rebuildable": 1}
    assert summary["molecules"] == 2
