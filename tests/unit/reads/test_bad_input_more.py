"""Bad input, issue 14 (read tools): every case one `biotool: error:` line naming the file,
exit 2, nothing on stdout, nothing in the cache, and no tool's own stderr let through.

All of it is refused before any alignment work: the tests run --fastq with an empty cache and
check that no BAM, no work folder and no "aligning" log line appeared."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from biotool_testing.contract import error_line

COMMANDS = ("align", "breakpoints", "variants")


def _no_work(cache: Path, leftovers) -> None:
    assert leftovers(cache) == []
    if cache.exists():
        assert not list(cache.rglob("*.bam")), "an alignment ran"
        assert not list(cache.rglob(".work.*"))
        assert not list(cache.rglob("align.lock")), "a lock was left"
        assert not [p for p in cache.glob("*/*") if p.is_dir() and not any(p.iterdir())], \
            "an empty entry folder was left"


# ---- references -------------------------------------------------------------------------

def _references(ref: str, d: Path) -> dict[str, tuple[Path, str]]:
    seq = "\n".join(ref[i:i + 70] for i in range(0, len(ref), 70)) + "\n"
    out = {}

    def put(name, data: bytes, needle):
        p = d / name
        p.write_bytes(data)
        out[name] = (p, needle)

    put("bare_name.fa", b">\n" + seq.encode(), "empty name")
    put("bare_second.fa", b">sim_chr\n" + seq.encode() + b">  \nACGTACGT\n", "record 2 has an empty name")
    put("empty_record.fa", b">sim_chr\n" + seq.encode() + b">other\n", "other has no sequence")
    put("empty_first.fa", b">first\n>sim_chr\n" + seq.encode(), "first has no sequence")
    put("nul.fa", b">sim_chr\n" + seq.encode()[:500] + b"\x00" + seq.encode()[500:], "NUL byte")
    protein = "MKVLAAGIVALLLAAGCSSSKEETPKPQVEVIEFLRSWQHPTTEEIGLKDFLQPE" * 20
    put("protein.fa", f">sp|P0|PROT\n{protein}\n".encode(), "protein")
    put("duplicate.fa", b">sim_chr\n" + seq.encode() + b">sim_chr\nACGT\n", "share a name")
    put("gzipped.fa.gz", gzip.compress(b">sim_chr\n" + seq.encode()), "unsupported format (gzip")
    put("bom.fa", b"\xef\xbb\xbf>sim_chr\n" + seq.encode(), "unsupported format (text with a UTF-8 byte-order mark")
    put("non_ascii.fa", b">sim_chr\n" + seq.encode()[:300] + "\u00e9".encode() + seq.encode()[300:], "non-ASCII")
    return out


REF_CASES = ("bare_name.fa", "bare_second.fa", "empty_record.fa", "empty_first.fa", "nul.fa",
             "protein.fa", "duplicate.fa", "gzipped.fa.gz", "bom.fa", "non_ascii.fa")


@pytest.mark.parametrize("command", COMMANDS)
def test_bare_name_reference_is_refused_not_a_crash(biotool, cas9, tmp_path, leftovers, command):
    # Was: align segfaulted (139), breakpoints/variants exit 4 with minimap2's ANSI warning.
    fasta, needle = _references(cas9["ref"], tmp_path)["bare_name.fa"]
    r = biotool(command, "--fastq", str(cas9["fastq"]), "--reference", str(fasta))
    error_line(r, str(fasta), needle, alone=True)
    _no_work(tmp_path / "cache", leftovers)


@pytest.mark.parametrize("case", REF_CASES[1:])
def test_unusable_reference_is_refused_before_any_work(biotool, cas9, tmp_path, leftovers, case):
    fasta, needle = _references(cas9["ref"], tmp_path)[case]
    command = "variants" if len(case) % 2 else "breakpoints"  # both commands, spread over cases
    r = biotool(command, "--fastq", str(cas9["fastq"]), "--reference", str(fasta))
    error_line(r, str(fasta), needle, alone=True)
    assert "aligning" not in r.stderr
    _no_work(tmp_path / "cache", leftovers)


def test_a_few_odd_letters_are_tolerated_in_a_nucleotide_reference(biotool, cas9, tmp_path):
    # Lower case, IUPAC codes and a handful of stray letters (under 1%) are nucleotide FASTA.
    ref = list(cas9["ref"].lower())
    for i in range(100, 6000, 1000):
        ref[i] = "X"
    ref[50] = "R"
    fasta = tmp_path / "soft.fa"
    fasta.write_text(">sim_chr\n" + "".join(ref) + "\n")
    r = biotool("breakpoints", "--bam", str(cas9["bam"]), "--reference", str(fasta))
    assert r.code == 0, r.stderr
    assert r.json["consensus"][0]["pos"] == cas9["truth"]["cut"]


# ---- FASTQ ------------------------------------------------------------------------------

def _fastqs(src: Path, d: Path) -> dict[str, tuple[Path, str]]:
    text = src.read_bytes()
    recs = text.splitlines(keepends=True)
    out = {}

    def put(name, data: bytes, needle):
        p = d / name
        p.write_bytes(data)
        out[name] = (p, needle)

    def at(k, line, new):  # record k (1-based), line 0..3 replaced
        lines = list(recs)
        lines[4 * (k - 1) + line] = new
        return b"".join(lines)

    qual = recs[4 * 29 + 3].rstrip(b"\n")
    put("low_quality.fq", at(30, 3, qual[:10] + b" " + qual[11:] + b"\n"), "below '!'")
    put("tab_quality.fq", at(30, 3, qual[:10] + b"\t" + qual[11:] + b"\n"), "below '!'")
    seq = recs[4 * 29 + 1]
    put("nul_seq.fq", at(30, 1, seq[:20] + b"\x00" + seq[21:]), "NUL byte")
    put("latin1_seq.fq", at(30, 1, seq[:20] + b"\xe9" + seq[21:]), "non-ASCII")
    put("utf8_qual.fq", at(30, 3, qual[:10] + "é".encode() + qual[12:] + b"\n"), "non-ASCII")
    put("nul_name.fq", at(30, 0, b"@read\x00x\n"), "NUL")
    put("long_name.fq", at(30, 0, b"@" + b"n" * 300 + b" comment\n"), "300 characters")
    put("empty_name.fq", at(30, 0, b"@\n"), "empty read name")
    put("reads.fq.bz2", bz2.compress(text), "unsupported compression (bzip2)")
    put("reads.fq.xz", lzma.compress(text), "unsupported compression (xz)")
    zst = d / "reads.fq.zst"
    if shutil.which("zstd"):
        subprocess.run(["zstd", "-q", "-f", "-o", str(zst), "-"], input=text, check=True)
    else:  # the format's magic is what is recognised
        zst.write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(64))
    out[zst.name] = (zst, "unsupported compression (zstd)")
    return out


FASTQ_CASES = ("low_quality.fq", "tab_quality.fq", "nul_seq.fq", "latin1_seq.fq", "utf8_qual.fq",
               "nul_name.fq", "long_name.fq", "empty_name.fq", "reads.fq.bz2", "reads.fq.xz",
               "reads.fq.zst")


@pytest.mark.parametrize("case", FASTQ_CASES)
def test_malformed_fastq_bytes_are_bad_input_before_alignment(biotool, cas9, tmp_path, leftovers,
                                                              case):
    # Was: accepted by the Python checks, then samtools sort failed: exit 4 blaming minimap2.
    fq, needle = _fastqs(cas9["fastq"], tmp_path)[case]
    command = "breakpoints" if len(case) % 2 else "variants"
    r = biotool(command, "--fastq", str(fq), "--reference", str(cas9["fasta"]),
                "--preset", "sr")  # no auto-preset sample: the full check alone must catch it
    error_line(r, str(fq), needle, alone=True)
    assert "aligning" not in r.stderr
    _no_work(tmp_path / "cache", leftovers)


@pytest.mark.parametrize("case", ["low_quality.fq", "long_name.fq", "reads.fq.bz2"])
def test_align_refuses_the_same_fastq_faults(biotool, cas9, tmp_path, case):
    fq, needle = _fastqs(cas9["fastq"], tmp_path)[case]
    error_line(biotool("align", "--fastq", str(fq), "--reference", str(cas9["fasta"])),
               str(fq), needle, alone=True)


def test_a_fault_deep_in_a_large_fastq_is_found_before_alignment(biotool, cas9, tmp_path,
                                                                 leftovers):
    # Past the 2000 reads the auto preset samples: the full pass still finds it first.
    text = cas9["fastq"].read_bytes()
    reps = 5000 // text.count(b"\n@") + 2
    big = b"".join(text.replace(b"@", b"@r%d_" % i) for i in range(reps))
    lines = big.splitlines(keepends=True)
    k = len(lines) // 4 - 3
    lines[4 * k + 3] = b"#" * (len(lines[4 * k + 3]) - 2) + b"\x1f\n"
    fq = tmp_path / "big.fq"
    fq.write_bytes(b"".join(lines))
    r = biotool("breakpoints", "--fastq", str(fq), "--reference", str(cas9["fasta"]))
    error_line(r, str(fq), f"record {k + 1}", "below '!'", alone=True)
    assert "aligning" not in r.stderr
    _no_work(tmp_path / "cache", leftovers)


def test_a_bam_given_as_fastq_is_named(biotool, cas9):
    r = biotool("breakpoints", "--fastq", str(cas9["bam"]), "--reference", str(cas9["fasta"]))
    error_line(r, str(cas9["bam"]), "is a BAM file", "--bam", alone=True)


# ---- the same reads twice ---------------------------------------------------------------

def test_the_same_reads_under_different_paths_are_refused(biotool, cas9, planted, tmp_path,
                                                          leftovers):
    copy = tmp_path / "copy.fastq"
    shutil.copyfile(planted["fastq"], copy)
    gz = tmp_path / "reads.fastq.gz"
    gz.write_bytes(gzip.compress(planted["fastq"].read_bytes()))
    ref = str(planted["fasta"])
    for a, b in ((planted["fastq"], copy), (planted["fastq"], gz), (gz, copy)):
        r = biotool("variants", "--fastq", str(a), "--fastq", str(b), "--reference", ref)
        error_line(r, str(b), "the same reads twice", str(a), alone=True)
        _no_work(tmp_path / "cache", leftovers)
    # Paired files: a mate file that is a copy of the other is the same reads twice too.
    r = biotool("breakpoints", "--fastq", str(copy), "--fastq", str(gz), "--reference", ref)
    error_line(r, str(gz), "the same reads twice", alone=True)
    # A BAM and its copy (with its own index) pool every read twice.
    bam = tmp_path / "copy.bam"
    shutil.copyfile(planted["bam"], bam)
    shutil.copyfile(str(planted["bam"]) + ".bai", str(bam) + ".bai")
    r = biotool("variants", "--bam", str(planted["bam"]), "--bam", str(bam), "--reference", ref)
    error_line(r, str(bam), "the same reads twice", alone=True)
    # Two different libraries with the same first reads are not the same reads.
    half = tmp_path / "half.fastq"
    lines = planted["fastq"].read_text().splitlines(keepends=True)
    half.write_text("".join(lines[: len(lines) // 8 * 4]))
    ok = biotool("variants", "--fastq", str(planted["fastq"]), "--fastq", str(half),
                 "--reference", ref, "--top", "1")
    assert ok.code == 0, ok.stderr
    assert [s["sample"] for s in ok.json["samples"]] == ["reads.fastq", "half.fastq"]


# ---- BAMs -------------------------------------------------------------------------------

def test_breakpoints_applies_the_same_reference_check_as_variants(biotool, cas9, planted):
    # Both genomes are one 6 kb contig named sim_chr: the header agrees, the sequence does not.
    for command in ("breakpoints", "variants"):
        r = biotool(command, "--bam", str(planted["bam"]), "--reference", str(cas9["fasta"]))
        error_line(r, str(planted["bam"]), "of its aligned bases differ", "different sequence",
                   alone=True)


def _rewrite(src: Path, out: Path, order) -> Path:
    import pysam

    with pysam.AlignmentFile(str(src)) as fh:
        header = fh.header.to_dict()
        reads = [r.to_string() for r in fh]
    header.get("HD", {}).pop("SO", None)
    with pysam.AlignmentFile(str(out), "wb", header=header) as fh:
        for line in order(reads):
            fh.write(pysam.AlignedSegment.fromstring(line, fh.header))
    return out


def test_unsorted_bam_with_a_stale_index(biotool, cas9, tmp_path):
    bam = _rewrite(cas9["bam"], tmp_path / "unsorted.bam", lambda rs: rs[::-1])
    shutil.copyfile(str(cas9["bam"]) + ".bai", str(bam) + ".bai")  # the sorted file's index
    for command in ("breakpoints", "variants"):
        r = biotool(command, "--bam", str(bam), "--reference", str(cas9["fasta"]))
        error_line(r, str(bam), "not coordinate-sorted", alone=True)


def test_a_sorted_bam_with_another_bams_index(biotool, cas9, tmp_path):
    # Same reads less the first 40: the old index points into the wrong places.
    bam = _rewrite(cas9["bam"], tmp_path / "fewer.bam", lambda rs: rs[40:])
    shutil.copyfile(str(cas9["bam"]) + ".bai", str(bam) + ".bai")
    r = biotool("breakpoints", "--bam", str(bam), "--reference", str(cas9["fasta"]))
    error_line(r, str(bam), "index", alone=True)
    assert "samtools index" in r.stderr


def test_cram_is_named_with_the_conversion(biotool, cas9, tmp_path):
    cram = tmp_path / "reads.cram"
    subprocess.run(["samtools", "view", "-C", "-T", str(cas9["fasta"]), "-o", str(cram),
                    str(cas9["bam"])], check=True)
    subprocess.run(["samtools", "index", str(cram)], check=True)
    r = biotool("breakpoints", "--bam", str(cram), "--reference", str(cas9["fasta"]))
    error_line(r, str(cram), "CRAM is not supported", "samtools view -b", alone=True)


def test_a_garbage_index_is_called_corrupt_not_missing(biotool, cas9, tmp_path):
    bam = tmp_path / "reads.bam"
    shutil.copyfile(cas9["bam"], bam)
    Path(str(bam) + ".bai").write_bytes(os.urandom(300))
    r = biotool("variants", "--bam", str(bam), "--reference", str(cas9["fasta"]))
    error_line(r, str(bam), "corrupt", "samtools index", alone=True)
    assert "no index" not in r.stderr


# ---- --vcf ------------------------------------------------------------------------------

@pytest.mark.parametrize("vcf,needle", [("", "--vcf '': empty value"), ("  ", "empty"),
                                        ("{d}/no/such/folder/out.vcf.gz", "does not exist"),
                                        ("{d}", "is a directory")])
def test_bad_vcf_paths_are_refused_before_any_work(biotool, cas9, tmp_path, leftovers, vcf,
                                                   needle):
    r = biotool("variants", "--fastq", str(cas9["fastq"]), "--reference", str(cas9["fasta"]),
                "--vcf", vcf.format(d=tmp_path))
    error_line(r, needle, alone=True)
    _no_work(tmp_path / "cache", leftovers)
    assert not (tmp_path / "cache" / "reference").exists()


@contextlib.contextmanager
def _read_only_dir(tmp_path: Path):
    """A folder no write reaches: mode 0555 for a non-root user; for root (which mode bits do
    not stop) a read-only tmpfs, or the test is skipped where mounting is not allowed."""
    d = tmp_path / "ro"
    d.mkdir()
    if os.geteuid() != 0:
        d.chmod(0o555)
        try:
            yield d
        finally:
            d.chmod(0o755)
        return
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(d)],
                      capture_output=True).returncode != 0:
        pytest.skip("running as root without the right to mount a read-only folder")
    try:
        yield d
    finally:
        subprocess.run(["umount", str(d)], check=False)


def test_vcf_into_a_read_only_folder_is_refused_before_any_work(biotool, cas9, tmp_path,
                                                                 leftovers):
    with _read_only_dir(tmp_path) as ro:
        r = biotool("variants", "--fastq", str(cas9["fastq"]), "--reference", str(cas9["fasta"]),
                    "--vcf", str(ro / "out.vcf.gz"))
        error_line(r, str(ro / "out.vcf.gz"), "not writable", alone=True)
    _no_work(tmp_path / "cache", leftovers)


def test_unwritable_cache_is_one_line_exit_2(biotool, cas9, tmp_path):
    with _read_only_dir(tmp_path) as ro:
        r = biotool("breakpoints", "--fastq", str(cas9["fastq"]), "--reference",
                    str(cas9["fasta"]), env={"BIOTOOL_CACHE": str(ro / "cache")})
        error_line(r, str(ro / "cache"), "BIOTOOL_CACHE", alone=True)
        r = biotool("breakpoints", "--fastq", str(cas9["fastq"]), "--reference",
                    str(cas9["fasta"]), env={"BIOTOOL_CACHE": str(ro)})
        error_line(r, str(ro), "not writable", "BIOTOOL_CACHE", alone=True)
    # A cache path under a regular file cannot be created by anyone, root included.
    r = biotool("variants", "--bam", str(cas9["bam"]), "--reference", str(cas9["fasta"]),
                env={"BIOTOOL_CACHE": str(cas9["fasta"]) + "/cache"})
    error_line(r, "BIOTOOL_CACHE", "cannot be created", alone=True)


def _run_with_umask(biotool_env, mask, *args):
    proc = subprocess.run([sys.executable, "-m", "biotool", *args], capture_output=True,
                          text=True, env=biotool_env, timeout=300,
                          preexec_fn=lambda: os.umask(mask))
    return proc


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_vcf_outputs_honour_the_umask(biotool_env, planted, tmp_path, mask, mode):
    out = tmp_path / "calls.vcf.gz"
    proc = _run_with_umask(biotool_env, mask, "variants", "--bam", str(planted["bam"]),
                           "--reference", str(planted["fasta"]), "--vcf", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_mode & 0o777 == mode
    assert Path(str(out) + ".tbi").stat().st_mode & 0o777 == mode
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]
    assert subprocess.run(["bcftools", "view", "-H", str(out)], capture_output=True).returncode == 0


# ---- paths that are not regular files -----------------------------------------------------

@pytest.mark.parametrize("flag", ["--fastq", "--bam", "--reference"])
@pytest.mark.parametrize("kind", ["fifo", "device", "dir", "loop"])
def test_special_paths_are_refused_without_blocking(biotool, cas9, tmp_path, flag, kind):
    if kind == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
        needle = "FIFO"
    elif kind == "device":
        path, needle = Path("/dev/zero"), "a device"
    elif kind == "dir":
        path, needle = tmp_path, "is a directory"
    else:
        path = tmp_path / "loop"
        os.symlink(tmp_path / "loop2", path)
        os.symlink(path, tmp_path / "loop2")
        needle = "symlink loop"
    args = {"--fastq": ["--fastq", str(path), "--reference", str(cas9["fasta"])],
            "--bam": ["--bam", str(path), "--reference", str(cas9["fasta"])],
            "--reference": ["--fastq", str(cas9["fastq"]), "--reference", str(path)]}[flag]
    r = biotool("variants", *args, timeout=60)  # a blocked open would time out here
    error_line(r, str(path), needle, alone=True)
