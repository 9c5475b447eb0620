"""The agent-facing contract (docs/contract.md), on the foundation commands."""

import json
from pathlib import Path

from biotool.arms import Hedges, declared, hedge
from biotool.competence import bounded, not_applicable
from biotool.output import render


def test_bounded_clamps_and_explains():
    c = bounded(1.7, -0.2, alternatives=-1, ties=2, blind_spots="low depth", remedy="more reads")
    assert c.explain() == {"applicable": True, "confidence": 1.0, "margin": 0.0,
                           "alternatives": 0, "ties": 2, "blind_spots": ["low depth"],
                           "remedy": "more reads"}
    assert bounded(float("nan"), 0.5).confidence == 0.0
    assert not_applicable("no reads").explain()["applicable"] is False


def test_the_control_arm_drops_exactly_the_declared_hedges_at_every_depth(monkeypatch):
    result = declared({"competence": bounded(0.5, 0.5), "note": "kept" + hedge(", hedged"),
                       "calls": [{"pos": 1, "competence": bounded(1, 1)}],
                       "other": {"competence": 1}}, Hedges.of("competence", "calls[].competence"))
    tool = json.loads(render(result))
    assert tool["competence"]["confidence"] == 0.5 and tool["note"] == "kept, hedged"
    monkeypatch.setenv("BIOTOOL_CONFIDENT", "1")
    control = json.loads(render(result))
    assert json.loads(render(result, as_tool=True)) == tool
    assert "competence" not in control and control["calls"] == [{"pos": 1}]
    # Only what is declared goes: an undeclared field of the same name stays.
    assert control["other"] == {"competence": 1} and control["note"] == "kept"


def test_every_result_carries_provenance():
    out = json.loads(render({"x": 1}))
    assert out["provenance"]["biotool"]


def test_list_reports_staged_and_unstaged_items(biotool):
    r = biotool("list")
    assert r.code == 0, r.stderr
    out = r.json
    items = {i["name"]: i for i in out["items"]}
    assert items["MN908947.3"]["usable"] is True
    # Production items are named in the manifests but not staged here, and say why: once per
    # set left out of the build (the output stays small), in how_to_stage and competence.
    assert items["GRCh38"]["usable"] is False and items["GRCh38"]["set"] == "production"
    assert "BIOTOOL_STAGE=production" in out["how_to_stage"]["production"]
    assert any("set 'production'" in s for s in out["competence"]["blind_spots"])
    assert {f["family"] for f in out["families"]} >= {"system", "reads", "taxonomy"}


def test_references_list_indexes_with_sha256(biotool):
    out = biotool("references").json
    ref = next(r for r in out["references"] if r["name"] == "MN908947.3")
    # bwa's for short reads, minimap2's for long ones; minimap2:sr would never be used.
    assert set(ref["indexes"]) >= {"faidx", "bwa", "minimap2:map-ont", "minimap2:map-pb"}
    assert "minimap2:sr" not in ref["indexes"]
    assert all(len(i["sha256"]) == 64 for i in ref["indexes"].values())
    assert any(u["name"] == "MN908947.3" for u in out["provenance"]["used"])


def test_doctor_detects_a_tampered_staged_file(biotool, staged_home, tmp_path):
    import shutil

    home = tmp_path / "home"
    shutil.copytree(staged_home, home)
    fasta = home / "references" / "phiX174" / "phiX174.fasta"
    fasta.write_text(fasta.read_text().replace("A", "C", 1))
    r = biotool("doctor", env={"BIOTOOL_HOME": str(home)})
    assert r.code == 4
    report = json.loads(r.stdout)
    bad = next(c for c in report["checks"] if c["check"] == "staged:reference/phiX174")
    assert bad["ok"] is False and "sha256" in bad["detail"]
    assert r.stderr.count("\n") == 1 and "staged:reference/phiX174" in r.stderr


def test_doctor_version_and_list_read_one_declaration_of_the_binaries(biotool, tmp_path):
    from biotool import family

    names = [b.name for b in family.binaries()]
    # bwa aligns every short-read library; makeblastdb builds the BLAST databases.
    assert {"bwa", "minimap2", "samtools", "blastn", "makeblastdb"} <= set(names)
    checks = [c["check"] for c in json.loads(biotool("doctor", "--no-sha").stdout)["checks"]]
    assert [c for c in checks if c.startswith("binary:")] == [f"binary:{n}" for n in names]
    versions = biotool("version").json["binaries"]
    assert list(versions) == names and versions["bwa"][:1].isdigit(), versions
    # With none of them on PATH, list says which each family misses, from the same names.
    (tmp_path / "bin").mkdir()
    fams = {f["family"]: f for f in biotool("list", env={"PATH": str(tmp_path / "bin")})
            .json["families"]}
    for name, fam in family.every().items():
        missing = [b.name for b in fam.binaries]
        assert fams[name]["usable"] == (not missing), fams[name]
        if missing:
            assert fams[name]["reason"] == f"missing here: {', '.join(missing)}"


def test_usage_errors_are_one_line_exit_2(biotool):
    r = biotool("no-such-command")
    assert r.code == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    r = biotool("doctor", "--bogus")
    assert r.code == 2 and "--bogus" in r.stderr and r.stderr.count("\n") == 1


def test_version_names_rdkit_packages_and_binaries(biotool):
    from importlib import metadata

    import biotool as biotool_pkg

    out = biotool("version").json
    assert out["biotool"] == biotool_pkg.__version__
    assert out["rdkit"] == out["packages"]["rdkit"] == metadata.version("rdkit")
    assert out["packages"]["torch"] == metadata.version("torch")
    assert out["binaries"]["minimap2"].startswith("2.") and "samtools" in out["binaries"]["samtools"]


def test_quiet_is_taken_before_or_after_the_command(biotool):
    from pathlib import Path

    reads = Path(__file__).resolve().parents[3] / "refs" / "demo" / "sarscov2" / "MT007544.fastq"
    cmd = ("taxonomy", "--local", "--fastq", str(reads), "--sample", "20")
    noisy = biotool(*cmd)
    assert noisy.code == 0 and noisy.stderr  # progress lines on stderr by default
    for args in (("--quiet", *cmd), (*cmd, "--quiet")):
        r = biotool(*args)
        assert r.code == 0 and r.stderr == "" and r.json["n"] == noisy.json["n"] == 20


def test_version_names_every_package_the_project_declares():
    import tomllib

    from biotool.system import version

    project = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in version.IMAGE_EXTRAS:
        wanted += project["optional-dependencies"].get(extra, [])
    import re

    names = {re.split(r"[\s;<>=!~\[(]", w, maxsplit=1)[0].lower() for w in wanted}
    pkgs = version.versions()["packages"]
    assert names <= set(pkgs) and {"pydantic", "jsonschema", "tokenizers"} <= set(pkgs)
