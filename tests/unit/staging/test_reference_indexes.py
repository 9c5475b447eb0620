"""A reference's aligner indexes as staging builds them: bwa's as one folder with one sha256,
checked like any staged file; minimap2's sr index refused (short reads align with bwa)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PHIX = REPO / "refs" / "demo" / "genomes" / "phiX174.fasta"


def _refs(tmp_path: Path, indexes: list[str]) -> Path:
    refs = tmp_path / "refs"
    refs.mkdir()
    shutil.copy(PHIX, refs / "phix.fasta")
    digest = hashlib.sha256(PHIX.read_bytes()).hexdigest()
    (refs / "references.toml").write_text(
        f'[[reference]]\nname = "phix"\nset = "demo"\nsource = "phix.fasta"\n'
        f'sha256 = "{digest}"\nindexes = {json.dumps(indexes)}\n')
    return refs


def test_the_bwa_index_is_one_folder_checked_by_its_sha256(tmp_path, monkeypatch):
    from biotool import staging
    from biotool.stagebuild.build import stage

    home = tmp_path / "home"
    stage(_refs(tmp_path, ["faidx", "bwa"]), home, ["demo"])
    monkeypatch.setenv("BIOTOOL_HOME", str(home))
    monkeypatch.delenv("BIOTOOL_SITE_DIR", raising=False)
    rec = staging.find("reference", "phix")
    folder = rec.path("bwa")
    assert folder == home / "references" / "phix" / "bwa" and folder.is_dir()
    assert (folder / "reference.bwt").is_file()
    assert staging.verify(rec) == []
    (folder / "reference.sa").write_bytes(b"tampered")
    assert staging.verify(rec) == [f"bwa: {folder} does not match its recorded sha256"]


def test_a_minimap2_sr_index_is_refused_at_staging(tmp_path):
    from biotool.staging import StagingError
    from biotool.stagebuild.build import stage

    with pytest.raises(StagingError, match=r'^reference/phix: index "minimap2:sr" '
                                                   r"would never be used: short reads align "
                                                   r'with bwa; stage "bwa" instead$'):
        stage(_refs(tmp_path, ["faidx", "minimap2:sr"]), tmp_path / "home", ["demo"])
