"""biotool's own commands and the Debian tools run inside the image as the agent."""

import importlib

import pytest


def test_help_lists_every_family(sandbox):
    # Every command the source tree's families describe is a command of the image's biotool.
    from biotool.family import FAMILIES

    described = {c for f in FAMILIES
                 for c in importlib.import_module(f"biotool.{f}.cli").describe().commands}
    ran = sandbox.biotool("--help")
    assert ran.code == 0, ran
    listing = ran.stdout.split("Commands:", 1)[1].splitlines()
    listed = {line.split()[0] for line in listing if line.startswith("  ") and line.split()}
    assert described <= listed, described - listed


def test_doctor_passes_offline(sandbox):
    ran = sandbox.biotool("doctor")
    assert ran.code == 0, ran
    report = ran.json
    assert report["ok"] is True and report["failed"] == []
    checks = {c["check"]: c for c in report["checks"]}
    assert checks["non-root"]["ok"] and "uid 1000" in checks["non-root"]["detail"]
    assert "offline mode" in checks["egress"]["detail"]
    staged = [k for k in checks if k.startswith("staged:")]
    assert staged and all(checks[k]["ok"] for k in staged if checks[k]["required"])
    for cache in ("cache:biotool", "cache:MPLCONFIGDIR", "cache:NUMBA_CACHE_DIR",
                  "cache:HF_HOME", "cache:CELLTYPIST_FOLDER"):
        assert checks[cache]["ok"], checks[cache]


def test_list_knows_the_staged_demo_references(sandbox):
    ran = sandbox.biotool("list")
    assert ran.code == 0, ran
    items = {i["name"]: i for i in ran.json["items"]}
    for name in ("MN908947.3", "phiX174", "demo-viral-panel"):
        assert items[name]["staged"] and items[name]["usable"], items[name]


def test_references_are_staged_with_indexes(sandbox):
    ran = sandbox.biotool("references")
    assert ran.code == 0, ran
    refs = ran.json["references"]
    by_name = {r["name"]: r for r in refs}
    sars = by_name["MN908947.3"]
    assert sars["usable"] is True and len(sars["sha256"]) == 64
    assert sars["path"].startswith("/opt/biotool/")


def test_version_names_the_build(sandbox, images):
    ran = sandbox.biotool("version")
    assert ran.code == 0, ran
    v = ran.json
    assert v["python"].startswith("3.11.")
    assert v["rdkit"] == "2026.3.4"
    assert v["packages"]["torch"].startswith("2.13.0")
    assert v["image"]["image"] == images["sandbox"]
    assert v["image"]["torch_variant"] in ("cpu", "cuda")
    for tool in ("minimap2", "samtools", "bcftools", "blastn"):
        assert v["binaries"].get(tool), f"{tool} missing from {v['binaries']}"


@pytest.mark.parametrize("command", ["minimap2 --version", "samtools --version",
                                     "bcftools --version", "tabix --version",
                                     "blastn -version", "makeblastdb -version",
                                     "curl --version", "ps --version"])
def test_debian_tools_run(sandbox, command):
    ran = sandbox.run(command)
    assert ran.code == 0, ran


@pytest.mark.parametrize("preset,aligner", [("sr", "bwa mem -v 1"),
                                            ("map-ont", "minimap2 -a")])
def test_the_aligners_use_the_staged_indexes(sandbox, preset, aligner):
    # The index the read tools pick for a preset is the staged one (bwa's prefix for short
    # reads, the .mmi for long ones), and a read cut from the reference maps back through it.
    script = (
        "set -e; read ref idx < <(python -c 'from biotool.alignment.reference import resolve; "
        f"r = resolve(\"MN908947.3\"); p, _ = r.index(\"{preset}\"); "
        "assert str(p).startswith(str(r.fasta.parent)), p; print(r.fasta, p)'); "
        "samtools faidx $ref MN908947.3:1001-1200 > /tmp/read.fa; "
        f"{aligner} $idx /tmp/read.fa 2>/dev/null | samtools view -F4 - | cut -f3,4"
    )
    ran = sandbox.run(script)
    assert ran.code == 0, ran
    assert ran.stdout.split() == ["MN908947.3", "1001"]


def test_bad_input_is_one_line_with_exit_2(sandbox):
    ran = sandbox.biotool("references", "--no-such-flag")
    assert ran.code == 2, ran
    assert "Traceback" not in ran.stderr
