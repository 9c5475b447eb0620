"""Whether a background build can outlive its command (biotool.lifetime): on process
trees written as /proc shows them, for each shape a command runs in, and on a real PID
namespace whose PID 1 is the command (unshare, as a one-shot container runs it); and the
background index's refusal there, which says how to get the index instead of promising it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from biotool import lifetime
from biotool_testing.paths import REFS, REPO

SARS = REFS / "demo" / "sarscov2" / "MN908947.3.reference.fasta"


def _tree(root: Path, procs: list[tuple[int, int, list[str]]]) -> Path:
    """A /proc with these (pid, ppid, argv): stat (the name may hold spaces and a ')') and
    cmdline files, as the kernel writes them."""
    for pid, ppid, argv in procs:
        d = root / str(pid)
        d.mkdir(parents=True)
        (d / "stat").write_text(f"{pid} ({os.path.basename(argv[0])[:15]} x) S {ppid} 1 1 0 -1\n")
        (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    return root


ME = 40  # the command's own process in every tree
SHAPES = {
    # docker exec / compose / Harbor: the chain ends outside the container (ppid 0, not PID 1)
    "exec-into-running": ([(ME, 0, ["python3", "-m", "biotool", "align"])], {}, None),
    "exec-through-a-shell": ([(ME, 30, ["python3"]), (30, 0, ["bash", "-c", "biotool align"])],
                             {}, None),
    # docker run --rm IMAGE biotool ...: the image's tini runs the command
    "docker-run": ([(ME, 1, ["python3"]), (1, 0, ["/usr/bin/tini", "-g", "-s", "--", "biotool"])],
                   {}, "one-shot container"),
    # docker run --init IMAGE bash -c '...': docker-init, then the image's tini, then a script
    "docker-run-init-script": ([(ME, 8, ["python3"]), (8, 7, ["bash", "-c", "biotool align"]),
                                (7, 1, ["/usr/bin/tini", "-g", "-s", "--", "bash"]),
                                (1, 0, ["/sbin/docker-init", "--", "/usr/bin/tini"])],
                               {}, "one-shot container"),
    # docker run -it IMAGE (CMD bash): the session's shell keeps the container up
    "interactive-shell": ([(ME, 8, ["python3"]), (8, 1, ["bash"]),
                           (1, 0, ["/usr/bin/tini", "-g", "-s", "--", "bash"])], {}, None),
    "command-is-pid-1": ([(1, 0, ["python3", "-m", "biotool"])], {}, "PID 1"),
    "shell-script-is-pid-1": ([(ME, 1, ["python3"]), (1, 0, ["/bin/sh", "-c", "biotool x"])], {},
                              "PID 1"),
    # apptainer exec IMAGE.sif biotool ...: the host's PID 1 above, Apptainer's variables set
    "apptainer-exec": ([(ME, 20, ["python3"]), (20, 1, ["Apptainer runtime parent"]),
                        (1, 0, ["/sbin/init"])], {"APPTAINER_CONTAINER": "/x.sif"}, "Apptainer"),
    "singularity-exec": ([(ME, 1, ["python3"]), (1, 0, ["appinit"])],
                         {"SINGULARITY_CONTAINER": "/x.sif"}, "Apptainer"),
    # exec into an instance with its own PID namespace: the instance lives on
    "apptainer-instance": ([(ME, 0, ["python3"])], {"APPTAINER_CONTAINER": "/x.sif"}, None),
    "host": ([(ME, 20, ["python3"]), (20, 1, ["bash"]), (1, 0, ["/lib/systemd/systemd"])], {},
             None),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_the_shape_says_whether_a_background_process_outlives_the_command(tmp_path, shape):
    procs, env, says = SHAPES[shape]
    pid = procs[0][0]
    why = lifetime.one_shot(env, _tree(tmp_path / "proc", procs), pid)
    if says is None:
        assert why is None, why
    else:
        assert why and says in why and "\n" not in why, why


def test_an_unreadable_process_table_promises_nothing_it_cannot_see(tmp_path):
    assert lifetime.ancestry(tmp_path / "no-proc", ME) == []
    assert lifetime.one_shot({}, tmp_path / "no-proc", ME) is None


def _unshare() -> list[str]:
    """A PID namespace with its own /proc whose PID 1 is the command (a one-shot container's
    shape without an engine), or skip where this host refuses one."""
    tool = shutil.which("unshare")
    if not tool:
        pytest.skip("no unshare(1) here")
    probe = subprocess.run([tool, "-rpf", "--mount-proc", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare refused a PID namespace here: {probe.stderr.decode()[-200:]}")
    return [tool, "-rpf", "--mount-proc"]


def _env(**more: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in lifetime.APPTAINER_VARS}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "entrypoints"), env.get("PYTHONPATH", "")])
    return {**env, **more}


def test_a_real_pid_namespace_whose_pid_1_is_the_command_is_one_shot():
    code = "from biotool.lifetime import one_shot; print(one_shot())"
    ran = subprocess.run([*_unshare(), sys.executable, "-c", code], capture_output=True,
                         text=True, env=_env(), timeout=120)
    assert ran.returncode == 0 and "PID 1" in ran.stdout, ran
    # The same namespace under an Apptainer exec's variables names Apptainer.
    ran = subprocess.run([*_unshare(), sys.executable, "-c", code], capture_output=True,
                         text=True, env=_env(APPTAINER_CONTAINER="/x.sif"), timeout=120)
    assert "Apptainer" in ran.stdout, ran


def test_the_refusal_names_the_reference_and_every_way_to_the_index():
    from biotool.alignment import indexes

    line = indexes.no_background("big.fa", "bwa", 30_000_000, "a one-shot container: x")
    est = indexes.expected_build_s("bwa", 30_000_000)
    assert 150 <= est <= 400  # the 196 s measured for 30 Mb (docs/reads.md)
    for needle in ("--reference big.fa", "bwa index (30.0 Mb)", "one-shot container",
                   "--timeout", f"about {est} s", "biotool index --kind bwa --reference big.fa",
                   'indexes = ["bwa"]'):
        assert needle in line, (needle, line)
    assert "run the same command again" not in line and "\n" not in line
    timeout = int(line.split("Give --timeout ")[1].split()[0])
    assert timeout >= 2 * est


def test_a_first_use_index_in_a_one_shot_namespace_is_refused_with_the_ways_to_get_it(tmp_path):
    """The command as PID 1 of its own namespace (docker run --rm's shape): no background
    build is started (none would survive), nothing is left in the cache, and the line says how
    to get the index."""
    pytest.importorskip("filelock")
    pytest.importorskip("pysam")
    cache = tmp_path / "cache"
    code = ("import sys\n"
            "from biotool.alignment import indexes\n"
            "from biotool.alignment.reference import resolve\n"
            "from biotool.output import InputError\n"
            "indexes.BACKGROUND_FROM = 1000\n"
            "try:\n"
            "    resolve(sys.argv[1]).index('sr')\n"
            "except InputError as exc:\n"
            "    print(exc.message)\n")
    ran = subprocess.run([*_unshare(), sys.executable, "-c", code, str(SARS)],
                         capture_output=True, text=True, timeout=300,
                         env=_env(BIOTOOL_CACHE=str(cache)))
    line = ran.stdout.strip()
    assert ran.returncode == 0 and f"--reference {SARS}" in line, ran
    assert "PID 1" in line and "biotool index --kind bwa" in line and "--timeout" in line, line
    assert "background (one" not in line and "few minutes" not in line, line
    left = [p.name for p in cache.rglob("*") if p.name.startswith(("bwa", ".work."))
            and not p.name.endswith(".lock")]
    assert not left, left
    assert "\n" not in line and not list(cache.rglob("*.failed"))
