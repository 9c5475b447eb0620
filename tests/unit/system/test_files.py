"""biotool.files: every kind of path an agent can name gets one line and exit 2, never a hang."""

import os
import socket
import stat

import pytest

from biotool.files import input_file, magic, output_file, published, read_bounded
from biotool.output import InputError


def _err(fn, *a, **k) -> str:
    with pytest.raises(InputError) as exc:
        fn(*a, **k)
    assert exc.value.exit_code == 2
    assert "\n" not in str(exc.value)
    return str(exc.value)


def test_regular_file_passes(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("x")
    assert input_file(f, "--in") == f


def test_fifo_is_refused_without_opening(tmp_path):
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    assert "FIFO" in _err(input_file, fifo, "--in")  # would block forever if opened


def test_directory_device_socket(tmp_path):
    assert "directory" in _err(input_file, tmp_path, "--in")
    assert input_file(tmp_path, "--in", allow_dir=True) == tmp_path
    assert "device" in _err(input_file, "/dev/zero", "--in")
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(tmp_path / "sock"))
    try:
        assert "socket" in _err(input_file, tmp_path / "sock", "--in")
    finally:
        s.close()


def test_missing_loop_broken_empty_oversized(tmp_path):
    assert "no such file" in _err(input_file, tmp_path / "nope", "--in")
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    assert "symlink loop" in _err(input_file, tmp_path / "l1", "--in")
    (tmp_path / "broken").symlink_to(tmp_path / "gone")
    assert "broken symlink" in _err(input_file, tmp_path / "broken", "--in")
    assert "empty path" in _err(input_file, "", "--in")
    (tmp_path / "e").write_bytes(b"")
    assert "empty" in _err(input_file, tmp_path / "e", "--in", allow_empty=False)
    (tmp_path / "big").write_bytes(b"x" * 11)
    assert "over the limit" in _err(read_bounded, tmp_path / "big", "--in", 10)
    assert read_bounded(tmp_path / "big", "--in", 11) == b"x" * 11


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads mode 000 files")
def test_unreadable(tmp_path):
    f = tmp_path / "secret"
    f.write_text("x")
    f.chmod(0)
    assert "permission denied" in _err(input_file, f, "--in")


def test_magic(tmp_path):
    import gzip
    f = tmp_path / "x.gz"
    f.write_bytes(gzip.compress(b"@r\nA\n+\nI\n"))
    assert magic(f) == "gzip"
    (tmp_path / "bom.fa").write_bytes(b"\xef\xbb\xbf>x\nACGT\n")
    assert "byte-order mark" in magic(tmp_path / "bom.fa")
    (tmp_path / "plain.fa").write_text(">x\nACGT\n")
    assert magic(tmp_path / "plain.fa") is None


def test_output_checks_and_published_mode(tmp_path):
    assert "empty path" in _err(output_file, "", "--vcf")
    assert "does not exist" in _err(output_file, tmp_path / "no" / "x.vcf", "--vcf")
    assert "directory" in _err(output_file, tmp_path, "--vcf")
    out = output_file(tmp_path / "x.vcf", "--vcf")
    old = os.umask(0o022)
    try:
        with published(out) as tmp:
            tmp.write_text("data")
    finally:
        os.umask(old)
    assert out.read_text() == "data"
    assert stat.S_IMODE(out.stat().st_mode) == 0o644  # readable by others, not 0600
    with pytest.raises(RuntimeError):
        with published(tmp_path / "y.vcf") as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert not list(tmp_path.glob("*y.vcf*"))  # nothing half-written left
