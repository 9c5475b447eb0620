"""biotool.buildcache and biotool.libcaches: caches built once are seeded where the libraries
look, and numba loads a function from a seeded cache instead of compiling it (real numba, in
fresh processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from biotool import libcaches

MODULE = textwrap.dedent("""
    import numba

    @numba.njit(cache=True)
    def total(xs):
        s = 0.0
        for x in xs:
            s += x
        return s
""")

# Calls total() in a fresh process and reports numba's own counters for it.
PROBE = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from biotool.libcaches import seed
    seeded = seed() if sys.argv[2] == "seed" else 0
    import numpy as np
    import jitmod
    assert jitmod.total(np.arange(4.0)) == 6.0
    st = jitmod.total.stats
    print(json.dumps({"seeded": seeded, "hits": sum(st.cache_hits.values()),
                      "misses": sum(st.cache_misses.values())}))
""")


def _probe(tmp: Path, env: dict, mode: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE, str(tmp / "src"), mode],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_numba_loads_what_was_compiled_into_the_image_copy(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "jitmod.py").write_text(MODULE)
    image = tmp_path / "image"
    base = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    build_env = {**base, "NUMBA_CACHE_DIR": str(image / "numba")}
    first = _probe(tmp_path, build_env, "seed")  # the build: compiles and saves
    assert (first["hits"], first["misses"]) == (0, 1)
    for p in sorted(image.rglob("*"), reverse=True):
        p.chmod(0o555 if p.is_dir() else 0o444)
    # A fresh run: an empty cache folder of its own, the image's copy read-only.
    run_env = {**base, "NUMBA_CACHE_DIR": str(tmp_path / "run" / "numba"),
               libcaches.BUILD_CACHES.name: str(image)}
    unseeded = _probe(tmp_path, {**run_env, "NUMBA_CACHE_DIR": str(tmp_path / "bare")}, "none")
    assert (unseeded["hits"], unseeded["misses"]) == (0, 1)  # what every fresh container did
    seeded = _probe(tmp_path, run_env, "seed")
    assert seeded["seeded"] >= 2 and (seeded["hits"], seeded["misses"]) == (1, 0)
    run_files = [p for p in (tmp_path / "run" / "numba").rglob("*") if not p.is_dir()]
    assert run_files and all(p.is_symlink() for p in run_files)


def test_seed_links_numba_copies_matplotlib_and_leaves_what_is_there(tmp_path, monkeypatch):
    image = tmp_path / "image"
    (image / "numba" / "pkg_abc").mkdir(parents=True)
    (image / "numba" / "pkg_abc" / "f-1.py311.nbi").write_bytes(b"index")
    (image / "numba" / "pkg_abc" / "f-1.py311.1.nbc").write_bytes(b"data")
    (image / "matplotlib").mkdir()
    (image / "matplotlib" / "fontlist-v1.json").write_text("{}")
    run = tmp_path / "run"
    (run / "numba" / "pkg_abc").mkdir(parents=True)
    (run / "numba" / "pkg_abc" / "f-1.py311.nbi").write_bytes(b"written at run time")
    monkeypatch.setenv(libcaches.BUILD_CACHES.name, str(image))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(run / "numba"))
    monkeypatch.setenv("MPLCONFIGDIR", str(run / "mpl"))
    monkeypatch.delenv("NUMBA_CPU_NAME", raising=False)
    monkeypatch.setattr(libcaches, "_seeded", False)
    assert libcaches.seed() == 2
    assert os.environ["NUMBA_CPU_NAME"] == "generic"
    data = run / "numba" / "pkg_abc" / "f-1.py311.1.nbc"
    assert data.is_symlink() and data.read_bytes() == b"data"
    kept = run / "numba" / "pkg_abc" / "f-1.py311.nbi"
    assert not kept.is_symlink() and kept.read_bytes() == b"written at run time"
    fonts = run / "mpl" / "fontlist-v1.json"
    assert fonts.is_file() and not fonts.is_symlink() and fonts.read_text() == "{}"
    assert libcaches.seed() == 0  # once per process


def test_seed_without_an_image_copy_or_a_writable_folder_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(libcaches.BUILD_CACHES.name, str(tmp_path / "absent"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "run"))
    monkeypatch.setattr(libcaches, "_seeded", False)
    assert libcaches.seed() == 0 and not (tmp_path / "run").exists()
    image = tmp_path / "image"
    (image / "numba").mkdir(parents=True)
    (image / "numba" / "x.nbi").write_bytes(b"i")
    (tmp_path / "file").write_text("in the way")
    monkeypatch.setenv(libcaches.BUILD_CACHES.name, str(image))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "file" / "numba"))
    monkeypatch.setattr(libcaches, "_seeded", False)
    assert libcaches.seed() == 0  # the library then compiles as it would without a seed


PARALLEL = textwrap.dedent("""
    import numba

    @numba.njit(cache=True, parallel=True)
    def psum(xs):
        s = 0.0
        for i in numba.prange(len(xs)):
            s += xs[i]
        return s

    @numba.njit(parallel=True)
    def pmax(xs):
        m = -1.0
        for i in numba.prange(len(xs)):
            m = max(m, xs[i])
        return m
""")

# Compiles (or loads) psum, numbering parfors as the image build does when asked; compiles pmax
# fresh beside it, as a later command would.
PARALLEL_PROBE = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from biotool import buildcache
    if sys.argv[2] == "build":
        buildcache._number_parfors()
    import numpy as np
    import jitpar
    assert jitpar.psum(np.arange(5.0)) == 10.0 and jitpar.pmax(np.arange(5.0)) == 4.0
    st = jitpar.psum.stats
    print(json.dumps({"hits": sum(st.cache_hits.values()), "misses": sum(st.cache_misses.values())}))
""")


def test_parallel_kernels_cache_the_same_bytes_in_two_builds_and_load_beside_fresh_ones(tmp_path):
    # numba names a parallel loop's kernel by its parfor's address unless the build numbers them.
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "jitpar.py").write_text(PARALLEL)
    base = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}

    def run(cache: Path, mode: str) -> dict:
        proc = subprocess.run([sys.executable, "-c", PARALLEL_PROBE, str(tmp_path / "src"), mode],
                              capture_output=True, text=True, timeout=300,
                              env={**base, "NUMBA_CACHE_DIR": str(cache)})
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    builds = [tmp_path / "one", tmp_path / "two"]
    for cache in builds:
        assert run(cache, "build") == {"hits": 0, "misses": 1}
    files = [{p.relative_to(c): p.read_bytes() for p in c.rglob("*") if p.is_file()} for c in builds]
    assert files[0] and files[0] == files[1]
    assert run(builds[0], "run") == {"hits": 1, "misses": 0}
