"""`biotool-sandbox verify-image`: an image's files read from its layers on the host, checked
against the manifest the build wrote into it, or against another image's files.

The image is read as `docker save` streams it: each layer's tar in order, with overlayfs'
whiteouts (`.wh.NAME` removes NAME, `.wh..wh..opq` empties a folder of what lower layers put
there) applied, so what is compared is exactly what a container of the image starts from, with
nothing run inside it (a derived image cannot answer for itself). The engine's per-container
paths (filemanifest.RUNTIME_*) are left out, as the build's manifest leaves them out.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import subprocess
import tarfile
from dataclasses import dataclass, field

from biotool import filemanifest
from biotool.filemanifest import Difference, Entry

from .errors import EngineError, LauncherError

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"


@dataclass
class ImageFiles:
    """An image's merged filesystem as manifest entries, its layer digests, and the text of
    its own manifest (None: the image has none)."""
    image: str
    image_id: str
    entries: dict[str, Entry]
    layers: list[str] = field(default_factory=list)
    manifest_text: str | None = None


def _kind(member: tarfile.TarInfo) -> str:
    if member.isreg() or member.islnk():
        return "f"
    if member.isdir():
        return "d"
    if member.issym():
        return "l"
    return "o"


def _norm(name: str) -> str:
    """A layer member's path as an absolute one: `./a`, `a/` and `/a` are `/a` (a prefix is
    taken off whole, never character by character: `.wh.src` keeps its dot)."""
    while name.startswith("./"):
        name = name[2:]
    if name in (".", ""):
        return "/"
    return "/" + name.strip("/")


def _read_layer(stream, keep: str) -> tuple[dict[str, Entry], set[str], set[str], bytes | None]:
    """(entries, whiteouts, opaque folders, the content of `keep` if this layer has it)."""
    entries: dict[str, Entry] = {}
    whiteouts, opaque = set(), set()
    kept = None
    with tarfile.open(fileobj=stream, mode="r|") as layer:
        for m in layer:
            path = _norm(m.name)
            parent, _, base = path.rpartition("/")
            parent = parent or "/"
            if base == OPAQUE:
                opaque.add(parent)
                continue
            if base.startswith(WHITEOUT):
                whiteouts.add((parent.rstrip("/") + "/" + base[len(WHITEOUT):]).replace("//", "/"))
                continue
            kind = _kind(m)
            if m.islnk():  # a hard link: the same content as the path it links to
                target = entries.get(_norm(m.linkname))
                digest = target.digest if target else "-"
            elif kind == "f":
                h = hashlib.sha256()
                fh = layer.extractfile(m)
                data = b""
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
                    if path == keep:
                        data += block
                if path == keep:
                    kept = data
                digest = h.hexdigest()
            elif kind == "l":
                digest = m.linkname
            else:
                digest = "-"
            entries[path] = Entry(path, kind, m.mode & 0o7777, m.uid, m.gid, digest)
    return entries, whiteouts, opaque, kept


def _remove_tree(merged: dict[str, Entry], children: dict[str, set[str]], path: str,
                 itself: bool = True) -> None:
    for child in list(children.get(path, ())):
        _remove_tree(merged, children, child)
    children.pop(path, None)
    if itself:
        merged.pop(path, None)
        parent = path.rpartition("/")[0] or "/"
        children.get(parent, set()).discard(path)


def read_image(image: str, keep: str = filemanifest.MANIFEST) -> ImageFiles:
    """The image's files from `docker save`, layer over layer; LauncherError if the engine
    does not have it, EngineError if docker fails."""
    try:
        inspected = subprocess.run(["docker", "image", "inspect", "-f",
                                    "{{.Id}} {{json .RootFS.Layers}}", image],
                                   capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineError(f"docker image inspect {image}: {exc}") from None
    if inspected.returncode != 0:
        said = (inspected.stderr.strip().splitlines() or ["no output"])[-1]
        raise LauncherError(f"image {image} is not on this engine ({said})")
    image_id, _, layers = inspected.stdout.strip().partition(" ")
    proc = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    by_layer: dict[str, tuple] = {}
    # docker save writes a layer whose content another layer already has as a link to it.
    links: dict[str, str] = {}
    manifest = None
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as outer:
            for m in outer:
                if m.name.endswith("layer.tar") and m.isreg():
                    by_layer[m.name] = _read_layer(outer.extractfile(m), keep)
                elif m.name.endswith("layer.tar") and (m.issym() or m.islnk()):
                    links[m.name] = posixpath.normpath(
                        posixpath.join(posixpath.dirname(m.name), m.linkname)) \
                        if m.issym() else m.linkname
                elif m.name == "manifest.json":
                    manifest = json.loads(outer.extractfile(m).read())
    except tarfile.TarError as exc:
        proc.kill()
        raise EngineError(f"docker save {image}: not a readable image archive ({exc})") from None
    finally:
        err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
        rc = proc.wait()
    if rc != 0 or manifest is None:
        raise EngineError(f"docker save {image} failed: {err.strip()[-300:] or 'no manifest'}")
    files, kept = merge([by_layer[links.get(name, name)] for name in manifest[0]["Layers"]], keep)
    # The layers' diff IDs (the sha256 of each layer's tar): the engine's own digests.
    return ImageFiles(image, image_id, files, json.loads(layers or "[]"),
                      kept.decode("utf-8", "surrogateescape") if kept is not None else None)


def merge(layers: list[tuple], keep: str = filemanifest.MANIFEST) -> tuple[dict[str, Entry],
                                                                          bytes | None]:
    """The filesystem the layers (each as _read_layer gives it, lowest first) make, less the
    engine's per-container paths and `keep`, and `keep`'s content (None: absent)."""
    merged: dict[str, Entry] = {}
    children: dict[str, set[str]] = {}
    kept = None
    for entries, whiteouts, opaque, text in layers:
        for folder in opaque:
            _remove_tree(merged, children, folder, itself=False)
        for path in whiteouts:
            _remove_tree(merged, children, path)
        for path, entry in entries.items():
            if entry.kind != "d":
                _remove_tree(merged, children, path, itself=False)
            merged[path] = entry
            if path != "/":
                children.setdefault(path.rpartition("/")[0] or "/", set()).add(path)
        if text is not None:
            kept = text
        elif keep in whiteouts:
            kept = None
    if keep not in merged:
        kept = None
    files = {p: e for p, e in merged.items() if not filemanifest.runtime(p) and p != keep}
    return files, kept


def check(files: ImageFiles) -> list[Difference]:
    """How the image differs from the manifest its build wrote; LauncherError without one."""
    if files.manifest_text is None:
        raise LauncherError(f"image {files.image} has no file manifest "
                            f"({filemanifest.MANIFEST}): it was built before manifests, or "
                            "the manifest was removed")
    try:
        expected = {p: e for p, e in filemanifest.parse(files.manifest_text).items()
                    if not filemanifest.runtime(p)}
    except ValueError as exc:
        raise LauncherError(f"image {files.image}: {filemanifest.MANIFEST}: {exc}") from None
    return filemanifest.compare(expected, files.entries)


def read_manifest(manifest: str) -> tuple[str, dict[str, Entry]]:
    """A manifest file's text and entries; LauncherError naming it when it is not a regular
    file (never opened then: a FIFO would hang), cannot be read, is malformed or lists
    nothing (an empty one would report every path of the image as added)."""
    from pathlib import Path

    from commandline.kinds import path_problem

    why = path_problem(manifest, "file")
    if why:
        raise LauncherError(f"--manifest {why}")
    try:
        text = Path(manifest).read_text(encoding="utf-8", errors="surrogateescape")
        expected = filemanifest.parse(text)
    except (OSError, ValueError) as exc:
        raise LauncherError(f"--manifest {manifest}: {exc}") from None
    if not expected:
        raise LauncherError(f"--manifest {manifest}: lists no file (empty, or comments only); "
                            "it is not a manifest a build wrote")
    return text, expected


def verify(image: str, against: str | None = None, manifest: str | None = None,
           limit: int = 200) -> dict:
    """The verify-image report: the image against its own manifest (and against a manifest
    file written beside it at build time, and another image, when given)."""
    given = read_manifest(manifest) if manifest else None  # refused before docker save
    files = read_image(image)
    report: dict = {"image": image, "image_id": files.image_id, "paths": len(files.entries),
                    "layers": files.layers}
    failed = False
    if files.manifest_text is not None or not (against or manifest):
        own = check(files)
        report["manifest"] = {"path": filemanifest.MANIFEST, "differences": len(own),
                              "sha256": hashlib.sha256(files.manifest_text.encode(
                                  "utf-8", "surrogateescape")).hexdigest(),
                              "listed": [d.as_dict() for d in own[:limit]]}
        failed = bool(own)
    else:  # an image built before manifests can still be compared with another
        report["manifest"] = None
    if given is not None:
        text, expected = given
        outside = filemanifest.compare(expected, files.entries)
        report["manifest_file"] = {"path": manifest, "differences": len(outside),
                                   "same_as_image's": text == files.manifest_text,
                                   "listed": [d.as_dict() for d in outside[:limit]]}
        failed = failed or bool(outside) or text != files.manifest_text
    if against:
        other = read_image(against)
        diffs = filemanifest.compare(files.entries, other.entries)
        report["against"] = {"image": against, "image_id": other.image_id,
                             "paths": len(other.entries), "differences": len(diffs),
                             "listed": [d.as_dict() for d in diffs[:limit]],
                             "layers": other.layers,
                             "layers_same": sum(a == b for a, b in zip(files.layers, other.layers))}
        failed = failed or bool(diffs)
    report["ok"] = not failed
    return report
