"""The reads family's short-read path and amplicon ranking inside the image, in the Apptainer
shape (arbitrary UID, read-only root, tmpfs /tmp, no network): bwa is in the image, its index
is built into the writable cache even for a staged (read-only) reference, and data mounted
read-only from the host is read where it lies."""

import json
from pathlib import Path

import pytest

from biotool_testing import simulate as sim

HERE = Path(__file__).resolve().parent
LAMBDA = HERE.parent / "unit" / "reads" / "data" / "bowtie2_lambda"

SHAPE = {"user": "12345:12345", "read_only": True, "tmpfs": {"/tmp": "rw,exec,mode=1777"},
         "environment": {"HOME": "/nonexistent"}}


def _run(sandbox, mounts: dict, script: str):
    ran = sandbox.run(["bash", "-c", script],
                      volumes={str(h): {"bind": c, "mode": "ro"} for h, c in mounts.items()},
                      **SHAPE)
    assert ran.code == 0, ran
    return ran.stdout


def test_noisy_short_reads_map_like_bwa_in_the_image(sandbox):
    # biotool align on bowtie2's lambda example, and bwa mem run directly in the same
    # container as the peer: within 1% of the 10,000 reads.
    out = _run(sandbox, {LAMBDA: "/data"}, (
        "set -e; cp /data/lambda_virus.fa /tmp/l.fa; bwa index /tmp/l.fa 2>/dev/null; "
        "bwa mem -v 1 /tmp/l.fa /data/reads_1.fq.gz | samtools view -c -F 0x904 -; "
        "biotool --quiet align --fastq /data/reads_1.fq.gz --reference /data/lambda_virus.fa "
        "--sample 10000"))
    first, rest = out.split("\n", 1)
    peer, aligned = int(first), json.loads(rest)
    assert aligned["preset"] == "sr" and aligned["aligner"] == "bwa mem"
    assert aligned["mapped"] >= peer - 100, (aligned["mapped"], peer)


@pytest.fixture(scope="module")
def amplicon(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("amplicon")
    amp, c = sim.amplicon(220, seed=41)
    reads, _ = sim.amplicon_reads(amp, c, seed=41, n=2000, edited=0.25)
    sim.write_fasta(d / "amplicon.fasta", "amplicon", amp)
    sim.write_fastq(d / "miseq.fastq", reads)
    # Short reads of the staged SARS-CoV-2 reference, for the staged-reference bwa index.
    ref = "".join((HERE.parents[1] / "refs/demo/sarscov2/MN908947.3.reference.fasta")
                  .read_text().splitlines()[1:])
    sim.write_fastq(d / "sars_sr.fastq", sim.variant_reads(ref, [], depth=5, seed=3))
    d.chmod(0o755)
    for f in d.iterdir():
        f.chmod(0o644)
    return {"dir": d, "cut": c}


def test_amplicon_cut_ranks_first_in_the_image(sandbox, amplicon):
    out = json.loads(_run(sandbox, {amplicon["dir"]: "/data"}, (
        "biotool --quiet breakpoints --fastq /data/miseq.fastq --reference /data/amplicon.fasta")))
    assert out["consensus"][0]["pos"] == amplicon["cut"]
    assert {d["pos"] for d in out["discounted"]} >= {0, 220}


def test_short_reads_against_a_staged_reference_use_its_staged_bwa_index(sandbox, amplicon):
    # The bwa index is staged with the reference at build time: nothing is built at run time.
    out = json.loads(_run(sandbox, {amplicon["dir"]: "/data"}, (
        "biotool --quiet align --fastq /data/sars_sr.fastq --reference MN908947.3")))
    assert out["aligner"] == "bwa mem" and out["mapped"] == out["n_reads"]
    bwa = next(u for u in out["provenance"]["used"] if u["name"] == "bwa")
    assert bwa["path"].startswith("/opt/biotool/") and len(bwa["sha256"]) == 64
