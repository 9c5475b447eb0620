"""biotool-sandbox argument handling that needs no docker engine: usage errors exit 2 with one line."""

from __future__ import annotations

import io
import os
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from biotool_sandbox import agent, cli, demo
from biotool_sandbox.backends import compose as stack
from biotool_sandbox.backends.spec import RunSpec
from biotool_sandbox.engine import execute, runs
from biotool_sandbox.engine.composefile import compose_file
from biotool_sandbox.engine.images import Wanted
from biotool_sandbox.engine.limits import Limits, check_host_limits, refusal_error
from biotool_sandbox.engine.variables import Variables
from biotool_sandbox.errors import LauncherError


def launcher(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "biotool_sandbox", *args], capture_output=True,
                          text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "DOCKER_HOST": "unix:///nonexistent.sock"})


def test_help_lists_every_command():
    proc = launcher("--help")
    assert proc.returncode == 0
    listed = re.findall(r"^  ([\w-]+)  ", proc.stdout.split("\nCommands:\n")[1], re.M)
    assert listed == ["up", "exec", "cp", "audit", "down", "ps", "k8s-values", "harbor",
                      "harbor-check", "verify-image", "verify-sif", "demo"]


def test_cp_needs_exactly_one_run_side():
    with pytest.raises(LauncherError, match="exactly one side"):
        agent.cp("a.txt", "b.txt")
    with pytest.raises(LauncherError, match="exactly one side"):
        agent.cp("bts-1a2b3c4d:/work/a", "bts-1a2b3c4d:/work/b")


def test_cp_sandbox_path_must_be_absolute():
    with pytest.raises(LauncherError, match="absolute"):
        agent.split_spec("bts-1a2b3c4d:work/a")


def test_split_spec_tells_run_paths_from_host_paths():
    assert agent.split_spec("bts-1a2b3c4d:/work/x") == ("bts-1a2b3c4d", "/work/x")
    assert agent.split_spec("./c:/x") == (None, "./c:/x")
    assert agent.split_spec("/tmp/in.fa") == (None, "/tmp/in.fa")


def test_run_ids_are_validated_before_docker_is_touched():
    for bad in ("biotool", "bts-", "BTS-1A2B", "bts-1a2b;rm"):
        with pytest.raises(LauncherError, match="not a run id"):
            runs.check_run_name(bad)
    assert runs.check_run_name(runs.new_run_id()).startswith("bts-")


def test_a_harbor_trials_compose_project_is_a_run_id():
    # Harbor (docs/harbor.md) names a trial's agent environment TRIAL__env, lower-cased.
    assert runs.check_run_name("spike-d614g__bzzeekw__env") == "spike-d614g__bzzeekw__env"
    for bad in ("spike-d614g__env;rm", "Spike__X__env", "__env", "spike-d614g__verifier"):
        with pytest.raises(LauncherError, match="not a run id"):
            runs.check_run_name(bad)


def test_new_run_ids_are_unique():
    assert len({runs.new_run_id() for _ in range(200)}) == 200


def test_bad_run_id_exits_2_with_one_line():
    proc = launcher("audit", "not-a-run")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "not-a-run" in proc.stderr


def test_exec_without_a_command_exits_2():
    proc = launcher("exec", "bts-1a2b3c4d", "--")
    assert proc.returncode == 2 and "needs a command" in proc.stderr


def test_exec_options_after_double_dash_belong_to_the_command(monkeypatch, capsys):
    # agent.exec_ is where docker starts; everything before it is main's own argument handling.
    from biotool_sandbox import agent

    monkeypatch.setattr(agent, "exec_", lambda run, cmd, workdir, env, timeout:
                        {"timeout": timeout, "cmd": cmd})
    with pytest.raises(SystemExit) as done:
        cli.main(["exec", "bts-1a2b3c4d", "--timeout", "5", "--", "ls", "--timeout", "-l"])
    assert done.value.code == 0
    assert json.loads(capsys.readouterr().out) == {"timeout": 5, "cmd": ["ls", "--timeout", "-l"]}
    with pytest.raises(SystemExit) as stray:  # a stray -- for another command is a usage error
        cli.main(["audit", "bts-1a2b3c4d", "--", "x"])
    assert stray.value.code == 2


def test_unknown_mode_is_a_usage_error():
    proc = launcher("up", "--mode", "turbo")
    assert proc.returncode == 2 and "turbo" in proc.stderr


def test_missing_extra_ca_is_named():
    with pytest.raises(LauncherError, match="/nonexistent/ca.pem"):
        stack.up(RunSpec(extra_ca="/nonexistent/ca.pem"))


def test_engine_unreachable_is_exit_4_naming_docker():
    proc = launcher("ps")
    assert proc.returncode == 4 and "docker engine not reachable" in proc.stderr


def test_env_pairs_must_be_key_value():
    assert cli._env_pairs(["A=1", "B=x=y"]) == {"A": "1", "B": "x=y"}
    with pytest.raises(LauncherError, match="KEY=VALUE"):
        cli._env_pairs(["nope"])


def _archive(*names: str) -> tarfile.TarFile:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in names:
            tar.addfile(tarfile.TarInfo(name), io.BytesIO(b""))
    buf.seek(0)
    return tarfile.open(fileobj=buf)


def test_copy_out_refuses_members_outside_the_destination(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    assert [m.name for m in agent._safe_members(_archive("x/a.txt"), dest)] == ["x/a.txt"]
    # A sibling whose name starts with the destination's is still outside it.
    for escape in ("../out-evil/a.txt", "../a.txt", "/etc/a.txt"):
        with pytest.raises(LauncherError, match="refusing archive member"):
            list(agent._safe_members(_archive(escape), dest))


def test_demo_finds_commands_in_the_help_listing_not_in_prose():
    help_text = ("Usage: biotool [OPTIONS] COMMAND\n\n  Every command prints one JSON object;"
                 " a call to a remote service may fail.\n\nCommands:\n  list  what is staged\n"
                 "  align  align reads\n")
    assert demo._commands(help_text) == ["list", "align"]


def test_limits_become_compose_variables():
    assert Limits(cpus="1.5", memory="8g", work_size="512m").variables() == {
        "BIOTOOL_CPUS": "1.5", "BIOTOOL_MEM_LIMIT": "8g", "BIOTOOL_WORK_SIZE": "512m"}
    assert Limits(cpus=None, work_size=None).variables() == {}


@pytest.mark.parametrize("limits,culprit", [
    ({"cpus": "0"}, "--cpus"), ({"cpus": "lots"}, "--cpus"), ({"work_size": "-1g"}, "--work-size"),
    ({"memory": "8g; rm -rf /"}, "--memory"), ({"work_size": "4 g"}, "--work-size")])
def test_bad_limits_are_refused_naming_the_option(limits, culprit):
    with pytest.raises(LauncherError, match=culprit):
        Limits(**limits).variables()


def test_bad_limit_on_the_command_line_exits_2_before_docker():
    from pathlib import Path

    here = str(Path(stack.__file__).resolve().parents[2])  # this checkout's entrypoints
    proc = subprocess.run([sys.executable, "-m", "biotool_sandbox", "up", "--work-size", "huge"],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": here,
                               "DOCKER_HOST": "unix:///nonexistent.sock"})
    assert proc.returncode == 2 and "--work-size" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_tmpfs_sizes_are_checked_against_the_memory_limit_from_compose_yamls_defaults():
    from biotool_sandbox.engine import budget

    compose = compose_file(None)
    sizes = budget.run_memory(Variables.of(compose, environ={}))
    # compose.yaml's own defaults: 8g memory, /work 4g + /tmp 2g + /var/tmp 512m + /dev/shm.
    assert sizes == {"sandbox": 8 << 30, "egress": 512 << 20,
                     "tmpfs": (4 << 30) + (2 << 30) + (512 << 20) + (64 << 20)}
    # Set in the environment, the variables are named (an option would be: `given`).
    with pytest.raises(LauncherError, match=r"BIOTOOL_WORK_SIZE 4\.0g is too large for "
                                            r"BIOTOOL_MEM_LIMIT 6\.0g.* leave 0m for processes"):
        budget.run_memory(Variables.of(compose, environ={
            "BIOTOOL_MEM_LIMIT": "6g", "BIOTOOL_TMP_SIZE": "2g", "BIOTOOL_VARTMP_SIZE": "2g"}))
    with pytest.raises(LauncherError, match="/work 8.0g, /tmp 2.0g, /var/tmp 512m, /dev/shm 64m"):
        budget.run_memory(Variables.of(compose, environ={"BIOTOOL_WORK_SIZE": "8g"}))
    assert budget.run_memory(Variables.of(compose, environ={
        "BIOTOOL_MEM_LIMIT": "2g", "BIOTOOL_WORK_SIZE": "256m", "BIOTOOL_TMP_SIZE": "256m",
        "BIOTOOL_VARTMP_SIZE": "128m"}))["sandbox"] == 2 << 30


def _vars(given=None, defaults=None) -> Variables:
    """A run's variables with nothing from this process's environment."""
    return Variables(Path("compose.yaml"), given or {}, {}, defaults or {})


@pytest.mark.parametrize("raw", ["0", "-1", "lots", "5"])
def test_a_bad_host_share_is_refused_naming_the_variable(raw):
    from biotool_sandbox.engine import budget

    with pytest.raises(LauncherError, match=budget.SHARE_ENV):
        budget.host_share({budget.SHARE_ENV: raw})
    assert budget.host_share({}) == budget.DEFAULT_SHARE


def test_work_larger_than_memory_exits_2_before_docker_in_one_line():
    from pathlib import Path

    here = str(Path(stack.__file__).resolve().parents[2])
    proc = subprocess.run([sys.executable, "-m", "biotool_sandbox", "up", "--memory", "2g",
                           "--work-size", "4g"], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": here,
                               "DOCKER_HOST": "unix:///nonexistent.sock"})
    assert proc.returncode == 2 and "--work-size 4.0g is too large for --memory 2.0g" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# ------------------------------------------------ what the engine would refuse, checked first

def test_cpu_limits_are_held_to_the_hosts_cpus_and_the_engines_floor():
    given = {"BIOTOOL_CPUS": "3"}
    with pytest.raises(LauncherError, match=r"^--cpus 3: this engine allows 0.01 to 2 CPUs"):
        check_host_limits(_vars(given=given), ncpu=2, memtotal=8 << 30)
    with pytest.raises(LauncherError, match=r"^--cpus 0.001"):
        check_host_limits(_vars(given={"BIOTOOL_CPUS": "0.001"}), 2, 8 << 30)
    # compose.yaml's own default is held to the same host
    with pytest.raises(LauncherError, match="BIOTOOL_CPUS .the compose file's value. 1.5"):
        check_host_limits(_vars(defaults={"BIOTOOL_CPUS": "1.5"}), ncpu=1, memtotal=8 << 30)
    check_host_limits(_vars(defaults={"BIOTOOL_CPUS": "1.5", "BIOTOOL_MEM_LIMIT": "8g"}), 2, 16 << 30)


def test_a_memory_limit_over_the_hosts_memory_is_refused_naming_memory():
    given = {"BIOTOOL_MEM_LIMIT": "64g"}
    with pytest.raises(LauncherError, match=r"^--memory 64g is more than this host's 16.0g"):
        check_host_limits(_vars(given=given), ncpu=2, memtotal=16 << 30)


@pytest.mark.parametrize("said,culprit,code", [
    ("Error response from daemon: Range of CPUs is from 0.01 to 2.00, as there are only 2 CPUs "
     "available", "--cpus", 2),
    ("Minimum memory limit allowed is 6MB", "--memory", 2),
    ("Error response from daemon: No such image: nope:1", "--image nope:1", 2),
    ("Error response from daemon: driver failed programming external connectivity", "the engine", 4),
])
def test_the_daemons_refusal_names_the_option_it_came_from(said, culprit, code):
    err = refusal_error(said, _vars(given={"BIOTOOL_CPUS": "3", "BIOTOOL_MEM_LIMIT": "5m"}),
                        [Wanted("--image", "nope:1", "image"),
                         Wanted("BIOTOOL_EGRESS_IMAGE", "biotool-egress:latest", "image")])
    assert culprit in err.message and err.exit_code == code and "\n" not in err.message


RUNC_MISSING = (b'OCI runtime exec failed: exec failed: container_linux.go:380: starting container '
                b'process caused: exec: "nope": executable file not found in $PATH: unknown\r\n')


@pytest.mark.parametrize("code,out,err,cmd,wrapped,engine_started,refused", [
    (126, RUNC_MISSING, b"", ["nope"], False, False, True),
    (127, b"", b"/usr/bin/timeout: failed to run command \xe2\x80\x98nope\xe2\x80\x99: No such file "
     b"or directory\n", ["nope"], True, True, True),
    (126, b'OCI runtime exec failed: exec failed: container_linux.go:380: starting container '
     b'process caused: chdir to cwd ("/nope") set in config.json failed: no such file or '
     b'directory: unknown\r\n', b"", ["true"], True, False, True),
    # the engine's failure is what it reports (no process), whatever it printed, if anything
    (126, b"", b"", ["true"], False, False, True),
    # the command's own 126/127: a shell, or the caller's own timeout, is no refusal
    (127, b"", b"sh: 1: nope: not found\n", ["sh", "-c", "nope"], False, True, False),
    (127, b"", b"timeout: failed to run command 'nope': No such file or directory\n",
     ["timeout", "5", "nope"], True, True, False),
    (127, b"", b"", ["sh", "-c", "exit 127"], False, True, False),
    # a command that started, printing the engine's words and exiting 126: its own result
    (126, RUNC_MISSING, b"", ["sh", "-c", "printf ...; exit 126"], False, True, False),
    (126, b"", RUNC_MISSING, ["sh", "-c", "printf ... >&2; exit 126"], False, True, False),
    (126, RUNC_MISSING, b"", ["sh", "-c", "printf ...; exit 126"], True, True, False),
], ids=["runc-missing", "wrapper-missing", "workdir", "engine-silent", "own-shell", "own-timeout",
        "own-exit", "engine-words-stdout", "engine-words-stderr", "engine-words-wrapped"])
def test_a_command_that_never_started_is_told_from_its_own_exit_code(
        code, out, err, cmd, wrapped, engine_started, refused):
    why = execute.not_started(code, out, err, cmd, wrapped, started=engine_started)
    assert (why is not None) is refused and (why is None or "\n" not in why)


@pytest.mark.parametrize("value", [-1.0, float("nan"), float("inf"), -float("inf")])
def test_exec_timeouts_must_be_finite_and_not_negative(value):
    from biotool_sandbox import timeouts

    with pytest.raises(LauncherError, match="^Invalid value for '--timeout': "):
        timeouts.checked(value)
    assert timeouts.checked(0.0) == 0.0 and timeouts.checked(None) is None


def test_cp_in_refuses_fifos_devices_and_links_as_cp_out_does(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.txt").write_text("a\n")
    assert agent._copyable(folder) == folder.resolve()
    os.symlink("/etc/hostname", folder / "link")
    for src, kind in ((fifo, "a FIFO"), (Path("/dev/null"), "a device"), (folder, "a link"),
                      (tmp_path / "missing", "does not exist")):
        with pytest.raises(LauncherError, match=kind):
            agent._copyable(src)
    # a link at the top is followed: the file it names is what is copied
    os.symlink(folder / "a.txt", tmp_path / "top")
    assert agent._copyable(tmp_path / "top") == (folder / "a.txt").resolve()


def test_a_runs_variables_say_who_set_each_one(tmp_path):
    compose = tmp_path / "compose.yaml"
    compose.write_text("x: ${BIOTOOL_CPUS:-1.5} ${BIOTOOL_IMAGE:-biotool-sandbox:latest}\n")
    v = Variables.of(compose, {"BIOTOOL_MEM_LIMIT": "4g"}, environ={"BIOTOOL_CPUS": "2"})
    assert (v.value("BIOTOOL_MEM_LIMIT"), v.set_by("BIOTOOL_MEM_LIMIT")) == ("4g", "--memory")
    assert (v.value("BIOTOOL_CPUS"), v.set_by("BIOTOOL_CPUS")) == ("2", "BIOTOOL_CPUS")
    assert (v.value("BIOTOOL_IMAGE"), v.set_by("BIOTOOL_IMAGE")) == ("biotool-sandbox:latest", None)
    more = v.with_given({"BIOTOOL_RUNTIME": "runsc"})
    assert more.env() == {"BIOTOOL_CPUS": "2", "BIOTOOL_MEM_LIMIT": "4g", "BIOTOOL_RUNTIME": "runsc"}
    assert "BIOTOOL_RUNTIME" not in v.env()  # frozen: the run's first variables are unchanged
