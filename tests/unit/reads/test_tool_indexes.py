"""`biotool index`: the toolbox's aligners and quantifiers get a staged index, or one built
once into the cache within --timeout, on bowtie2's real lambda example."""

from __future__ import annotations

import gzip
import os
import subprocess
from pathlib import Path

import pytest

LAMBDA = Path(__file__).resolve().parent / "data" / "bowtie2_lambda"
FASTA = str(LAMBDA / "lambda_virus.fa")


def _first_reads(path: Path, n: int) -> Path:
    with gzip.open(LAMBDA / "reads_1.fq.gz", "rt") as fh:
        path.write_text("".join(next(fh) for _ in range(4 * n)))
    return path


@pytest.mark.parametrize("kind", ["bowtie2", "hisat2"])
def test_a_first_use_index_aligns_the_lambda_reads(biotool, tmp_path, kind):
    ran = biotool("index", "--reference", FASTA, "--kind", kind, "--timeout", "120")
    assert ran.code == 0, ran.stderr
    out = ran.json
    assert out["staged"] is False and out["use"].startswith(f"{kind} -x {out['path']} ")
    reads = _first_reads(tmp_path / "r.fq", 500)
    proc = subprocess.run([kind, "-x", out["path"], "-U", str(reads), "-S", os.devnull],
                          capture_output=True, text=True)
    rate = float(proc.stderr.strip().splitlines()[-1].split("%")[0])
    assert proc.returncode == 0 and rate > 85.0, proc.stderr
    again = biotool("index", "--reference", FASTA, "--kind", kind)
    assert again.json["path"] == out["path"]
    assert again.json["provenance"]["used"][1]["sha256"] == out["provenance"]["used"][1]["sha256"]


@pytest.mark.parametrize("kind, made", [("kallisto", "file"), ("salmon", "folder")])
def test_quantifier_indexes_are_built_whole(biotool, kind, made):
    ran = biotool("index", "--reference", FASTA, "--kind", kind, "--timeout", "120")
    assert ran.code == 0, ran.stderr
    path = Path(ran.json["path"])
    assert path.is_file() if made == "file" else (path / "versionInfo.json").is_file()
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".work")]


def test_a_staged_demo_reference_hands_out_its_staged_index(biotool, staged_home):
    ran = biotool("index", "--reference", "phiX174", "--kind", "bowtie2")
    assert ran.code == 0, ran.stderr
    assert ran.json["staged"] is True
    assert ran.json["path"].startswith(str(staged_home)) and ran.json["path"].endswith("/reference")
    listed = {r["name"]: r for r in biotool("references").json["references"]}
    assert {"bowtie2", "hisat2", "bwa"} <= set(listed["phiX174"]["indexes"])


def test_a_build_the_timeout_cannot_cover_is_exit_2_and_keeps_nothing(biotool, biotool_env):
    ran = biotool("index", "--reference", FASTA, "--kind", "hisat2", "--timeout", "0.001")
    assert ran.code == 2 and ran.stdout == ""
    assert "--timeout" in ran.stderr and len(ran.stderr.strip().splitlines()) == 1
    cache = Path(biotool_env["BIOTOOL_CACHE"])
    assert not list(cache.rglob("hisat2")) and not list(cache.rglob("*.ht2"))


@pytest.mark.parametrize("args, culprit", [
    (["--kind", "star"], "--kind 'star'"),
    (["--kind", "bowtie2", "--timeout", "0"], "'--timeout': 0 is not in the range x>0."),
    (["--kind", "bowtie2", "--timeout", "nan"], "'--timeout': nan is not a finite number."),
    (["--kind", "minimap2:sr"], "--kind 'minimap2:sr'"),
    (["--kind", "bowtie2", "--reference", "no-such-ref"],
     "--reference: no usable staged reference 'no-such-ref'"),
])
def test_bad_kind_or_reference_is_one_line_exit_2(biotool, args, culprit):
    argv = ["index", *args] if "--reference" in args else ["index", "--reference", FASTA, *args]
    ran = biotool(*argv)
    assert ran.code == 2 and ran.stdout == "" and culprit in ran.stderr, ran
