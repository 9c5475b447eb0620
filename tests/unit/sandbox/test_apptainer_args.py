"""The `biotool-apptainer` provider without Apptainer: its settings and their one-line errors,
the command lines it builds, the refusals it reads, and the bounded host-side run (real
processes). tests/apptainer/on_node/test_provider.py runs it end to end on real Apptainer."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("inspect_ai")
from inspect_ai.util import SandboxUserUnsupportedError  # noqa: E402

from biotool_sandbox.backends import apptainer  # noqa: E402
from biotool_sandbox.providers import apptainer as box  # noqa: E402
from biotool_sandbox.errors import LauncherError  # noqa: E402


@pytest.fixture
def tool(tmp_path):
    path = tmp_path / "bin" / "apptainer"
    path.parent.mkdir()
    path.write_text("#!/bin/sh\necho 1.3.6\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def sif(tmp_path):
    path = tmp_path / "biotool-sandbox.sif"
    path.write_bytes(b"SIF")
    return path


def env_of(tool, sif=None, **extra) -> dict:
    environ = {"PATH": f"{tool.parent}:/usr/bin:/bin", **extra}
    if sif is not None:
        environ["BIOTOOL_SIF"] = str(sif)
    return environ


def test_inspect_finds_the_provider_through_its_entry_point():
    from inspect_ai.util._sandbox.registry import registry_find_sandboxenv

    assert registry_find_sandboxenv("biotool-apptainer") is box.ApptainerSandboxEnvironment


def test_settings_from_the_environment_and_from_the_config(tool, sif, tmp_path):
    site, scratch = tmp_path / "site", tmp_path / "scratch"
    site.mkdir()
    scratch.mkdir()
    s = apptainer.settings(None, env_of(tool, sif, BIOTOOL_SITE=str(site), BIOTOOL_SCRATCH=str(scratch)))
    assert (s.apptainer, s.sif, s.site, s.scratch) == (str(tool), sif, site, scratch)
    # A string config is the SIF; a model's fields win over the environment.
    other = tmp_path / "other.sif"
    other.write_bytes(b"SIF")
    assert apptainer.settings(str(other), env_of(tool, sif)).sif == other
    s = apptainer.settings(apptainer.ApptainerConfig(sif=str(other), apptainer=str(tool),
                                                     scratch=str(scratch)),
                           {"PATH": "/nonexistent", "TMPDIR": "/nonexistent"})
    assert (s.sif, s.apptainer, s.scratch, s.site) == (other, str(tool), scratch, None)
    # No scratch given: TMPDIR, as a Slurm node's job-local folder usually is.
    assert apptainer.settings(None, env_of(tool, sif, TMPDIR=str(scratch))).scratch == scratch
    # Inspect rebuilds the model from a log's dict; unknown fields are refused, not dropped.
    assert box.ApptainerSandboxEnvironment.config_deserialize({"sif": "x.sif"}).sif == "x.sif"
    with pytest.raises(ValueError, match="sfi"):
        box.ApptainerSandboxEnvironment.config_deserialize({"sfi": "x.sif"})


@pytest.mark.parametrize("case,message", [
    ("no-apptainer", r"^apptainer is not on PATH: install Apptainer, or set BIOTOOL_APPTAINER"),
    ("apptainer-not-executable", r"^apptainer .*/apptainer \(BIOTOOL_APPTAINER\) is not an executable file$"),
    ("no-sif", r"^no SIF given: set BIOTOOL_SIF, or pass sandbox=\('biotool-apptainer', 'PATH.sif'\)"),
    ("sif-missing", r"^SIF .*/absent.sif \(BIOTOOL_SIF\) does not exist: build it with `make sif`"),
    ("site-missing", r"^site overlay .*/no-site \(BIOTOOL_SITE\) is not a directory$"),
    ("scratch-missing", r"^scratch .*/no-scratch \(BIOTOOL_SCRATCH\) is not a writable directory$"),
    ("scratch-colon", r"^scratch .*/a:b: a path with ':' or ',' cannot be bound by Apptainer$"),
    ("bad-config", r"^sandbox=\('biotool-apptainer', 3\): the config is a SIF path or an ApptainerConfig$"),
])
def test_what_is_missing_is_named_in_one_line(case, message, tool, sif, tmp_path):
    config, environ = None, env_of(tool, sif)
    if case == "no-apptainer":
        environ["PATH"] = "/usr/bin:/bin"
    elif case == "apptainer-not-executable":
        tool.chmod(0o644)
        environ["BIOTOOL_APPTAINER"] = str(tool)
    elif case == "no-sif":
        del environ["BIOTOOL_SIF"]
    elif case == "sif-missing":
        environ["BIOTOOL_SIF"] = str(tmp_path / "absent.sif")
    elif case == "site-missing":
        environ["BIOTOOL_SITE"] = str(tmp_path / "no-site")
    elif case == "scratch-missing":
        environ["BIOTOOL_SCRATCH"] = str(tmp_path / "no-scratch")
    elif case == "scratch-colon":
        (tmp_path / "a:b").mkdir()
        environ["BIOTOOL_SCRATCH"] = str(tmp_path / "a:b")
    else:
        config = 3
    with pytest.raises(LauncherError, match=message) as info:
        apptainer.settings(config, environ)
    assert "\n" not in str(info.value)


def test_task_init_refuses_before_any_sample_when_apptainer_is_absent(monkeypatch, sif):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("BIOTOOL_APPTAINER", raising=False)
    monkeypatch.setenv("BIOTOOL_SIF", str(sif))
    with pytest.raises(LauncherError, match="^apptainer is not on PATH"):
        asyncio.run(box.ApptainerSandboxEnvironment.task_init("t", None))


def test_task_init_says_when_apptainer_does_not_run(monkeypatch, tool, sif):
    tool.write_text("#!/bin/sh\necho 'FATAL:   could not open configuration' >&2\nexit 255\n")
    monkeypatch.setenv("BIOTOOL_APPTAINER", str(tool))
    monkeypatch.setenv("BIOTOOL_SIF", str(sif))
    with pytest.raises(Exception, match=r"version failed \(exit 255\): FATAL: +could not open"):
        asyncio.run(box.ApptainerSandboxEnvironment.task_init("t", None))


def test_instance_start_is_the_offline_shape_of_run_apptainer(tool, sif, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    s = apptainer.settings(None, env_of(tool, sif, BIOTOOL_SITE=str(site), BIOTOOL_SCRATCH=str(tmp_path)))
    sample = apptainer.new_sample(s.scratch)
    assert sample.name.startswith("bta-") and sample.root == tmp_path / sample.name
    assert sample.work.is_dir() and sample.tmp.is_dir() and oct(sample.root.stat().st_mode)[-3:] == "700"
    assert apptainer.start_argv(s, sample) == [
        str(tool), "instance", "start", "--containall", "--net", "--network", "none",
        "--bind", f"{sample.work}:/work", "--bind", f"{site}:/opt/biotool-site:ro",
        "--workdir", str(sample.tmp), str(sif), sample.name]
    assert apptainer.new_sample(s.scratch).name != sample.name
    # The site's own binds do not reach the instance; everything else of the caller's does.
    assert apptainer.start_environ({"APPTAINER_BIND": "/shared", "SINGULARITY_BINDPATH": "/x",
                                    "PATH": "/usr/bin"}) == {"PATH": "/usr/bin"}


def test_exec_keeps_the_hosts_environment_out_and_sets_inspects_by_absolute_path():
    argv = apptainer.exec_argv("/opt/apptainer", "bta-1", ["sh", "-c", "echo $A"], pwd="/work/sub",
                               env={"A": "x,y=z", "PATH": "/bin"})
    assert argv == ["/opt/apptainer", "--quiet", "exec", "--cleanenv", "--pwd", "/work/sub",
                    "instance://bta-1", "/usr/bin/env", "--", "A=x,y=z", "PATH=/bin",
                    "sh", "-c", "echo $A"]
    timed = apptainer.exec_argv("/a", "bta-1", ["sleep", "9"], timeout=3)
    # The whole of env + cmd under GNU timeout, so its kill reaches the command's group.
    assert timed[timed.index("instance://bta-1") + 1:] == [
        "/usr/bin/timeout", "-k", "5", "3", "/usr/bin/env", "--", "sleep", "9"]
    assert timed[timed.index("--pwd") + 1] == "/work"


@pytest.mark.parametrize("cmd,env,message", [
    ([], None, "exec needs a command"),
    (["A=1"], None, "a program name with '='"),
    (["true"], {"A=B": "1"}, "not a NAME=VALUE pair"),
    (["true"], {"": "1"}, "not a NAME=VALUE pair"),
])
def test_exec_refuses_what_env_would_misread(cmd, env, message):
    with pytest.raises(ValueError, match=message):
        apptainer.exec_argv("/a", "bta-1", cmd, env=env)


def test_exec_as_a_user_is_unsupported_under_apptainer(tmp_path):
    sample = apptainer.Sample(name="bta-0", root=tmp_path)
    env = box.ApptainerSandboxEnvironment("/nonexistent/apptainer", sample)
    with pytest.raises(SandboxUserUnsupportedError, match="runs every command as the user"):
        asyncio.run(env.exec(["whoami"], user="root"))


@pytest.mark.parametrize("code,out,err,cmd,refused", [
    (126, b"", "/usr/bin/env: \u2018/etc/passwd\u2019: Permission denied\n".encode(), ["/etc/passwd"], True),
    (126, b"", b"/usr/bin/env: '/etc/passwd': Permission denied\n", ["/etc/passwd"], True),  # LC_ALL=C
    # the command's own shell, or the caller's own env, refusing something else: a result
    (126, b"", b"sh: 1: /etc/passwd: Permission denied\n", ["sh", "-c", "/etc/passwd"], False),
    (126, b"", "env: \u2018./x\u2019: Permission denied\n".encode(), ["env", "./x"], False),
    (127, b"", "/usr/bin/env: \u2018nope\u2019: No such file or directory\n".encode(), ["nope"], False),
    (126, b"x", b"/usr/bin/env: '/etc/passwd': Permission denied\n", ["/etc/passwd"], False),
])
def test_only_the_providers_own_wrapper_refusing_cmd_is_a_permission_error(code, out, err, cmd, refused):
    assert (box._refusal(code, out, err, cmd) is not None) is refused


# ---------------------------------------------------------------- the host-side run

def test_run_past_its_deadline_kills_the_whole_group(tmp_path, gone_within):
    # The deadline (3 s) leaves a slow host time to start sh and write the pids; the bound
    # (60 s) only tells a kill from waiting out the commands' 600 s.
    pids = tmp_path / "pids"
    script = f"sleep 600 & echo $! > {pids}; echo $$ >> {pids}; sleep 600; :"
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="within 3s"):
        asyncio.run(apptainer.run(["sh", "-c", script], deadline=3))
    assert time.monotonic() - start < 60
    child, parent = (int(p) for p in pids.read_text().split())
    assert gone_within(child, 60) and gone_within(parent, 60)


def test_run_feeds_stdin_and_keeps_only_the_tail(tmp_path):
    code, out, err = asyncio.run(apptainer.run(["wc", "-c"], stdin=b"a" * (3 << 20)))
    assert (code, out.split()[0], err) == (0, str(3 << 20).encode(), b"")
    code, out, _ = asyncio.run(apptainer.run(
        [sys.executable, "-c", "import sys; sys.stdout.write('x' * 100000 + 'END'); sys.exit(3)"],
        keep=10))
    assert code == 3 and out == b"xxxxxxxxEND"  # keep + 1 bytes: enough to tell it was cut
    # A command that ignores its input does not stall the run.
    code, _, _ = asyncio.run(apptainer.run(["true"], stdin=b"b" * (8 << 20), deadline=30))
    assert code == 0


def test_run_names_a_program_that_cannot_start(tmp_path):
    with pytest.raises(Exception, match=r"^/nonexistent/apptainer could not be started"):
        asyncio.run(apptainer.run(["/nonexistent/apptainer", "version"]))


def test_only_apptainers_no_instance_answer_means_the_instance_is_gone():
    fatal = b"FATAL:   no instance found with name bta-1a2b\n"
    assert apptainer.gone(fatal, "bta-1a2b")
    assert not apptainer.gone(fatal, "bta-1a2")  # another instance's name is a prefix of it
    assert not apptainer.gone(b"ssh: connect to host x: Connection refused\n", "bta-1a2b")
    # Apptainer 1.4.5's `instance stop NAME` of no such instance (exit 1): usage, then this line.
    stop = (b"Usage:\n  apptainer [global options...] instance stop [stop options...] [instance]\n\n"
            b"Run 'apptainer --help' for more detailed usage information.\n"
            b'Error for command "stop": no instance found\n\n')
    assert apptainer.gone(stop, "bta-1a2b")
    assert not apptainer.gone(b'Error for command "stop": permission denied\n', "bta-1a2b")
    assert apptainer.message(b"INFO: x\nFATAL:   no instance found\nmore\n") == "FATAL:   no instance found"


def test_a_command_too_long_for_apptainer_is_staged_and_run_from_a_file(tmp_path):
    # Apptainer 1.4 refuses a command whose engine configuration passes 1 MiB; Inspect's
    # conformance suite sends ~1 MiB of arguments. Small commands stay inline.
    assert apptainer.argv_payload(["printf", "%s", "x"]) is None
    chunk = "x" * (64 * 1024)
    cmd, env = ["printf", "%s|", *([chunk] * 16), "a b", "", "é"], {"K": "v,w"}
    payload = apptainer.argv_payload(cmd, env)
    assert payload is not None and payload.endswith(b"\xc3\xa9\0")
    argv = apptainer.exec_argv("apptainer", "bta-1", cmd, env=env, timeout=30,
                               argv_file="/tmp/.biotool-argv-1")
    assert len("".join(argv)) < 1000 and argv[-3:] == [apptainer.ARGV_READER, "biotool-argv",
                                                      "/tmp/.biotool-argv-1"]
    # The reader itself, run by bash here as in the instance: the exact arguments, its exit code,
    # and the file gone.
    staged = tmp_path / "argv"
    staged.write_bytes(payload)
    ran = subprocess.run(["bash", "-c", apptainer.ARGV_READER, "biotool-argv", str(staged)],
                         capture_output=True)
    assert ran.returncode == 0 and ran.stdout == ("|".join([chunk] * 16 + ["a b", "", "é"]) + "|").encode()
    assert not staged.exists()
    staged.write_bytes(b"".join(a.encode() + b"\0" for a in ["/usr/bin/env", "--", "sh", "-c", "exit 7"]))
    assert subprocess.run(["bash", "-c", apptainer.ARGV_READER, "x", str(staged)]).returncode == 7
