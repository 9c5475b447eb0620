"""`biotool-sandbox verify-sif`: a SIF's files, read on the host from its system partition,
checked against the file manifest the image's build wrote (docs/hpc.md, Checking a SIF).

A SIF is a header, descriptors and data objects (the layout of sylabs/sif, format 01); the root
filesystem is the squashfs partition whose descriptor says "primary system". It is unpacked
with squashfs-tools' `unsquashfs -offset` into a temporary folder, nothing in it run, and every
path hashed as the build's manifest hashes it. What Apptainer itself adds to every SIF (its
metadata folder and the links to it) is listed apart, and so are the owners a non-root build
gives to root (every path of such a SIF is root's); anything else that differs is a
difference: content, type, mode, a path added or removed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass

from biotool import filemanifest

from .errors import LauncherError

MAGIC = b"SIF_MAGIC\x00"
HEADER = struct.Struct("<32s10s3s3s16s8q")  # launch script, magic, version, arch, id, 8 int64
DESCRIPTOR = struct.Struct("<iBIIIqqqqqqq128s384s")
PARTITION = 0x4004  # DataPartition
SQUASHFS, PRIMARY_SYSTEM = 1, 2
# What `apptainer build` puts in every SIF besides the image's files.
APPTAINER_PATHS = ("/.singularity.d", "/environment", "/singularity", "/.exec", "/.run",
                   "/.shell", "/.test", "/.testscript")


@dataclass(frozen=True)
class Partition:
    offset: int
    size: int


def system_partition(sif: str) -> Partition:
    """Where the SIF's root filesystem is; LauncherError naming the file when it has none (or
    is not a regular file: a FIFO is never opened)."""
    from commandline.kinds import path_problem

    why = path_problem(sif, "file")
    if why:
        raise LauncherError(f"SIF {why}")
    with open(sif, "rb") as fh:
        head = fh.read(HEADER.size)
        if len(head) < HEADER.size or head[32:42] != MAGIC:
            raise LauncherError(f"{sif} is not a SIF (no SIF_MAGIC in its header)")
        *_, desc_free, desc_total, desc_off, desc_size, _data_off, _data_size = HEADER.unpack(head)
        if not 0 < desc_total <= 4096 or desc_size < desc_total * DESCRIPTOR.size:
            raise LauncherError(f"{sif}: its SIF header lists {desc_total} descriptors in "
                                f"{desc_size} bytes")
        fh.seek(desc_off)
        table = fh.read(desc_total * DESCRIPTOR.size)
    for i in range(desc_total):
        (kind, used, _id, _group, _link, offset, size, *_rest, extra) = \
            DESCRIPTOR.unpack_from(table, i * DESCRIPTOR.size)
        if used and kind == PARTITION:
            fstype, parttype = struct.unpack_from("<ii", extra)
            if fstype == SQUASHFS and parttype == PRIMARY_SYSTEM:
                return Partition(offset, size)
    raise LauncherError(f"{sif}: no squashfs system partition among its {desc_total} descriptors")


def apptainers_own(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in APPTAINER_PATHS)


def read_sif(sif: str, workdir: str | None = None) -> tuple[dict[str, filemanifest.Entry], str | None]:
    """The SIF's root filesystem as manifest entries, and the text of the manifest in it."""
    part = system_partition(sif)
    if shutil.which("unsquashfs") is None:
        raise LauncherError("verify-sif needs unsquashfs on this host (Debian: apt-get install "
                            "squashfs-tools)")
    tmp = tempfile.mkdtemp(prefix="verify-sif-", dir=workdir)
    try:
        root = os.path.join(tmp, "root")
        # As root unsquashfs keeps owners; xattrs are not in the manifest.
        proc = subprocess.run(["unsquashfs", "-n", "-no-xattrs", "-o", str(part.offset),
                               "-d", root, sif], capture_output=True, text=True)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            raise LauncherError(f"{sif}: unsquashfs could not unpack its system partition: {last}")
        entries = {e.path: e for e in filemanifest.scan(root)}
        manifest = os.path.join(root, filemanifest.MANIFEST.lstrip("/"))
        text = (open(manifest, encoding="utf-8", errors="surrogateescape").read()
                if os.path.isfile(manifest) else None)
        return entries, text
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def verify(sif: str, manifest_sha256: str | None = None, limit: int = 200,
           workdir: str | None = None) -> dict:
    """The verify-sif report: the SIF's files against the manifest inside it, and that
    manifest against the image's (its sha256, from the SIF's build record or --image)."""
    entries, text = read_sif(sif, workdir)
    if text is None:
        raise LauncherError(f"{sif} holds no file manifest ({filemanifest.MANIFEST}): it was "
                            "not built from a biotool image")
    try:
        expected = {p: e for p, e in filemanifest.parse(text).items() if not filemanifest.runtime(p)}
    except ValueError as exc:
        raise LauncherError(f"{sif}: {filemanifest.MANIFEST}: {exc}") from None
    own = {p: e for p, e in entries.items() if apptainers_own(p)}
    image = {p: e for p, e in entries.items() if p not in own}
    # A non-root build (Apptainer's root-mapped user namespace) cannot keep any owner but root:
    # when every path is root's, the manifest's other owners are compared as root's, and listed.
    collapsed = all((e.uid, e.gid) == (0, 0) for e in entries.values())
    reowned = sorted(p for p, e in expected.items() if collapsed and (e.uid, e.gid) != (0, 0))
    if collapsed:
        expected = {p: dataclasses.replace(e, uid=0, gid=0) for p, e in expected.items()}
    diffs = filemanifest.compare(expected, image)
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
    report = {"sif": sif, "paths": len(entries), "apptainer_paths": sorted(own)[:limit],
              "owners": {"collapsed_to_root": collapsed, "paths": len(reowned),
                         "listed": reowned[:limit]},
              "manifest": {"path": filemanifest.MANIFEST, "sha256": digest,
                           "differences": len(diffs),
                           "listed": [d.as_dict() for d in diffs[:limit]]}}
    report["manifest"]["same_as_image's"] = (None if manifest_sha256 is None
                                             else digest == manifest_sha256)
    report["ok"] = not diffs and report["manifest"]["same_as_image's"] is not False
    return report
