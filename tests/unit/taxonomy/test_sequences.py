"""Query input: FASTA/FASTQ parsing, one-line errors naming the line, seeded sampling."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from biotool.output import InputError
from biotool.taxonomy import sequences

REPO = Path(__file__).resolve().parents[3]
ARTIC = REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"


def test_reads_the_real_artic_fastq():
    recs = list(sequences.read_fastq(ARTIC))
    assert len(recs) == 200
    assert recs[0][0] == "4dfb1b24-eed4-4bb6-b32c-839d0c758fa9"
    assert set("".join(s for _, s in recs)) <= set("ACGTN")


def test_gzip_input_is_read_transparently(tmp_path):
    gz = tmp_path / "reads.fastq.gz"
    gz.write_bytes(gzip.compress(ARTIC.read_bytes()))
    assert list(sequences.read_fastq(gz)) == list(sequences.read_fastq(ARTIC))


def test_sampling_is_seeded_and_bounded():
    a = sequences.load_queries(None, str(ARTIC), 30, seed=0)
    b = sequences.load_queries(None, str(ARTIC), 30, seed=0)
    c = sequences.load_queries(None, str(ARTIC), 30, seed=1)
    assert a.queries == b.queries and len(a.queries) == 30
    assert a.queries != c.queries
    assert a.total == 200 and a.sampled is True
    full = sequences.load_queries(None, str(ARTIC), 500)
    assert len(full.queries) == 200 and full.sampled is False


def test_duplicate_ids_are_made_unique(tmp_path):
    fa = tmp_path / "dup.fa"
    fa.write_text(">r\nACGT\n>r\nGGCC\n")
    ids = [q for q, _ in sequences.load_queries(str(fa), None, 10).queries]
    assert ids == ["r", "r.1"]


@pytest.mark.parametrize("text,where", [
    ("ACGT\n>x\nACGT\n", "line 1: not FASTA"),
    (">x\nACGT\nHELLO WORLD\n", "line 3: not a nucleotide"),
    (">p\nMASTHMAKSTMASK\n", "record p looks like protein"),    # only IUPAC letters
    (">p\nMEEPQSDPSVEPPLSQ\n", "line 2: not a nucleotide sequence line"),
])
def test_malformed_fasta_names_the_line(tmp_path, text, where):
    fa = tmp_path / "bad.fa"
    fa.write_text(text)
    with pytest.raises(InputError, match=where):
        sequences.load_queries(str(fa), None, 10)


def test_truncated_fastq_is_an_input_error(tmp_path):
    fq = tmp_path / "bad.fastq"
    fq.write_text("@r1\nACGT\n+\nIII\n")
    with pytest.raises(InputError, match="record 1 has 4 bases but 3 qualities"):
        sequences.load_queries(None, str(fq), 10)


def test_missing_and_empty_inputs(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        sequences.load_queries(str(tmp_path / "nope.fa"), None, 10)
    (tmp_path / "empty.fa").write_text("")
    with pytest.raises(InputError, match="no FASTA records"):
        sequences.load_queries(str(tmp_path / "empty.fa"), None, 10)
    with pytest.raises(InputError, match="exactly one of --fasta or --fastq"):
        sequences.load_queries(None, None, 10)


def test_empty_and_n_only_records_are_skipped_and_counted(tmp_path):
    fa = tmp_path / "mixed.fa"
    fa.write_text(">empty\n\n>ns\nNNNNnnnn\n>soft\nacgtNNacgu\n")
    got = sequences.load_queries(str(fa), None, 10)
    assert got.queries == (("soft", "ACGTNNACGT"),)  # lower case and U read as DNA
    assert got.skipped == {"empty": 1, "no_acgt": 1} and got.total == 1
    fq = tmp_path / "trimmed.fastq"  # a trimmer's zero-length read, and an all-N read
    fq.write_text("@a\n\n+\n\n@b\nNNNN\n+\nIIII\n@c\nACGTT\n+\nIIIII\n")
    got = sequences.load_queries(None, str(fq), 10)
    assert [q for q, _ in got.queries] == ["c"] and got.skipped == {"empty": 1, "no_acgt": 1}
    (tmp_path / "none.fa").write_text(">a\n>b\nNNN\n")
    with pytest.raises(InputError, match=r"no searchable FASTA records \(1 empty, 1 with no"):
        sequences.load_queries(str(tmp_path / "none.fa"), None, 10)


def test_unreadable_corrupt_and_directory_inputs_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="/proc/self/mem: cannot be read"):
        sequences.load_queries("/proc/self/mem", None, 10)  # unreadable even for root
    bad = tmp_path / "cut.fastq.gz"
    bad.write_bytes(gzip.compress(ARTIC.read_bytes())[:500])
    with pytest.raises(InputError, match="cut.fastq.gz: gzip stream is corrupt or truncated"):
        sequences.load_queries(None, str(bad), 10)
    with pytest.raises(InputError, match="is a directory"):
        sequences.load_queries(None, str(tmp_path), 10)


def test_stdin_is_read_once_even_gzipped():
    """"-" is stdin, a pipe that can be read only once: the gzip sniff must not consume it."""
    import subprocess
    import sys

    for data in (ARTIC.read_bytes(), gzip.compress(ARTIC.read_bytes())):
        proc = subprocess.run([sys.executable, "-c", "from biotool.taxonomy import sequences; "
                               "q = sequences.load_queries(None, '-', 500); "
                               "print(q.total, q.queries[0][0])"],
                              input=data, capture_output=True)
        first = "4dfb1b24-eed4-4bb6-b32c-839d0c758fa9"
        assert proc.stdout.decode().split() == ["200", first], proc.stderr


@pytest.mark.parametrize("length", [70_000, 1_000_000])
def test_a_long_read_name_is_read_alike_in_fastq_and_fasta(tmp_path, length):
    """One line bound for both formats (seqio.MAX_LINE): a name FASTA takes, FASTQ takes."""
    name, seq = "r" + "n" * length, "ACGTACGTTGCA" * 5
    fq, fa = tmp_path / "long.fq", tmp_path / "long.fa"
    fq.write_text(f"@{name} x\n{seq}\n+\n{'I' * len(seq)}\n")
    fa.write_text(f">{name} x\n{seq}\n")
    assert list(sequences.read_fastq(str(fq))) == list(sequences.read_fasta(str(fa))) == [(name, seq)]
