"""Pin once against the (fake) sources, then stage from the lock: every byte checked."""

from __future__ import annotations

import json
import tomllib

ITEMS = ["Healthy_COVID19_PBMC", "Immune_All_High", "Human_Lung_Atlas",
         "C2S-Pythia-410m-cell-type-prediction", "GRCh38", "human-gene-annotation",
         "ref_viruses_rep_genomes"]  # as conftest.ITEMS


def test_the_lock_records_resolved_urls_digests_and_the_hf_revision(pinned, world):
    _, truth = world
    lock = tomllib.loads(pinned.read_text())
    pins = {p["name"]: p for p in lock["pin"]}
    assert set(pins) == set(ITEMS)
    covid = pins["Healthy_COVID19_PBMC"]
    # The index entry resolved to the versioned .pkl URL; the index itself is only the source.
    assert covid["source"].endswith("/models.json")
    assert covid["files"][0]["url"].endswith("/v2/Healthy_COVID19_PBMC.pkl")
    hf = pins["C2S-Pythia-410m-cell-type-prediction"]
    assert hf["revision"] == truth["hf_revision"]
    assert all(f"/resolve/{truth['hf_revision']}/" in f["url"] for f in hf["files"])
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {f["path"] for f in hf["files"]}
    blast = pins["ref_viruses_rep_genomes"]
    assert [f["path"] for f in blast["files"]] == ["ref_viruses_rep_genomes.tar.gz", "taxdb.tar.gz"]
    assert all(len(f["md5"]) == 32 and len(f["sha256"]) == 64 and f["size"] > 0
               for f in blast["files"])
    # Real URLs only: the mirror never leaks into the lock.
    assert "127.0.0.1" not in pinned.read_text()


def test_staging_from_the_lock_stages_every_item(prod_home, use_home):
    from biotool import staging

    use_home(prod_home)
    inv = json.loads((prod_home / "staged.json").read_text())
    assert sorted(i["name"] for i in inv["items"].values() if not i.get("error")) == sorted(ITEMS)
    for item in staging.staged_items():
        assert staging.verify(item) == [], item["name"]
        assert item["origin"] == "image" and not item.get("tofu")
    # No work folders or partial downloads left.
    assert not list(prod_home.rglob("*.part")) and not list(prod_home.rglob(".*.staging"))


def test_staged_celltypist_models_are_real_and_load(prod_home, use_home):
    from biotool.singlecell import celltypist_panel, models

    use_home(prod_home)
    panel = models.celltypist_panel("human")
    assert [r["name"] for r in panel] == ["Healthy_COVID19_PBMC", "Human_Lung_Atlas",
                                          "Immune_All_High"]
    for rec in panel:
        model = celltypist_panel.load_model(models.staging.path_of(rec))
        assert len(model.cell_types) >= 5 and len(model.features) > 100


def test_the_genome_is_plain_fasta_with_a_faidx(prod_home, use_home, world):
    from biotool import staging

    use_home(prod_home)
    _, truth = world
    rec = staging.find("reference", "hg38")
    fasta = staging.path_of(rec)
    assert fasta.read_bytes()[:1] == b">"
    fai = staging.path_of(rec, "faidx").read_text().split("\t")
    assert fai[0] == "chr17" and int(fai[1]) == len(truth["genomes"]["GRCh38"]["sequence"])
    # bwa's index is staged too: a human genome's takes an hour, past any command's --timeout.
    assert (staging.path_of(rec, "bwa") / "reference.bwt").is_file()


def test_the_c2s_model_stages_with_a_tokenizer_that_encodes(prod_home, use_home):
    from biotool.singlecell import models

    use_home(prod_home)
    found = models.c2s_model()
    assert (found["weights"] / "model.safetensors").is_file()
    rec = models.staging.find("model", "c2s-celltype")
    assert rec["tokenizer_probe_ids"] > 20 and rec["pin"]["revision"]
