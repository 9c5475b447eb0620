"""Compose projects, one per run: bring the enforced stack up, find its containers, take it down.

Topology and hardening live only in compose.yaml; this module picks the file, the profile and
a unique project name, and drives `docker compose` (subprocess) and the docker SDK.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path

from .errors import EngineError, LauncherError

PACING_VOLUME = "biotool-ncbi-pacing"
RUN_PREFIX = "bts-"
MODES = {"default": "sandbox", "gpu": "sandbox-gpu", "offline": "sandbox-offline"}
SANDBOX_SERVICES = tuple(MODES.values())
EXTRA_CA_IN_SANDBOX = "/etc/biotool/extra-ca.pem"
PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"


def client():
    """A docker SDK client, or EngineError saying the engine is not reachable."""
    import docker  # only the launcher needs the SDK

    try:
        c = docker.from_env()
        c.ping()
        return c
    except Exception as exc:  # docker raises several unrelated types here
        raise EngineError(f"docker engine not reachable ({exc}); start dockerd") from None


def compose_file(explicit: str | None = None) -> Path:
    """compose.yaml: --compose-file, then BIOTOOL_COMPOSE_FILE, then the checkout, then cwd."""
    candidates = [explicit, os.environ.get("BIOTOOL_COMPOSE_FILE"),
                  Path(__file__).resolve().parents[2] / "compose.yaml", Path.cwd() / "compose.yaml"]
    for cand in candidates:
        if cand and Path(cand).is_file():
            return Path(cand).resolve()
    if explicit:
        raise LauncherError(f"compose file {explicit} does not exist")
    raise LauncherError("compose.yaml not found: pass --compose-file or set BIOTOOL_COMPOSE_FILE")


def state_root() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "biotool-sandbox" / "runs"


def check_run_name(run: str) -> str:
    if not run.startswith(RUN_PREFIX) or not run[len(RUN_PREFIX):].replace("-", "").isalnum() \
            or run != run.lower():
        raise LauncherError(f"run {run!r} is not a run id (they look like {RUN_PREFIX}1a2b3c4d)")
    return run


def new_run_id() -> str:
    return RUN_PREFIX + secrets.token_hex(4)


def compose_cmd(run: str, files: list[Path], *args: str) -> list[str]:
    docker = shutil.which("docker")
    if not docker:
        raise EngineError("docker CLI not found on PATH")
    cmd = [docker, "compose", "-p", run]
    for f in files:
        cmd += ["-f", str(f)]
    return cmd + list(args)


def _run_compose(cmd: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise EngineError(f"docker compose timed out after {timeout:.0f}s: {' '.join(cmd[1:])}") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise EngineError(f"docker compose {' '.join(cmd[cmd.index('-p') + 2:][-4:])} failed: {last}")
    return proc


def ensure_pacing_volume(docker_client, image: str) -> str:
    """The host-wide NCBI pacing volume (external to every project, so `down` keeps it).

    Made world-writable (sticky) once, at creation, so the agent of any image or UID can
    take the shared lock there whatever the image has at that path.
    """
    import docker.errors

    try:
        docker_client.volumes.get(PACING_VOLUME)
    except docker.errors.NotFound:
        docker_client.volumes.create(PACING_VOLUME, labels={"org.biotool.shared": "ncbi-pacing"})
        try:
            docker_client.containers.run(image, ["chmod", "1777", "/pacing"], user="0", remove=True,
                                         entrypoint=[], network_mode="none",
                                         volumes={PACING_VOLUME: {"bind": "/pacing", "mode": "rw"}})
        except Exception as exc:
            docker_client.volumes.get(PACING_VOLUME).remove(force=True)
            raise EngineError(f"could not prepare the pacing volume {PACING_VOLUME} with {image} ({exc})") from None
    return PACING_VOLUME


def _override(run_dir: Path, service: str, extra_ca: Path) -> Path:
    """A compose override mounting a test CA into the sandbox and trusting it (tests only)."""
    ca = run_dir / "extra-ca.pem"
    shutil.copyfile(extra_ca, ca)
    ca.chmod(0o644)
    text = (f"services:\n  {service}:\n    volumes:\n"
            f"      - {ca}:{EXTRA_CA_IN_SANDBOX}:ro\n"
            f"    environment:\n"
            f"      SSL_CERT_FILE: {EXTRA_CA_IN_SANDBOX}\n"
            f"      CURL_CA_BUNDLE: {EXTRA_CA_IN_SANDBOX}\n"
            f"      REQUESTS_CA_BUNDLE: {EXTRA_CA_IN_SANDBOX}\n")
    path = run_dir / "override.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def up(mode: str = "default", *, image: str | None = None, egress_image: str | None = None,
       extra_ca: str | None = None, compose: str | None = None, timeout: float = 180) -> dict:
    """Start a fresh compose project (a new run id) and wait until its sandbox is running."""
    if mode not in MODES:
        raise LauncherError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    if extra_ca and not Path(extra_ca).is_file():
        raise LauncherError(f"--extra-ca {extra_ca} does not exist")
    base = compose_file(compose)
    dc = client()
    ensure_pacing_volume(dc, image or os.environ.get("BIOTOOL_IMAGE", "biotool-sandbox:latest"))
    service = MODES[mode]
    run = new_run_id()
    run_dir = state_root() / run
    run_dir.mkdir(parents=True, exist_ok=True)
    files = [base]
    if extra_ca:
        files.append(_override(run_dir, service, Path(extra_ca)))
    env = dict(os.environ)
    if image:  # gpu mode runs the CUDA image's own variable (compose.yaml sandbox-gpu)
        env["BIOTOOL_CUDA_IMAGE" if mode == "gpu" else "BIOTOOL_IMAGE"] = image
    if egress_image:
        env["BIOTOOL_EGRESS_IMAGE"] = egress_image
    (run_dir / "files").write_text("\n".join(str(f) for f in files), encoding="utf-8")
    args = ["up", "-d", "--wait", "--no-build", "--pull", "never", service]
    if mode != "default":
        args = ["--profile", mode, *args]
    try:
        _run_compose(compose_cmd(run, files, *args), env, timeout)
    except LauncherError:
        down(run, quiet=True)
        raise
    return {"run": run, "project": run, "mode": mode, "service": service,
            "containers": {c.labels[SERVICE_LABEL]: c.name for c in containers(run, dc)},
            "networks": sorted(n.name for n in dc.networks.list(filters={"label": f"{PROJECT_LABEL}={run}"})),
            "compose_files": [str(f) for f in files]}


def containers(run: str, docker_client=None) -> list:
    dc = docker_client or client()
    return dc.containers.list(all=True, filters={"label": f"{PROJECT_LABEL}={check_run_name(run)}"})


def container_of(run: str, service: str, docker_client=None):
    """The run's container for service ('sandbox' means whichever sandbox variant runs)."""
    found = containers(run, docker_client)
    if not found:
        raise LauncherError(f"no run {run} on this engine (it was never started or is down)")
    wanted = SANDBOX_SERVICES if service == "sandbox" else (service,)
    for c in found:
        if c.labels.get(SERVICE_LABEL) in wanted:
            return c
    return None


def runs(docker_client=None) -> list[str]:
    dc = docker_client or client()
    names = {c.labels.get(PROJECT_LABEL, "") for c in dc.containers.list(all=True, filters={"label": PROJECT_LABEL})}
    return sorted(n for n in names if n.startswith(RUN_PREFIX))


def down(run: str, *, quiet: bool = False, timeout: float = 120) -> dict:
    """Remove the run's containers, networks and volumes (never the shared pacing volume)."""
    check_run_name(run)
    dc = client()
    run_dir = state_root() / run
    files_list = run_dir / "files"
    files = ([Path(p) for p in files_list.read_text().split("\n") if Path(p).is_file()]
             if files_list.is_file() else [])
    files = files or [compose_file(None)]
    existed = bool(containers(run, dc))
    label = {"label": f"{PROJECT_LABEL}={run}"}
    if not existed and not dc.networks.list(filters=label) and not quiet:
        raise LauncherError(f"no run {run} on this engine (it was never started or is down)")
    try:
        _run_compose(compose_cmd(run, files, "--profile", "*", "down", "--volumes",
                                 "--remove-orphans", "--timeout", "2"), dict(os.environ), timeout)
    except EngineError:
        if not quiet:
            raise
    # Whatever compose missed (a crashed up, a profile it did not know) goes by label.
    for c in dc.containers.list(all=True, filters=label):
        c.remove(force=True, v=True)
    for n in dc.networks.list(filters=label):
        n.remove()
    for v in dc.volumes.list(filters=label):
        if v.name != PACING_VOLUME:
            v.remove(force=True)
    shutil.rmtree(run_dir, ignore_errors=True)
    left = {"containers": len(dc.containers.list(all=True, filters=label)),
            "networks": len(dc.networks.list(filters=label)),
            "volumes": len([v for v in dc.volumes.list(filters=label) if v.name != PACING_VOLUME])}
    return {"run": run, "removed": existed, "left": left}
