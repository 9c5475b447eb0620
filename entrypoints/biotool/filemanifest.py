"""The image's file manifest: every path of its root filesystem with its type, mode, owner and
content digest (sha256 for a file, the target for a link), written as the build's last step.

    python -m biotool.filemanifest write /etc/biotool/files.tsv   # at image build
    python -m biotool.filemanifest check /etc/biotool/files.tsv   # in a container

One line per path, sorted, tab-separated: type (f file, d directory, l symlink, o other),
mode (octal, permission bits), uid:gid, digest (sha256 of a file, a link's target, - else),
path; tabs, newlines and backslashes in a field are escaped. Times are not recorded: two builds
of one commit have the same lines. The engine's own per-container files and mounts (RUNTIME)
are left out, as is the manifest itself. The standard library only: the egress image writes
its manifest with the same file (biotool-sandbox verify-image reads both from the image's
layers on the host, biotool_sandbox.imagefiles).
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from dataclasses import dataclass

# Mounted or written by the engine in every container (and in every build step), not image
# content: the pseudo filesystems, and the files docker bind-mounts over the image's own.
RUNTIME_TREES = ("/proc", "/sys", "/dev")
RUNTIME_FILES = ("/.dockerenv", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf", "/etc/mtab")
MANIFEST = "/etc/biotool/files.tsv"
HEADER = "# biotool file manifest v1: type mode uid:gid sha256|link-target path"


@dataclass(frozen=True)
class Entry:
    """One path of an image's filesystem as the manifest records it."""
    path: str
    kind: str  # f, d, l or o
    mode: int
    uid: int
    gid: int
    digest: str  # sha256 hex (f), the link's target (l), "-" (d, o)

    def line(self) -> str:
        return "\t".join((self.kind, f"{self.mode:04o}", f"{self.uid}:{self.gid}",
                          _escape(self.digest), _escape(self.path)))

    def differs(self, other: "Entry") -> list[str]:
        """What differs from other: content, type, mode, owner (empty: the same)."""
        out = []
        if self.kind != other.kind:
            out.append(f"type {self.kind} -> {other.kind}")
        elif self.digest != other.digest:
            out.append("target" if self.kind == "l" else "content")
        if self.mode != other.mode and self.kind != "l":
            out.append(f"mode {self.mode:04o} -> {other.mode:04o}")
        if (self.uid, self.gid) != (other.uid, other.gid):
            out.append(f"owner {self.uid}:{self.gid} -> {other.uid}:{other.gid}")
        return out


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append({"t": "\t", "n": "\n", "\\": "\\"}.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def runtime(path: str) -> bool:
    """Whether a path is the engine's in every container rather than the image's."""
    return path in RUNTIME_FILES or any(path == t or path.startswith(t + "/")
                                        for t in RUNTIME_TREES)


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def kind_of(st_mode: int) -> str:
    if stat.S_ISREG(st_mode):
        return "f"
    if stat.S_ISDIR(st_mode):
        return "d"
    if stat.S_ISLNK(st_mode):
        return "l"
    return "o"


def scan(root: str = "/", exclude: tuple[str, ...] = (MANIFEST,)) -> list[Entry]:
    """Every path under root on root's filesystem (other mounts are not descended into),
    less RUNTIME and `exclude`, as entries named as seen from / with root as /."""
    root = os.path.abspath(root)
    dev = os.lstat(root).st_dev
    entries = []

    def name_of(full: str) -> str:
        rel = os.path.relpath(full, root)
        return "/" if rel == "." else "/" + rel

    for dirpath, dirs, files in os.walk(root):
        keep = []
        for d in sorted(dirs):
            full = os.path.join(dirpath, d)
            st = os.lstat(full)
            if runtime(name_of(full)) or (stat.S_ISDIR(st.st_mode) and st.st_dev != dev):
                continue
            keep.append(d)
        # Symlinks to directories appear in dirs but are not walked: listed with the files.
        dirs[:] = [d for d in keep if not os.path.islink(os.path.join(dirpath, d))]
        names = sorted(set(files) | {d for d in keep if d not in dirs})
        st = os.lstat(dirpath)
        if not runtime(name_of(dirpath)):
            entries.append(Entry(name_of(dirpath), "d", stat.S_IMODE(st.st_mode), st.st_uid,
                                 st.st_gid, "-"))
        for name in names:
            full = os.path.join(dirpath, name)
            path = name_of(full)
            if runtime(path) or path in exclude:
                continue
            st = os.lstat(full)
            if st.st_dev != dev:  # a file mounted over the image's (a bind mount)
                continue
            kind = kind_of(st.st_mode)
            digest = (sha256_file(full) if kind == "f" else
                      os.readlink(full) if kind == "l" else "-")
            entries.append(Entry(path, kind, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid,
                                 digest))
    return sorted(entries, key=lambda e: e.path)


def render(entries: list[Entry]) -> str:
    return HEADER + "\n" + "".join(e.line() + "\n" for e in sorted(entries, key=lambda e: e.path))


def parse(text: str) -> dict[str, Entry]:
    """A manifest's entries by path; ValueError naming the first malformed line."""
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t")
        try:
            kind, mode, owner, digest, path = parts
            uid, gid = owner.split(":")
            entry = Entry(_unescape(path), kind, int(mode, 8), int(uid), int(gid),
                          _unescape(digest))
        except ValueError:
            raise ValueError(f"line {n} is not a manifest line: {line[:120]!r}") from None
        out[entry.path] = entry
    return out


@dataclass(frozen=True)
class Difference:
    """How one path differs between an expected and an actual file list."""
    path: str
    change: str  # added, removed, changed
    detail: str = ""

    def as_dict(self) -> dict:
        return {"path": self.path, "change": self.change, **({"detail": self.detail}
                                                              if self.detail else {})}


def compare(expected: dict[str, Entry], actual: dict[str, Entry]) -> list[Difference]:
    """Every path added, removed or changed (content, type, mode, owner) from expected."""
    out = []
    for path in sorted(set(expected) | set(actual)):
        a, b = expected.get(path), actual.get(path)
        if a is None:
            out.append(Difference(path, "added"))
        elif b is None:
            out.append(Difference(path, "removed"))
        else:
            what = a.differs(b)
            if what:
                out.append(Difference(path, "changed", ", ".join(what)))
    return out


def write(out: str, root: str = "/") -> int:
    entries = scan(root, exclude=(out if root == "/" else "/" + os.path.relpath(out, root),))
    tmp = f"{out}.partial"
    with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as fh:
        fh.write(render(entries))
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)
    return len(entries)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in ("write", "check"):
        print("usage: python -m biotool.filemanifest write|check MANIFEST",
              file=sys.stderr)
        return 2
    mode, path = argv
    if mode == "write":
        print(f"filemanifest: {write(path)} paths in {path}", file=sys.stderr)
        return 0
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            expected = parse(fh.read())
    except (OSError, ValueError) as exc:
        print(f"filemanifest: {path}: {exc}", file=sys.stderr)
        return 2
    actual = {e.path: e for e in scan("/", exclude=(path,))}
    diffs = compare(expected, actual)
    for d in diffs:
        print(f"{d.change}\t{d.path}\t{d.detail}".rstrip())
    return 4 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
