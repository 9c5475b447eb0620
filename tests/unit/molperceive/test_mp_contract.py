"""The field contract's invariants: the selftest holds, and each check fails when broken."""

import pytest
from biotool.output import InputError, RefusedError

from molperceive import contract


def _failed(checks):
    return {c["check"] for c in checks if not c["ok"]}


def test_selftest_passes():
    checks = contract.selftest()
    assert len(checks) >= 10 and not _failed(checks)


def test_each_excluded_field_is_refused_naming_it_and_why():
    for field, why in contract.EXCLUDED.items():
        with pytest.raises(RefusedError) as exc:
            contract.refuse_excluded(["formula", field])
        assert field in str(exc.value) and why.split(":")[0] in str(exc.value)


def test_unknown_field_name_is_bad_input():
    with pytest.raises(InputError, match="unknown field name.*atom_count"):
        contract.refuse_excluded(["atom_count"])


def test_phrasing_with_another_fields_trigger_fails_the_round_trip(monkeypatch):
    # The contract's own example: "how many bonds apart" carries bond_count's trigger.
    broken = dict(contract.PHRASINGS)
    broken["path_len"] = ("How many bonds apart are atoms {i} and {j}?",) + broken["path_len"][1:]
    monkeypatch.setattr(contract, "PHRASINGS", broken)
    assert "phrasing_table_round_trip" in _failed(contract.selftest())


def test_cross_field_trigger_collision_is_caught(monkeypatch):
    triggers = dict(contract.TRIGGERS)
    triggers["heavy_atom_count"] = triggers["heavy_atom_count"] + ("atom count",)
    triggers["element_counts"] = triggers["element_counts"] + ("the atom count per kind",)
    monkeypatch.setattr(contract, "TRIGGERS", triggers)
    assert "no_cross_field_trigger_collision" in _failed(contract.selftest())


def test_field_in_two_groups_is_caught(monkeypatch):
    monkeypatch.setattr(contract, "REPORTED", {**contract.REPORTED, "formula": "dup"})
    assert "no_field_in_two_groups" in _failed(contract.selftest())


def test_reserved_family_reused_in_open_families_is_caught(monkeypatch):
    broken = dict(contract.PHRASINGS)
    f = broken["formula"]
    broken["formula"] = f[:8] + (f[0],) + f[9:]
    monkeypatch.setattr(contract, "PHRASINGS", broken)
    assert "reserved_families_disjoint" in _failed(contract.selftest())


@pytest.mark.parametrize("counts,charge,want", contract.HILL_CASES)
def test_hill_cases(counts, charge, want):
    assert contract.formula_with_charge(counts, charge) == want


def test_no_carbon_puts_hydrogen_alphabetically():
    assert contract.hill_formula({"H": 3, "P": 1, "O": 4}) == "H3O4P"
    assert contract.hill_formula({"C": 1, "H": 4}) == "CH4"


def test_every_phrasing_recovers_exactly_its_field():
    for field in contract.HEADLINE:
        for fam in range(1, 13):
            assert contract.recover_fields(contract.phrasing(field, fam, k=2, i=0, j=5)) == {field}


def test_recovery_reads_hyphens_as_spaces():
    assert contract.recover_fields("How many non-hydrogen atoms?") == {"heavy_atom_count"}
