"""A staged item is typed (biotool.staging.item.StagedItem): every record staging writes reads
back into it and out again key for key, and its `usable` is the one rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biotool import staging
from biotool.staging.item import StagedFile, StagedItem

# A production record as build writes one: its pin, where it was fetched from, trusted on
# first use, and keys no family reads (kept in extra).
PINNED = {
    "kind": "database", "name": "swissprot", "set": "production", "manifest": "databases.toml",
    "aliases": ["uniprot-sprot"], "title": "Swiss-Prot", "molecule": "protein",
    "indexes": ["blastdb"], "prepare": "blastdb-tar", "use": "blastp -db {blastdb}/db",
    "tofu": True, "fetched_from": ["https://example.org/sprot.tar.gz"],
    "pin": {"pinned": "2026-01-01", "files": [{"url": "https://example.org/sprot.tar.gz",
                                               "size": 3, "sha256": "ab" * 32}]},
    "files": {"main": {"path": "databases/swissprot/db", "sha256": "cd" * 32},
              "blastdb": {"path": "databases/swissprot/db", "sha256": "cd" * 32}},
    "sha256": "cd" * 32,
}
# What `--keep-going` records of an item that did not stage (its set may be null).
FAILED = {"kind": "reference", "name": "GRCh38", "set": None,
          "error": "staging failed at build time: download refused", "files": {}}


def _item(record: dict, origin: str = "image", root: Path = Path("/opt/biotool")) -> StagedItem:
    return StagedItem.from_record(record, origin, root)


@pytest.mark.parametrize("record", [PINNED, FAILED], ids=["pinned", "failed"])
def test_a_record_reads_back_key_for_key(record):
    item = _item(record)
    assert item.record() == record
    assert json.dumps(item.record(), sort_keys=True) == json.dumps(record, sort_keys=True)


def test_every_demo_record_reads_back_as_staged_json_holds_it(staged_home):
    records = json.loads((staged_home / staging.INVENTORY).read_text())["items"]
    assert len(records) >= 10
    for key, record in records.items():
        item = _item(record, root=staged_home)
        assert item.record() == record, key
        assert f"{item.kind}/{item.name}" == key


def test_what_families_read_is_typed():
    item = _item(PINNED, "site", Path("/site"))
    assert item.files["blastdb"] == StagedFile("databases/swissprot/db", "cd" * 32)
    assert item.path("blastdb") == Path("/site/databases/swissprot/db")
    assert item.path() == Path("/site/databases/swissprot/db")
    assert item.names == ("swissprot", "uniprot-sprot")
    assert item.aliases == ("uniprot-sprot",) and item.fetched_from == (
        "https://example.org/sprot.tar.gz",)
    assert item.use_line() == "blastp -db /site/databases/swissprot/db/db"
    assert (item.molecule, item.origin, item.tofu) == ("protein", "site", True)
    assert item.organism is None and item.taxa is None
    assert item.extra["prepare"] == "blastdb-tar"
    # Where it came from is the merge's, never written into the record.
    assert "origin" not in item.record() and "root" not in item.record()


def test_the_item_cannot_be_changed():
    item = _item(PINNED)
    with pytest.raises(AttributeError):
        item.name = "other"
    with pytest.raises(TypeError):
        item.files["main"] = StagedFile("x", "y")


F = {"path": "x", "sha256": "0" * 64}


@pytest.mark.parametrize("record, ok", [
    ({"files": {}}, False),
    ({"files": {"main": F}, "error": "failed"}, False),
    ({"files": {"main": F}, "error": ""}, True),
    ({"files": {"main": F}}, True),
])
def test_the_usable_rule(record, ok):
    item = _item({"kind": "reference", "name": "r", **record})
    assert item.usable is ok
    assert staging.usable(item) is ok


def test_nothing_found_is_not_usable():
    assert staging.usable(None) is False


def test_the_inventory_hands_out_typed_items(staged_home, monkeypatch):
    monkeypatch.setenv("BIOTOOL_HOME", str(staged_home))
    monkeypatch.delenv("BIOTOOL_SITE_DIR", raising=False)
    found = staging.find("reference", "SARS-CoV-2")
    assert isinstance(found, StagedItem) and found.name == "MN908947.3"
    assert (found.origin, found.root) == ("image", staged_home)
    assert found.path("faidx").is_file() and staging.verify(found) == []
    assert all(isinstance(i, StagedItem) for i in staging.staged_items())
