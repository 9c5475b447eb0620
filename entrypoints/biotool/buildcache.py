"""Caches the image fills at build so that no command fills them at run time: numba's
compiled functions (scanpy's normalisation is a parallel numba function: seconds to compile,
milliseconds to load) and matplotlib's font list (scanpy imports matplotlib).

    python -m biotool.buildcache build --out /opt/biotool-caches   # at image build

`build` runs the commands' own code paths (`celltype`'s domain function on a counts matrix
in each shape the loaders hand on: CSR, CSC, dense) with each
library's cache variable pointed under --out. At run time the libraries must find them in
their cache folders under /tmp, a tmpfs that starts empty, and numba only uses a cache folder
it can write (it tries a temporary file there first), so the image's read-only copy cannot be
named directly: `seed()` links every file of it into the run's folder before the library is
imported. numba writes a cache file only by `os.replace` of a temporary one, so a link is
never written through: a function compiled anew (another signature) is saved beside the
links, and a stale entry is replaced, not overwritten. matplotlib writes its font list in
place, so that file is copied.

numba keys a cached function by its source file's content (not its path's mtime), the
function's bytecode, its signature, numba's version and the CPU it was compiled for. The last
would tie the image to its build host's CPU: biotool's processes compile for numba's
`generic` x86-64 instead (NUMBA_CPU_NAME, set here before numba is imported), at build and at
run time alike, so the cache holds on any host. An agent's own Python keeps numba's default
(its host CPU) and its own cache under NUMBA_CACHE_DIR.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

# Where the image keeps what `build` wrote: root-owned, read-only to the agent.
HOME_VAR = "BIOTOOL_BUILD_CACHES"
DEFAULT_HOME = "/opt/biotool-caches"
# (the library's cache variable, the folder under the image's copy, how a file is seeded)
SEEDED = (("NUMBA_CACHE_DIR", "numba", "link"), ("MPLCONFIGDIR", "matplotlib", "copy"))
CPU_VAR, CPU = "NUMBA_CPU_NAME", "generic"

_seeded = False


def home() -> Path:
    return Path(os.environ.get(HOME_VAR) or DEFAULT_HOME)


def _seed_tree(src: Path, dest: Path, how: str) -> int:
    """Every file under src present under dest (a link to it, or a copy); what is there
    already is left alone (a library wrote it, or another process seeded it first)."""
    made = 0
    for dirpath, _dirs, files in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        into = dest if rel == "." else dest / rel
        into.mkdir(parents=True, exist_ok=True)
        for name in files:
            target, origin = into / name, os.path.join(dirpath, name)
            if os.path.lexists(target):
                continue
            try:
                if how == "link":
                    os.symlink(origin, target)
                else:
                    tmp = into / f".{name}.seed.{os.getpid()}"
                    shutil.copyfile(origin, tmp)
                    os.replace(tmp, target)
                made += 1
            except FileExistsError:
                continue
    return made


def seed() -> int:
    """Before numba or matplotlib is imported: compile for the CPU the image's cache was
    built for, and put the image's caches where the libraries look. Returns the files seeded;
    anything in the way (no image copy, an unwritable cache folder) only means the library
    compiles and writes its cache as it would without this."""
    global _seeded
    os.environ.setdefault(CPU_VAR, CPU)
    if _seeded:
        return 0
    _seeded = True
    made = 0
    for var, sub, how in SEEDED:
        dest, src = os.environ.get(var), home() / sub
        if not dest or not src.is_dir():
            continue
        try:
            made += _seed_tree(src, Path(dest), how)
        except OSError:
            continue
    return made


# ---------------------------------------------------------------- image build

def _inputs(work: Path) -> list[Path]:
    """The counts matrix in each shape `celltype`'s loaders hand to the normalisation: a
    Matrix Market folder (CSR, as the mtx, 10x and table readers give), and .h5ad files with
    CSC and with dense X. scipy keeps 32-bit indices below 2**31 non-zero values, so one CSR
    signature covers every matrix whose compile time is not noise beside its own work. From
    scanpy's own pbmc68k_reduced, so the build needs no staged sample."""
    from biotool.singlecell.demo_model import pbmc_counts, write_mtx_folder

    counts = pbmc_counts()
    out = [write_mtx_folder(counts, work / "mtx")]
    for name, convert in (("csc", lambda x: x.tocsc()), ("dense", lambda x: x.toarray())):
        one = counts.copy()
        one.X = convert(counts.X.tocsr())
        path = work / f"{name}.h5ad"
        one.write_h5ad(path)
        out.append(path)
    return out


def _number_parfors() -> None:
    """numba names each parallel loop's compiled kernel by hash(parfor), the object's address,
    and writes the name into the cached code: two builds would ship different bytes. In this
    build process each parfor hashes to its order of first use instead (kept alive, so no
    address is reused); small numbers cannot meet the address-based names of a later run."""
    from numba.parfors.parfor import Parfor

    seen: dict[int, tuple[object, int]] = {}

    def in_order(self) -> int:
        got = seen.get(id(self))
        if got is None:
            got = seen[id(self)] = (self, len(seen) + 1)
        return got[1]

    Parfor.__hash__ = in_order


def build(out: Path) -> dict:
    """Fill out/<library> by running `celltype`'s code path on every input shape; returns
    {library: [files written]}. The libraries read their cache variables at import, so this
    runs in a process that has imported neither."""
    if "numba" in sys.modules or "matplotlib" in sys.modules:
        raise RuntimeError("build() must run before numba and matplotlib are imported")
    out = Path(out)
    for var, sub, _how in SEEDED:
        (out / sub).mkdir(parents=True, exist_ok=True)
        os.environ[var] = str(out / sub)
    os.environ.setdefault(CPU_VAR, CPU)
    with tempfile.TemporaryDirectory(prefix="biotool-buildcache-") as tmp:
        work = Path(tmp)
        os.environ["BIOTOOL_CACHE"] = str(work / "biotool-cache")
        os.environ["CELLTYPIST_FOLDER"] = str(work / "celltypist")
        import warnings

        warnings.simplefilter("ignore")
        import matplotlib.font_manager  # noqa: F401 - writes the font list

        _number_parfors()

        from biotool.singlecell.celltype import celltype_matrix

        for path in _inputs(work):
            # Whatever CellTypist models this build staged (none is fine: the matrix is
            # loaded and normalised before the panel is read).
            celltype_matrix(str(path), model="celltypist")
    return {sub: sorted(str(p.relative_to(out / sub)) for p in (out / sub).rglob("*")
                        if p.is_file())
            for _var, sub, _how in SEEDED}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m biotool.buildcache")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="fill the caches (at image build)")
    b.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    written = build(a.out or home())
    for lib, files in written.items():
        print(f"buildcache: {lib}: {len(files)} files", file=sys.stderr)
        for f in files:
            print(f"buildcache:   {f}", file=sys.stderr)
    if not written["numba"]:
        # scanpy no longer compiling anything here would be news: say so, do not fail.
        print("buildcache: numba cached nothing on celltype's path", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
