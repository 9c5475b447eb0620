"""The launcher's inputs held to their kinds before anything is opened or written (issue 50):
files named by options (commandline.kinds' path kinds), sizes and timeouts bounded by what
the engine and the clock hold, a named compose file never replaced, harbor's sources read
before its output is made, and every refusal a variable caused naming the variable. The
corpus (tests/badinput, family `launcher`) runs the same refusals as whole commands."""

from __future__ import annotations

import json
import re
import os
import shutil
import socket
from pathlib import Path

import pytest

from commandline.kinds import (PathKind, Size, existing_file, existing_folder, output_file,
                               output_folder, path_problem, size_bytes)
from biotool_sandbox import harbor_tasks, imagefiles, timeouts
from biotool_sandbox.backends import compose as stack
from biotool_sandbox.backends.capabilities import refusal
from biotool_sandbox.backends.spec import RunSpec
from biotool_sandbox.engine import budget, composefile, overrides
from biotool_sandbox.engine.variables import Variables
from biotool_sandbox.errors import LauncherError

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def specials(tmp_path) -> dict[str, Path]:
    """One path of each kind an option may be handed."""
    (tmp_path / "file").write_text("x\n")
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(tmp_path / "sock"))
    s.close()
    os.symlink("gone", tmp_path / "broken")
    os.symlink("loop2", tmp_path / "loop1")
    os.symlink("loop1", tmp_path / "loop2")
    return {"file": tmp_path / "file", "folder": tmp_path / "folder",
            "fifo": tmp_path / "fifo", "sock": tmp_path / "sock", "dev": Path("/dev/null"),
            "broken": tmp_path / "broken", "loop": tmp_path / "loop1",
            "missing": tmp_path / "missing", "under-a-file": tmp_path / "file" / "x"}


@pytest.mark.parametrize("kind,takes", [
    (existing_file(), {"file"}),
    (existing_folder(), {"folder"}),
    (output_file(), {"file", "missing"}),
    (output_folder(), {"folder", "missing"}),
], ids=["existing-file", "existing-folder", "output-file", "output-folder"])
def test_a_path_kind_takes_its_kind_only_and_names_the_path(specials, kind: PathKind, takes):
    words = {"fifo": "a FIFO", "sock": "a socket", "dev": "a device", "broken": "broken link",
             "loop": "link loop", "missing": "does not exist", "under-a-file": "not a folder",
             "file": "a regular file", "folder": "a folder"}
    for name, path in specials.items():
        if name in takes:
            assert kind(str(path)) == str(path)
            continue
        with pytest.raises(ValueError) as refused:
            kind(str(path))
        assert str(path) in str(refused.value) and words[name] in str(refused.value), name


def test_a_fifo_is_judged_without_being_opened(specials):
    # Opening a FIFO with no writer blocks for ever: stat alone must decide.
    assert "a FIFO" in path_problem(str(specials["fifo"]), "file")


def test_an_output_in_a_folder_that_does_not_exist_is_refused(tmp_path):
    with pytest.raises(ValueError, match="its folder .* does not exist"):
        output_folder()(str(tmp_path / "nope" / "tasks"))


@pytest.mark.parametrize("raw,ok", [("4g", True), ("512m", True), ("0", False), ("1t", False),
                                    ("4 g", False), ("-1g", False),
                                    ("99999999999999999999g", False), ("8589934591g", True)])
def test_sizes_are_bounded_by_what_the_engine_holds(raw, ok):
    if ok:
        assert Size()(raw) == raw and size_bytes(raw) <= 2 ** 63 - 1
    else:
        with pytest.raises(ValueError):
            Size()(raw)


@pytest.mark.parametrize("value", [1e10, 1e300, timeouts.MAX_TIMEOUT_S + 1])
def test_exec_timeouts_past_what_the_clock_holds_are_refused(value):
    with pytest.raises(LauncherError, match="^Invalid value for '--timeout': .* not in the range"):
        timeouts.checked(value)
    assert timeouts.checked(timeouts.MAX_TIMEOUT_S) == timeouts.MAX_TIMEOUT_S


def test_the_limit_survives_the_hosts_own_wait():
    import socket as sockets

    s = sockets.socket()
    try:  # the host's wait on the exec's stream is a socket timeout: it must take the bound
        s.settimeout(timeouts.host_deadline(timeouts.MAX_TIMEOUT_S))
    finally:
        s.close()


def test_a_named_compose_file_is_never_replaced(tmp_path, monkeypatch):
    monkeypatch.delenv(composefile.COMPOSE_ENV, raising=False)
    with pytest.raises(LauncherError, match=r"^--compose-file .*missing.yaml does not exist"):
        composefile.compose_file(str(tmp_path / "missing.yaml"))
    monkeypatch.setenv(composefile.COMPOSE_ENV, str(tmp_path / "missing.yaml"))
    with pytest.raises(LauncherError, match=r"^BIOTOOL_COMPOSE_FILE .*missing.yaml"):
        composefile.compose_file(None)
    (tmp_path / "empty.yaml").write_text("")
    monkeypatch.setenv(composefile.COMPOSE_ENV, str(tmp_path / "empty.yaml"))
    with pytest.raises(LauncherError, match=r"^BIOTOOL_COMPOSE_FILE .*empty.yaml: not the stack"):
        composefile.compose_file(None)
    # the option wins over the variable, and the checkout's file is the fallback of neither
    assert composefile.compose_file(str(REPO / "compose.yaml")) == (REPO / "compose.yaml").resolve()
    monkeypatch.delenv(composefile.COMPOSE_ENV)
    monkeypatch.chdir(tmp_path)  # the checkout's own file, whatever the working folder
    assert composefile.compose_file(None) == (REPO / "compose.yaml").resolve()


def _sources(tmp_path: Path, key_text: str) -> Path:
    root = tmp_path / "sources"
    shutil.copytree(REPO / "harbor" / "tasks" / "spike-d614g", root / "spike-d614g")
    (root / "spike-d614g" / "key.json").write_text(key_text)
    return root


@pytest.mark.parametrize("key_text,says", [
    ('{"task": "spike-d614g", ', "not valid JSON"),
    ('["spike-d614g"]', "not an object"),
    ('{"task": "other"}', "names task 'other'"),
])
def test_harbor_reads_every_key_before_writing_anything(tmp_path, key_text, says):
    out = tmp_path / "out"
    with pytest.raises(LauncherError, match=says) as refused:
        harbor_tasks.write(out, composefile.compose_file(str(REPO / "compose.yaml")), "i:1", "e:1",
                           root=_sources(tmp_path, key_text))
    assert "key.json" in refused.value.message
    assert not out.exists()


def test_harbor_leaves_nothing_when_writing_fails_half_way(tmp_path):
    """A failure after the task's folder is begun (task.toml cannot be rendered from a key
    whose agent timeout is no number): no `.partial` folder, and no --out folder this call
    made."""
    out = tmp_path / "made" / "out"
    (tmp_path / "made").mkdir()
    compose = composefile.compose_file(str(REPO / "compose.yaml"))
    root = _sources(tmp_path, json.dumps({"task": "spike-d614g", "agent_timeout_sec": "soon"}))
    with pytest.raises(ValueError):
        harbor_tasks.write(out, compose, "i:1", "e:1", root=root)
    assert not out.exists() and list((tmp_path / "made").iterdir()) == []
    # Into a folder that was there: the folder stays, with nothing half-written in it.
    out.mkdir()
    with pytest.raises(ValueError):
        harbor_tasks.write(out, compose, "i:1", "e:1", root=root)
    assert list(out.iterdir()) == []


def test_an_empty_manifest_is_refused_before_the_image_is_read(tmp_path):
    (tmp_path / "empty.tsv").write_text("# only a comment\n")
    for path, says in ((tmp_path / "empty.tsv", "lists no file"), (Path("/dev/null"), "a device"),
                       (tmp_path / "missing.tsv", "does not exist")):
        with pytest.raises(LauncherError, match=f"^--manifest .*{says}"):
            imagefiles.read_manifest(str(path))


class _Engine:
    """The engine's `info()` as Docker answers it: the runtimes it has registered."""

    def info(self) -> dict:
        return {"Runtimes": {"runc": {}, "runsc": {}}}


def test_a_runtime_from_the_environment_is_named_as_the_variable(monkeypatch):
    monkeypatch.setenv("BIOTOOL_RUNTIME", "nope")
    caps = stack.capabilities(_Engine())
    assert re.match(r"^BIOTOOL_RUNTIME 'nope' is not registered with this engine \(it has: runc, "
                    r"runsc\); register it in /etc/docker/daemon.json", refusal(caps, RunSpec().asks()))
    assert refusal(caps, RunSpec(runtime="other").asks()).startswith(
        "--runtime 'other' is not registered")
    assert refusal(caps, RunSpec(runtime="runsc").asks()) is None


def test_sizes_and_the_relay_from_the_environment_are_named_as_their_variables(tmp_path):
    compose = composefile.compose_file(str(REPO / "compose.yaml"))
    with pytest.raises(LauncherError, match=r"^BIOTOOL_WORK_SIZE: '1t' is not a size"):
        budget.run_memory(Variables.of(compose, environ={"BIOTOOL_WORK_SIZE": "1t"}))
    with pytest.raises(LauncherError, match=r"^--work-size: '1t' is not a size"):
        budget.run_memory(Variables.of(compose, {"BIOTOOL_WORK_SIZE": "1t"}, environ={}))
    names = overrides.relay_sources(None, None)
    with pytest.raises(LauncherError, match=r"^BIOTOOL_NCBI_RELAY 'http://x' is not https"):
        overrides.check_relay("http://x", None, names)
    with pytest.raises(LauncherError, match=r"^BIOTOOL_NCBI_RELAY needs BIOTOOL_NCBI_RELAY_TLS"):
        overrides.check_relay("https://relay.invalid:443", str(tmp_path), names)
