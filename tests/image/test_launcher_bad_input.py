"""The bad-input tier for the host launcher, on the real engine: every refused `up`, `exec`,
`cp` and `down` is one `biotool-sandbox: error:` line naming the option or path at fault, with
its exit code (biotool_testing.contract.error_line), and leaves nothing behind: no container,
network or volume of a run, no state folder, no memory reservation (docs/contract.md).

Each failed command runs with its own state root (XDG_STATE_HOME), so a state folder or a
reservation it left is seen whatever else runs on the engine; the engine's runs are compared
before and after it (a run another session is starting meanwhile, whose state folder is in the
usual root, is not this command's).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from biotool_testing.contract import error_line
from biotool_testing.images import EGRESS_IMAGE, SANDBOX_IMAGE
from biotool_testing.paths import REPO
from biotool_testing.ran import Ran
from biotool_testing.simulate import big_reference

PROG = "biotool-sandbox"
PROJECT = "com.docker.compose.project"


def _engine_runs(dc) -> set[tuple[str, str]]:
    """(kind, name) of every container, network and volume of a launcher run on the engine."""
    label = {"label": PROJECT}
    found = {("container", c.name) for c in dc.containers.list(ignore_removed=True, all=True, filters=label)}
    found |= {("network", n.name) for n in dc.networks.list(filters=label)}
    found |= {("volume", v.name) for v in dc.volumes.list(filters=label)}
    return {(kind, name) for kind, name in found if name.startswith("bts-")}


def _starting_elsewhere(name: str) -> bool:
    """A resource of a run another session is starting on this engine meanwhile: its state
    folder (and reservation) is in the engine's usual state root, never in this test's own."""
    from biotool_sandbox.engine import runs as launcher_runs

    run = name.split("_", 1)[0]
    return (launcher_runs.state_root() / run).is_dir()


@pytest.fixture
def sandbox_launcher(tmp_path, docker_client, images):
    """Runs `biotool-sandbox ARGS` as a harness does, with a state root of its own; a failing
    call (check_clean) is then held to leaving the engine and the state root as they were."""
    state = tmp_path / "state"
    state.mkdir()

    def run(*args: str, env: dict | None = None) -> Ran:
        full = {**os.environ, "BIOTOOL_IMAGE": SANDBOX_IMAGE, "BIOTOOL_EGRESS_IMAGE": EGRESS_IMAGE,
                "XDG_STATE_HOME": str(state), **(env or {})}
        proc = subprocess.run([sys.executable, "-m", "biotool_sandbox", *args],
                              capture_output=True, text=True, timeout=240, env=full, cwd=REPO)
        return Ran(proc.returncode, proc.stdout, proc.stderr)

    def refused(*args: str, needles: tuple[str, ...], code: int = 2,
                env: dict | None = None) -> str:
        before = _engine_runs(docker_client)
        ran = run(*args, env=env)
        line = error_line(ran, *needles, code=code, prog=PROG, alone=True)
        left = {(kind, name) for kind, name in _engine_runs(docker_client) - before
                if not _starting_elsewhere(name)}
        assert not left, (f"left behind by {args}", left)
        runs = state / "biotool-sandbox" / "runs"
        kept = [p.name for p in runs.iterdir() if not p.name.startswith(".")] if runs.is_dir() else []
        assert not kept, (f"state folders (memory reservations) left by {args}", kept)
        return line

    run.refused = refused
    return run


def _host(docker_client) -> dict:
    return docker_client.info()


# ------------------------------------------------------------------ up

def test_up_refuses_more_cpus_than_the_host_has_at_once_naming_cpus(sandbox_launcher, docker_client):
    ncpu = _host(docker_client)["NCPU"]
    for value in (str(ncpu + 1), "64"):
        for mode in ("default", "offline"):
            line = sandbox_launcher.refused("up", "--mode", mode, "--cpus", value,
                                            needles=("--cpus", value, str(ncpu)))
            assert "in time" not in line


def test_up_refuses_a_cpu_limit_below_the_engines_floor(sandbox_launcher):
    sandbox_launcher.refused("up", "--mode", "offline", "--cpus", "0.001",
                             needles=("--cpus", "0.001", "0.01"))


def test_up_refuses_a_cpu_limit_from_the_environment_naming_the_variable(sandbox_launcher):
    sandbox_launcher.refused("up", "--mode", "offline", env={"BIOTOOL_CPUS": "4096"},
                             needles=("BIOTOOL_CPUS", "4096"))


def test_up_refuses_more_memory_than_the_host_has_naming_memory(sandbox_launcher, docker_client):
    gib = _host(docker_client)["MemTotal"] // (1 << 30) + 2
    sandbox_launcher.refused("up", "--mode", "offline", "--memory", f"{gib}g",
                             needles=("--memory", f"{gib}g"))


@pytest.mark.parametrize("option,mode", [("--image", "offline"), ("--image", "default"),
                                         ("--egress-image", "default")])
def test_up_refuses_a_missing_image_naming_the_option(sandbox_launcher, option, mode):
    sandbox_launcher.refused("up", "--mode", mode, option, "biotool-no-such-image:none",
                             needles=(option, "biotool-no-such-image:none", "no such image"))


def test_up_refuses_a_malformed_image_name(sandbox_launcher):
    sandbox_launcher.refused("up", "--mode", "offline", "--image", "Not An Image",
                             needles=("--image",))


@pytest.mark.parametrize("args,needle", [
    (("--relay", "http://relay.invalid:443"), "--relay"),
    (("--relay", "https://relay.invalid:443"), "--relay-tls"),
], ids=["not-https", "no-certificates"])
def test_up_refuses_a_bad_relay_before_anything_exists(sandbox_launcher, tmp_path, args, needle):
    sandbox_launcher.refused("up", *args, needles=(needle,))


def test_the_daemons_own_refusal_is_the_one_line_naming_the_limit(sandbox_launcher, tmp_path):
    """A refusal only the daemon makes (a compose file whose sandbox asks for 0.001 CPUs,
    past the launcher's own checks): compose may exit 0 and leave the container created,
    never started; `up` reads the engine, fails naming the limit, and leaves nothing."""
    text = (REPO / "compose.yaml").read_text(encoding="utf-8")
    assert "cpus: ${BIOTOOL_CPUS:-1.5}" in text
    compose = tmp_path / "compose.yaml"
    compose.write_text(text.replace("cpus: ${BIOTOOL_CPUS:-1.5}", "cpus: 0.001"), encoding="utf-8")
    sandbox_launcher.refused("up", "--mode", "offline", "--compose-file", str(compose),
                             needles=("BIOTOOL_CPUS", "CPU"))


# ------------------------------------------------------------------ down

def test_down_removes_a_run_that_left_only_a_volume(sandbox_launcher, docker_client):
    run = "bts-0badf00d"
    docker_client.volumes.create(f"{run}_work", labels={PROJECT: run})
    try:
        down = sandbox_launcher("down", run)
        assert down.code == 0 and down.json["removed"] and down.json["left"]["volumes"] == 0, down
    finally:
        for v in docker_client.volumes.list(filters={"label": f"{PROJECT}={run}"}):
            v.remove(force=True)
    sandbox_launcher.refused("down", run, needles=(run, "unknown run"))


def test_down_removes_a_run_that_left_only_a_reservation(sandbox_launcher, tmp_path):
    run = "bts-0badcafe"
    folder = tmp_path / "state" / "biotool-sandbox" / "runs" / run
    folder.mkdir(parents=True)
    (folder / "memory-reserved").write_text("9126805504\n")
    down = sandbox_launcher("down", run)
    assert down.code == 0 and down.json["removed"], down
    assert not folder.exists()
    sandbox_launcher.refused("down", run, needles=(run, "unknown run"))


# ------------------------------------------------------------------ exec and cp

@pytest.fixture(scope="module")
def offline_run(images):
    from biotool_testing import stack

    up = stack.launcher("up", "--mode", "offline")
    yield up["run"]
    stack.launcher("down", up["run"])


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "-inf"])
def test_exec_refuses_a_timeout_that_is_not_finite_and_non_negative(sandbox_launcher, offline_run,
                                                                    value):
    sandbox_launcher.refused("exec", offline_run, "--timeout", value, "--", "true",
                             needles=("--timeout",))


def test_exec_refuses_a_relative_workdir(sandbox_launcher, offline_run):
    sandbox_launcher.refused("exec", offline_run, "--workdir", "work", "--", "true",
                             needles=("--workdir", "work", "absolute"))


def test_exec_refuses_an_empty_command_word(sandbox_launcher, offline_run):
    sandbox_launcher.refused("exec", offline_run, "--", "", needles=("empty",))


@pytest.mark.parametrize("timeout", [(), ("--timeout", "30")], ids=["bare", "wrapped"])
def test_a_command_that_never_started_is_an_error_not_an_exit_code(sandbox_launcher, offline_run,
                                                                   timeout):
    sandbox_launcher.refused("exec", offline_run, *timeout, "--", "biotool-no-such-command",
                             needles=("biotool-no-such-command", "did not start"))
    sandbox_launcher.refused("exec", offline_run, *timeout, "--workdir", "/no/such/folder", "--",
                             "true", needles=("--workdir /no/such/folder", "did not start"))
    # The command's own 126 and 127 stay its result.
    ran = sandbox_launcher("exec", offline_run, *timeout, "--", "sh", "-c", "exit 127")
    assert ran.code == 0 and ran.json["exit_code"] == 127, ran
    ran = sandbox_launcher("exec", offline_run, "--timeout", "0", "--", "true")
    assert ran.code == 0 and ran.json["exit_code"] == 0, ran


def test_cp_in_refuses_what_cp_out_refuses(sandbox_launcher, offline_run, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "ok.txt").write_text("x\n")
    os.symlink("/etc/passwd", folder / "link")
    for src, kind in ((str(fifo), "FIFO"), ("/dev/null", "device"), (str(folder), "link")):
        sandbox_launcher.refused("cp", src, f"{offline_run}:/work/", needles=(kind,))
    listing = sandbox_launcher("exec", offline_run, "--", "ls", "-A", "/work")
    assert listing.json["stdout"] == "", listing


# ------------------------------------------------------------------ issue 50

def test_up_refuses_an_unregistered_runtime_from_the_environment_naming_the_variable(
        sandbox_launcher):
    sandbox_launcher.refused("up", "--mode", "offline", env={"BIOTOOL_RUNTIME": "nope"},
                             needles=("BIOTOOL_RUNTIME", "nope", "not registered"))


@pytest.mark.parametrize("timeout", [(), ("--timeout", "30")], ids=["bare", "wrapped"])
def test_a_command_printing_the_engines_words_keeps_its_own_exit_code(sandbox_launcher,
                                                                      offline_run, timeout):
    """The engine's failure is what the engine reports (no process started), never the
    command's text: one that prints runc's line and exits 126 ran, and its 126 is its result."""
    said = ('OCI runtime exec failed: exec failed: unable to start container process: exec: '
            '"/x": permission denied: unknown')
    for stream in ("", " >&2"):
        ran = sandbox_launcher("exec", offline_run, *timeout, "--", "sh", "-c",
                               f"printf '%s\\n' '{said}'{stream}; exit 126")
        assert ran.code == 0 and ran.json["exit_code"] == 126, ran
        assert said in ran.json["stdout" if not stream else "stderr"], ran


@pytest.mark.parametrize("shape,says", [
    ("docker-run", "one-shot container"),
    ("apptainer-exec", "Apptainer"),
], ids=["docker-run", "apptainer-exec"])
def test_the_background_index_is_not_promised_where_it_would_die_with_the_command(
        sandbox, apptainer_shape, tmp_path, shape, says):
    """`docker run --rm IMAGE biotool align` (tini as PID 1) and an Apptainer exec of the image
    (its variables, any UID, a read-only root): a build left in the background dies with the
    container, so the line says how to get the index instead (issue 50's probe: six calls over
    365 s, no index), and no index is left half-built in the cache kept on the host."""
    data, cache = tmp_path / "data", tmp_path / "cache"
    data.mkdir()
    cache.mkdir()
    os.chmod(cache, 0o777)
    big_reference(data)
    kwargs: dict = {"volumes": {str(data): {"bind": "/data", "mode": "ro"},
                                str(cache): {"bind": "/cache", "mode": "rw"}},
                    "environment": {"BIOTOOL_CACHE": "/cache"}}
    if shape == "apptainer-exec":
        kwargs.update({k: v for k, v in apptainer_shape.items() if k != "environment"})
        kwargs["environment"].update({**apptainer_shape.get("environment", {}),
                                      "APPTAINER_CONTAINER": "/images/biotool-sandbox.sif"})
    ran = sandbox.biotool("align", "--fastq", "/data/reads.fastq", "--reference", "/data/big.fa",
                          **kwargs)
    line = error_line(ran, "--reference /data/big.fa", says, "biotool index --kind bwa",
                      "--timeout", code=2)
    assert "few minutes" not in line and "now being built" not in line, line
    assert not [p for p in cache.rglob("*") if p.name in ("bwa", "bwa.failed")], \
        sorted(str(p) for p in cache.rglob("*"))
