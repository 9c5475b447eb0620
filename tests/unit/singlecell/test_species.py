"""Species from gene-name conventions; thin or mixed evidence is unknown, never human."""

from biotool.singlecell.species import detect

HUMAN = ["CD3E", "MS4A1", "LYZ", "GNLY", "NKG7", "MT-CO1", "HLA-DRA", "C1orf112", "S100A8",
         "CST3", "FCGR3A", "PPBP", "IL7R", "CCR7", "CD14", "CD8A", "KLRB1", "TCF7", "LEF1",
         "RPL13", "RPS27A", "MALAT1"]
MOUSE = ["Cd3e", "Ms4a1", "Lyz2", "Gnly", "Nkg7", "mt-Co1", "H2-Aa", "Gm42418", "S100a8",
         "Cst3", "Fcgr3", "Ppbp", "Il7r", "Ccr7", "Cd14", "Cd8a", "1700001C19Rik", "Tcf7",
         "Lef1", "Rpl13", "Rps27a", "Malat1"]


def test_human_upper_case():
    out = detect(HUMAN)
    assert out["species"] == "human" and out["competence"]["confidence"] == 1.0


def test_mouse_title_case_and_mouse_only_families():
    out = detect(MOUSE)
    assert out["species"] == "mouse"
    assert out["evidence"]["mouse_only_families"] == 2


def test_mixed_symbols_are_unknown_not_human():
    out = detect(HUMAN[:11] + MOUSE[11:])
    assert out["species"] == "unknown"
    assert out["competence"]["confidence"] == 0.0 and "mixed" in out["competence"]["blind_spots"][0]


def test_too_few_genes_are_unknown():
    out = detect(["CD3E", "LYZ", "U6", "5"])
    assert out["species"] == "unknown" and "only 2 genes" in out["competence"]["blind_spots"][0]


def test_ensembl_ids_decide_species():
    assert detect([f"ENSMUSG{i:011d}" for i in range(30)])["species"] == "mouse"
    assert detect([f"ENSG{i:011d}" for i in range(30)])["species"] == "human"
