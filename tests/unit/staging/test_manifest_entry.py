"""A manifest entry is read once by the loader into a frozen ManifestEntry with its key."""

from __future__ import annotations

import pytest

from biotool.staging import REPO_REFS, load_manifests
from biotool.staging.manifest import ManifestEntry, item_key


def test_the_loader_gives_frozen_entries_with_their_key():
    entries = load_manifests(REPO_REFS)
    assert entries and all(isinstance(e, ManifestEntry) for e in entries)
    keys = [e.key for e in entries]
    assert len(set(keys)) == len(keys)  # the key names one item
    for e in entries:
        assert e.key == item_key(e["kind"], e["name"]) == f"{e.kind}/{e.name}"
        assert e.manifest.endswith(".toml") and e["manifest"] == e.manifest
        with pytest.raises(TypeError):
            e["name"] = "other"  # type: ignore[index]


def test_an_entry_reads_as_the_mapping_the_manifest_declares():
    e = ManifestEntry("reference", "references.toml", {"name": "x", "source": "x.fa"})
    assert list(e) == ["kind", "manifest", "name", "source"] and len(e) == 4
    assert dict(e) == {"kind": "reference", "manifest": "references.toml", "name": "x",
                       "source": "x.fa"}
    assert e.get("sha256") is None and "source" in e
