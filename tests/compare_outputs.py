"""Every command's help and JSON on the demo inputs, written to a folder, so two trees can be
compared byte for byte (a refactor that should change no output):

    PYTHONPATH=TREE_A/entrypoints python3 tests/compare_outputs.py snapshot /tmp/before
    PYTHONPATH=TREE_B/entrypoints python3 tests/compare_outputs.py snapshot /tmp/after
    python3 tests/compare_outputs.py diff /tmp/before /tmp/after

Each snapshot runs the programs as subprocesses of the tree on PYTHONPATH, on the demo set
staged into a fixed folder (`--work`, so the paths outputs name are the same in both) with an
empty cache, at a fixed terminal width; the tree's own folder and this script's checkout (the
demo inputs) are both written as <TREE>, and a run's `elapsed_s` as <seconds>. Outputs that
depend on the machine's state rather than the code (`doctor`, `version`) are left out; their
help is in. Files: one per run, named for the command line, holding the exit code,
stdout, and the last stderr line (the error, or the last progress line), and a VCF's bytes
(decompressed) where one is written.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "refs" / "demo"
FASTQ = DEMO / "sarscov2" / "MT007544.fastq"
REF = "MN908947.3"
# A run's own duration (celltype's timing.elapsed_s): the machine's, not the code's.
ELAPSED = re.compile(r'("elapsed_s": )[0-9.]+')


def _programs(env: dict) -> dict[str, list[str]]:
    """Each program's commands, read from its own top-level help."""
    out = {}
    for prog in ("biotool", "molperceive", "biotool_sandbox"):
        text = subprocess.run([sys.executable, "-m", prog, "--help"], capture_output=True,
                              text=True, env=env, timeout=120).stdout
        block = text.split("Commands:", 1)[1] if "Commands:" in text else ""
        out[prog] = [m.group(1) for m in re.finditer(r"^  ([a-z][a-z0-9-]*)\s", block, re.M)]
    return out


def _halves(work: Path) -> tuple[Path, Path]:
    """The demo reads split into two libraries (for a pooled `variants`)."""
    lines = FASTQ.read_text().splitlines(keepends=True)
    cut = (len(lines) // 8) * 4
    a, b = work / "libA.fastq", work / "libB.fastq"
    a.write_text("".join(lines[:cut]))
    b.write_text("".join(lines[cut:]))
    return a, b


def _bam(work: Path, fastq: Path, name: str) -> Path:
    """A sorted, indexed BAM of `fastq` on the demo reference, made by minimap2 and samtools."""
    ref = DEMO / "sarscov2" / "MN908947.3.reference.fasta"
    bam = work / f"{name}.bam"
    sam = subprocess.run(["minimap2", "-a", "-x", "map-ont", "-t", "1", str(ref), str(fastq)],
                         capture_output=True, check=True).stdout
    subprocess.run(["samtools", "sort", "-o", str(bam), "-"], input=sam, check=True,
                   capture_output=True)
    subprocess.run(["samtools", "index", str(bam)], check=True)
    return bam


def _runs(work: Path, programs: dict[str, list[str]]) -> list[tuple[str, list[str], dict]]:
    """(name, argv, extra env) of every run."""
    runs = []
    for prog, commands in programs.items():
        for arm in ("0", "1"):
            extra = {"BIOTOOL_CONFIDENT": "1"} if arm == "1" else {}
            runs.append((f"{prog}--help.{arm}", [prog, "--help"], extra))
            for cmd in commands:
                runs.append((f"{prog}-{cmd}--help.{arm}", [prog, cmd, "--help"], extra))
    a, b = _halves(work)
    bam_a, bam_b = (work / "libA.bam", work / "libB.bam") if (work / "libB.bam").exists() \
        else (_bam(work, a, "libA"), _bam(work, b, "libB"))
    fq, out = str(FASTQ), work / "out"
    reads = [
        ("align", ["align", "--fastq", fq, "--reference", REF]),
        ("align-top2-timeout", ["align", "--fastq", fq, "--reference", REF, "--top", "2",
                                "--timeout", "600"]),
        ("breakpoints-fastq", ["breakpoints", "--fastq", fq, "--reference", REF]),
        ("breakpoints-bam-region", ["breakpoints", "--bam", str(bam_a), "--reference", REF,
                                    "--region", "MN908947.3:20000-29903", "--top", "3"]),
        ("variants-fastq-vcf", ["variants", "--fastq", fq, "--reference", REF,
                                "--vcf", str(out / "v.vcf.gz")]),
        ("variants-two-libraries", ["variants", "--fastq", str(a), "--fastq", str(b),
                                    "--reference", REF, "--min-af", "0.3"]),
        ("variants-two-bams", ["variants", "--bam", str(bam_a), "--bam", str(bam_b),
                               "--reference", REF, "--vcf", str(out / "b.vcf.gz")]),
        ("variants-bam-region", ["variants", "--bam", str(bam_b), "--reference", REF,
                                 "--region", "MN908947.3:29000-29903"]),
        ("breakpoints-two-bams", ["breakpoints", "--bam", str(bam_a), "--bam", str(bam_b),
                                  "--reference", REF]),
        ("variants-bad-region", ["variants", "--fastq", fq, "--reference", REF,
                                 "--region", "nope:1-10"]),
        ("breakpoints-bad-timeout", ["breakpoints", "--fastq", fq, "--reference", REF,
                                     "--timeout", "0"]),
        ("variants-bad-top", ["variants", "--fastq", fq, "--reference", REF, "--top", "0"]),
        ("index-bwa", ["index", "--reference", REF, "--kind", "bwa"]),
        ("index-minimap2", ["index", "--reference", "phiX174", "--kind", "minimap2:map-ont"]),
        ("list", ["list"]),
        ("references", ["references"]),
        ("taxonomy-local", ["taxonomy", "--fasta", str(DEMO / "influenza" /
                                                      "influenza_a_h1n1.fasta"),
                            "--database", "demo-viral-panel"]),
        ("celltype", ["celltype", "--matrix", str(work / "home" / "samples" /
                                                  "demo-pbmc68k-heldout")]),
        ("call-list", ["call", "--list"]),
        ("call-gene-lookup", ["call", "gene_lookup", '{"query": "HA"}']),
    ]
    for name, argv in reads:
        for arm in ("0", "1"):
            runs.append((f"biotool-{name}.{arm}", ["biotool", *argv],
                         {"BIOTOOL_CONFIDENT": "1"} if arm == "1" else {}))
    runs += [("molperceive-label", ["molperceive", "label", "c1ccccc1O"], {}),
             ("molperceive-contract", ["molperceive", "contract"], {}),
             ("molperceive-label-bad", ["molperceive", "label", "C1CC"], {}),
             ("biotool_sandbox-k8s-values", ["biotool_sandbox", "k8s-values"], {})]
    return runs


def snapshot(dest: Path, work: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for sub in ("cache", "out", "state"):
        shutil.rmtree(work / sub, ignore_errors=True)
    (work / "out").mkdir(parents=True)
    tree = Path(os.environ["PYTHONPATH"].split(os.pathsep)[0]).resolve().parent
    sys.path.insert(0, str(tree / "entrypoints"))
    from biotool.stagebuild.build import stage

    # Staged once and kept: makeblastdb stamps its database with the time, so a second
    # staging would differ in a digest no refactor changed.
    home = work / "home"
    if not (home / "staged.json").exists():
        stage(REPO / "refs", home, ["demo"])
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("https_proxy", "http_proxy", "all_proxy")
           and k not in ("BIOTOOL_CONFIDENT", "BIOTOOL_DEBUG")}
    env.update(BIOTOOL_HOME=str(home), BIOTOOL_CACHE=str(work / "cache"), COLUMNS="100",
               TMPDIR=str(work), XDG_STATE_HOME=str(work / "state"))
    for name, argv, extra in _runs(work, _programs(env)):
        prog, *args = argv
        proc = subprocess.run([sys.executable, "-m", prog, *args], capture_output=True,
                              text=True, env={**env, **extra}, timeout=900, cwd=work)
        last = proc.stderr.strip().splitlines()[-1:] or [""]
        text = f"exit {proc.returncode}\n{proc.stdout}\nstderr: {last[0]}\n"
        for path in (str(tree), str(REPO)):  # the tree's own paths, the demo inputs' checkout
            text = text.replace(path, "<TREE>")
        (dest / name).write_text(ELAPSED.sub(r'\1"<seconds>"', text))
    for vcf in sorted((work / "out").glob("*.vcf.gz")):
        (dest / f"vcf-{vcf.name}").write_bytes(gzip.decompress(vcf.read_bytes()))
    print(json.dumps({"snapshot": str(dest), "files": len(list(dest.iterdir()))}))


def diff(a: Path, b: Path) -> int:
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    differ = [n for n in names if not (a / n).exists() or not (b / n).exists()
              or (a / n).read_bytes() != (b / n).read_bytes()]
    print(json.dumps({"files": len(names), "identical": len(names) - len(differ),
                      "differ": differ}, indent=1))
    return 1 if differ else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("dest", type=Path)
    s.add_argument("--work", type=Path,
                   default=Path(os.environ.get("TMPDIR", "/tmp")) / "biotool-compare-work")
    d = sub.add_parser("diff")
    d.add_argument("a", type=Path)
    d.add_argument("b", type=Path)
    args = p.parse_args()
    if args.what == "snapshot":
        snapshot(args.dest, args.work)
        return 0
    return diff(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
