"""Bad input: one line on stderr naming the culprit, exit 2, nothing half-written in the cache."""

import gzip
import shutil

import pytest

from biotool_testing.contract import error_line


def _bad_fastqs(src, d):
    text = src.read_text()
    records = text.splitlines(keepends=True)
    out = {}
    out["truncated"] = d / "truncated.fastq"
    out["truncated"].write_text("".join(records[:4 * 50 + 2]))  # cut inside record 51
    out["short_quality"] = d / "short_quality.fastq"
    out["short_quality"].write_text("".join(records[:4 * 50 + 3]) + records[4 * 50 + 3][:20] + "\n")
    gz = d / "reads.fastq.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    data = gz.read_bytes()
    out["gzip_truncated"] = d / "gzip_truncated.fastq.gz"
    out["gzip_truncated"].write_bytes(data[: len(data) // 2])
    corrupt = bytearray(data)
    for i in range(len(corrupt) // 2, len(corrupt) // 2 + 64):
        corrupt[i] ^= 0xFF
    out["gzip_corrupt"] = d / "gzip_corrupt.fastq.gz"
    out["gzip_corrupt"].write_bytes(bytes(corrupt))
    out["empty"] = d / "empty.fastq"
    out["empty"].write_text("")
    return out


@pytest.mark.parametrize("command,kind,needle", [
    ("breakpoints", "truncated", "truncated"), ("breakpoints", "short_quality", "qualities"),
    ("breakpoints", "gzip_truncated", "gzip"), ("breakpoints", "gzip_corrupt", "gzip"),
    ("breakpoints", "empty", "empty"), ("variants", "gzip_corrupt", "gzip"),
    ("align", "truncated", "truncated"), ("align", "empty", "empty"),
])
def test_malformed_fastq(biotool, cas9, tmp_path, leftovers, kind, needle, command):
    bad = _bad_fastqs(cas9["fastq"], tmp_path)[kind]
    r = biotool(command, "--fastq", str(bad), "--reference", str(cas9["fasta"]))
    error_line(r, str(bad), needle)
    assert leftovers(tmp_path / "cache") == []
    assert not list((tmp_path / "cache").rglob("*.bam"))


def test_fasta_given_as_fastq(biotool, cas9, tmp_path, leftovers):
    r = biotool("breakpoints", "--fastq", str(cas9["fasta"]), "--reference", str(cas9["fasta"]))
    error_line(r, str(cas9["fasta"]), "FASTA, not FASTQ")
    assert leftovers(tmp_path / "cache") == []


def test_paired_files_of_different_lengths(biotool, cas9, tmp_path, leftovers):
    lines = cas9["fastq"].read_text().splitlines(keepends=True)
    r1, r2 = tmp_path / "r1.fastq", tmp_path / "r2.fastq"
    r1.write_text("".join(lines))
    r2.write_text("".join(lines[: 4 * 100]))
    r = biotool("breakpoints", "--fastq", str(r1), "--fastq", str(r2),
                "--reference", str(cas9["fasta"]))
    error_line(r, str(r2), "same reads")
    assert leftovers(tmp_path / "cache") == []
    assert not list((tmp_path / "cache").rglob("*.bam"))


@pytest.mark.parametrize("command", ["breakpoints", "variants"])
def test_bam_without_index(biotool, cas9, tmp_path, command):
    bam = tmp_path / "noindex.bam"
    shutil.copyfile(cas9["bam"], bam)
    r = biotool(command, "--bam", str(bam), "--reference", str(cas9["fasta"]))
    error_line(r, str(bam), "no index")


@pytest.mark.parametrize("command", ["align", "breakpoints", "variants"])
def test_reference_not_staged(biotool, cas9, command):
    r = biotool(command, "--fastq", str(cas9["fastq"]), "--reference", "GRCm39-not-here")
    error_line(r, "GRCm39-not-here", "MN908947.3")  # the message lists what is staged


@pytest.mark.parametrize("region", ["sim_chr:5000-7000", "chrX:1-100", "sim_chr:10-5"])
def test_region_outside_the_contig(biotool, cas9, region):
    r = biotool("variants", "--bam", str(cas9["bam"]), "--reference", str(cas9["fasta"]),
                "--region", region)
    error_line(r, region)


def test_vcf_path_must_be_bgzip_named(biotool, cas9, tmp_path):
    r = biotool("variants", "--bam", str(cas9["bam"]), "--reference", str(cas9["fasta"]),
                "--vcf", str(tmp_path / "out.vcf"))
    error_line(r, "out.vcf", ".vcf.gz")
    assert not (tmp_path / "out.vcf").exists()


@pytest.mark.parametrize("command", ["breakpoints", "variants"])
def test_bam_aligned_to_another_reference(biotool, cas9, command):
    r = biotool(command, "--bam", str(cas9["bam"]), "--reference", "MN908947.3")
    error_line(r, str(cas9["bam"]), "was it aligned to this --reference?")


def test_pooled_bams_of_different_references_are_refused(biotool, cas9, planted, tmp_path):
    # Both simulated genomes are one 6 kb contig named sim_chr: names and lengths agree, the
    # sequences do not, so pooling them would mix unrelated positions.
    r = biotool("variants", "--bam", str(planted["bam"]), "--bam", str(cas9["bam"]),
                "--reference", str(planted["fasta"]))
    error_line(r, str(cas9["bam"]), "different sequence")
    # A BAM whose header gives the contig another length is refused from its header alone.
    import pysam

    other = tmp_path / "other_length.bam"
    with pysam.AlignmentFile(str(cas9["bam"])) as src:
        header = src.header.to_dict()
        header["SQ"][0]["LN"] = 7000
        with pysam.AlignmentFile(str(other), "wb", header=header) as out:
            for read in src:
                out.write(pysam.AlignedSegment.fromstring(read.to_string(), out.header))
    pysam.index(str(other))
    for command in ("variants", "breakpoints"):
        r = biotool(command, "--bam", str(other), "--reference", str(cas9["fasta"]))
        error_line(r, str(other), "7000 bp", "different reference")


def test_the_same_bam_twice_is_refused(biotool, planted, tmp_path):
    bam = str(planted["bam"])
    r = biotool("variants", "--bam", bam, "--bam", bam.replace("/reads.bam", "/./reads.bam"),
                "--reference", str(planted["fasta"]))
    error_line(r, "given twice")


@pytest.mark.parametrize("args,needle", [
    (("--top", "0"), "'--top': 0 is not in the range x>=1."),
    (("--top", "-3"), "'--top': -3 is not in the range x>=1."),
    (("--timeout", "nan"), "'--timeout': nan is not a finite number."),
    (("--timeout", "0"), "'--timeout': 0 is not in the range x>0."),
    (("--region", ""), "--region ''"), (("--region", "sim_chr:-5-100"), "cannot read"),
    (("--region", "sim_chr:0-100"), "outside the contig"),
    (("--region", "sim_chr:6001"), "outside the contig"),
])
@pytest.mark.parametrize("command", ["breakpoints", "variants"])
def test_out_of_range_options(biotool, cas9, command, args, needle):
    r = biotool(command, "--bam", str(cas9["bam"]), "--reference", str(cas9["fasta"]), *args)
    error_line(r, needle)


def test_region_to_the_contig_end_like_samtools(biotool, cas9):
    for region in ("sim_chr:5901-", "sim_chr:5901", "sim_chr:5,901-6,000"):
        r = biotool("breakpoints", "--bam", str(cas9["bam"]), "--reference", str(cas9["fasta"]),
                    "--region", region, "--top", "50")
        assert r.code == 0, (region, r.stderr)
        assert all(5900 <= row["pos"] <= 6000 for row in r.json["consensus"])


@pytest.mark.parametrize("flag,path,needle", [
    ("--bam", "{dir}", "is a directory"), ("--fastq", "{dir}", "is a directory"),
    ("--fastq", "-", "stdin"), ("--bam", "{bai}", "not a readable BAM"),
])
def test_wrong_kind_of_path(biotool, cas9, tmp_path, flag, path, needle):
    path = path.format(dir=tmp_path, bai=str(cas9["bam"]) + ".bai")
    r = biotool("variants", flag, path, "--reference", str(cas9["fasta"]))
    error_line(r, needle)
    assert len(r.stderr.strip().splitlines()) == 1  # no htslib lines before ours


@pytest.mark.parametrize("text,needle", [
    (">a\nACGT\n>a\nACGT\n", "two sequences share a name"),
    (">a\nACGTACGT\nAC\nACGTACGT\n", "Format error"),
    (">", "not a usable FASTA"),
])
def test_bad_fasta_reference_is_one_line_and_leaves_nothing(biotool, cas9, tmp_path, leftovers,
                                                            text, needle):
    fasta = tmp_path / "bad.fa"
    fasta.write_text(text)
    r = biotool("breakpoints", "--bam", str(cas9["bam"]), "--reference", str(fasta))
    error_line(r, str(fasta), needle)
    assert len(r.stderr.strip().splitlines()) == 1  # htslib's own lines are folded into ours
    assert leftovers(tmp_path / "cache") == []
    assert not list((tmp_path / "cache").rglob("*.fai"))


@pytest.mark.parametrize("threads", ["0", "-4", "100000"])
def test_impossible_thread_counts_are_refused(biotool, cas9, threads):
    r = biotool("breakpoints", "--fastq", str(cas9["fastq"]), "--reference", str(cas9["fasta"]),
                "--threads", threads)
    assert r.code == 2 and r.stdout == "" and "--threads" in r.stderr


def test_thread_counts_above_the_cpus_are_clamped(biotool, cas9):
    import os

    r = biotool("breakpoints", "--fastq", str(cas9["fastq"]), "--reference", str(cas9["fasta"]),
                "--threads", "64")
    assert r.code == 0, r.stderr
    assert f"({min(64, os.cpu_count())} threads)" in r.stderr


def test_unreadable_files_are_bad_input_not_internal_errors(biotool_env, cas9, monkeypatch):
    # Tests run as root, where chmod 000 does not stop a read; so the refusal the agent's
    # non-root user would get is raised here by open() itself.
    import builtins

    from biotool.output import InputError
    from biotool.alignment import reference
    from biotool.reads import fastq

    real_open = builtins.open

    def refusing_open(path, *args, **kwargs):
        if str(path) in (str(cas9["fastq"]), str(cas9["fasta"])):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing_open)
    with pytest.raises(InputError, match="cas9.fastq: cannot be read .Permission denied"):
        next(fastq.records(cas9["fastq"]))
    with pytest.raises(InputError, match="genome.fasta: cannot be read .Permission denied"):
        reference.resolve(str(cas9["fasta"]))


@pytest.mark.parametrize("command", ["breakpoints", "variants"])
def test_region_on_a_contig_the_bam_lacks(biotool, cas9, tmp_path, command):
    # The reference has a second contig the BAM was never aligned to: the header check passes
    # (sim_chr is shared), and --region on the other contig is named as the fault.
    fasta = tmp_path / "two_contigs.fasta"
    fasta.write_text(cas9["fasta"].read_text() + ">other_chr\n" + "ACGT" * 250 + "\n")
    r = biotool(command, "--bam", str(cas9["bam"]), "--reference", str(fasta),
                "--region", "other_chr:1-500")
    error_line(r, str(cas9["bam"]), "none of the region's contigs (other_chr)")
    ok = biotool(command, "--bam", str(cas9["bam"]), "--reference", str(fasta),
                 "--region", "sim_chr:1-500")
    assert ok.code == 0, ok.stderr


def test_three_files_in_one_library_are_refused_before_any_work(biotool, cas9, tmp_path,
                                                                leftovers):
    copies = []
    for name in ("a.fastq", "b.fastq", "c.fastq"):
        shutil.copyfile(cas9["fastq"], tmp_path / name)
        copies.append(str(tmp_path / name))
    r = biotool("variants", "--fastq", ",".join(copies), "--reference", str(cas9["fasta"]))
    error_line(r, "give one file, or two mate files")
    assert not list((tmp_path / "cache").rglob("*.bam"))


def _with_m5(src_bam, out_bam, m5: str):
    import pysam

    with pysam.AlignmentFile(str(src_bam)) as src:
        header = src.header.to_dict()
        header["SQ"][0]["M5"] = m5
        with pysam.AlignmentFile(str(out_bam), "wb", header=header) as out:
            for read in src:
                out.write(pysam.AlignedSegment.fromstring(read.to_string(), out.header))
    pysam.index(str(out_bam))
    return out_bam


def test_an_m5_in_the_header_is_checked_against_the_reference(biotool, cas9, planted, tmp_path):
    import hashlib

    right = _with_m5(cas9["bam"], tmp_path / "right.bam",
                     hashlib.md5(cas9["ref"].upper().encode()).hexdigest())
    wrong = _with_m5(cas9["bam"], tmp_path / "wrong.bam",
                     hashlib.md5(planted["ref"].upper().encode()).hexdigest())
    ok = biotool("variants", "--bam", str(right), "--reference", str(cas9["fasta"]))
    assert ok.code == 0, ok.stderr
    assert "warnings" not in ok.json
    # Another sequence's M5 over bases that agree with the reference: a warning, not a refusal.
    r = biotool("variants", "--bam", str(right), "--bam", str(wrong),
                "--reference", str(cas9["fasta"]))
    assert r.code == 0, r.stderr
    assert [str(wrong) in w for w in r.json["warnings"]] == [True]
    # The M5 differs and the bases do too: refused, naming the sampled share.
    for command in ("variants", "breakpoints"):
        r = biotool(command, "--bam", str(right), "--reference", str(planted["fasta"]))
        error_line(r, str(right), "different sequence (M5)",
                   "of a sample of its aligned bases differ")
