"""`biotool-sandbox verify-sif` on SIFs made here: a real squashfs (mksquashfs) of a small tree
with its manifest, inside a SIF header and descriptor table laid out as sylabs/sif writes them.
The tier with real Apptainer (tests/apptainer/test_shape.py) checks the SIF of the image."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess

import pytest

from biotool import filemanifest
from biotool_sandbox import siffiles
from biotool_sandbox.cli import main
from biotool_sandbox.errors import LauncherError

pytestmark = pytest.mark.skipif(shutil.which("mksquashfs") is None or os.getuid() != 0,
                                reason="needs squashfs-tools and root (.ci/run installs it)")


def _tree(root):
    (root / "opt" / "biotool").mkdir(parents=True)
    (root / "opt" / "biotool" / "data.txt").write_text("staged\n")
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "tool").write_text("#!/bin/sh\n")
    (root / "usr" / "bin" / "tool").chmod(0o755)
    (root / "usr" / "bin" / "alias").symlink_to("tool")
    (root / "home" / "agent").mkdir(parents=True)
    os.chown(root / "home" / "agent", 1000, 1000)
    (root / "etc" / "biotool").mkdir(parents=True)
    filemanifest.write(str(root / "etc" / "biotool" / "files.tsv"), str(root))
    # What Apptainer adds to every SIF, after the image's manifest was written.
    (root / ".singularity.d" / "env").mkdir(parents=True)
    (root / ".singularity.d" / "env" / "90-environment.sh").write_text("export A=1\n")
    (root / "environment").symlink_to(".singularity.d/env/90-environment.sh")


def _sif(path, squashfs: bytes, *, parttype: int = siffiles.PRIMARY_SYSTEM) -> None:
    """A SIF of one partition: header, two descriptors (a deffile and the partition), data."""
    desc_off, ndesc = 4096, 2
    data_off = desc_off + ndesc * siffiles.DESCRIPTOR.size
    data_off += -data_off % 4096
    header = siffiles.HEADER.pack(b"#!/usr/bin/env run-singularity\n", siffiles.MAGIC, b"01\0",
                                  b"02\0", b"\1" * 16, 0, 0, 0, ndesc, desc_off,
                                  ndesc * siffiles.DESCRIPTOR.size, data_off, len(squashfs))
    deffile = siffiles.DESCRIPTOR.pack(0x4001, 1, 1, 0, 0, data_off, 0, 0, 0, 0, 0, 0, b"", b"")
    extra = struct.pack("<ii3s", siffiles.SQUASHFS, parttype, b"02\0")
    part = siffiles.DESCRIPTOR.pack(siffiles.PARTITION, 1, 2, 1, 0, data_off, len(squashfs),
                                    len(squashfs), 0, 0, 0, 0, b"", extra)
    with open(path, "wb") as fh:
        fh.write(header)
        fh.seek(desc_off)
        fh.write(deffile + part)
        fh.seek(data_off)
        fh.write(squashfs)


@pytest.fixture
def made(tmp_path):
    root = tmp_path / "root"
    _tree(root)

    def make(name: str = "x.sif", all_root: bool = False, **kw):
        sq = tmp_path / f"{name}.squashfs"
        subprocess.run(["mksquashfs", str(root), str(sq), "-noappend", "-quiet", "-no-progress",
                        "-comp", "zstd", *(["-all-root"] if all_root else [])],
                       check=True, capture_output=True)
        sif = tmp_path / name
        _sif(sif, sq.read_bytes(), **kw)
        return sif
    manifest = (root / "etc" / "biotool" / "files.tsv").read_text()
    return root, make, hashlib.sha256(manifest.encode()).hexdigest()


def test_a_sif_of_the_manifests_files_verifies_with_apptainers_paths_apart(made):
    _, make, sha = made
    report = siffiles.verify(str(make()), manifest_sha256=sha)
    assert report["ok"] and report["manifest"]["differences"] == 0, report
    assert report["manifest"]["same_as_image's"] is True
    assert report["apptainer_paths"] == ["/.singularity.d", "/.singularity.d/env",
                                         "/.singularity.d/env/90-environment.sh", "/environment"]


def test_owners_a_non_root_build_gave_to_root_are_listed_apart(made):
    # Apptainer's root-mapped build stores every path as root's: /home/agent's 1000:1000 is
    # listed, not a difference; a mixed SIF keeps the owner check.
    _, make, sha = made
    report = siffiles.verify(str(make(all_root=True)), manifest_sha256=sha)
    assert report["ok"] and report["manifest"]["differences"] == 0, report
    assert report["owners"] == {"collapsed_to_root": True, "paths": 1, "listed": ["/home/agent"]}
    assert siffiles.verify(str(make()), manifest_sha256=sha)["owners"]["collapsed_to_root"] is False


def test_a_changed_added_or_removed_file_is_a_difference(made):
    root, make, sha = made
    (root / "opt" / "biotool" / "data.txt").write_text("swapped\n")
    (root / "usr" / "bin" / "extra").write_text("x")
    (root / "usr" / "bin" / "alias").unlink()
    report = siffiles.verify(str(make()), manifest_sha256=sha)
    assert not report["ok"] and report["manifest"]["differences"] == 3
    listed = {d["path"]: d for d in report["manifest"]["listed"]}
    assert set(listed) == {"/opt/biotool/data.txt", "/usr/bin/extra", "/usr/bin/alias"}, listed


def test_a_manifest_that_is_not_the_images_fails(made, capsys, tmp_path):
    _, make, _sha = made
    sif = make()
    report = siffiles.verify(str(sif), manifest_sha256="0" * 64)
    assert not report["ok"] and report["manifest"]["same_as_image's"] is False
    # The CLI reads the record beside the SIF: exit 4, one line, the report on stdout.
    (tmp_path / "x.sif.json").write_text(json.dumps({"manifest_sha256": "0" * 64}))
    with pytest.raises(SystemExit) as exit_:
        main(["verify-sif", str(sif)])
    out, err = capsys.readouterr()
    assert exit_.value.code == 4 and json.loads(out)["manifest"]["same_as_image's"] is False
    assert err.strip().count("\n") == 0 and "its manifest is not the image's" in err


@pytest.mark.parametrize("damage, message", [
    (lambda p: p.write_bytes(b"\0" * 4096), "is not a SIF (no SIF_MAGIC"),
    (lambda p: p.write_bytes(b""), "is not a SIF (no SIF_MAGIC"),
    (lambda p: (p.unlink(), os.mkfifo(p)), "is a FIFO, not a regular file"),
    (lambda p: (p.unlink(), p.mkdir()), "is a folder, not a regular file"),
])
def test_what_is_no_sif_is_refused_in_one_line(made, capsys, damage, message):
    _, make, _ = made
    sif = make()
    damage(sif)
    with pytest.raises(SystemExit) as exit_:
        main(["verify-sif", str(sif)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and err.strip().count("\n") == 0, err


def test_a_sif_without_a_system_partition_is_refused(made):
    _, make, _ = made
    sif = make(parttype=3)  # an overlay partition, not the primary system
    with pytest.raises(LauncherError, match="no squashfs system partition among its 2 descriptors"):
        siffiles.system_partition(str(sif))


def test_a_record_that_is_not_json_is_refused_in_one_line(made, capsys, tmp_path):
    _, make, _ = made
    sif = make()
    (tmp_path / "x.sif.json").write_text("{not json")
    with pytest.raises(SystemExit) as exit_:
        main(["verify-sif", str(sif)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "x.sif.json: not the JSON record" in err
    assert err.strip().count("\n") == 0
