"""The file manifest (biotool.filemanifest) and its reading from image layers on the host
(biotool_sandbox.imagefiles.merge): whiteouts, opaque folders, hard links."""

from __future__ import annotations

import io
import os
import tarfile

from biotool import filemanifest as fm
from biotool_sandbox import imagefiles


def _tree(root):
    (root / "etc").mkdir()
    (root / "etc" / "a.conf").write_text("one\n")
    (root / "bin").mkdir()
    (root / "bin" / "tool").write_text("#!/bin/sh\n")
    os.chmod(root / "bin" / "tool", 0o755)
    (root / "bin" / "link").symlink_to("tool")
    (root / "odd\tname").write_text("x")
    (root / "proc").mkdir()
    (root / "proc" / "1").write_text("not the image's")
    (root / "etc" / "hostname").write_text("build-host")


def test_scan_render_parse_round_trip(tmp_path):
    _tree(tmp_path)
    entries = fm.scan(str(tmp_path), exclude=())
    paths = [e.path for e in entries]
    assert "/bin/link" in paths and "/odd\tname" in paths
    # The engine's per-container files and pseudo filesystems are not the image's.
    assert "/proc" not in paths and "/proc/1" not in paths and "/etc/hostname" not in paths
    parsed = fm.parse(fm.render(entries))
    assert parsed == {e.path: e for e in entries}
    link = parsed["/bin/link"]
    assert (link.kind, link.digest) == ("l", "tool")
    assert parsed["/bin/tool"].mode == 0o755


def test_compare_names_every_kind_of_change(tmp_path):
    _tree(tmp_path)
    before = {e.path: e for e in fm.scan(str(tmp_path), exclude=())}
    (tmp_path / "etc" / "a.conf").write_text("two\n")
    os.chmod(tmp_path / "bin" / "tool", 0o4755)
    (tmp_path / "bin" / "new").write_text("added")
    (tmp_path / "odd\tname").unlink()
    after = {e.path: e for e in fm.scan(str(tmp_path), exclude=())}
    got = {(d.path, d.change, d.detail) for d in fm.compare(before, after)}
    assert ("/etc/a.conf", "changed", "content") in got
    assert ("/bin/tool", "changed", "mode 0755 -> 4755") in got
    assert ("/bin/new", "added", "") in got
    assert ("/odd\tname", "removed", "") in got
    # A folder whose entries changed is not itself a difference: only its files are.
    assert not any(d[0] == "/bin" for d in got)


def test_write_leaves_itself_out(tmp_path):
    _tree(tmp_path)
    out = tmp_path / "etc" / "files.tsv"
    n = fm.write(str(out), root=str(tmp_path))
    parsed = fm.parse(out.read_text())
    assert "/etc/files.tsv" not in parsed and len(parsed) == n
    assert fm.main(["nonsense"]) == 2


def test_parse_names_the_bad_line():
    try:
        fm.parse(fm.HEADER + "\nf\t0644\t0:0\n")
    except ValueError as exc:
        assert "line 2" in str(exc)
    else:
        raise AssertionError("a short line parsed")


def _layer(*members) -> io.BytesIO:
    """A layer tar: (name, type, content-or-linkname, mode)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, kind, data, mode in members:
            info = tarfile.TarInfo(name)
            info.mode = mode
            if kind == "d":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif kind == "l":
                info.type, info.linkname = tarfile.SYMTYPE, data
                tar.addfile(info)
            elif kind == "h":
                info.type, info.linkname = tarfile.LNKTYPE, data
                tar.addfile(info)
            else:
                raw = data.encode()
                info.size = len(raw)
                tar.addfile(info, io.BytesIO(raw))
    buf.seek(0)
    return buf


def test_layers_merge_as_overlayfs_does():
    keep = "/etc/biotool/files.tsv"
    base = _layer(("./", "d", "", 0o755), ("etc/", "d", "", 0o755), ("etc/a", "f", "a1", 0o644),
                  ("opt/", "d", "", 0o755), ("opt/x/", "d", "", 0o755),
                  ("opt/x/old", "f", "old", 0o644), ("tmp/", "d", "", 0o1777),
                  ("tmp/junk", "f", "j", 0o644), ("etc/hostname", "f", "debian", 0o644),
                  ("src/", "d", "", 0o755), ("src/refs", "f", "r", 0o644))
    upper = _layer(("etc/a", "f", "a2", 0o600), ("opt/x/", "d", "", 0o755), (".wh.src", "f", "", 0o644),
                   ("opt/x/.wh..wh..opq", "f", "", 0o644), ("opt/x/new", "f", "new", 0o644),
                   ("opt/x/same", "h", "opt/x/new", 0o644), ("tmp/.wh.junk", "f", "", 0o644),
                   ("etc/biotool/", "d", "", 0o755), ("etc/biotool/files.tsv", "f", "M", 0o644))
    files, kept = imagefiles.merge([imagefiles._read_layer(base, keep),
                                    imagefiles._read_layer(upper, keep)], keep)
    assert kept == b"M" and keep not in files
    assert files["/etc/a"].mode == 0o600
    import hashlib

    assert files["/etc/a"].digest == hashlib.sha256(b"a2").hexdigest()
    assert "/opt/x/old" not in files and "/opt/x" in files  # the opaque folder kept, emptied
    assert files["/opt/x/same"].digest == files["/opt/x/new"].digest  # a hard link's content
    assert "/tmp/junk" not in files and "/tmp" in files  # a whiteout
    # A whiteout at the root (`rm -rf /src` in a later step): a name that starts with a dot.
    assert not [p for p in files if p.startswith(("/src", "/wh.", "/.wh."))], sorted(files)
    assert "/etc/hostname" not in files  # the engine's in every container
    # A later layer that removes the manifest leaves the image without one.
    gone = _layer(("etc/biotool/.wh.files.tsv", "f", "", 0o644))
    base.seek(0)
    upper.seek(0)
    _files, kept = imagefiles.merge([imagefiles._read_layer(base, keep),
                                     imagefiles._read_layer(upper, keep),
                                     imagefiles._read_layer(gone, keep)], keep)
    assert kept is None
