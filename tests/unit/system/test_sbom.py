"""The SBOM (biotool.system.sbom) from a small synthetic image root: every Debian package dpkg
lists as installed, every venv distribution with its wheel's sha256, every R package, every
staged item with its sources, the project; valid CycloneDX 1.5 by the published schema (the
one cyclonedx-python-lib ships); the same inputs give the same bytes."""

from __future__ import annotations

import json

import pytest

from biotool.system import sbom

STATUS = """Package: tini
Status: install ok installed
Architecture: amd64
Version: 0.19.0-1+b3
Source: tini (0.19.0-1)

Package: gone
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0

Package: libfoo1
Status: install ok installed
Architecture: amd64
Version: 1:2.3+dfsg-4
Description: a library
 with a continued description line
"""


@pytest.fixture
def root(tmp_path, monkeypatch):
    (tmp_path / "status").write_text(STATUS)
    site = tmp_path / "site"
    dist = site / "demo_pkg-1.2.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.2\n")
    (tmp_path / "wheels.sha256").write_text("ab" * 32 + "  demo_pkg-1.2-py3-none-any.whl\n")
    lib = tmp_path / "rlib"
    for name, version, repo in (("limma", "3.54.1", ""), ("dplyr", "1.0.10", "CRAN"),
                                ("translations", "4.2.2", "")):
        (lib / name).mkdir(parents=True)
        (lib / name / "DESCRIPTION").write_text(
            f"Package: {name}\nVersion: {version}\n" + (f"Repository: {repo}\n" if repo else ""))
        if name != "translations":  # R's own folder: a DESCRIPTION, never installed metadata
            (lib / name / "Meta").mkdir()
            (lib / name / "Meta" / "package.rds").write_bytes(b"")
    home = tmp_path / "home"
    (home / "manifests").mkdir(parents=True)
    (home / "manifests" / "databases.toml").write_text(
        '[[database]]\nname = "demo_panel"\nset = "demo"\nsource = ["demo/a.fasta"]\n'
        f'sha256 = ["{"cd" * 32}"]\n')
    (home / "staged.json").write_text(json.dumps({"sets": ["demo"], "items": {
        "database/demo_panel": {"kind": "database", "name": "demo_panel", "set": "demo",
                                "title": "Demo panel", "sha256": "ef" * 32,
                                "files": {"main": {"path": "databases/demo_panel",
                                                   "sha256": "ef" * 32}}},
        "model/big": {"kind": "model", "name": "big", "set": "production", "sha256": "01" * 32,
                      "files": {"main": {"path": "models/big/m.pkl", "sha256": "01" * 32}},
                      "pin": {"pinned": "2026-01-01", "files": [
                          {"url": "https://example.org/m.pkl", "sha256": "02" * 32,
                           "size": 3, "path": "m.pkl"}]}},
        "model/broken": {"kind": "model", "name": "broken", "error": "failed", "files": {}}}}))
    monkeypatch.setattr(sbom, "DPKG_STATUS", tmp_path / "status")
    monkeypatch.setattr(sbom, "R_LIBRARIES", (lib,))
    monkeypatch.setattr(sbom, "PROJECT_WHEEL", tmp_path / "none")
    real = sbom.python_packages
    monkeypatch.setattr(sbom, "python_packages",
                        lambda: real(site=site, wheels=tmp_path / "wheels.sha256"))
    return home


def test_components(root):
    doc = sbom.document({"image": "biotool-sandbox:x", "revision": "abc",
                         "created": "2026-01-01T00:00:00Z"}, root)
    by_ref = {c["bom-ref"]: c for c in doc["components"]}
    assert by_ref["deb:tini:amd64"]["version"] == "0.19.0-1+b3"
    assert by_ref["deb:libfoo1:amd64"]["purl"] == \
        "pkg:deb/debian/libfoo1@1%3A2.3%2Bdfsg-4?arch=amd64&distro=debian-12"
    assert not any(r.startswith("deb:gone") for r in by_ref)  # config-files only: not installed
    assert by_ref["pypi:demo-pkg"]["hashes"] == [{"alg": "SHA-256", "content": "ab" * 32}]
    assert by_ref["r:dplyr"]["purl"] == "pkg:cran/dplyr@1.0.10"
    assert "purl" not in by_ref["r:limma"]
    assert "r:translations" not in by_ref  # what installed.packages() does not list
    panel = by_ref["staged:database/demo_panel"]
    assert {"name": "biotool:source", "value": f"refs/demo/a.fasta sha256:{'cd' * 32}"} \
        in panel["properties"]
    big = by_ref["staged:model/big"]
    assert big["type"] == "machine-learning-model"
    assert big["externalReferences"][0]["hashes"][0]["content"] == "02" * 32
    assert "staged:model/broken" not in by_ref
    assert doc["metadata"]["timestamp"] == "2026-01-01T00:00:00Z"
    assert doc["dependencies"][0]["dependsOn"] == [c["bom-ref"] for c in doc["components"]]


def test_valid_cyclonedx_and_deterministic(root):
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    build = {"image": "biotool-sandbox:x", "revision": "abc", "created": "2026-01-01T00:00:00Z"}
    one = json.dumps(sbom.document(build, root), sort_keys=True)
    assert JsonStrictValidator(SchemaVersion.V1_5).validate_str(one) is None
    assert json.dumps(sbom.document(build, root), sort_keys=True) == one
    # The schema is not a rubber stamp: a component without its name fails it.
    broken = json.loads(one)
    del broken["components"][0]["name"]
    assert JsonStrictValidator(SchemaVersion.V1_5).validate_str(json.dumps(broken)) is not None
