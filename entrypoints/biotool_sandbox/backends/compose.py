"""The compose stack backend: one compose project per run of compose.yaml's enforced stack,
brought up from a RunSpec once the engine's Capabilities give what the run asks for, and taken
down by label."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from auditwire import GATE_REFUSED

from .. import settings
from ..engine import budget, images, overrides, podman, runs
from ..engine.client import client
from ..engine.composefile import (MODES, PROJECT_LABEL, SERVICE_LABEL, STATE_VOLUME,
                                  VOLUME_LABEL, compose_cmd, compose_file, daemon_said,
                                  run_compose)
from ..engine.limits import check_host_limits, refusal_error
from ..engine.schedule import SCHEDULE_VOLUME, ensure_schedule_volume, free_blast_place
from ..engine.variables import Variables
from ..errors import EngineError, LauncherError
from .capabilities import Capabilities, refusal
from .spec import RunSpec

# The runtime's remedy, the engine's own register (docs/rules.md, the runtime layer).
REGISTER_RUNTIME = "register it in /etc/docker/daemon.json (docs/rules.md, the runtime layer)"


def capabilities(dc) -> Capabilities:
    """What this engine gives the stack, found by asking it: Docker everything; Podman what it
    does not drop (biotool_sandbox.engine.podman); the runtimes its daemon has registered."""
    try:
        known = tuple(sorted((dc.info().get("Runtimes") or {}).keys()))
    except Exception as exc:  # docker.errors.APIError, or the engine gone
        raise EngineError(f"cannot read the engine's runtimes: {exc}") from None
    found = podman.version(dc)
    gaps = podman.missing(dc) if found else []
    why = [("runtimes", REGISTER_RUNTIME)]
    if gaps:
        why.append(("limits", f"this engine is Podman {found}, which cannot carry the enforced "
                              f"stack: no {'; no '.join(gaps)}; run the offline forms with "
                              f"`podman run` or use Docker (docs/harnesses.md, Podman)"))
    return Capabilities(backend=f"Podman {found}" if found else "Docker", limits=not gaps,
                        network_rule=True, runtimes=known, user_switching=True,
                        why_not=tuple(why))


def up(spec: RunSpec) -> dict:
    """Start a fresh compose project (a new run id) and wait until its sandbox is running; a
    refusal (LauncherError) or an engine failure (EngineError) leaves nothing of it behind."""
    mode, offline = spec.mode, spec.offline
    if mode not in MODES:
        raise LauncherError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    if spec.extra_ca:
        overrides.check_extra_ca(spec.extra_ca)
    site_dir = overrides.check_site(spec.site) if spec.site else None
    limit_env = spec.limits.variables()
    base = compose_file(spec.compose)
    given = dict(limit_env)
    if spec.image:
        given[images.sandbox_variable(mode)] = spec.image
    if spec.egress_image:
        given[settings.EGRESS_IMAGE.name] = spec.egress_image
    given[settings.EGRESS_BLAST.name] = "1" if spec.blast and not offline else ""
    relay_names = overrides.relay_sources(spec.relay, spec.relay_tls)
    relay, relay_tls = overrides.relay_settings(spec.relay, spec.relay_tls)
    if relay and not offline:
        overrides.check_relay(relay, relay_tls, relay_names)
    variables = Variables.of(base, given)
    sizes = budget.run_memory(variables)  # tmpfs leave room for processes, or refused
    dc = client()
    asks = spec.asks()
    why = refusal(capabilities(dc), asks)
    if why:
        raise LauncherError(why)
    runtime = asks.runtime
    if runtime:
        variables = variables.with_given({settings.RUNTIME.name: runtime})
    info = dc.info()
    check_host_limits(variables, int(info.get("NCPU") or 0), int(info.get("MemTotal") or 0))
    wanted = images.requested(mode, variables)
    images.check_present(dc, wanted)
    ensure_schedule_volume(dc)
    service = MODES[mode]
    run = runs.new_run_id()
    run_dir = runs.state_root() / run
    need = sizes["sandbox"] + (0 if offline else sizes["egress"])
    memory = budget.reserve(dc, run_dir, need, variables.environ, PROJECT_LABEL)
    files = [base]
    args = ["up", "-d", "--no-build", "--pull", "never", service]
    if mode != "default":
        args = ["--profile", mode, *args]
    deadline = time.monotonic() + spec.timeout
    # From the reservation on, a failure of any kind leaves nothing: no state folder, no
    # reservation, no volume, network or container of the run.
    try:
        if spec.extra_ca and not offline:
            files.append(overrides.extra_ca_override(run_dir, Path(spec.extra_ca)))
        if site_dir:
            files.append(overrides.site_override(run_dir, service, site_dir))
        if relay and not offline:
            files.append(overrides.relay_override(run_dir, relay, relay_tls, relay_names))
        proc = run_compose(compose_cmd(run, files, *args), variables.env(), spec.timeout,
                           check=False)
        services = (service,) if offline else ("egress", service)
        check_started(run, dc, services, proc.stderr, variables, wanted)
        if proc.returncode != 0:  # every container runs, yet compose failed: say why
            raise EngineError(f"docker compose up failed: {daemon_said(proc.stderr) or 'no message'}")
        if not offline:
            wait_ready(run, dc, deadline)
    except BaseException:
        down(run, quiet=True)
        raise
    return {"run": run, "project": run, "mode": mode, "service": service,
            "containers": {c.labels[SERVICE_LABEL]: c.name for c in runs.containers(run, dc)},
            "images": images.run_images(runs.by_service(run, dc), dc),
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
    eg = runs.container_of(run, "egress", dc)
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


def check_started(run: str, dc, services: tuple[str, ...], compose_stderr: str,
                  variables: Variables, wanted: list[images.Wanted]) -> None:
    """Every container the run needs exists and runs: compose v2 on Docker 20.10 exits 0 when
    the daemon refuses to create a container, or leaves one created and never started."""
    by_service = {c.labels.get(SERVICE_LABEL): c for c in runs.containers(run, dc)}
    for service in services:
        c = by_service.get(service)
        if c is None:
            said = daemon_said(compose_stderr) or f"compose made no {service} container"
            raise refusal_error(said, variables, wanted)
        c.reload()
        if c.status in ("running", "restarting"):
            continue
        state = c.attrs.get("State") or {}
        if state.get("Error") or c.status == "created":  # never started: the daemon says why
            raise refusal_error(state.get("Error") or daemon_said(compose_stderr)
                                or f"its {service} container was created and never started",
                                variables, wanted)
        tail = c.logs(tail=3).decode("utf-8", "replace")
        said = " | ".join(line.strip() for line in tail.splitlines() if line.strip())
        raise EngineError(f"the {service} container of run {run} {c.status} (exit "
                          f"{state.get('ExitCode')}) as it started: {said[:300] or 'no output'}")


def _run_volumes(dc, label: dict, keep_audit: bool = False) -> list:
    """The run's volumes but the host-wide schedule (and its audit store, when kept)."""
    return [v for v in dc.volumes.list(filters=label) if v.name != SCHEDULE_VOLUME and not (
        keep_audit and (v.attrs.get("Labels") or {}).get(VOLUME_LABEL) == STATE_VOLUME)]


def down(run: str, *, quiet: bool = False, keep_audit: bool = False) -> dict:
    """Remove the run's containers, networks and volumes (never the host-wide schedule volume).

    By label through the engine, containers killed and removed at once and in parallel: a run
    that is over has nothing to stop gracefully, and compose's stop would wait on Squid.
    keep_audit: leave the egress state volume (the audit store) for `audit RUN` to read
    later; a later `down RUN` removes it."""
    from concurrent.futures import ThreadPoolExecutor
    from functools import partial

    import docker.errors

    runs.check_run_name(run)
    dc = client()
    run_dir = runs.state_root() / run
    label = {"label": f"{PROJECT_LABEL}={run}"}
    found = dc.containers.list(all=True, filters=label, ignore_removed=True)
    # A run is whatever its id left in any state: a failed start may have left only a volume,
    # a network, or a state folder holding its memory reservation.
    existed = bool(found or dc.networks.list(filters=label) or _run_volumes(dc, label)
                   or run_dir.exists())
    if not existed and not quiet:
        raise runs.unknown_run(run)

    def quietly(remove) -> None:
        try:
            remove()
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if not quiet:
                raise EngineError(f"could not remove part of run {run}: {exc}") from None

    for c in found:
        free_blast_place(c)
    with ThreadPoolExecutor(8) as pool:  # each step done before the next: networks need no endpoints
        list(pool.map(quietly, [partial(c.remove, force=True, v=True) for c in found]))
        list(pool.map(quietly, [n.remove for n in dc.networks.list(filters=label)]))
        list(pool.map(quietly, [partial(v.remove, force=True)
                                for v in _run_volumes(dc, label, keep_audit)]))
    shutil.rmtree(run_dir, ignore_errors=True)
    left = {"containers": len(dc.containers.list(all=True, filters=label, ignore_removed=True)),
            "networks": len(dc.networks.list(filters=label)),
            "volumes": len(_run_volumes(dc, label, keep_audit))}
    kept = runs.state_volume(run, dc) if keep_audit else None
    return {"run": run, "removed": existed, "left": left,
            **({"kept_audit_volume": kept} if keep_audit else {})}
