"""`biotool breakpoints`: every signature lands on the planted cut under the stated convention."""

import importlib
from pathlib import Path

from biotool.reads.indel import deletion_span, insertion_left, insertion_right

breakpoints_mod = importlib.import_module("biotool.reads.breakpoints")
REPO = Path(__file__).resolve().parents[3]


def test_cas9_cut_every_signature_reports_the_planted_base(biotool, cas9):
    c = cas9["truth"]["cut"]
    r = biotool("breakpoints", "--fastq", str(cas9["fastq"]), "--reference", str(cas9["fasta"]))
    assert r.code == 0, r.stderr
    out = r.json
    assert "1-based last reference base covered before the break" in out["convention"]
    top = out["consensus"][0]
    assert (top["contig"], top["pos"]) == ("sim_chr", c)
    assert set(top["agreeing"]) == {"starts", "ends", "clips", "indels"}
    planted = cas9["truth"]["counts"]
    # Left fragments end at c, right fragments start at c+1: both are pos c. A sequencing
    # error right at a junction can make the aligner clip a read a few bases further in, so a
    # read or two may land elsewhere; the rest must all be at c.
    for kind in ("ends", "clips", "indels"):
        assert planted[kind] - 2 <= top[kind] <= planted[kind], kind
    assert top["starts"] >= planted["starts"] - 2  # plus background reads starting there by chance
    sig = out["by_signature"]
    assert sig["starts"]["pos"] == sig["ends"]["pos"] == sig["clips"]["pos"] == c
    # Deletions left and right of the cut and insertions at it agree only at c.
    assert sig["indels"]["span"] == [c, c] and sig["indels"]["reads"] == top["indels"]
    comp = top["competence"]
    assert comp["margin"] > 0.5 and comp["confidence"] > 0.5 and comp["ties"] == 0
    assert any("depth" in s for s in comp["blind_spots"])


def test_bam_input_and_region_give_the_same_site(biotool, cas9):
    c = cas9["truth"]["cut"]
    r = biotool("breakpoints", "--bam", str(cas9["bam"]), "--reference", str(cas9["fasta"]),
                "--region", f"sim_chr:{c - 200}-{c + 200}", "--top", "3")
    assert r.code == 0, r.stderr
    out = r.json
    assert out["consensus"][0]["pos"] == c and len(out["consensus"]) == 3
    # A region elsewhere does not see the cut at all.
    far = biotool("breakpoints", "--bam", str(cas9["bam"]), "--reference", str(cas9["fasta"]),
                  "--region", "sim_chr:1-600")
    assert far.code == 0, far.stderr
    assert all(row["pos"] <= 600 for row in far.json["consensus"])


def test_alignment_is_cached_by_content(biotool, cas9):
    args = ("breakpoints", "--fastq", str(cas9["fastq"]), "--reference", str(cas9["fasta"]))
    first, second = biotool(*args), biotool(*args)
    assert first.code == second.code == 0
    assert first.json["bam"] == second.json["bam"]
    assert "aligning" in first.stderr and "aligning" not in second.stderr


def test_time_budget_returns_a_partial_flagged_result(biotool, cas9, tmp_path, leftovers):
    big = tmp_path / "big.fastq"
    big.write_text(cas9["fastq"].read_text() * 6)  # ~3100 reads
    # The reference's index first: a budget that cannot cover its build fails instead.
    assert biotool("breakpoints", "--fastq", str(cas9["fastq"]), "--reference",
                   str(cas9["fasta"])).code == 0
    r = biotool("breakpoints", "--fastq", str(big), "--reference", str(cas9["fasta"]),
                "--timeout", "0.000001")
    assert r.code == 0, r.stderr
    assert r.json["truncated"] is True and "time budget" in r.json["note"]
    full = biotool("breakpoints", "--fastq", str(big), "--reference", str(cas9["fasta"]))
    assert full.json["truncated"] is False
    assert full.json["reads_used"] > r.json["reads_used"]
    assert leftovers(tmp_path / "cache") == []


def test_deletion_span_widens_across_a_repeat():
    #         0123456789
    seq = "ACGTTTTGCA"
    # Deleting the T at 0-based 5 is the same as deleting any T of the run 3..6.
    lo, hi = deletion_span(seq, 0, 5, 1)
    assert (lo, hi) == (3, 6)
    assert breakpoints_mod._span_deletion(seq, 0, 5, 1) == (3, 7)  # pos 3 (after G) .. pos 7
    # Inserting a T before 0-based 5 can sit anywhere from before base 3 to before base 7.
    assert insertion_left(seq, 0, 5, "T") == (3, "T")
    assert insertion_right(seq, 0, 5, "T") == 7


def test_a_deletion_running_past_the_reference_slice_shifts_within_it():
    # Past the contig's end, or longer than the slice around a region: an IndexError, exit 4.
    seq = "ACGTTTTGCA"
    assert deletion_span(seq, 0, 6, 100) == (6, 6)
    assert deletion_span(seq, 100, 105, 50) == (105, 105)


def test_two_concurrent_runs_align_once_and_publish_bam_with_its_index(
        biotool_env, cas9, tmp_path, leftovers):
    import subprocess
    import sys

    big = tmp_path / "big.fastq"
    big.write_text(cas9["fastq"].read_text() * 20)  # ~10k reads: alignment outlasts start-up skew
    cmd = [sys.executable, "-m", "biotool", "breakpoints", "--fastq", str(big), "--reference",
           str(cas9["fasta"])]
    procs = [subprocess.Popen(cmd, env=biotool_env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    import json

    results = [json.loads(o) for o, _ in outs]
    # The lock makes the second run wait for the first and reuse its alignment.
    assert sum("aligning" in e for _, e in outs) == 1, [e for _, e in outs]
    assert results[0]["bam"] == results[1]["bam"]
    assert results[0]["consensus"][0]["pos"] == results[1]["consensus"][0]["pos"]
    # The BAM's index is the one built for it: every read is reachable through it.
    bam = results[0]["bam"]
    total = subprocess.run(["samtools", "view", "-c", bam], capture_output=True, text=True,
                           check=True).stdout.strip()
    stats = subprocess.run(["samtools", "idxstats", bam], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    assert sum(int(f.split("\t")[2]) + int(f.split("\t")[3]) for f in stats) == int(total)
    assert leftovers(tmp_path / "cache") == []


def test_the_position_convention_is_stated_and_kept_in_the_control_arm(biotool):
    # The design: a blunt cut is named by the last base before it or by the next one, so the
    # answer says which; a convention defines the answer, and the note its ranking rule, so
    # the control arm keeps both.
    args = ("breakpoints", "--fastq", str(REPO / "refs/demo/sarscov2/MT007544.fastq"),
            "--reference", "MN908947.3")
    for env in ({}, {"BIOTOOL_CONFIDENT": "1"}):
        r = biotool(*args, env=env)
        assert r.code == 0, r.stderr
        assert "either by the last base before it or by the next one" in r.json["convention"]
        assert "ranks positions by support" in r.json["note"]
