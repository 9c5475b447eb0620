"""A Hugging Face model is staged only with every file it needs: config, weights in a format
transformers loads (one file or every shard of an index), and a tokenizer; and only when the
model loads and continues a real C2S prompt."""

from __future__ import annotations

import json
import shutil

import pytest

REPO = __import__("pathlib").Path(__file__).resolve().parents[3]
C2S = "C2S-Pythia-410m-cell-type-prediction"


def _stage_repo(folder, tmp_path, monkeypatch):
    from biotool_testing.fake_sources import FakeSources, write_hf_repo

    from biotool.staging import StagingError
    from biotool.stagebuild import build

    root = tmp_path / "src"
    write_hf_repo(root, f"vandijklab/{C2S}", folder)
    monkeypatch.setenv("BIOTOOL_FETCH_BACKOFF", "0.01")
    with FakeSources(root) as srv:
        monkeypatch.setenv("BIOTOOL_SOURCE_MIRROR", srv.url)
        with pytest.raises(StagingError) as err:
            build.stage(REPO / "refs", tmp_path / "home", ["production"], tofu=True, only=[C2S])
    msg = str(err.value)
    assert f"model/{C2S}" in msg and "\n" not in msg
    assert not (tmp_path / f"home/models/{C2S}").exists()  # nothing half-staged
    inv = json.loads((tmp_path / "home/staged.json").read_text())
    assert inv["items"][f"model/{C2S}"]["error"]
    return msg


def test_a_repository_without_weights_is_refused_naming_what_it_holds(c2s_folder, tmp_path,
                                                                      monkeypatch):
    no_weights = tmp_path / "no-weights"
    shutil.copytree(c2s_folder, no_weights)
    for w in no_weights.glob("*.safetensors"):
        w.unlink()
    msg = _stage_repo(no_weights, tmp_path, monkeypatch)
    assert "no model weights among the staged files" in msg and "config.json" in msg
    assert "widen the manifest's include" in msg


def test_weights_that_do_not_load_are_refused(c2s_folder, tmp_path, monkeypatch):
    broken = tmp_path / "broken"
    shutil.copytree(c2s_folder, broken)
    (broken / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}garbage")
    msg = _stage_repo(broken, tmp_path, monkeypatch)
    assert "does not load or answer" in msg


def test_a_shard_index_must_have_every_shard(c2s_folder, tmp_path):
    from biotool.staging import StagingError
    from biotool.stagebuild.hfmodel import check_weights

    sharded = tmp_path / "sharded"
    shutil.copytree(c2s_folder, sharded)
    (sharded / "model.safetensors").rename(sharded / "model-00001-of-00002.safetensors")
    (sharded / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
        "a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    with pytest.raises(StagingError, match="model-00002-of-00002.safetensors"):
        check_weights(sharded)
    (sharded / "model-00002-of-00002.safetensors").write_bytes(b"")
    assert check_weights(sharded) == ["model.safetensors.index.json"]


def test_the_real_tiny_model_passes_and_answers(c2s_folder):
    from biotool.stagebuild.hfmodel import check_hf_model

    found = check_hf_model(c2s_folder, {"check": "cell2sentence-prompt"})
    assert found["tokenizer_probe_ids"] > 20
    probe = found["model_probe"]
    assert probe["weights"] == ["model.safetensors"] and isinstance(probe["answer"], str)


def test_an_hf_model_item_without_its_check_is_refused(c2s_folder):
    from biotool.staging import StagingError
    from biotool.stagebuild.hfmodel import check_hf_model

    with pytest.raises(StagingError, match="names its check"):
        check_hf_model(c2s_folder, {})
