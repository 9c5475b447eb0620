"""What a manifest may name is a name of a table in the build-time staging, never an import
path: its builders and checks (biotool.stagebuild.hooks) and its preparers
(biotool.stagebuild.prepare.PREPARERS)."""

from __future__ import annotations

import pytest

from biotool.staging import REPO_REFS, StagingError, load_manifests


def test_every_builder_check_and_preparer_a_manifest_names_is_in_its_table():
    from biotool.stagebuild.hooks import BUILDERS, CHECKS
    from biotool.stagebuild.prepare import PREPARERS

    entries = load_manifests(REPO_REFS)
    tables = {"builder": BUILDERS, "check": CHECKS}
    named = [(field, e[field]) for e in entries for field in tables if field in e]
    assert {f for f, _ in named} == {"builder", "check"}  # the demo model and sample, C2S
    for field, name in named:
        assert ":" not in name and name in tables[field], (field, name)
    assert {e.get("prepare") for e in entries} <= set(PREPARERS)


def test_an_unknown_builder_fails_the_item_naming_the_known_ones(tmp_path):
    from biotool.stagebuild.build import stage

    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "models.toml").write_text('[[model]]\nname = "m"\nset = "demo"\n'
                                      'builder = "biotool.singlecell.demo_model:build"\n')
    with pytest.raises(StagingError, match=r"^model/m: model m: builder 'biotool\.singlecell"
                                           r"\.demo_model:build' is none of "
                                           r"demo-celltypist-model, demo-pbmc-heldout-sample"):
        stage(refs, tmp_path / "home", ["demo"])
    assert not (tmp_path / "home" / "models" / "m").exists()


def test_a_fetched_item_holds_its_manifest_entry_frozen(tmp_path):
    from biotool.cache import sha256_tree
    from biotool.stagebuild.build import fetch_item
    from biotool.staging.manifest import ManifestEntry

    src = tmp_path / "x.fa"
    src.write_text(">x\nACGT\n")
    fields = {"name": "x", "source": str(src), "sha256": sha256_tree(src)}
    entry = ManifestEntry("reference", "test.toml", fields)
    fetched = fetch_item(entry, tmp_path, tmp_path / "home")
    with pytest.raises(TypeError):
        fetched.entry["name"] = "y"  # type: ignore[index]
    fields["name"] = "y"  # the loader's table, changed after: the entry keeps its copy
    assert fetched.entry is entry and entry["name"] == "x" and entry.key == "reference/x"
