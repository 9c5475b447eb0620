"""What the image computed at build is what a fresh container uses: numba's compiled functions
and matplotlib's font list (biotool.buildcache, seeded by biotool.libcaches), found by an
arbitrary UID on the read-only root with an empty tmpfs /tmp, so a command's first call
compiles nothing."""

import json

import pytest

PBMC = "/opt/biotool/samples/demo-pbmc68k-heldout"
IMAGE_CACHES = "/opt/biotool-caches"


def _shape(uid: str, **env) -> dict:
    return {"user": f"{uid}:{uid}", "read_only": True, "network_mode": "none",
            "tmpfs": {"/tmp": ""}, "environment": {"HOME": "/nonexistent", **env}}


@pytest.mark.parametrize("uid", ["12345", "1000"])
def test_celltype_loads_the_numba_functions_compiled_at_build(sandbox, uid):
    # numba says what its cache does on stdout (NUMBA_DEBUG_CACHE), before biotool's JSON;
    # then every file in the run's numba cache must still be a link into the image's copy:
    # a function compiled at run time would have been saved there as a file of its own.
    ran = sandbox.run(
        f"biotool -q celltype --matrix {PBMC} --model celltypist; rc=$?; "
        "echo '--- files'; find \"$NUMBA_CACHE_DIR\" -type f -printf 'file %p\\n' "
        "-o -type l -printf 'link %p -> %l\\n'; exit $rc",
        **_shape(uid, NUMBA_DEBUG_CACHE="1"))
    assert ran.code == 0, ran
    out, files = ran.stdout.split("--- files\n")
    numba_lines = [ln for ln in out.splitlines() if ln.startswith("[cache]")]
    answer = json.loads("\n".join(ln for ln in out.splitlines() if not ln.startswith("[cache]")))
    assert sum(c["cells"] for c in answer["celltypist"]["composition"]) == 209
    loaded = [ln for ln in numba_lines if ln.startswith("[cache] data loaded from")]
    assert any("_normalize_csr" in ln for ln in loaded), numba_lines
    assert not [ln for ln in numba_lines if "saved" in ln], numba_lines
    entries = files.split("\n")[:-1]
    assert entries and not [e for e in entries if not e.startswith("link ")], entries
    assert all(f" -> {IMAGE_CACHES}/numba/" in e for e in entries), entries


def test_the_numba_cache_is_built_for_any_x86_64_host(sandbox):
    # Each entry is keyed by the CPU it was compiled for: the build host's would make every
    # other host compile again. numba's `generic` target is what biotool asks for.
    probe = (
        "import glob, pickle\n"
        f"paths = glob.glob('{IMAGE_CACHES}/numba/*/*.nbi')\n"
        "assert paths, 'no numba index in the image'\n"
        "for p in paths:\n"
        "    with open(p, 'rb') as f:\n"
        "        pickle.load(f)\n"
        "        stamp, overloads = pickle.loads(f.read())\n"
        "    for sig, magic, hashes in overloads:\n"
        "        print(p.rsplit('/', 1)[1], magic[1], repr(magic[2]))\n"
    )
    ran = sandbox.run(["python", "-c", probe], **_shape("12345"))
    assert ran.code == 0, ran
    rows = ran.stdout.splitlines()
    assert rows and all(r.split()[1:] == ["generic", "''"] for r in rows), rows


def test_matplotlib_reads_the_font_list_built_at_build(sandbox):
    # scanpy imports matplotlib, which otherwise scans the system fonts anew (half a second)
    # in every fresh container; seeded the way the commands seed it, nothing is generated.
    probe = (
        "import logging, os, filecmp\n"
        "logging.basicConfig(level=logging.DEBUG)\n"
        "from biotool.libcaches import seed\n"
        "seed()\n"
        "import matplotlib.font_manager as fm\n"
        "name = f'fontlist-v{fm.FontManager.__version__}.json'\n"
        f"print(filecmp.cmp('{IMAGE_CACHES}/matplotlib/' + name,\n"
        "                  os.path.join(os.environ['MPLCONFIGDIR'], name), shallow=False))\n"
    )
    ran = sandbox.run(["python", "-c", probe], **_shape("12345"))
    assert ran.code == 0, ran
    assert ran.stdout.strip() == "True"
    assert "Using fontManager instance from" in ran.stderr, ran.stderr[-2000:]
    assert "generated new fontManager" not in ran.stderr


def test_the_image_caches_are_read_only_to_the_agent(sandbox):
    ran = sandbox.run(f"find {IMAGE_CACHES} ! -user root -o -perm /022 | head -5; "
                      f"test -w {IMAGE_CACHES}/numba && echo writable || echo read-only",
                      **_shape("1000"))
    assert ran.code == 0, ran
    assert ran.stdout.split() == ["read-only"], ran
