"""Production items staged into a site directory and used through the overlay, next to the
demo image home: gene look-up and variant annotation on GRCh38 coordinates, BLAST hits named
from NCBI's taxdb, and `biotool list` saying where each item came from."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from Bio.Seq import Seq

REPO = __import__("pathlib").Path(__file__).resolve().parents[3]


@pytest.fixture
def overlay(staged_home, prod_home, use_home, monkeypatch, tmp_path):
    """The demo home as the image, the production home as the site overlay."""
    use_home(staged_home, site=prod_home)
    monkeypatch.setenv("BIOTOOL_CACHE", str(tmp_path / "cache"))
    return {"BIOTOOL_HOME": str(staged_home), "BIOTOOL_SITE_DIR": str(prod_home),
            "BIOTOOL_MANIFESTS": str(staged_home / "manifests"),
            "BIOTOOL_CACHE": str(tmp_path / "cache")}


def _call(name, args):
    from biotool.annotate import calls
    from biotool.output import render

    return json.loads(render(calls.call(name, json.dumps(args), 0)))


def test_gene_lookup_tp53_finds_the_mane_select_cds(overlay, world):
    _, truth = world
    tp53 = truth["genes"]["GRCh38"][0]
    res = _call("gene_lookup", {"query": "TP53"})
    assert res["count"] == 1
    m = res["matches"][0]
    assert (m["reference"], m["seqid"], m["strand"]) == ("GRCh38", "chr17", "-")
    assert m["protein_id"] == "NP_000537.3"  # MANE Select, not the longer XP_ model
    assert m["cds_segments"] == [list(e) for e in tp53["exons"]]
    assert m["synonyms"] == ["BCC7", "LFS1", "P53"] and m["gene_id"] == "7157"
    assert m["protein_length_aa"] == len(tp53["cds"]) // 3 - 1
    assert res["provenance"]["used"][0]["name"] == "human-gene-annotation"
    # The same keys as a demo-table answer.
    assert set(m) == set(_call("gene_lookup", {"query": "S"})["matches"][0])


def test_variant_annotate_on_grch38_coordinates(overlay, world):
    """A missense change at a genomic position of the minus-strand TP53, checked against the
    designed CDS translated independently (Biopython)."""
    from Bio.SeqUtils import seq3

    _, truth = world
    tp53 = truth["genes"]["GRCh38"][0]
    genome = truth["genomes"]["GRCh38"]["sequence"]
    (a1, b1), (a2, b2) = tp53["exons"]
    seg2 = b2 - a2 + 1  # the 5' end of a minus-strand CDS is the last segment's end
    for codon in range(120, 200):  # codons in the second exon of the CDS
        i = 3 * (codon - 1)
        pos = b2 - i if i < seg2 else b1 - (i - seg2)
        ref_codon = tp53["cds"][i:i + 3]
        for alt_plus in "ACGT":
            alt_codon = str(Seq(alt_plus).complement()) + ref_codon[1:]
            ref_aa, alt_aa = str(Seq(ref_codon).translate()), str(Seq(alt_codon).translate())
            if alt_plus != genome[pos - 1] and alt_aa not in ("*", ref_aa):
                break
        else:
            continue
        break
    assert genome[pos - 1] == str(Seq(ref_codon[0]).complement())
    res = _call("variant_annotate", {"reference": "GRCh38", "seqid": "chr17", "position": pos,
                                     "alt": alt_plus})
    assert res["count"] == 1
    ann = res["annotations"][0]
    assert (ann["gene"], ann["protein_id"], ann["effect"]) == ("TP53", "NP_000537.3", "missense")
    assert ann["hgvs_c"] == f"c.{i + 1}{ref_codon[0]}>{alt_codon[0]}"
    assert ann["hgvs_p"] == f"p.{seq3(ref_aa)}{codon}{seq3(alt_aa)}"
    assert ann["genomic_position"] == pos


def test_local_blast_names_real_viruses_from_taxdb(overlay, world):
    from biotool.deadline import Deadline
    from biotool.taxonomy import local

    _, truth = world
    seq = truth["viruses"]["NC_045512.2"][200:700]
    out = local.local_search([("q1", seq)], top=3, deadline=Deadline.from_now(120),
                             database=None)
    assert out.database == "ref_viruses_rep_genomes"
    best = out.hits["q1"][0]
    assert best["accession"] == "NC_045512.2" and best["taxid"] == 2697049
    assert best["sciname"] == "Severe acute respiratory syndrome coronavirus 2"


def test_biotool_list_says_where_each_item_came_from(overlay, biotool_env):
    proc = subprocess.run([sys.executable, "-m", "biotool", "list"], capture_output=True,
                          text=True, env={**biotool_env, **overlay}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    items = {i["name"]: i for i in json.loads(proc.stdout)["items"]}
    assert items["GRCh38"]["origin"] == "site" and items["GRCh38"]["usable"]
    assert items["MN908947.3"]["origin"] == "image"
    assert items["Healthy_COVID19_PBMC"]["source"][0].startswith(
        "https://celltypist.cog.sanger.ac.uk/models/Healthy_COVID19_PBMC/v2/")
    listing = json.loads(proc.stdout)
    assert not items["GRCm39"]["staged"] and "BIOTOOL_SITE_DIR" in listing["how_to_stage"]["production"]
    refs = subprocess.run([sys.executable, "-m", "biotool", "references"], capture_output=True,
                          text=True, env={**biotool_env, **overlay}, timeout=300)
    rows = {r["name"]: r for r in json.loads(refs.stdout)["references"]}
    assert rows["GRCh38"]["origin"] == "site"
    assert rows["GRCh38"]["path"].startswith(overlay["BIOTOOL_SITE_DIR"])


def test_a_site_item_never_replaces_a_usable_image_item(staged_home, tmp_path, use_home):
    """The site fills gaps; a name the image stages usably stays the image's."""
    import shutil

    from biotool import staging

    site = tmp_path / "site"
    shutil.copytree(staged_home, site)
    use_home(staged_home, site=site)
    assert staging.find("reference", "MN908947.3").origin == "image"
