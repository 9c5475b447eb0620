"""The seed's argument forms: one flag followed by several files, besides the repeated flag."""

import pytest

from biotool.reads.cli import commands
from commandline.errors import UsageError
from commandline.typed import parse

from biotool_testing import simulate as sim
from biotool_testing.contract import error_line

VARIANTS = next(c for c in commands() if c.name == "variants")


def _files(*args: str) -> tuple:
    v = parse(VARIANTS, ["--reference", "X", *args])
    return v["bam"], v["fastq"]


def test_list_flags_take_several_files_and_stop_at_options():
    # --bam: each file one value; --fastq: the files after one flag are one library.
    assert _files("--bam", "a", "b", "c", "--top", "3") == (["a", "b", "c"], None)
    assert _files("--fastq", "R1", "R2", "--fastq", "S") == (None, ["R1,R2", "S"])
    assert _files("--bam=a", "b") == (["a", "b"], None)
    # The flag's own value is taken whatever it looks like; later dashes end the list.
    assert _files("--bam", "-odd.bam", "x") == (["-odd.bam", "x"], None)
    with pytest.raises(UsageError, match="unexpected extra argument"):
        _files("--region", "a", "b")  # a single-valued flag takes one value
    with pytest.raises(UsageError, match="requires an argument"):
        _files("--bam")
    with pytest.raises(UsageError, match=r"unexpected extra argument\(s\) \(--bam a b\)"):
        _files("--", "--bam", "a", "b")  # nothing after -- is an option


def _drop_paths(out: dict) -> dict:
    return {k: v for k, v in out.items() if k not in ("provenance",)}


def test_variants_takes_several_bams_after_one_flag(biotool, planted):
    args = ("variants", "--reference", str(planted["fasta"]), "--top", "50")
    spaced = biotool(*args, "--bam", str(planted["bam_a"]), str(planted["bam_b"]))
    repeated = biotool(*args, "--bam", str(planted["bam_a"]), "--bam", str(planted["bam_b"]))
    assert spaced.code == 0, spaced.stderr
    assert repeated.code == 0, repeated.stderr
    assert _drop_paths(spaced.json) == _drop_paths(repeated.json)
    assert [s["sample"] for s in spaced.json["samples"]] == ["sampleA.bam", "sampleB.bam"]


def test_mate_files_after_one_fastq_flag_are_one_paired_library(biotool, cas9, tmp_path):
    # Mates: each fragment read from both ends (R2 is the reverse complement of R1's fragment end).
    recs = [(n, s) for n, s in sim_reads(cas9["fastq"])]
    r1 = sim.write_fastq(tmp_path / "R1.fq", [(n, s[:100]) for n, s in recs])
    r2 = sim.write_fastq(tmp_path / "R2.fq", [(n, sim.revcomp(s[-100:])) for n, s in recs])
    base = ("breakpoints", "--reference", str(cas9["fasta"]), "--top", "3")
    spaced = biotool(*base, "--fastq", str(r1), str(r2))
    repeated = biotool(*base, "--fastq", str(r1), "--fastq", str(r2))
    comma = biotool(*base, "--fastq", f"{r1},{r2}")
    for r in (spaced, repeated, comma):
        assert r.code == 0, r.stderr
    assert spaced.json["consensus"] == repeated.json["consensus"] == comma.json["consensus"]
    assert spaced.json["bam"] == repeated.json["bam"]  # one library, aligned once
    # variants reads the same space-separated pair as one paired library, not two samples.
    v = biotool("variants", "--reference", str(cas9["fasta"]), "--fastq", str(r1), str(r2))
    assert v.code == 0, v.stderr
    assert [s["sample"] for s in v.json["samples"]] == ["R1.fq"]
    assert v.json["samples"][0]["bam"] == spaced.json["bam"]  # the same cached paired BAM


def test_breakpoints_refuses_several_bams_by_name(biotool, planted):
    r = biotool("breakpoints", "--reference", str(planted["fasta"]),
                "--bam", str(planted["bam_a"]), str(planted["bam_b"]))
    error_line(r, "give one BAM", "sampleB.bam", alone=True)


def sim_reads(path):
    lines = path.read_text().splitlines()
    return [(lines[i][1:], lines[i + 1]) for i in range(0, len(lines), 4)]
