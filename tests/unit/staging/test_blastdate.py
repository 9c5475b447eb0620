"""makeblastdb's date in a database's index file, set to SOURCE_DATE_EPOCH's: two builds of one
FASTA at different times give the same bytes, and BLAST still reads the database."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from biotool.stagebuild import blastdate

FASTA = ">seq1 demo\nACGTACGTTAGCTAGCTAGGATCGATCGATCGTAGCTAGCTAGCTAGCATCGAT\n"


def _makeblastdb(folder, title="x"):
    folder.mkdir()
    (folder / "x.fa").write_text(FASTA)
    subprocess.run(["makeblastdb", "-in", str(folder / "x.fa"), "-dbtype", "nucl",
                    "-parse_seqids", "-title", title, "-out", str(folder / "db")],
                   check=True, capture_output=True)


def test_format():
    assert blastdate.blast_date(0) == "Jan 1, 1970 12:00 AM"
    assert blastdate.blast_date(1764000000) == "Nov 24, 2025  4:00 PM"


@pytest.mark.skipif(shutil.which("makeblastdb") is None, reason="makeblastdb not installed")
def test_two_databases_at_different_times_are_the_same_bytes(tmp_path, monkeypatch):
    _makeblastdb(tmp_path / "a")
    index = (tmp_path / "a" / "db.nin").read_bytes()
    # Another clock time, as a later build would have written.
    stamp = blastdate.blast_date(1764000000).encode()
    offset, length = blastdate._date_field(index)
    other = index[:offset] + stamp.ljust(length, b"\0") + index[offset + length:]
    (tmp_path / "b").mkdir()
    for f in (tmp_path / "a").iterdir():
        shutil.copy(f, tmp_path / "b" / f.name)
    (tmp_path / "b" / "db.nin").write_bytes(other)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert blastdate.pin_dates(tmp_path / "a") == [tmp_path / "a" / "db.nin"]
    blastdate.pin_dates(tmp_path / "b")
    assert (tmp_path / "a" / "db.nin").read_bytes() == (tmp_path / "b" / "db.nin").read_bytes()
    info = subprocess.run(["blastdbcmd", "-db", str(tmp_path / "a" / "db"), "-info"],
                          check=True, capture_output=True, text=True).stdout
    assert f"Date: {blastdate.blast_date(1700000000)}" in info


def test_without_source_date_epoch_nothing_changes(tmp_path, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    (tmp_path / "db.nin").write_bytes(b"not touched")
    assert blastdate.pin_dates(tmp_path) == []
    assert (tmp_path / "db.nin").read_bytes() == b"not touched"


def test_not_a_blast_header():
    with pytest.raises(ValueError, match="format"):
        blastdate._date_field(b"\x00\x00\x00\x07" + b"\x00" * 20)
