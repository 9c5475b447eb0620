"""Compose projects, one per run: bring the enforced stack up, find its containers, take it down.

Topology and hardening live only in compose.yaml; this module picks the file, the profile and
a unique project name, and drives `docker compose` (subprocess) and the docker SDK.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import time
from pathlib import Path

from auditwire import GATE_REFUSED, RUN_STATE, SCHEDULE_DIR

from . import budget, settings
from .errors import EngineError, LauncherError
from .runimages import run_images

SCHEDULE_VOLUME = "biotool-ncbi-schedule"
# Host-wide, egress-only: a small tmpfs owned by the egress image's proxy user (uid 13).
SCHEDULE_VOLUME_OPTS = {"type": "tmpfs", "device": "tmpfs", "o": "size=16m,uid=13,gid=13,mode=0700"}
RUN_PREFIX = "bts-"
MODES = {"default": "sandbox", "gpu": "sandbox-gpu", "offline": "sandbox-offline"}
SANDBOX_SERVICES = tuple(MODES.values())
EXTRA_CA_IN_EGRESS = "/etc/biotool/extra-ca.pem"
RELAY_TLS_IN_EGRESS = "/etc/biotool/relay"  # the gate's client certificate for the site relay
RELAY_TLS_FILES = ("site-ca.pem", "client.pem", "client.key")  # image/egress/upstream.py CLIENT_FILES
# Per-run limits passed to compose.yaml (see there and docs/rules.md, the container layer, for the defaults).
LIMIT_ENV = {"cpus": settings.CPUS.name, "memory": settings.MEM_LIMIT.name,
             "work_size": settings.WORK_SIZE.name}
PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"
VOLUME_LABEL = "com.docker.compose.volume"
STATE_VOLUME = "egress-state"  # compose.yaml: the run's certificate, RIDs and audit store


def client():
    """A docker SDK client, or EngineError saying the engine is not reachable."""
    import docker  # only the launcher needs the SDK

    try:
        c = docker.from_env()
        c.ping()
        return c
    except Exception as exc:  # docker raises several unrelated types here
        raise EngineError(f"docker engine not reachable ({exc}); start dockerd") from None


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
    for cand in (Path(__file__).resolve().parents[2] / "compose.yaml", Path.cwd() / "compose.yaml"):
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


def state_root() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "biotool-sandbox" / "runs"


# A Harbor trial's agent environment (docs/harbor.md): Harbor names its compose project
# after the trial, `TASK__SUFFIX__env`, lower-cased; `audit` and `down` take it as a run id.
HARBOR_PROJECT = re.compile(r"[a-z0-9][a-z0-9_-]{0,120}__env")


def check_run_name(run: str) -> str:
    if HARBOR_PROJECT.fullmatch(run):
        return run
    if not run.startswith(RUN_PREFIX) or not run[len(RUN_PREFIX):].replace("-", "").isalnum() \
            or run != run.lower():
        raise LauncherError(f"run {run!r} is not a run id (they look like {RUN_PREFIX}1a2b3c4d, "
                            "or a Harbor trial's TASK__SUFFIX__env)")
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


def _run_compose(cmd: list[str], env: dict, timeout: float,
                 check: bool = True) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise EngineError(f"docker compose timed out after {timeout:.0f}s: {' '.join(cmd[1:])}") from None
    if check and proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise EngineError(f"docker compose {' '.join(cmd[cmd.index('-p') + 2:][-4:])} failed: {last}")
    return proc


def ensure_schedule_volume(docker_client) -> str:
    """The host-wide NCBI schedule volume (external to every project, so `down` keeps it).

    Mounted only in egress containers; a tmpfs owned by the proxy user, so it is bounded
    (16 MB) and starts empty after a reboot or once the host's last egress stops; the gates
    read empty as a contact made now (image/egress/schedule.py), never as "no contact yet".
    """
    import docker.errors

    try:
        docker_client.volumes.get(SCHEDULE_VOLUME)
    except docker.errors.NotFound:
        try:
            docker_client.volumes.create(SCHEDULE_VOLUME, driver="local",
                                         driver_opts=SCHEDULE_VOLUME_OPTS,
                                         labels={"org.biotool.shared": "ncbi-schedule"})
        except Exception as exc:
            raise EngineError(f"could not create the NCBI schedule volume {SCHEDULE_VOLUME} ({exc})") from None
    return SCHEDULE_VOLUME


def _write_override(path: Path, service: str, binds: dict[Path, str] | None = None,
                    environment: dict[str, str] | None = None) -> Path:
    """The one writer of the launcher's compose overrides: read-only long-form binds and
    environment for one service, written as JSON (which YAML reads), so no host path or value
    (a colon, a quote, a newline) can break the file."""
    spec: dict = {}
    if binds:
        spec["volumes"] = [{"type": "bind", "source": str(source), "target": target,
                            "read_only": True} for source, target in binds.items()]
    if environment:
        spec["environment"] = dict(environment)
    path.write_text(json.dumps({"services": {service: spec}}, indent=2) + "\n", encoding="utf-8")
    return path


def _override(run_dir: Path, extra_ca: Path) -> Path:
    """A compose override giving egress a CA it trusts upstream (tests: a mock NCBI)."""
    ca = run_dir / "extra-ca.pem"
    shutil.copyfile(extra_ca, ca)
    ca.chmod(0o644)
    return _write_override(run_dir / "override.yaml", "egress", {ca: EXTRA_CA_IN_EGRESS},
                           {settings.EGRESS_EXTRA_CA.name: EXTRA_CA_IN_EGRESS})


RELAY_ENV, RELAY_TLS_ENV = settings.NCBI_RELAY.name, settings.NCBI_RELAY_TLS.name


def check_extra_ca(path: str) -> None:
    """--extra-ca is a readable regular file holding a PEM certificate (an empty or foreign
    file would only fail in the egress, after the run's volumes and networks exist)."""
    from commandline.kinds import path_problem

    why = path_problem(path, "file")
    if why:
        raise LauncherError(f"--extra-ca {why}")
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 20)
    except OSError as exc:
        raise LauncherError(f"--extra-ca {path}: cannot read it ({exc.strerror})") from None
    if b"-----BEGIN CERTIFICATE-----" not in head:
        raise LauncherError(f"--extra-ca {path}: no PEM certificate in it")


def relay_settings(relay: str | None, relay_tls: str | None) -> tuple[str | None, str | None]:
    """The site relay to use: as given, else BIOTOOL_NCBI_RELAY(_TLS), so one setting on a host
    covers every way a run starts (the CLI, Inspect's provider, the demo)."""
    return relay or settings.NCBI_RELAY.raw(), relay_tls or settings.NCBI_RELAY_TLS.raw()


def relay_sources(relay: str | None, relay_tls: str | None) -> tuple[str, str]:
    """What the refusals name for the relay's URL and certificates: the options when given,
    else the variables they came from."""
    return ("--relay" if relay else RELAY_ENV, "--relay-tls" if relay_tls else RELAY_TLS_ENV)


def check_relay(url: str, tls_dir: str | None,
                names: tuple[str, str] = ("--relay", "--relay-tls")) -> None:
    """--relay is https://HOST[:PORT] and --relay-tls holds the gate's certificates (checked
    before anything of the run exists); `names`: the option or variable each came from."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port out of range raises ValueError here
        ok = parts.scheme == "https" and bool(parts.hostname) and parts.path in ("", "/") \
            and not parts.query and not parts.username
    except ValueError:
        ok = False
    if not ok:
        raise LauncherError(f"{names[0]} {url!r} is not https://HOST[:PORT]")
    missing = [f for f in RELAY_TLS_FILES if not tls_dir or not (Path(tls_dir) / f).is_file()]
    if missing:
        held = f"{names[1]} {tls_dir}" if tls_dir else f"--relay-tls DIR (or {RELAY_TLS_ENV})"
        raise LauncherError(f"{names[0]} needs {held} holding {', '.join(RELAY_TLS_FILES)}"
                            f" (missing: {', '.join(missing)})")


def _relay_override(run_dir: Path, url: str, tls_dir: str | None,
                    names: tuple[str, str] = ("--relay", "--relay-tls")) -> Path:
    """A compose override sending the run's NCBI traffic through the site's relay: the URL and
    a copy of the gate's client certificate, readable by the egress's proxy user only through
    the run's own 0700 directory."""
    check_relay(url, tls_dir, names)
    holder = run_dir / "relay"
    holder.mkdir(mode=0o700, exist_ok=True)
    tls = holder / "tls"
    tls.mkdir(mode=0o755, exist_ok=True)
    for name in RELAY_TLS_FILES:
        shutil.copyfile(Path(tls_dir) / name, tls / name)
        (tls / name).chmod(0o644)  # the egress runs as uid 13; the 0700 holder keeps others out
    return _write_override(run_dir / "relay.yaml", "egress", {tls: RELAY_TLS_IN_EGRESS},
                           {RELAY_ENV: url, RELAY_TLS_ENV: RELAY_TLS_IN_EGRESS})


SITE_IN_SANDBOX = "/opt/biotool-site"  # the image's BIOTOOL_SITE_DIR


def check_site(site: str) -> Path:
    """A site directory staged by `python -m biotool.staging --dest DIR` (has staged.json)."""
    path = Path(site).resolve()
    if not (path / "staged.json").is_file():
        raise LauncherError(f"--site {site}: no staged.json there; stage it first with "
                            f"`python -m biotool.staging --dest {site} --sets production`")
    return path


def _site_override(run_dir: Path, service: str, site: Path) -> Path:
    """A compose override mounting the site overlay read-only where the image looks for it."""
    return _write_override(run_dir / "site.yaml", service, {site: SITE_IN_SANDBOX})


def check_limits(limits: dict) -> dict:
    """{env var: value} for the given limits, each checked (LauncherError names the bad one)."""
    from commandline.kinds import Size

    out = {}
    for name, value in (limits or {}).items():
        if value is None:
            continue
        if name not in LIMIT_ENV:
            raise LauncherError(f"unknown limit {name!r}")
        value = str(value).strip()
        option = f"--{name.replace('_', '-')}"
        if name == "cpus":
            try:
                ok = 0 < float(value) <= 1024
            except ValueError:
                ok = False
            if not ok:
                raise LauncherError(f"{option} {value!r} is not a valid limit (a positive "
                                    "number of CPUs)")
        else:
            try:
                value = Size()(value)  # the one size rule: the option's kind on the CLI
            except ValueError as exc:
                raise LauncherError(f"{option} {value!r} is not a valid limit: {exc}") from None
        out[LIMIT_ENV[name]] = value
    return out


ENGINE_MIN_CPUS = 0.01  # the daemon refuses a CPU limit below this (NanoCPUs < 1e7)


def limit_source(var: str, given: dict) -> str:
    """Who set the compose variable var: the option, the caller's environment, or compose.yaml."""
    option = {v: f"--{k.replace('_', '-')}" for k, v in LIMIT_ENV.items()}.get(var)
    if var in given and option:
        return option
    return var if os.environ.get(var) else f"{var} (the compose file's value)"


def check_host_limits(env: dict, defaults: dict, given: dict, ncpu: int, memtotal: int) -> None:
    """Refuse before anything is created what the engine would refuse when it creates the
    containers (a CPU limit outside [0.01, the host's CPUs]) or could never honour (a memory
    limit over the host's memory): the engine's own refusal comes only after compose has
    made the run's volumes and networks, and compose does not always report it."""
    cpus_var, mem_var = LIMIT_ENV["cpus"], LIMIT_ENV["memory"]
    raw = env.get(cpus_var) or defaults.get(cpus_var)
    if raw and ncpu:
        try:
            cpus = float(raw)
        except ValueError:
            raise LauncherError(f"{limit_source(cpus_var, given)} {raw!r} is not a number of CPUs") from None
        if not ENGINE_MIN_CPUS <= cpus <= ncpu:
            raise LauncherError(f"{limit_source(cpus_var, given)} {raw}: this engine allows "
                                f"{ENGINE_MIN_CPUS:g} to {ncpu} CPUs (the host has {ncpu})")
    raw = env.get(mem_var) or defaults.get(mem_var)
    if raw and memtotal and budget.to_bytes(raw) > memtotal:
        raise LauncherError(f"{limit_source(mem_var, given)} {raw} is more than this host's "
                            f"{budget.shown(memtotal)} of memory")


def requested_images(mode: str, env: dict, defaults: dict, image: str | None,
               egress_image: str | None) -> dict[str, str]:
    """{the option or variable that chose it: image} for every image the run's containers use."""
    var = (settings.CUDA_IMAGE if mode == "gpu" else settings.IMAGE).name
    out = {("--image" if image else var): env.get(var) or defaults.get(var, "")}
    if mode != "offline":
        evar = settings.EGRESS_IMAGE.name
        out["--egress-image" if egress_image else evar] = env.get(evar) or defaults.get(evar, "")
    return out


def check_images(dc, images: dict[str, str]) -> None:
    """Each image is on this engine: `up` never pulls or builds, and compose does not always
    say that it created no container for want of one."""
    import docker.errors

    for source, name in images.items():
        try:
            dc.images.get(name)
        except docker.errors.ImageNotFound:
            raise LauncherError(f"{source} {name}: no such image on this engine (up never pulls "
                                f"or builds: `make image`, or docker pull/load it first)") from None
        except docker.errors.APIError as exc:
            raise LauncherError(f"{source} {name!r} is not an image name ({exc.explanation or exc})") from None


# What the daemon's refusal to create or start a container is about, so its line names the
# option it came from (Docker 20.10's wording; anything else stays the engine's failure).
REFUSAL_CULPRITS = (("cpu", "cpus"), ("nanocpus", "cpus"), ("memory", "memory"))


def refusal_error(said: str, given: dict, images: dict[str, str]) -> LauncherError:
    """The daemon's one-line refusal, naming the option it came from: exit 2 when that is an
    option (or variable) the caller set, else the engine's failure (exit 4)."""
    line = " ".join(said.split())[:400] or "no message"
    low = line.lower()
    for source, name in images.items():
        if name and name.lower() in low and any(w in low for w in ("no such image", "not found",
                                                                     "pull access denied")):
            return LauncherError(f"{source} {name}: the engine refused it: {line}")
    for word, limit in REFUSAL_CULPRITS:
        if word in low:
            var = LIMIT_ENV[limit]
            return LauncherError(f"{limit_source(var, given)}: the engine refused it: {line}")
    return EngineError(f"the engine refused the run: {line}")


def _daemon_said(stderr: str) -> str:
    """The daemon's own refusal among compose's progress lines (its last 'Error ...' line)."""
    lines = [ln.strip() for ln in stderr.splitlines() if "error" in ln.lower()]
    return lines[-1] if lines else ""


def check_started(run: str, dc, services: tuple[str, ...], compose_stderr: str,
                  given: dict, images: dict[str, str]) -> None:
    """Every container the run needs exists and runs: compose v2 on Docker 20.10 exits 0 when
    the daemon refuses to create a container, or leaves one created and never started."""
    by_service = {c.labels.get(SERVICE_LABEL): c for c in containers(run, dc)}
    for service in services:
        c = by_service.get(service)
        if c is None:
            said = _daemon_said(compose_stderr) or f"compose made no {service} container"
            raise refusal_error(said, given, images)
        c.reload()
        if c.status in ("running", "restarting"):
            continue
        state = c.attrs.get("State") or {}
        if state.get("Error") or c.status == "created":  # never started: the daemon says why
            raise refusal_error(state.get("Error") or _daemon_said(compose_stderr)
                                or f"its {service} container was created and never started",
                                given, images)
        tail = c.logs(tail=3).decode("utf-8", "replace")
        said = " | ".join(line.strip() for line in tail.splitlines() if line.strip())
        raise EngineError(f"the {service} container of run {run} {c.status} (exit "
                          f"{state.get('ExitCode')}) as it started: {said[:300] or 'no output'}")


def check_runtime(dc, name: str | None) -> str | None:
    """The sandbox's OCI runtime (--runtime, else BIOTOOL_RUNTIME; None: the engine's default),
    refused unless this engine has it registered (daemon.json "runtimes")."""
    source = "--runtime" if (name or "").strip() else settings.RUNTIME.name
    name = (name or settings.RUNTIME.raw() or "").strip() or None
    if name is None:
        return None
    try:
        known = sorted((dc.info().get("Runtimes") or {}).keys())
    except Exception as exc:  # docker.errors.APIError, or the engine gone
        raise EngineError(f"cannot read the engine's runtimes: {exc}") from None
    if name not in known:
        raise LauncherError(f"{source} {name[:64]!r} is not registered with this engine "
                            f"(it has: {', '.join(known) or 'none'}); register it in "
                            f"/etc/docker/daemon.json (docs/rules.md, the runtime layer)")
    return name


def check_engine(dc) -> None:
    """Refuse an engine that would start the stack without part of its shape: Podman, asked
    what it gives (biotool_sandbox.podman); Docker passes without a question."""
    from . import podman

    found = podman.version(dc)
    gaps = podman.missing(dc) if found else []
    if gaps:
        raise LauncherError(f"this engine is Podman {found}, which cannot carry the enforced "
                            f"stack: no {'; no '.join(gaps)}; run the offline forms with "
                            f"`podman run` or use Docker (docs/harnesses.md, Podman)")


def up(mode: str = "default", *, image: str | None = None, egress_image: str | None = None,
       extra_ca: str | None = None, compose: str | None = None, timeout: float = 180,
       site: str | None = None, limits: dict | None = None, relay: str | None = None,
       relay_tls: str | None = None, runtime: str | None = None, blast: bool = False) -> dict:
    """Start a fresh compose project (a new run id) and wait until its sandbox is running.

    limits: {"cpus", "memory", "work_size"} (None: compose.yaml's defaults).
    relay: https://HOST:PORT of the site's NCBI relay (relay_tls: the gate's certificates).
    runtime: the sandbox's OCI runtime (runsc: gVisor); egress keeps the engine's default.
    blast: the run declares NCBI BLAST; its gate refuses to start past what the host's
    schedule sustains (docs/rules.md), a LauncherError naming the count."""
    if mode not in MODES:
        raise LauncherError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    if extra_ca:
        check_extra_ca(extra_ca)
    site_dir = check_site(site) if site else None
    limit_env = check_limits(limits or {})
    base = compose_file(compose)
    env = {**os.environ, **limit_env}
    if image:  # gpu mode runs the CUDA image's own variable (compose.yaml sandbox-gpu)
        env[(settings.CUDA_IMAGE if mode == "gpu" else settings.IMAGE).name] = image
    if egress_image:
        env[settings.EGRESS_IMAGE.name] = egress_image
    env[settings.EGRESS_BLAST.name] = "1" if blast and mode != "offline" else ""
    relay_names = relay_sources(relay, relay_tls)
    relay, relay_tls = relay_settings(relay, relay_tls)
    if relay and mode != "offline":
        check_relay(relay, relay_tls, relay_names)
    sizes = budget.run_memory(base, env, limit_env)  # tmpfs leave room for processes, or refused
    defaults = budget.compose_defaults(base)
    dc = client()
    check_engine(dc)
    runtime = check_runtime(dc, runtime)
    if runtime:
        env[settings.RUNTIME.name] = runtime
    info = dc.info()
    check_host_limits(env, defaults, limit_env, int(info.get("NCPU") or 0),
                      int(info.get("MemTotal") or 0))
    images = requested_images(mode, env, defaults, image, egress_image)
    check_images(dc, images)
    ensure_schedule_volume(dc)
    service = MODES[mode]
    run = new_run_id()
    run_dir = state_root() / run
    need = sizes["sandbox"] + (0 if mode == "offline" else sizes["egress"])
    memory = budget.reserve(dc, run_dir, need, env, PROJECT_LABEL)
    files = [base]
    args = ["up", "-d", "--no-build", "--pull", "never", service]
    if mode != "default":
        args = ["--profile", mode, *args]
    deadline = time.monotonic() + timeout
    # From the reservation on, a failure of any kind leaves nothing: no state folder, no
    # reservation, no volume, network or container of the run.
    try:
        if extra_ca and mode != "offline":
            files.append(_override(run_dir, Path(extra_ca)))
        if site_dir:
            files.append(_site_override(run_dir, service, site_dir))
        if relay and mode != "offline":
            files.append(_relay_override(run_dir, relay, relay_tls, relay_names))
        proc = _run_compose(compose_cmd(run, files, *args), env, timeout, check=False)
        services = (service,) if mode == "offline" else ("egress", service)
        check_started(run, dc, services, proc.stderr, limit_env, images)
        if proc.returncode != 0:  # every container runs, yet compose failed: say why
            raise EngineError(f"docker compose up failed: {_daemon_said(proc.stderr) or 'no message'}")
        if mode != "offline":
            wait_ready(run, dc, deadline)
    except BaseException:
        down(run, quiet=True)
        raise
    return {"run": run, "project": run, "mode": mode, "service": service,
            "containers": {c.labels[SERVICE_LABEL]: c.name for c in containers(run, dc)},
            "images": run_images(by_service(run, dc), dc),
            "networks": sorted(n.name for n in dc.networks.list(filters={"label": f"{PROJECT_LABEL}={run}"})),
            "compose_files": [str(f) for f in files], "limits": limit_env, "memory": memory,
            "runtime": runtime or "default"}


def _gate_refusal(log: bytes) -> str:
    """The reason of the gate's refusal to start, when its log holds one."""
    for line in log.decode("utf-8", "replace").splitlines():
        if line.startswith(GATE_REFUSED):
            return line[len(GATE_REFUSED):].strip()
    return ""


def wait_ready(run: str, dc, deadline: float) -> None:
    """Until the run's egress logs `egress: ready` (its relay to the gate answers and the
    sandbox's CA is written), polling its log rather than a 1 s health check."""
    eg = container_of(run, "egress", dc)
    if eg is None:
        raise EngineError(f"run {run} has no egress container")
    while True:
        if b"egress: ready" in dc.api.logs(eg.id, stdout=False, stderr=True):
            return
        refused = _gate_refusal(dc.api.logs(eg.id, stdout=False, stderr=True, tail=20))
        if refused:  # a declared BLAST run past what the host sustains: it restarts in vain
            raise LauncherError(f"run {run} refused: {refused}")
        eg.reload()
        if eg.status not in ("created", "running", "restarting"):
            tail = dc.api.logs(eg.id, stdout=False, stderr=True, tail=3).decode("utf-8", "replace")
            said = " | ".join(line.strip() for line in tail.splitlines() if line.strip())
            raise EngineError(f"the egress of run {run} stopped before it was ready "
                              f"({eg.status}): {said[:300] or 'no output'}")
        if time.monotonic() > deadline:
            raise EngineError(f"the egress of run {run} was not ready in time")
        time.sleep(0.05)


def containers(run: str, docker_client=None) -> list:
    dc = docker_client or client()
    # ignore_removed: a container removed between the engine's list and its inspect (another
    # run's down, on a busy engine) is no longer there to report, not an internal error.
    return dc.containers.list(all=True, filters={"label": f"{PROJECT_LABEL}={check_run_name(run)}"},
                              ignore_removed=True)


def by_service(run: str, docker_client=None) -> dict:
    """{service: container} of a run, in the containers' name order."""
    dc = docker_client or client()
    return {c.labels.get(SERVICE_LABEL, c.name): c
            for c in sorted(containers(run, dc), key=lambda c: c.name)}


def unknown_run(run: str, why: str = "no such run on this engine (never started, or down)"
                ) -> LauncherError:
    """The one refusal of every launcher command given a run id that names no run (exit 2)."""
    return LauncherError(f"unknown run {run}: {why}")


def state_volume(run: str, docker_client=None) -> str | None:
    """The name of the run's egress state volume (its certificate, RIDs and audit store),
    or None when it is gone."""
    dc = docker_client or client()
    found = dc.volumes.list(filters={"label": [f"{PROJECT_LABEL}={check_run_name(run)}",
                                               f"{VOLUME_LABEL}={STATE_VOLUME}"]})
    return found[0].name if found else None


def egress_image() -> str:
    """The egress image a run is started on by default (compose.yaml's BIOTOOL_EGRESS_IMAGE)."""
    return settings.EGRESS_IMAGE.get()


def container_of(run: str, service: str, docker_client=None):
    """The run's container for service ('sandbox' means whichever sandbox variant runs)."""
    found = containers(run, docker_client)
    if not found:
        raise unknown_run(run)
    wanted = SANDBOX_SERVICES if service == "sandbox" else (service,)
    for c in found:
        if c.labels.get(SERVICE_LABEL) in wanted:
            return c
    return None


def runs(docker_client=None) -> list[str]:
    dc = docker_client or client()
    names = {c.labels.get(PROJECT_LABEL, "") for c in dc.containers.list(
        all=True, filters={"label": PROJECT_LABEL}, ignore_removed=True)}
    return sorted(n for n in names if n.startswith(RUN_PREFIX))


def _run_volumes(dc, label: dict, keep_audit: bool = False) -> list:
    """The run's volumes but the host-wide schedule (and its audit store, when kept)."""
    return [v for v in dc.volumes.list(filters=label) if v.name != SCHEDULE_VOLUME and not (
        keep_audit and (v.attrs.get("Labels") or {}).get(VOLUME_LABEL) == STATE_VOLUME)]


def _free_blast_place(container) -> None:
    """A running egress of a run that declared BLAST frees its place in the host's schedule
    before it is killed (gatekeeper.py --release); one that cannot keeps it until its lease
    runs out (60 s)."""
    import docker.errors

    attrs = container.attrs
    declared = f"{settings.EGRESS_BLAST.name}=1" in ((attrs.get("Config") or {}).get("Env") or [])
    if not declared or container.labels.get(SERVICE_LABEL) != "egress" \
            or (attrs.get("State") or {}).get("Status") != "running":
        return
    try:
        container.exec_run(["python3", "/usr/local/lib/egress/gatekeeper.py", "--release",
                            "--state-dir", SCHEDULE_DIR,
                            "--run-state", RUN_STATE], user="proxy")
    except docker.errors.APIError:
        pass  # gone or stopping meanwhile: its lease frees the place


def down(run: str, *, quiet: bool = False, keep_audit: bool = False) -> dict:
    """Remove the run's containers, networks and volumes (never the host-wide schedule volume).

    By label through the engine, containers killed and removed at once and in parallel: a run
    that is over has nothing to stop gracefully, and compose's stop would wait on Squid.
    keep_audit: leave the egress state volume (the audit store) for `audit RUN` to read
    later; a later `down RUN` removes it."""
    from concurrent.futures import ThreadPoolExecutor
    from functools import partial

    import docker.errors

    check_run_name(run)
    dc = client()
    run_dir = state_root() / run
    label = {"label": f"{PROJECT_LABEL}={run}"}
    found = dc.containers.list(all=True, filters=label, ignore_removed=True)
    # A run is whatever its id left in any state: a failed start may have left only a volume,
    # a network, or a state folder holding its memory reservation.
    existed = bool(found or dc.networks.list(filters=label) or _run_volumes(dc, label)
                   or run_dir.exists())
    if not existed and not quiet:
        raise unknown_run(run)

    def quietly(remove) -> None:
        try:
            remove()
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if not quiet:
                raise EngineError(f"could not remove part of run {run}: {exc}") from None

    for c in found:
        _free_blast_place(c)
    with ThreadPoolExecutor(8) as pool:  # each step done before the next: networks need no endpoints
        list(pool.map(quietly, [partial(c.remove, force=True, v=True) for c in found]))
        list(pool.map(quietly, [n.remove for n in dc.networks.list(filters=label)]))
        list(pool.map(quietly, [partial(v.remove, force=True)
                                for v in _run_volumes(dc, label, keep_audit)]))
    shutil.rmtree(run_dir, ignore_errors=True)
    left = {"containers": len(dc.containers.list(all=True, filters=label, ignore_removed=True)),
            "networks": len(dc.networks.list(filters=label)),
            "volumes": len(_run_volumes(dc, label, keep_audit))}
    kept = state_volume(run, dc) if keep_audit else None
    return {"run": run, "removed": existed, "left": left,
            **({"kept_audit_volume": kept} if keep_audit else {})}
