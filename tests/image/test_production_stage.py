"""An image built with BIOTOOL_STAGE=demo,production against a local fake of the production
sources (biotool_testing/fake_sources.py on 127.0.0.1, `docker build --network host`): every
production item stages, `biotool list` shows them, `celltype --reference auto` scores a real panel, and
featureCounts, kraken2, blastp and diamond give real answers on the toolbox's staged data.

The CellTypist models served are real CellTypist models trained here on scanpy's PBMCs; the
C2S model is a tiny real transformers model; genome, BLAST db and gene sources are KB-sized
but shaped like NCBI's; the Kraken 2 and protein BLAST databases are built by the real tools
from real viral genomes and proteins. The build uses BIOTOOL_TOFU=1 (the committed lock cannot pin sources
this host cannot reach); the unit tests in tests/unit/staging cover staging from a lock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from biotool_testing.images import EGRESS_IMAGE, SANDBOX_IMAGE, Runner
from biotool_testing.paths import REPO

PRODUCTION_IMAGE = os.environ.get("BIOTOOL_PRODUCTION_IMAGE", f"{SANDBOX_IMAGE}-production")
LINEAGE = {"CD14+ Monocyte": "myeloid", "Dendritic": "myeloid", "CD56+ NK": "NK",
           "CD19+ B": "B", "CD34+": "progenitor"}


def _train_panel(d: Path) -> dict[str, Path]:
    """Real CellTypist models for every production CellTypist item: a coarse-lineage PBMC
    model for Healthy_COVID19_PBMC (it should win on PBMCs), the fine PBMC labels for
    Immune_All_High, gene-permuted models for other tissues, mouse-named ones for mouse."""
    import numpy as np

    from biotool.singlecell.demo_model import pbmc_counts, train
    from biotool.staging import load_manifests

    counts = pbmc_counts()
    sub = counts[np.random.default_rng(1).permutation(counts.n_obs)[:350]].copy()
    out = {}
    entries = [e for e in load_manifests(REPO / "refs") if e.get("set") == "production"
               and e.get("framework") == "celltypist"]
    for seed, e in enumerate(entries, start=10):
        data = sub.copy()
        if e["name"] == "Healthy_COVID19_PBMC":
            data.obs["bulk_labels"] = [LINEAGE.get(x, "T") for x in data.obs["bulk_labels"]]
        elif e["name"] != "Immune_All_High":
            perm = np.random.default_rng(seed).permutation(data.n_vars)
            data.var_names = list(np.asarray(sub.var_names)[perm])
        if e["organism"] == "mouse":
            data.var_names = [n[:1].upper() + n[1:].lower() for n in data.var_names]
        out[e["name"]] = d / f"{e['name']}.pkl"
        train(data, out=out[e["name"]])
    return out


@pytest.fixture(scope="module")
def production(docker_client, tmp_path_factory):
    from biotool_testing.fake_sources import FakeSources, populate

    from biotool.singlecell import tiny_c2s

    os.environ.setdefault("CELLTYPIST_FOLDER", str(tmp_path_factory.mktemp("celltypist")))
    models = _train_panel(tmp_path_factory.mktemp("ct"))
    c2s = tmp_path_factory.mktemp("c2s") / "repo"
    tiny_c2s.build(c2s, ["MALAT1", "TMSB4X", "B2M", "CD3E", "LYZ", "MS4A1", "NKG7"])
    root = tmp_path_factory.mktemp("sources")
    truth = populate(root, REPO / "refs", tmp_path_factory.mktemp("work"), models, c2s)
    with FakeSources(root) as srv:
        proc = _build(srv)
        served = list(srv.requests)
    if proc.returncode != 0:
        pytest.fail(f"make image (production) failed:\n{proc.stdout[-3000:]}\n"
                    f"{proc.stderr[-3000:]}", pytrace=False)
    return {"runner": Runner(docker_client, PRODUCTION_IMAGE), "truth": truth,
            "log": proc.stdout + proc.stderr, "served": served, "root": root, "port": srv.port}


def _build(srv) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "image", f"BIOTOOL_IMAGE={PRODUCTION_IMAGE}", f"BIOTOOL_EGRESS_IMAGE={EGRESS_IMAGE}",
         "BIOTOOL_STAGE=demo,production", "BIOTOOL_TOFU=1", f"BIOTOOL_SOURCE_MIRROR={srv.url}",
         "BUILD_NETWORK=host"],
        cwd=REPO, capture_output=True, text=True, timeout=3600)


def test_the_production_data_is_in_layers_of_its_own(production, docker_client):
    import re

    # The classic builder names a COPY --from layer by its content: "COPY dir:<sha> in DEST".
    copies = [l for l in docker_client.api.history(PRODUCTION_IMAGE)
              if re.search(r"COPY dir:\w+ in /opt/biotool/ *$", l.get("CreatedBy", ""))]
    assert len(copies) == 8  # one COPY per layer folder, used or not
    log = production["log"]
    for n, holds in enumerate(["reference GRCh38", "reference GRCh38 bwa index", "reference GRCm39",
                               "reference GRCm39 bwa index", "databases", "models", "inventory"],
                              start=1):
        assert f"staging: layer {n}: {holds}, " in log, holds


def test_a_code_change_rebuilds_the_image_without_staging_any_production_data(production):
    """A one-line change in entrypoints/biotool/, then the same build: the data stage is
    cached (it sees only refs/, the lock and the staging code), so the fake sources see no
    request at all, and the image still holds every production item."""
    from biotool_testing.fake_sources import FakeSources

    from biotool.staging import load_manifests

    changed = REPO / "entrypoints" / "biotool" / "system" / "doctor.py"
    original = changed.read_text()
    changed.write_text(original + "# a code change that must not stage the production data\n")
    try:
        with FakeSources(production["root"], port=production["port"]) as srv:
            t0 = time.monotonic()
            proc = _build(srv)
            took = time.monotonic() - t0
            served = list(srv.requests)
    finally:
        changed.write_text(original)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = proc.stdout + proc.stderr
    print(f"\nproduction rebuild after a code change: {took:.0f} s, {len(served)} requests")
    production_keys = [e.key for e in load_manifests(REPO / "refs")
                       if e.get("set") == "production"]
    assert served == [] and "staging: layer" not in log
    assert [k for k in production_keys if f"staging {k}:" in log] == []
    r = production["runner"].biotool("list")
    prod = [i for i in r.json["items"] if i["set"] == "production"]
    assert len(prod) >= 18 and all(i["usable"] for i in prod)


def test_the_build_summary_says_what_was_staged(production):
    log = production["log"]
    assert "staging: summary:" in log and "not staged " not in log
    assert "trust on first use: add these lines to refs/pins.lock.toml" in log
    # The CellTypist index was read, then the versioned .pkl it names.
    paths = [p for p, _ in production["served"]]
    assert "/celltypist.cog.sanger.ac.uk/models/models.json" in paths
    assert "/celltypist.cog.sanger.ac.uk/models/Healthy_COVID19_PBMC/v2/Healthy_COVID19_PBMC.pkl" in paths


def test_biotool_list_shows_every_production_item_staged(production):
    r = production["runner"].biotool("list")
    assert r.code == 0, r
    items = r.json["items"]
    prod = [i for i in items if i["set"] == "production"]
    assert len(prod) >= 18
    assert [i["name"] for i in prod if not i["usable"]] == []
    assert all(i["origin"] == "image" and i.get("tofu") for i in prod)
    assert r.json["not_staged"] == 0


def test_celltype_auto_scores_a_panel_with_a_real_margin(production):
    run = production["runner"]
    listed = {i["name"]: i for i in run.biotool("list").json["items"]}
    sample = listed["demo-pbmc68k-heldout"]["path"]
    r = run.biotool("celltype", "--matrix", sample, "--reference", "auto", timeout=600)
    assert r.code == 0, r
    out = r.json
    body = out.get("celltypist", out)
    scored = [x for x in body["ranking"] if x.get("fit") is not None]
    assert len(scored) > 2
    assert body["margin"] is not None and body["margin"] > 0
    assert body["reference_is_conclusive"] == (body["fit"] >= 0.5 and body["margin"] >= 0.05)
    assert body["reference"] == "Healthy_COVID19_PBMC" and body["reference_is_conclusive"]


def test_production_gene_table_and_blast_db_work_offline(production):
    run = production["runner"]
    r = run.biotool("call", "gene_lookup", json.dumps({"query": "TP53"}))
    assert r.code == 0, r
    m = r.json["matches"]
    assert [(x["reference"], x["seqid"], x["protein_id"]) for x in m] == \
        [("GRCh38", "chr17", "NP_000537.3")]
    seq = production["truth"]["viruses"]["NC_001802.1"][100:600]
    r = run.run(f"printf '>q\\n{seq}\\n' > /tmp/q.fa && biotool taxonomy --fasta /tmp/q.fa --local")
    assert r.code == 0, r
    assert "Human immunodeficiency virus 1" in r.stdout


def test_a_site_directory_staged_on_the_host_overlays_the_demo_image(production, sandbox,
                                                                     tmp_path):
    """The same staging command with --dest on the host; the directory bind-mounted read-only
    at /opt/biotool-site into the demo image, as `biotool-sandbox up --site` and Apptainer's
    --bind do: its items are listed as coming from the site and used."""
    from biotool_testing.fake_sources import FakeSources

    site = tmp_path / "site"
    env = {**os.environ, "PYTHONPATH": str(REPO / "entrypoints"), "BIOTOOL_TOFU": "1"}
    with FakeSources(production["root"]) as srv:
        env["BIOTOOL_SOURCE_MIRROR"] = srv.url
        proc = subprocess.run([sys.executable, "-m", "biotool.staging", "--refs",
                               str(REPO / "refs"), "--dest", str(site), "--sets", "production",
                               "--only", "GRCh38", "--only", "human-gene-annotation"],
                              capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    subprocess.run(["chmod", "-R", "go+rX", str(site)], check=True)
    mount = {"volumes": {str(site): {"bind": "/opt/biotool-site", "mode": "ro"}}}
    r = sandbox.biotool("list", **mount)
    assert r.code == 0, r
    items = {i["name"]: i for i in r.json["items"]}
    assert r.json["site"] == "/opt/biotool-site"
    assert items["GRCh38"]["origin"] == "site" and items["GRCh38"]["usable"]
    assert items["MN908947.3"]["origin"] == "image"
    assert not items["GRCm39"]["staged"]
    r = sandbox.biotool("call", "gene_lookup", json.dumps({"query": "TP53"}), **mount)
    assert r.code == 0, r
    assert r.json["matches"][0]["seqid"] == "chr17"


def test_the_toolbox_runs_on_the_production_data_offline(production, tmp_path):
    """In the production image, with no network: featureCounts with the staged GTF on a BAM
    aligned with the staged bwa index, kraken2 on the staged k2_viral, blastp and diamond
    blastp on the staged Swiss-Prot, each pointed where `biotool list` says (`use`), and each
    giving the answer the fake sources' truth predicts."""
    import random

    from biotool_testing.fake_sources import gene_reads, protein_queries, virus_reads

    truth, run = production["truth"], production["runner"]
    listed = {i["name"]: i for i in run.biotool("list").json["items"]}
    uses = {n: listed[n]["use"] for n in ("human-gtf", "k2_viral", "swissprot")}
    gtf, kraken = listed["human-gtf"]["path"], listed["k2_viral"]["path"]
    # "blastp -db DB -query proteins.faa; diamond blastp -d DB -q proteins.faa": each without
    # its query, which this test gives.
    blastp, diamond = (u.rsplit(" ", 2)[0] for u in uses["swissprot"].split("; "))
    assert uses["human-gtf"].startswith(f"featureCounts -a {gtf} ")
    assert uses["k2_viral"].startswith(f"kraken2 --db {kraken} ")
    bwa = next(r for r in run.biotool("references").json["references"] if r["name"] == "GRCh38")
    assert bwa["annotation"] == {"human-gtf": gtf}
    reads, want = gene_reads(truth, "GRCh38", random.Random(3))
    viral = virus_reads(truth, ("MN908947.3", "NC_001802.1", "NC_002017.1"), random.Random(11))
    proteins = protein_queries(truth, random.Random(7))
    d = tmp_path / "in"
    d.mkdir()
    (d / "rna.fq").write_text("".join(f"@r{i}\n{s}\n+\n{'I' * len(s)}\n"
                                      for i, s in enumerate(reads)))
    (d / "viral.fa").write_text("".join(f">{n}\n{s}\n" for n, s in viral))
    (d / "q.faa").write_text("".join(f">{p}\n{s}\n" for p, s in proteins.items()))
    subprocess.run(["chmod", "-R", "go+rX", str(d)], check=True)
    index = Path(bwa["path"]).parent / bwa["indexes"]["bwa"]["path"]
    script = (f"set -e; cd /tmp; bwa mem -v 1 {index} /in/rna.fq | samtools sort -o rna.bam - "
              f"2>/dev/null; featureCounts -a {gtf} -g gene_name -o counts.txt rna.bam "
              f">/dev/null 2>&1; echo '## counts'; tail -n +3 counts.txt | cut -f1,7; "
              f"echo '## kraken2'; kraken2 --db {kraken} /in/viral.fa 2>/dev/null | cut -f1-3; "
              f"echo '## blastp'; {blastp} -query /in/q.faa -outfmt 6 -evalue 1e-10 | cut -f1,2; "
              f"echo '## diamond'; {diamond} -q /in/q.faa --outfmt 6 --evalue 1e-10 --threads 1 "
              f"2>/dev/null | cut -f1,2")
    r = run.run(script, volumes={str(d): {"bind": "/in", "mode": "ro"}})
    assert r.code == 0, r
    parts = {}
    for block in r.stdout.split("## ")[1:]:
        name, _, body = block.partition("\n")
        parts[name] = [l.split("\t") for l in body.splitlines() if l]
    assert {g: int(n) for g, n in parts["counts"]} == want
    called = {name: (c, int(tx)) for c, name, tx in parts["kraken2"]}
    assert called == {**{n: ("C", truth["kraken2"][n.split("/")[0]]["taxid"])
                         for n, _ in viral[:-1]}, "random": ("U", 0)}
    for tool in ("blastp", "diamond"):
        top = {}
        for q, hit in parts[tool]:
            top.setdefault(q, hit)
        assert top == {p: p for p in proteins}, tool
