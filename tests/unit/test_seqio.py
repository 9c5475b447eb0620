"""biotool.seqio: FASTQ and FASTA records (plain or gzip), one-line errors naming the file and
the record or line, and the seeded reservoir sampler."""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path

import pytest

from biotool import seqio
from biotool.output import InputError

REPO = Path(__file__).resolve().parents[2]
ARTIC = REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"

FASTQ = "@r1 first read\nACGTN\n+\nIIIII\n@r2\nacgu\n+r2\n!!~~\r\n@empty\n\n+\n\n"


def _write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


def test_fastq_records_name_sequence_and_qualities(tmp_path):
    recs = list(seqio.fastq(_write(tmp_path, "r.fq", FASTQ)))
    assert recs == [(b"r1 first read", b"ACGTN", b"IIIII"), (b"r2", b"acgu", b"!!~~"),
                    (b"empty", b"", b"")]


def test_fastq_gzip_is_read_by_its_magic_not_its_name(tmp_path):
    plain = list(seqio.fastq(ARTIC))
    assert len(plain) == 200
    assert list(seqio.fastq(_write(tmp_path, "reads.txt", gzip.compress(ARTIC.read_bytes())))) \
        == plain


@pytest.mark.parametrize("text,message", [
    ("", "empty, no reads"),
    (">r1\nACGT\n", "this is FASTA, not FASTQ"),
    ("@r1\nACGT\n+\nIIII\nr2\nACGT\n+\nIIII\n", "record 2 does not start with '@'"),
    ("@r1\nACGT\n+\nIIII\n@r2\nACGT\n+\nIII\n", "record 2 has 4 bases but 3 qualities"),
    ("@r1\nACGT\n+\nIIII\n@r2\nACGT\n", "truncated or malformed at record 2 (r2)"),
    ("@r1\nACGT\n+\nIIII\n\n@r2\nACGT\n+\nIIII\n", "blank line inside the file after record 1"),
    ("@ \nACGT\n+\nIIII\n", "record 1 has an empty read name"),
    ("@r1\nMKWVTF\n+\nIIIIII\n", "record 1 has 'F' in its sequence, which is not a nucleotide code"),
    ("@r1\nACGT\n+\nII I\n", "record 1 has a quality character below '!' (byte 32)"),
    ("@r1\nAC\x00T\n+\nIIII\n", "record 1 has a NUL byte in its sequence"),
])
def test_fastq_errors_name_the_file_and_the_record(tmp_path, text, message):
    fq = _write(tmp_path, "bad.fq", text)
    with pytest.raises(InputError) as err:
        list(seqio.fastq(fq))
    assert str(err.value).startswith(f"--fastq {fq}: ") and message in str(err.value)


def test_fastq_trailing_blank_lines_are_harmless(tmp_path):
    assert len(list(seqio.fastq(_write(tmp_path, "r.fq", FASTQ + "\n\n")))) == 3


def test_corrupt_gzip_names_the_last_good_record(tmp_path):
    gz = _write(tmp_path, "cut.fq.gz", gzip.compress(ARTIC.read_bytes())[:4000])
    with pytest.raises(InputError, match=r"cut.fq.gz: gzip stream is corrupt or truncated "
                                         r"after record \d+ \(EOFError\)"):
        list(seqio.fastq(gz))


def test_an_endless_line_is_refused_not_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(seqio, "MAX_LINE", 64)
    fq = _write(tmp_path, "long.fq", "@r1\n" + "A" * 100 + "\n+\n" + "I" * 100 + "\n")
    with pytest.raises(InputError, match="record 1's sequence is longer than 64 bases"):
        list(seqio.fastq(fq))
    fa = _write(tmp_path, "long.fa", ">r1\n" + "A" * 100 + "\n")
    with pytest.raises(InputError, match="line 2 is longer than 64 characters"):
        list(seqio.fasta(fa))


def test_special_files_are_refused_before_opening(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=f"--fastq {fifo}: is a FIFO"):
        list(seqio.fastq(fifo))
    with pytest.raises(InputError, match=f"--fasta {tmp_path}: is a directory"):
        list(seqio.fasta(tmp_path))
    with pytest.raises(InputError, match="no such file"):
        list(seqio.fastq(tmp_path / "nope.fq"))


def test_fasta_records_with_the_line_of_their_header(tmp_path):
    text = ">a desc\nACGT\nacgu\n\n>empty\n>c\nNN*\n"
    fa = _write(tmp_path, "q.fa", text)
    assert list(seqio.fasta(fa)) == [("a", "ACGTacgu", 1), ("empty", "", 5), ("c", "NN*", 6)]
    gz = _write(tmp_path, "q.fa.gz", gzip.compress(text.encode()))
    assert list(seqio.fasta(gz)) == list(seqio.fasta(fa))


@pytest.mark.parametrize("text,message", [
    ("ACGT\n>x\nACGT\n", "line 1: not FASTA (expected '>' header first)"),
    (">x\nACGT\nHELLO WORLD\n", "line 3: not a nucleotide sequence line"),
    (">x\nACGT\n> \nACGT\n", "line 3: record header has no identifier"),
    (">x\nAC\x00GT\n", "line 2: NUL bytes"),
])
def test_fasta_errors_name_the_file_and_the_line(tmp_path, text, message):
    fa = _write(tmp_path, "bad.fa", text)
    with pytest.raises(InputError, match="^" + re.escape(f"{fa}: {message}")):
        list(seqio.fasta(fa))


def test_sample_is_seeded_uniform_and_in_input_order():
    items = list(range(1000))
    a, total = seqio.sample(iter(items), 50, seed=3)
    assert total == 1000 and len(a) == 50 and a == sorted(a)
    assert seqio.sample(iter(items), 50, seed=3) == (a, 1000)
    assert seqio.sample(iter(items), 50, seed=4)[0] != a
    assert seqio.sample(iter(items[:20]), 50) == (items[:20], 20)
    assert max(a) > 500  # later items replace earlier ones: not just the head of the input
