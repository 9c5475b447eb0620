"""Pin once against the (fake) sources, then stage from the lock: every byte checked."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

ITEMS = ["Healthy_COVID19_PBMC", "Immune_All_High", "Human_Lung_Atlas",
         "C2S-Pythia-410m-cell-type-prediction", "GRCh38", "human-gene-annotation",
         "ref_viruses_rep_genomes", "human-gtf", "swissprot", "k2_viral"]  # as conftest.ITEMS


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
        assert staging.verify(item) == [], item.name
        assert item.origin == "image" and not item.tofu
    # No work folders or partial downloads left.
    assert not list(prod_home.rglob("*.part")) and not list(prod_home.rglob(".*.staging"))


def test_staged_celltypist_models_are_real_and_load(prod_home, use_home):
    from biotool.singlecell import celltypist_panel, models

    use_home(prod_home)
    panel = models.celltypist_panel("human")
    assert [r.name for r in panel] == ["Healthy_COVID19_PBMC", "Human_Lung_Atlas",
                                          "Immune_All_High"]
    for rec in panel:
        model = celltypist_panel.load_model(rec.path())
        assert len(model.cell_types) >= 5 and len(model.features) > 100


def test_the_genome_is_plain_fasta_with_a_faidx(prod_home, use_home, world):
    from biotool import staging

    use_home(prod_home)
    _, truth = world
    rec = staging.find("reference", "hg38")
    fasta = rec.path()
    assert fasta.read_bytes()[:1] == b">"
    fai = rec.path("faidx").read_text().split("\t")
    assert fai[0] == "chr17" and int(fai[1]) == len(truth["genomes"]["GRCh38"]["sequence"])
    # bwa's index is staged too: a human genome's takes an hour, past any command's --timeout,
    # so NCBI's own is used, once it matches the FASTA.
    assert (rec.path("bwa") / "reference.bwt").is_file()
    assert rec.extra["index_origin"]["bwa"].startswith("prebuilt: the publisher's index, with the "
                                                 "FASTA's 1 sequence names and lengths")


def test_the_c2s_model_stages_with_a_tokenizer_that_encodes(prod_home, use_home):
    from biotool.singlecell import models

    use_home(prod_home)
    found = models.c2s_model()
    assert (found.weights / "model.safetensors").is_file()
    rec = models.staging.find("model", "c2s-celltype")
    assert rec.extra["tokenizer_probe_ids"] > 20 and rec.extra["pin"]["revision"]


def test_the_lock_records_the_md5_ncbi_lists_beside_each_genome_file(pinned, world):
    import hashlib

    root, _ = world
    pins = {p["name"]: p for p in tomllib.loads(pinned.read_text())["pin"]}
    for name in ("GRCh38", "human-gene-annotation"):
        for f in pins[name]["files"]:
            served = root / f["url"].split("://", 1)[1]
            assert f["md5"] == hashlib.md5(served.read_bytes()).hexdigest(), name
    assert [f["path"] for f in pins["GRCh38"]["files"]] == ["GRCh38.fna.gz", "prebuilt-bwa.tar.gz"]


def _one_item_refs(tmp_path, source: str):
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "annotations.toml").write_text(
        '[[database]]\nname = "daily-genes"\nset = "production"\nformat = "gene-table"\n'
        f'reference = "GRCh38"\nprepare = "gene-table"\nsource = "{source}"\n')
    return refs


def test_pinning_refuses_a_file_its_host_rewrites_in_place_naming_the_fixed_copy(server, tmp_path):
    from biotool.staging import StagingError
    from biotool.stagebuild import build, pins

    daily = "https://ftp.ncbi.nlm.nih.gov/gene/DATA/GENE_INFO/Mammalia/Homo_sapiens.gene_info.gz"
    refs = _one_item_refs(tmp_path, daily)
    lock = tmp_path / "pins.lock.toml"
    try:
        pins.pin(refs, ["production"], lock)
        raise AssertionError("pinned a file rewritten daily")
    except StagingError as exc:
        msg = str(exc)
    assert f"database daily-genes: {daily} is rewritten in place" in msg
    assert "recalculated daily" in msg and "annotation_releases/<assembly>-RS_<release>" in msg
    assert server.requests == [] and "daily-genes" not in lock.read_text()
    # Trust on first use takes the same rule: nothing is staged from it.
    with pytest.raises(StagingError, match="is rewritten in place"):
        build.stage(refs, tmp_path / "home", ["production"], lock=lock, tofu=True)
    assert not (tmp_path / "home/databases/daily-genes").exists()


def test_no_production_source_is_one_its_host_rewrites_in_place():
    from biotool.staging import load_manifests
    from biotool.stagebuild import pins

    refs = Path(__file__).resolve().parents[3] / "refs"
    urls = [u for e in load_manifests(refs) if e.get("set") == "production"
            for u in pins.sources(e)]
    assert len(urls) >= 10
    assert [u for u in urls if pins.rewritten(u)] == []
    # ...and the rules do catch what the manifests used to name.
    for old in ("https://ftp.ncbi.nlm.nih.gov/blast/db/ref_viruses_rep_genomes.tar.gz",
                "https://ftp.ncbi.nlm.nih.gov/genomes/all/GCF/000/001/635/GCF_000001635.27_GRCm39/"
                "GCF_000001635.27_GRCm39_genomic.gff.gz",
                "https://ftp.ncbi.nlm.nih.gov/refseq/M_musculus/annotation_releases/current/x.gff.gz",
                "https://ftp.ensembl.org/pub/current_gtf/homo_sapiens/x.gtf.gz",
                "https://huggingface.co/org/repo/resolve/main/model.safetensors"):
        assert pins.rewritten(old), old


def test_a_file_missing_from_its_folders_md5_list_is_refused_at_pin_time(server, tmp_path, world):
    from biotool.staging import StagingError
    from biotool.stagebuild import pins

    root, _ = world
    gff = ("https://ftp.ncbi.nlm.nih.gov/refseq/H_sapiens/annotation/annotation_releases/"
           "GCF_000001405.40-RS_2024_08/GCF_000001405.40_GRCh38.p14_genomic.gff.gz")
    listing = root / gff.split("://", 1)[1].rsplit("/", 1)[0] / "md5checksums.txt"
    saved = listing.read_text()
    listing.write_text("".join(l + "\n" for l in saved.splitlines() if "genomic.gff" not in l))
    try:
        with pytest.raises(StagingError, match=r"md5checksums.txt does not list "
                                               r"GCF_000001405.40_GRCh38.p14_genomic.gff.gz"):
            pins.pin(Path(__file__).resolve().parents[3] / "refs", ["production"],
                     tmp_path / "lock.toml", only=["human-gene-annotation"])
        listing.write_text(saved.replace(saved.split()[0], "0" * 32))
        with pytest.raises(StagingError, match="its publisher lists 0{32}: refused"):
            pins.pin(Path(__file__).resolve().parents[3] / "refs", ["production"],
                     tmp_path / "lock.toml", only=["human-gene-annotation"])
    finally:
        listing.write_text(saved)


def _bwa_tarball(tmp_path, name: str, fasta_text: str) -> Path:
    import subprocess
    import tarfile

    d = tmp_path / name
    d.mkdir()
    (d / "x.fna").write_text(fasta_text)
    subprocess.run(["bwa", "index", str(d / "x.fna")], check=True, capture_output=True)
    tarball = tmp_path / f"{name}.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        for s in (".amb", ".ann", ".bwt", ".pac", ".sa"):
            tar.add(d / f"x.fna{s}", arcname=f"x.fna{s}")
    return tarball


@pytest.mark.parametrize("other,why", [
    (">chr2 another\n{seq}\n", "names other sequences or lengths than the FASTA"),
    (">chr1 same name, other bases\n{other}\n", "placed 0 of 20 reads"),
])
def test_a_prebuilt_index_of_another_sequence_is_not_used(tmp_path, other, why):
    import random

    from biotool.stagebuild.prebuilt import use_prebuilt

    rng = random.Random(5)
    seq = "".join(rng.choice("ACGT") for _ in range(20000))
    diff = "".join(rng.choice("ACGT") for _ in range(20000))
    fasta = tmp_path / "ref.fa"
    fasta.write_text(f">chr1 test\n{seq}\n")
    tarball = _bwa_tarball(tmp_path, "other", other.format(seq=seq, other=diff))
    out = tmp_path / "bwa"
    said = use_prebuilt("bwa", tarball, fasta, out)
    assert said.startswith("built here: ") and why in said, said
    assert not out.exists() and not tarball.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    # ...and the index of this very FASTA is used.
    same = _bwa_tarball(tmp_path, "same", f">chr1 test\n{seq}\n")
    assert use_prebuilt("bwa", same, fasta, out).startswith("prebuilt: ")
    assert sorted(p.name for p in out.iterdir()) == [f"reference{s}" for s in
                                                     (".amb", ".ann", ".bwt", ".pac", ".sa")]
