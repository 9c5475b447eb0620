"""The toolbox manifest against the Dockerfile that installs it, the TOOLS.md generated from
both, the installer refusals written at build, and the inventory's place in list/version."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from biotool.system import toolbox

REPO = Path(__file__).resolve().parents[3]
DOCKERFILE = REPO / "Dockerfile"


@pytest.fixture(scope="module")
def pins() -> dict[str, str]:
    return toolbox.dockerfile_pins(DOCKERFILE.read_text())


def test_every_toolbox_package_is_pinned_in_the_dockerfile(pins):
    box = toolbox.load()
    unpinned = sorted(p for p in box.packages if p not in pins)
    assert not unpinned, f"toolbox packages without a pkg=version pin in the Dockerfile: {unpinned}"


def test_every_pinned_package_is_in_the_toolbox(pins):
    # The headless Java runtime is not a toolbox entry (FastQC's Java libraries are left to
    # apt, as every tool's libraries are), nor are SnpEff's and SnpSift's Java libraries,
    # pinned so that each launcher and the library it starts are one version.
    runtime = {"default-jre-headless", "libsnpeff-java", "libsnpsift-java"}
    stray = sorted(set(pins) - toolbox.load().packages - runtime)
    assert not stray, f"pinned in the Dockerfile but not described in toolbox.toml: {stray}"


def test_the_issue_names_are_all_there():
    # The names agents type, from the toolbox issue: each is a command or an alias.
    wanted = ("bowtie2 hisat2 STAR salmon kallisto featureCounts bedtools seqkit seqtk fastp "
              "cutadapt mafft muscle clustalo iqtree2 iqtree FastTree fasttree raxmlHPC hmmscan "
              "diamond mmseqs prodigal barrnap kraken2 spades.py megahit bamtools vcftools "
              "freebayes gffread stringtie mash macs2 plink plink1.9 plink2 sambamba mosdepth "
              "bedops vsearch cd-hit mummer pigz zstd unzip xz bzip2 jq parallel sqlite3 file "
              "less Rscript fastqc trimmomatic").split()
    have = {n for t in toolbox.load().tools for n in toolbox.names(t)}
    assert not set(wanted) - have, set(wanted) - have


def test_docs_tools_md_is_generated_from_the_manifest_and_the_pins(pins):
    doc = (REPO / "docs" / toolbox.DOC).read_text()
    lock = toolbox.lock_versions((REPO / "image" / "requirements-cpu.lock").read_text(),
                                 {t.pip for t in toolbox.load().tools if t.pip})
    assert doc == toolbox.markdown(pins, pip=lock), (
        "docs/TOOLS.md is stale: python -m biotool.system.toolbox markdown --dockerfile "
        "Dockerfile --lock image/requirements-cpu.lock > docs/TOOLS.md")
    assert "| `iqtree2` / `iqtree` | 2.0.7+dfsg-1 (iqtree) |" in doc
    assert f"| `multiqc` | {lock['multiqc']} (PyPI multiqc) |" in doc


@pytest.mark.parametrize("variant", ["cpu", "cuda"])
def test_the_python_toolbox_and_its_commands_are_pinned_in_both_locks(variant):
    box = toolbox.load()
    wanted = set(box.python.values()) | {t.pip for t in box.tools if t.pip}
    text = (REPO / "image" / f"requirements-{variant}.lock").read_text()
    missing = sorted(wanted - set(toolbox.lock_versions(text, wanted)))
    assert not missing, f"not pinned in requirements-{variant}.lock: {missing}"


def test_lock_versions_reads_pins_under_any_spelling_of_the_name():
    text = "# header\nViennaRNA==2.8.0\nscvi_tools==1.4.2  # via x\nnumpy==2.0\nfoo>=1\n"
    assert toolbox.lock_versions(text, {"viennarna", "scvi-tools", "foo", "absent"}) == {
        "viennarna": "2.8.0", "scvi-tools": "1.4.2"}


def test_every_name_the_union_lists_is_here_or_an_absent_entry_says_why():
    box = toolbox.load()
    cover = toolbox.coverage(box)
    assert all(not c["gap"] for c in cover.values()), {k: c["gap"] for k, c in cover.items()}
    listed = {n for kind in ("commands", "r", "python") for n in getattr(box.union, kind)}
    stray = {n for a in box.absent for n in a.covers} - listed
    assert not stray, f"absent entries cover names the union does not list: {stray}"
    # An absent entry for a name that is here would be a stale one.
    here = {n for c in cover.values() for n in c["present"]}
    assert not here & {n for a in box.absent for n in a.covers}
    assert all(a.instead for a in box.absent if a.covers), "say what covers the need"
    for kind, c in cover.items():
        assert c["now"] == c["before"] + len(c["present"]) <= c["union"], (kind, c)
    now, union = (sum(c[k] for c in cover.values()) for k in ("now", "union"))
    assert now / union >= 0.85, (now, union)


def test_the_staged_data_comes_from_packages_the_dockerfile_pins(pins):
    data = toolbox.load().data
    assert data and all(d.package in pins and d.path.startswith("/opt/biotool-toolbox/")
                        for d in data), data


def test_pins_parse_epochs_and_debian_revisions():
    text = ("RUN apt-get install -y muscle=1:5.1.0-1 plink1.9=1.90~b6.26-220402-1 \\\n  a=1.0 "
            "--x=y && python -c 'json.dump(x, indent=1)'\nRUN apt-get download b=2:1-1")
    assert toolbox.dockerfile_pins(text) == {"muscle": "1:5.1.0-1", "b": "2:1-1",
                                             "plink1.9": "1.90~b6.26-220402-1", "a": "1.0"}


@pytest.mark.parametrize("name, args, reads", [
    ("pip", ["install", "numpy"], False),
    ("pip", ["-q", "install", "x"], False),
    ("pip", ["--version"], True),
    ("apt-get", ["install", "-y", "bowtie"], False),
    ("apt", ["list", "--installed"], True),
    ("conda", ["install", "-c", "bioconda", "x"], False),
])
def test_installer_shims_refuse_installs_and_pass_reads(tmp_path, name, args, reads):
    real = tmp_path / "real"
    real.write_text("#!/bin/sh\necho real \"$@\"\n")
    real.chmod(0o755)
    shim = tmp_path / name
    shim.write_text(toolbox.shim(name, str(real) if name != "conda" else None))
    shim.chmod(0o755)
    proc = subprocess.run([str(shim), *args], capture_output=True, text=True, timeout=10)
    if reads:
        assert proc.returncode == 0 and proc.stdout == f"real {' '.join(args)}\n", proc
    else:
        assert proc.returncode == 1 and proc.stdout == ""
        assert proc.stderr == f"{name}: {toolbox.NO_INSTALL.replace('`', chr(39))}\n"


def test_list_has_a_tools_section_and_version_the_toolbox(biotool):
    listed = biotool("list")
    assert listed.code == 0, listed.stderr
    tools = listed.json["tools"]
    assert {"bowtie2", "iqtree", "featureCounts"} <= set(tools["commands"].split())
    assert "DESeq2" in tools["r_libraries"].split() and "Seurat" in tools["r_libraries"].split()
    assert tools["python"].startswith(f"{len(toolbox.load().python)} modules")
    assert tools["doc"].split(":")[0].endswith("/TOOLS.md")
    version = biotool("version")
    assert version.code == 0, version.stderr
    box = version.json["toolbox"]
    assert set(box["tools"]) == {t.command for t in toolbox.load().tools}
    assert box["python"]["pydeseq2"]  # installed on this host as in the image


def test_doctor_reports_the_toolbox_outside_the_image_without_failing(biotool, tmp_path):
    ran = biotool("doctor", "--no-sha", env={"BIOTOOL_BUILD_INFO": str(tmp_path / "none")})
    check = next(c for c in ran.json["checks"] if c["check"] == "toolbox")
    assert check["required"] is False


def _stand_ins(bindir: Path, body: dict[str, str]) -> str:
    """Every toolbox command as a script answering its version call (or `body[name]`); the
    PATH that finds them first."""
    bindir.mkdir()
    for t in toolbox.load().tools:
        for name in toolbox.names(t):
            script = bindir / name
            script.write_text("#!/bin/sh\n" + body.get(name, f"exit {t.version_exit}\n"))
            script.chmod(0o755)
    return f"{bindir}:{os.environ['PATH']}"


def test_doctor_in_the_image_fails_naming_a_tool_that_does_not_start(biotool, tmp_path):
    # bowtie2 fails as a binary with a missing library does: doctor must fail on it by name.
    path = _stand_ins(tmp_path / "bin", {"bowtie2": "echo 'bowtie2-align-s: error while loading "
                                                   "shared libraries: libtbb.so.12' >&2\nexit 127\n"})
    info = tmp_path / "build.json"
    info.write_text('{"image": "biotool-sandbox:test"}')
    ran = biotool("doctor", "--no-sha", env={"BIOTOOL_BUILD_INFO": str(info), "PATH": path})
    assert ran.code == 4, ran.stderr
    check = next(c for c in ran.json["checks"] if c["check"] == "toolbox")
    assert check["required"] is True and check["ok"] is False
    assert check["detail"].startswith("1 of ") and "bowtie2: exit 127: bowtie2-align-s: error" \
        in check["detail"], check
    assert "toolbox" in ran.json["failed"] and "toolbox" in ran.stderr


def test_a_tool_fails_the_check_only_when_it_fails_again_alone(tmp_path, monkeypatch):
    # salmon fails its first start only (a JVM crowded past its bound, say); mafft always.
    marker = tmp_path / "salmon-started"
    path = _stand_ins(tmp_path / "bin", {
        "salmon": f"[ -e {marker} ] && exit 0\ntouch {marker}\necho crowded >&2\nexit 1\n",
        "mafft": "echo 'mafft: broken' >&2\nexit 3\n"})
    monkeypatch.setenv("PATH", path)
    assert toolbox.check_tools() == {"mafft": "exit 3: mafft: broken"}
    assert marker.exists()


def test_run_each_bounded_keeps_order_width_and_kills_what_overruns(tmp_path, marked):
    from biotool.procs import run_each_bounded

    running, seen = tmp_path / "running", tmp_path / "seen"
    running.mkdir()
    count = (f"ls {running} | wc -l >> {seen}; touch {running}/$$; sleep 0.2; "
             f"rm {running}/$$; echo done $0 >&2")
    cmds = [["sh", "-c", count, str(i)] for i in range(6)]
    cmds += [["no-such-tool-here"], ["sh", "-c", "sleep 600 & wait"],
             ["sh", "-c", "echo nope >&2; exit 9"]]
    ran = run_each_bounded(cmds, seconds=3, width=3)
    assert ran[:6] == [(0, f"done {i}") for i in range(6)]
    assert max(int(n) for n in seen.read_text().split()) <= 2  # never more than 3 at once
    assert ran[6] == "no-such-tool-here is not installed (not found on PATH)"
    assert ran[7] == "sh was stopped after 3 s" and ran[8] == (9, "nope")
    assert marked() == []  # the overrunning one and the child it started (conftest.marked)


@pytest.mark.parametrize("args, expected", [
    (["-v"], ["-T", "N", "-v"]),                      # no -T: the CPUs this process may use
    (["-T", "4", "-v"], ["-T", "4", "-v"]),            # the caller's -T wins
    (["-s", "a.phy", "-T8"], ["-s", "a.phy", "-T8"]),
])
def test_raxml_launcher_gives_a_thread_count_where_debians_cannot(tmp_path, args, expected):
    # Debian's launcher reads /proc/cpuinfo's "cpu cores", absent under gVisor; the image's
    # script in front of it passes a -T of its own instead (here in front of an echo).
    tool = next(t for t in toolbox.load().tools if t.command == "raxmlHPC")
    debian = tmp_path / "debian-raxmlHPC"
    debian.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    debian.chmod(0o755)
    script = tmp_path / "raxmlHPC"
    script.write_text("#!/bin/sh\n" + tool.script.replace("/usr/bin/raxmlHPC", str(debian)))
    script.chmod(0o755)
    out = subprocess.run([str(script), *args], capture_output=True, text=True, check=True).stdout
    n = str(max(2, len(os.sched_getaffinity(0))))
    assert out.split() == [n if a == "N" else a for a in expected]


def _java_launcher(tmp_path, command: str):
    """The image's launcher script for command, run with a `java` that prints each argument on
    a line of its own: what the launcher hands the JVM."""
    tool = next(t for t in toolbox.load().tools if t.command == command)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "java").write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    (bindir / "java").chmod(0o755)
    script = tmp_path / command
    script.write_text("#!/bin/sh\n" + tool.script)
    script.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    return lambda *a: subprocess.run([str(script), *a], capture_output=True, text=True, env=env,
                                     check=True).stdout.splitlines()


def test_snpsift_launcher_passes_an_expression_with_spaces_whole(tmp_path):
    # Debian's launcher word-splits its arguments; the image's script in front of it must not.
    run = _java_launcher(tmp_path, "snpSift")
    jar = "/usr/share/java/snpsift.jar"
    assert run("filter", "QUAL >= 30", "in.vcf") == [
        "-Xms1g", "-Xmx4g", "-jar", jar, "filter", "QUAL >= 30", "in.vcf"]
    assert run("-Xmx2g", "filter", "-Dx=1", "ANN[*].EFFECT has 'missense_variant'") == [
        "-Xmx2g", "-Dx=1", "-jar", jar, "filter", "ANN[*].EFFECT has 'missense_variant'"]


def test_snpeff_launcher_prints_nothing_of_its_own_and_reads_the_packaged_config(tmp_path):
    # Debian's launcher echoes a line into stdout (the annotated VCF) when given -c.
    run = _java_launcher(tmp_path, "snpEff")
    jar = ["-jar", "/usr/share/java/snpeff.jar"]
    assert run("ann", "-c", "my.config", "g", "in.vcf") == [
        "-Xms1g", "-Xmx4g", *jar, "ann", "-c", "my.config", "g", "in.vcf"]
    assert run("-Xmx6g", "ann", "g", "a b.vcf") == [
        "-Xmx6g", *jar, "ann", "g", "a b.vcf", "-c", "/etc/snpeff/snpEff.config"]
