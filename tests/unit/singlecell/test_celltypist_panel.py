"""The CellTypist panel: the matching reference wins by a margin; a panel where nothing fits
is flagged; the species routes the panel; uncovered features are refused."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def match_env(stage_models, ct_models):
    return stage_models([
        {"name": "pbmc-blood", "framework": "celltypist", "organism": "human",
         "tissue": "blood", "source": str(ct_models["pbmc-blood"])},
        {"name": "unrelated-a", "framework": "celltypist", "organism": "human",
         "tissue": "another tissue", "source": str(ct_models["unrelated-a"])},
    ])


def test_auto_picks_the_matching_reference_with_a_margin(biotool, match_env, query_h5ad):
    r = biotool("celltype", "--matrix", str(query_h5ad), env=match_env)
    assert r.code == 0, r.stderr
    ct = r.json["celltypist"]
    assert ct["reference"] == "pbmc-blood"
    assert [row["reference"] for row in ct["ranking"]] == ["pbmc-blood", "unrelated-a"]
    assert ct["fit"] >= 0.5 and ct["margin"] >= 0.05 and ct["reference_is_conclusive"] is True
    assert "caveat" not in ct
    assert ct["coverage"] == {"covered": 765, "model_features": 765, "fraction": 1.0}
    assert abs(sum(c["fraction"] for c in ct["composition"]) - 1) < 1e-3
    assert r.json["matrix"]["normalisation"]["input"] == "counts"
    used = {u["name"] for u in r.json["provenance"]["used"]}
    assert used == {"pbmc-blood", "unrelated-a"}


def test_a_panel_where_nothing_fits_is_flagged(biotool, stage_models, ct_models, query_h5ad):
    env = stage_models([
        {"name": name, "framework": "celltypist", "organism": "human", "tissue": "other",
         "source": str(ct_models[name])} for name in ("unrelated-a", "unrelated-b")])
    r = biotool("celltype", "--matrix", str(query_h5ad), env=env)
    assert r.code == 0, r.stderr
    ct = r.json["celltypist"]
    assert ct["reference_is_conclusive"] is False
    assert ct["fit"] < 0.5 and "no staged reference fits" in ct["caveat"]
    assert ct["caveat"] in ct["competence"]["blind_spots"]


def test_named_reference_reports_coverage_and_out_of_domain_warning(biotool, match_env,
                                                                    query_h5ad):
    r = biotool("celltype", "--matrix", str(query_h5ad), "--reference", "unrelated-a",
                env=match_env)
    assert r.code == 0, r.stderr
    ct = r.json["celltypist"]
    assert ct["reference"] == "unrelated-a" and "ranking" not in ct
    assert "out-of-domain cells are not flagged" in ct["competence"]["blind_spots"][0]


def test_species_routes_the_panel_and_unknown_widens_it(stage_models, ct_models, halves,
                                                        use_home, mouse_names, tmp_path):
    from biotool.singlecell.celltype import celltype_matrix

    env = stage_models([
        {"name": "pbmc-blood", "framework": "celltypist", "organism": "human",
         "tissue": "blood", "source": str(ct_models["pbmc-blood"])},
        {"name": "mouse-blood", "framework": "celltypist", "organism": "mouse",
         "tissue": "blood", "source": str(ct_models["mouse-blood"])},
    ])
    use_home(env)
    _, query = halves
    d = tmp_path
    mouse = query.copy()
    mouse.var_names = mouse_names(query.var_names)
    mouse.write_h5ad(d / "mouse.h5ad")
    mixed = query.copy()
    names = list(query.var_names)
    mixed.var_names = names[: len(names) // 2] + mouse_names(names[len(names) // 2:])
    mixed.write_h5ad(d / "mixed.h5ad")

    out = celltype_matrix(str(d / "mouse.h5ad"))
    assert out["species"]["species"] == "mouse"
    assert [r["reference"] for r in out["celltypist"]["ranking"]] == ["mouse-blood"]
    out = celltype_matrix(str(d / "mixed.h5ad"))
    assert out["species"]["species"] == "unknown"
    assert {r["reference"] for r in out["celltypist"]["ranking"]} == {"pbmc-blood", "mouse-blood"}
    assert any("species unknown" in s for s in out["celltypist"]["competence"]["blind_spots"])


def test_model_whose_features_the_data_do_not_cover_is_refused(biotool, match_env, tmp_path,
                                                               halves):
    _, query = halves
    q = query.copy()
    q.var_names = [f"GENE{i}" for i in range(q.n_vars)]
    q.write_h5ad(tmp_path / "renamed.h5ad")
    r = biotool("celltype", "--matrix", str(tmp_path / "renamed.h5ad"), "--reference",
                "pbmc-blood", env=match_env)
    assert r.code == 2 and r.stdout == ""
    assert "the data cover only 0 of the model's 765 genes" in r.stderr
    assert r.stderr.count("\n") == 1


def test_demo_image_model_is_staged_and_labels_pbmc(biotool, tmp_path):
    import scanpy as sc

    sc.datasets.pbmc68k_reduced().write_h5ad(tmp_path / "pbmc.h5ad")
    r = biotool("celltype", "--matrix", str(tmp_path / "pbmc.h5ad"), "--reference",
                "demo-pbmc68k-celltypist")
    assert r.code == 0, r.stderr
    ct = r.json["celltypist"]
    assert ct["fit"] > 0.5
    assert r.json["matrix"]["read_as"]["layer"].startswith(".raw")
    assert r.json["provenance"]["used"][0]["name"] == "demo-pbmc68k-celltypist"


def test_auto_flags_a_winner_scored_on_few_of_its_genes(biotool, match_env, halves, tmp_path):
    """Names cased half one way, half the other (species unknown, so the human model is
    scored): the genes it still matches are under half of its own, and the caveat must say
    the fit rests on them, not just that the fit is low."""
    _, query = halves
    q = query.copy()
    names = list(q.var_names)
    q.var_names = names[:300] + [n[:1] + n[1:].lower() for n in names[300:]]
    q.write_h5ad(tmp_path / "half_mouse_cased.h5ad")
    r = biotool("celltype", "--matrix", str(tmp_path / "half_mouse_cased.h5ad"), env=match_env)
    assert r.code == 0, r.stderr
    assert r.json["species"]["species"] == "unknown"
    ct = r.json["celltypist"]
    assert ct["reference_is_conclusive"] is False and ct["coverage"]["fraction"] < 0.5
    assert f"the data cover only {ct['coverage']['covered']} of {ct['reference']}'s 765 genes" \
        in ct["caveat"]
    assert ct["caveat"] in ct["competence"]["blind_spots"]
