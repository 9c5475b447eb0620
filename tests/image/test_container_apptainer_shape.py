"""The image in hpc/run-docker.sh's shape of Apptainer (docker nodes): an arbitrary UID,
read-only root, no network, a private /tmp and a HOME the user cannot write. Every cache must
land somewhere writable. tests/apptainer/ runs the SIF under real Apptainer."""

import pytest


def test_arbitrary_uid_without_a_passwd_entry(sandbox, apptainer_shape):
    ran = sandbox.run("id -u; id -g; test -w $HOME && echo home-writable || echo home-locked",
                      **apptainer_shape)
    assert ran.code == 0, ran
    assert ran.stdout.split() == ["12345", "12345", "home-locked"]


def test_root_filesystem_is_read_only(sandbox, apptainer_shape):
    ran = sandbox.run("touch /work/probe 2>&1; touch /home/agent/probe 2>&1; "
                      "touch /tmp/probe && echo tmp-ok", **apptainer_shape)
    assert ran.stdout.count("Read-only file system") + ran.stdout.count("Permission denied") == 2
    assert ran.stdout.strip().endswith("tmp-ok")


@pytest.mark.parametrize("args", [["--help"], ["list"], ["references"], ["version"]])
def test_biotool_commands_work(sandbox, apptainer_shape, args):
    ran = sandbox.biotool(*args, **apptainer_shape)
    assert ran.code == 0, ran
    if args != ["--help"]:
        assert isinstance(ran.json, dict)
    assert "Traceback" not in ran.stderr


def test_doctor_passes(sandbox, apptainer_shape):
    ran = sandbox.biotool("doctor", **apptainer_shape)
    assert ran.code == 0, ran
    checks = {c["check"]: c for c in ran.json["checks"]}
    assert "uid 12345" in checks["non-root"]["detail"]
    assert "not writable; caches are redirected" in checks["home"]["detail"]
    assert all(c["ok"] for c in checks.values() if c["required"])


def test_heavy_libraries_import_with_their_caches_redirected(sandbox, apptainer_shape):
    # celltypist creates its model folder at import, matplotlib and numba write caches:
    # each would fail or warn into the read-only HOME if its variable were not set.
    script = (
        "import os, warnings; warnings.simplefilter('error', UserWarning)\n"
        "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot\n"
        "import celltypist, scanpy, torch, transformers, rdkit, pysam, mappy, numba\n"
        "@numba.njit(cache=True)\n"
        "def f(x): return x + 1\n"
        "assert f(1) == 2\n"
        "for var in ('MPLCONFIGDIR', 'NUMBA_CACHE_DIR', 'CELLTYPIST_FOLDER'):\n"
        "    path = os.environ[var]\n"
        "    assert path.startswith('/tmp/') and os.path.isdir(path), (var, path)\n"
        "print(sorted(os.listdir(os.environ['NUMBA_CACHE_DIR'])) != [])\n"
    )
    # numba caches only functions defined in a file, so the script goes to /tmp first.
    shape = {**apptainer_shape,
             "environment": {**apptainer_shape["environment"], "PROBE": script}}
    ran = sandbox.run('printf "%s" "$PROBE" > /tmp/probe.py && python /tmp/probe.py', **shape)
    assert ran.code == 0, ran
    assert ran.stdout.strip() == "True"


def test_nothing_is_fetched_at_run_time(sandbox, apptainer_shape):
    ran = sandbox.run("echo $HF_HUB_OFFLINE $TRANSFORMERS_OFFLINE", **apptainer_shape)
    assert ran.stdout.split() == ["1", "1"]
