"""Where numba and matplotlib look for their caches in biotool's processes, and the image's
read-only copy of them (filled at build by `biotool.buildcache`) seeded there before either
library is imported: numba's compiled functions (scanpy's normalisation is a parallel numba
function: seconds to compile, milliseconds to load) and matplotlib's font list.

At run time the libraries must find them in their cache folders under /tmp, a tmpfs that
starts empty, and numba only uses a cache folder it can write (it tries a temporary file there
first), so the image's read-only copy cannot be named directly: `seed()` links every file of
it into the run's folder before the library is imported. numba writes a cache file only by
`os.replace` of a temporary one, so a link is never written through: a function compiled anew
(another signature) is saved beside the links, and a stale entry is replaced, not
overwritten. matplotlib writes its font list in place, so that file is copied.

numba keys a cached function by its source file's content (not its path's mtime), the
function's bytecode, its signature, numba's version and the CPU it was compiled for. The last
would tie the image to its build host's CPU: biotool's processes compile for numba's
`generic` x86-64 instead (NUMBA_CPU_NAME, set here before numba is imported), at build and at
run time alike, so the cache holds on any host. An agent's own Python keeps numba's default
(its host CPU) and its own cache under NUMBA_CACHE_DIR.

Standard library only, below the families: `celltype` seeds through it, and the build
(`biotool.buildcache`, which runs `celltype`'s code) writes where it says.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from biotool.settings import BUILD_CACHES

# (the library's cache variable, the folder under the image's copy, how a file is seeded)
SEEDED = (("NUMBA_CACHE_DIR", "numba", "link"), ("MPLCONFIGDIR", "matplotlib", "copy"))
CPU_VAR, CPU = "NUMBA_CPU_NAME", "generic"

_seeded = False


def home() -> Path:
    """Where the image keeps what `build` wrote: root-owned, read-only to the agent."""
    return BUILD_CACHES.get()


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
