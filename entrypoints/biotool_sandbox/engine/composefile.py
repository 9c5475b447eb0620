"""compose.yaml: which file a run uses, its services by mode, its labels, and the one way to
drive `docker compose` (subprocess) on it.

Topology and hardening live only in compose.yaml; this module picks the file and runs compose.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .. import settings
from ..errors import EngineError, LauncherError

MODES = {"default": "sandbox", "gpu": "sandbox-gpu", "offline": "sandbox-offline"}
SANDBOX_SERVICES = tuple(MODES.values())
PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"
VOLUME_LABEL = "com.docker.compose.volume"
STATE_VOLUME = "egress-state"  # compose.yaml: the run's certificate, RIDs and audit store
COMPOSE_ENV = settings.COMPOSE_FILE.name


def compose_file(explicit: str | None = None, option: str = "--compose-file") -> Path:
    """compose.yaml: --compose-file, else BIOTOOL_COMPOSE_FILE, else the checkout's, else
    cwd's. A file named by the option or the variable is used or refused (naming it), never
    replaced by the next one; it must be a compose file with the stack's services."""
    from commandline.kinds import path_problem

    named = [(option, explicit), (COMPOSE_ENV, settings.COMPOSE_FILE.raw())]
    for source, value in named:
        if value is None or (source == COMPOSE_ENV and not value.strip()):
            continue
        why = path_problem(value, "file")
        if why:
            raise LauncherError(f"{source} {why}" if why.startswith(value) else f"{source}: {why}")
        return check_compose(Path(value).resolve(), f"{source} {value}")
    for cand in (Path(__file__).resolve().parents[3] / "compose.yaml", Path.cwd() / "compose.yaml"):
        if cand.is_file():
            return check_compose(cand.resolve(), str(cand))
    raise LauncherError(f"compose.yaml not found: pass {option} or set {COMPOSE_ENV}")


def check_compose(path: Path, where: str) -> Path:
    """path when it is a compose file with the stack's sandbox and egress services (what
    every command renders or starts), else LauncherError naming `where` it came from."""
    import yaml

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise LauncherError(f"{where}: not a readable compose file "
                            f"({' '.join(str(exc).split())[:200]})") from None
    services = doc.get("services") if isinstance(doc, dict) else None
    if not isinstance(services, dict) or not {"sandbox", "egress"} <= set(services):
        raise LauncherError(f"{where}: not the stack's compose file (it has no sandbox and "
                            f"egress services{'; it is empty' if doc is None else ''})")
    return path


def compose_cmd(run: str, files: list[Path], *args: str) -> list[str]:
    docker = shutil.which("docker")
    if not docker:
        raise EngineError("docker CLI not found on PATH")
    cmd = [docker, "compose", "-p", run]
    for f in files:
        cmd += ["-f", str(f)]
    return cmd + list(args)


def run_compose(cmd: list[str], env: dict, timeout: float,
                check: bool = True) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise EngineError(f"docker compose timed out after {timeout:.0f}s: {' '.join(cmd[1:])}") from None
    if check and proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise EngineError(f"docker compose {' '.join(cmd[cmd.index('-p') + 2:][-4:])} failed: {last}")
    return proc


def daemon_said(stderr: str) -> str:
    """The daemon's own refusal among compose's progress lines (its last 'Error ...' line)."""
    lines = [ln.strip() for ln in stderr.splitlines() if "error" in ln.lower()]
    return lines[-1] if lines else ""
