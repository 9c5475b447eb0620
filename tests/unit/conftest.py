"""Fixtures shared by every unit test: a staged demo home and a biotool runner."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from biotool_testing.paths import REFS
from biotool_testing.ran import Ran


@pytest.fixture(scope="session")
def staged_home(tmp_path_factory) -> Path:
    """The demo manifests staged through the real staging code into a temporary home."""
    from biotool import staging

    home = tmp_path_factory.mktemp("biotool-home")
    staging.stage(REFS, home, ["demo"])
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


@pytest.fixture
def gone_within():
    """Whether a process is gone (or a zombie) within `seconds`: SIGKILL is sent before the
    code under test returns, but on a loaded machine the process may still be on its way out
    (state R) for a moment, while one the kill missed runs on."""
    def check(pid: int, seconds: float) -> bool:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (FileNotFoundError, ProcessLookupError):
                return True
            if state in ("Z", "X"):
                return True
            time.sleep(0.02)
        return False
    return check
