"""Fixtures shared by every unit test: a staged demo home and a biotool runner.

The tier runs in parallel (pytest-xdist, `make test-unit`): each worker is its own pytest
session, so every session fixture here and in the families' conftests is built once per
worker, in that worker's own temporary folder (`tmp_path_factory`); servers listen on port 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from biotool_testing.paths import REFS
from biotool_testing.ran import Ran


@pytest.fixture(scope="session", autouse=True)
def _private_temp_and_state(tmp_path_factory):
    """A temporary folder and a state root of this worker's own, for this process and every
    program it starts: what a program keeps there by default (the NCBI pacing schedule in the
    temp dir, the launcher's runs and memory reservations under XDG_STATE_HOME) is host-wide by
    design, and workers sharing it would wait on each other's schedule or see each other's
    runs."""
    base = tmp_path_factory.getbasetemp()
    private = {"TMPDIR": base / "tmp", "XDG_STATE_HOME": base / "state"}
    old = {k: os.environ.get(k) for k in private}
    for key, path in private.items():
        path.mkdir(exist_ok=True)
        os.environ[key] = str(path)
    tempfile.tempdir = None     # gettempdir() reads TMPDIR again
    yield
    for key, value in old.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    tempfile.tempdir = None


@pytest.fixture(scope="session")
def staged_home(tmp_path_factory) -> Path:
    """The demo manifests staged through the real staging code into a temporary home."""
    from biotool.stagebuild.build import stage

    home = tmp_path_factory.mktemp("biotool-home")
    stage(REFS, home, ["demo"])
    return home


@pytest.fixture
def biotool_env(staged_home, tmp_path, monkeypatch) -> dict:
    """Environment for a biotool process: the staged home, a private cache, no proxy."""
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("https_proxy", "http_proxy", "all_proxy")}
    env.update(BIOTOOL_HOME=str(staged_home), BIOTOOL_CACHE=str(tmp_path / "cache"))
    env.pop("BIOTOOL_CONFIDENT", None)
    env.pop("BIOTOOL_ARMS", None)
    monkeypatch.setenv("BIOTOOL_HOME", str(staged_home))
    monkeypatch.setenv("BIOTOOL_CACHE", str(tmp_path / "cache"))
    return env


@pytest.fixture
def biotool(biotool_env):
    """Run `biotool ARGS...` as the agent would: a subprocess; returns code, stdout, stderr."""

    def run(*args: str, env: dict | None = None, input: str | None = None,
            timeout: float = 300) -> Ran:
        proc = subprocess.run([sys.executable, "-m", "biotool", *args], capture_output=True,
                              text=True, env={**biotool_env, **(env or {})}, input=input,
                              timeout=timeout)
        return Ran(proc.returncode, proc.stdout, proc.stderr)

    return run


# How long a killed process may take to leave: it returns as soon as the process is gone, so
# only a kill that missed waits this out; wide enough for a host ten times slower and loaded.
GONE_S = 60.0


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.fixture
def gone_within():
    """Whether a process is gone (or a zombie) within `seconds` (at least GONE_S): SIGKILL is
    sent before the code under test returns, but on a loaded machine the process may still be
    on its way out (state R) for a moment, while one the kill missed runs on."""
    def check(pid: int, seconds: float = GONE_S) -> bool:
        end = time.monotonic() + max(seconds, GONE_S)
        while time.monotonic() < end:
            if not _alive(pid):
                return True
            time.sleep(0.02)
        return False
    return check


@pytest.fixture
def marked(monkeypatch):
    """Marks every process this test starts from now on with an environment variable of its
    own (inherited by their children, whatever they start); returns survivors(), the marked
    processes still alive once every one has had GONE_S to leave. It needs no pid a process
    must first write down, so a kill that lands early, on a slow host, is no race."""
    import uuid

    mark = f"BIOTOOL_TEST_MARK={uuid.uuid4().hex}".encode()
    monkeypatch.setenv(*mark.decode().split("=", 1))

    def marked_now() -> list[int]:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if mark in env and int(pid) != os.getpid() and _alive(int(pid)):
                found.append(int(pid))
        return found

    def survivors(seconds: float = GONE_S) -> list[int]:
        end = time.monotonic() + seconds
        while (left := marked_now()) and time.monotonic() < end:
            time.sleep(0.05)
        return left

    return survivors
