"""Caches the image fills at build so that no command fills them at run time: numba's
compiled functions (scanpy's normalisation) and matplotlib's font list (scanpy imports
matplotlib), written where `biotool.libcaches` seeds them from at run time.

    python -m biotool.buildcache build --out /opt/biotool-caches   # at image build

`build` runs the commands' own code paths (`celltype`'s domain function on a counts matrix
in each shape the loaders hand on: CSR, CSC, dense) with each library's cache variable
pointed under --out, so it sits above the families it runs; how the copy is seeded, and why
numba compiles for its `generic` CPU, is `libcaches`'.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from biotool import settings
from biotool.libcaches import CPU, CPU_VAR, SEEDED, home


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
        os.environ[settings.CACHE.name] = str(work / "biotool-cache")
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
