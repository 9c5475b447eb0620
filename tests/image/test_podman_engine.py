"""`biotool-sandbox up` pointed at Podman's Docker API (DOCKER_HOST at `podman system service`,
rootless, as BIOTOOL_PODMAN_USER): it asks the engine what it gives and refuses in one line
when the enforced stack would start without part of its shape, leaving nothing behind. Needs
no image in Podman's store, so it runs in the image tier; under CI a missing podman fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from biotool_testing import polling

USER = os.environ.get("BIOTOOL_PODMAN_USER", "biotool-podman")


def _as_user(cmd: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["su", "-", USER, "-c", cmd], capture_output=True, text=True,
                          timeout=120, **kw)


@pytest.fixture(scope="module")
def podman_api():
    """Podman's Docker-compatible API socket, served by the rootless user for this module (in
    a folder of its own under /tmp: pytest's folders are root's, 0700)."""
    if shutil.which("podman") is None or subprocess.run(["id", USER],
                                                        capture_output=True).returncode:
        why = f"podman or the user {USER} is missing: run image/runtime/podman-user.sh"
        (pytest.fail if os.environ.get("CI") else pytest.skip)(why)
    folder = Path(tempfile.mkdtemp(prefix="biotool-podman-api-"))
    shutil.chown(folder, USER)
    sock = folder / "podman.sock"
    uid = subprocess.run(["id", "-u", USER], capture_output=True, text=True).stdout.strip()
    service = subprocess.Popen(
        ["su", "-", USER, "-c", f"XDG_RUNTIME_DIR=/run/user/{uid} exec podman system service "
                                f"--time=0 unix://{sock}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    def served() -> bool:
        assert service.poll() is None, service.stderr.read()
        return sock.exists()
    polling.until("podman's API socket", served, every_s=0.2)
    yield f"unix://{sock}"
    os.killpg(service.pid, 15)
    service.wait(timeout=30)
    shutil.rmtree(folder, ignore_errors=True)


def _podman_volumes() -> list[str]:
    listed = _as_user("podman volume ls --format '{{.Name}}'")
    assert listed.returncode == 0, listed.stderr
    return listed.stdout.split()


def test_up_on_podman_refuses_naming_what_the_stack_would_lose(podman_api, tmp_path):
    before = _podman_volumes()
    env = {**os.environ, "DOCKER_HOST": podman_api, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.run([sys.executable, "-m", "biotool_sandbox", "up"], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 2 and proc.stdout == "", proc
    [line] = proc.stderr.splitlines()
    assert line.startswith("biotool-sandbox: error: this engine is Podman "), line
    # Podman 4.3 refuses a tmpfs volume's size; rootless on cgroup v1 it drops every limit.
    assert "no size-capped tmpfs volumes" in line, line
    info = _as_user("podman info --format '{{.Host.CgroupsVersion}} {{.Host.Security.Rootless}}'")
    if info.stdout.split() == ["v1", "true"]:
        assert "no CPU, memory and pids limits" in line, line
    assert _podman_volumes() == before  # the probe volume is gone, and nothing of a run exists
    assert not (tmp_path / "state").exists() or not any((tmp_path / "state").iterdir())
