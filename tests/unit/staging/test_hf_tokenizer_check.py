"""A Hugging Face model whose tokenizer cannot encode a real prompt is refused at staging."""

from __future__ import annotations

import json
import shutil

import pytest

REPO = __import__("pathlib").Path(__file__).resolve().parents[3]


def test_a_repository_without_vocabulary_is_refused_naming_the_item(c2s_folder, tmp_path,
                                                                     monkeypatch):
    from biotool_testing.fake_sources import FakeSources, write_hf_repo

    from biotool.staging import StagingError
    from biotool.stagebuild import build

    weights_only = tmp_path / "weights-only"
    shutil.copytree(c2s_folder, weights_only)
    # A tokenizer config that names a fast tokenizer but ships no vocabulary at all.
    (weights_only / "tokenizer.json").unlink()
    root = tmp_path / "src"
    write_hf_repo(root, "vandijklab/C2S-Pythia-410m-cell-type-prediction", weights_only)
    monkeypatch.setenv("BIOTOOL_FETCH_BACKOFF", "0.01")
    with FakeSources(root) as srv:
        monkeypatch.setenv("BIOTOOL_SOURCE_MIRROR", srv.url)
        with pytest.raises(StagingError) as err:
            build.stage(REPO / "refs", tmp_path / "home", ["production"], tofu=True,
                        only=["C2S-Pythia-410m-cell-type-prediction"])
    msg = str(err.value)
    assert "model/C2S-Pythia-410m-cell-type-prediction" in msg and "tokenizer" in msg
    assert "\n" not in msg
    assert not (tmp_path / "home/models/C2S-Pythia-410m-cell-type-prediction").exists()
    inv = json.loads((tmp_path / "home/staged.json").read_text())
    assert inv["items"]["model/C2S-Pythia-410m-cell-type-prediction"]["error"]


def test_the_probe_encodes_with_the_real_tokenizer(c2s_folder):
    from biotool.singlecell.c2s import check_tokenizer

    assert check_tokenizer(c2s_folder) > 20
