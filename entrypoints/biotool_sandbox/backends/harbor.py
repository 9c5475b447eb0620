"""Harbor environments rendered from compose.yaml (docs/harbor.md): generated, never written
by hand, so a Harbor task and `biotool-sandbox up` run the same stack (k8s.py does the same for
Kubernetes).

agent_compose: the task's environment/docker-compose.yaml. Harbor's docker environment runs
it with its own prebuilt-image file first (`main: image, command`) and its mounts file after;
`main` is compose.yaml's `sandbox` (internal network only, non-root, read-only root, no
capabilities, compose's limits) and `egress` is the run's Squid + gate with its audit store.
Both declare their networks, so Harbor never moves them onto its own egress sidecar's network
(its docker environment respects task-authored networking). Two additions, volumes
where Harbor copies into `main` (a read-only root takes no copy): /logs (Harbor's agent,
verifier and artifacts folders, unless an operator's auto_mounting binds them from the host)
and /solution (where Harbor's oracle agent uploads solve.sh). Both are size-capped tmpfs
volumes (CAPS) that `egress` also mounts read-only: an agent cannot fill the engine's disk
through them, and they outlive `main`'s stop, when Harbor copies /logs out. And one guard: Harbor's egress
sidecar (its `allowlist` / `no-network` modes, for any phase) sets EGRESS_CONTROL_INITIAL_NETWORK_MODE
for compose; `main` receives it as BIOTOOL_HARBOR_EGRESS_CONTROL and the task's healthcheck
(harbor_tasks.HEALTHCHECK) refuses to start the trial when it is set.

A drawn task's environment has a third service, `draw` (add_draw): the same image, no network,
run once at start as the draw of the task's ground truth (biotool_sandbox.harbor_draw). It
writes the agent's inputs to the `task` volume, which `main` mounts read-only at /task, and the
truth to the `truth` volume, which only it mounts; `main` starts once the truth is written
(the draw's healthcheck), and Harbor collects the truth from it after the agent phase.

verifier_compose: the task's tests/docker-compose.yaml, the separate verifier: the same image,
`network_mode: none`, no capabilities, the task's tests bound read-only at /tests.
"""

from __future__ import annotations

import re
from pathlib import Path

from biotool import ncbirule
from biotool import settings as biotool_settings

from auditwire import RUN_STATE, STORE

from .. import settings
from ..engine import budget
from ..engine.variables import compose_defaults
from ..errors import LauncherError
from .capabilities import Capabilities

# `main` keeps compose.yaml's limits and its internal network behind the stack's egress, on the
# engine's default runtime (the task carries no host setting); Harbor execs as any user.
CAPABILITIES = Capabilities(backend="Harbor (docker environment)", limits=True,
                            network_rule=True, runtimes=(), user_switching=True)
HEADER = ("# Rendered by `biotool-sandbox harbor` from compose.yaml; do not edit: re-render.\n")
MAIN = "main"                 # Harbor's agent service (harbor.constants.MAIN_SERVICE_NAME)
SOLUTION = "/solution"        # where Harbor's oracle agent uploads solution/
LOGS = "/logs"                # Harbor's EnvironmentPaths.logs_dir
TESTS = "/tests"
AUDIT_ARTIFACT = STORE        # collected from the egress service after main is stopped
DRAW = "draw"                 # a drawn task's draw service
TASK_INPUTS = "/task"         # the drawn inputs, read-only in `main`
TRUTH_DIR = "/var/lib/biotool-truth"
TRUTH_ARTIFACT = f"{TRUTH_DIR}/truth.json"  # collected from the draw service, like the audit
DRAW_LIMITS = {"cpus": 1.0, "mem_limit": "2g", "pids_limit": 256}
VERIFIER_LIMITS = {"cpus": 1.0, "mem_limit": "2g", "pids_limit": 256}
GUARD = settings.HARBOR_EGRESS_CONTROL.name
# The size of Harbor's folders in `main`: the logs an installed agent writes (a long trajectory
# is tens of MB) and the oracle's solution folder. A tmpfs counts in `main`'s memory limit.
CAPS = {"logs": "512m", "solution": "64m"}
# Where `egress` mounts them: a tmpfs volume is emptied when no running container holds it,
# and Harbor copies /logs out of `main` after stopping it, while `egress` still runs.
KEPT_AT = "/var/lib/biotool-kept"
# Harbor sets this for compose only when its egress sidecar runs (harbor 0.26.0,
# DockerEnvironment._compose_env_vars); the task never interpolates anything else of the host.
SIDECAR_VARIABLE = "EGRESS_CONTROL_INITIAL_NETWORK_MODE"
# Harbor's network modes (harbor.models.task.config.NetworkMode) other than `public`, and why
# each is refused for this stack: the rule is the stack's, and Harbor's policy would be a claim
# about the trial that does not hold.
REFUSED_MODES = {
    "allowlist": "Harbor's allowlist is its egress sidecar's (TLS SNI / HTTP Host only, no "
                 "protocol rules, no record), and the sidecar never reaches `main`, which "
                 "declares its own network: the trial would claim a policy it does not run "
                 "under. The stack enforces NCBI-BLAST-only itself under `public`",
    "no-network": "`main` keeps its way to NCBI BLAST through the stack's egress whatever "
                  "Harbor's sidecar does; an offline task is the single-container variant "
                  "(docs/harbor.md), not this environment",
}


def refuse_network_mode(mode: str | None, where: str) -> None:
    """LauncherError unless Harbor's network mode for `where` leaves the stack's rule whole."""
    if mode in (None, "public"):
        return
    why = REFUSED_MODES.get(mode, "not a network mode of Harbor's (public, allowlist, "
                            "no-network)")
    raise LauncherError(f"{where}: network_mode {mode!r} is refused: {why}")


def _interpolate(text: str, values: dict[str, str]) -> str:
    """Every `${VAR:-default}` as its value here (compose's default unless given): the task
    carries fixed values, never the Harbor host's environment."""
    def one(m: re.Match) -> str:
        return values.get(m.group(1), m.group(2))
    return re.sub(r"\$\{([A-Z0-9_]+):-([^}]*)\}", one, text)


def load(compose: Path, image: str, egress_image: str) -> dict:
    import yaml

    text = _interpolate(compose.read_text(encoding="utf-8"),
                        {settings.IMAGE.name: image, settings.EGRESS_IMAGE.name: egress_image})
    if "${" in text:
        raise LauncherError(f"{compose}: a variable without a default is left: "
                            f"{text[text.index('${'):][:40]}")
    doc = yaml.safe_load(text)
    services = doc.get("services") or {}
    if "sandbox" not in services or "egress" not in services:
        raise LauncherError(f"{compose}: no sandbox and egress services to render")
    return doc


def egress_hold(agent_timeout_s: float) -> float:
    """The egress's hold for a trial: a request waits its turn as long as the agent phase
    can, within the gate's bound (biotool.ncbirule.MAX_HOLD_S)."""
    return max(ncbirule.MIN_HOLD_S, min(ncbirule.MAX_HOLD_S, float(agent_timeout_s)))


def capped_volume(size: str) -> dict:
    """A compose volume on a tmpfs of `size` (the local driver's mount options), writable by
    root alone, like the folder the engine would make."""
    return {"driver": "local",
            "driver_opts": {"type": "tmpfs", "device": "tmpfs", "o": f"size={size},mode=0755"}}


def agent_compose(compose: Path, image: str, egress_image: str,
                  hold_s: float = ncbirule.DEFAULT_HOLD_S, blast: bool = False) -> dict:
    doc = load(compose, image, egress_image)
    main = dict(doc["services"]["sandbox"])
    if not main.get("runtime"):
        main.pop("runtime", None)  # compose's `${BIOTOOL_RUNTIME:-}`: the engine's default
    if "network_mode" in main or main.get("networks") != ["internal"]:
        raise LauncherError(f"{compose}: the sandbox is not on the internal network alone")
    main["volumes"] = [*main.get("volumes", []), f"logs:{LOGS}", f"solution:{SOLUTION}"]
    main["environment"] = {**main.get("environment", {}),
                           GUARD: "${" + SIDECAR_VARIABLE + ":-}"}
    egress = dict(doc["services"]["egress"])
    # A task that searches declares it: its trial does not start past what the host sustains.
    egress["environment"] = {**egress.get("environment", {}), settings.EGRESS_HOLD_S.name: f"{hold_s:g}",
                             settings.EGRESS_BLAST.name: "1" if blast else ""}
    egress["volumes"] = [*egress.get("volumes", []),
                         *(f"{name}:{KEPT_AT}/{name}:ro" for name in CAPS)]
    volumes = {**doc["volumes"], **{name: capped_volume(size) for name, size in CAPS.items()}}
    return {"services": {MAIN: main, "egress": egress},
            "networks": doc["networks"], "volumes": volumes}


def add_draw(environment: dict, image: str, draw: str) -> dict:
    """`environment` (agent_compose's) with the draw service of a drawn task, `main` reading
    its inputs at /task and started once its truth is written."""
    if not isinstance(draw, str) or not draw:
        raise LauncherError(f"the task's draw {draw!r} is not MODULE.FUNCTION")
    services = dict(environment["services"])
    services[DRAW] = {
        "image": image,
        # The draw runs once, then the container idles: Harbor copies the truth out of it
        # after the agent phase, and a running service is what `up --wait` waits for.
        "command": ["sh", "-c", "python -m biotool_sandbox.harbor_draw --draw \"$$0\" "
                    f"--public {TASK_INPUTS} --truth {TRUTH_ARTIFACT} && exec sleep infinity",
                    draw],
        "init": True,
        # root owns the fresh volumes it writes; no capability, no network, a read-only root.
        "user": "0:0",
        "network_mode": "none",
        "read_only": True,
        "tmpfs": ["/tmp"],
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "environment": {"HOME": "/tmp", biotool_settings.CACHE.name: "/tmp/biotool-cache",
                        "MPLCONFIGDIR": "/tmp", "NUMBA_CACHE_DIR": "/tmp"},
        **DRAW_LIMITS,
        "volumes": [f"task:{TASK_INPUTS}", f"truth:{TRUTH_DIR}"],
        "healthcheck": {"test": ["CMD", "test", "-s", TRUTH_ARTIFACT], "interval": "2s",
                        "timeout": "10s", "retries": 150},
    }
    main = dict(services[MAIN])
    main["volumes"] = [*main.get("volumes", []), f"task:{TASK_INPUTS}:ro"]
    main["depends_on"] = {DRAW: {"condition": "service_healthy"}}
    services[MAIN] = main
    return {**environment, "services": services,
            "volumes": {**environment["volumes"], "task": {}, "truth": {}}}


def verifier_compose(image: str) -> dict:
    return {"services": {MAIN: {
        "image": image,
        "command": ["sleep", "infinity"],
        "init": True,
        # The grader reads files only: no network at all, whatever Harbor's mode says.
        "network_mode": "none",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        **VERIFIER_LIMITS,
        "volumes": [{"type": "bind", "source": ".", "target": TESTS, "read_only": True}],
    }}}


def render(doc: dict) -> str:
    import yaml

    class Plain(yaml.SafeDumper):
        # compose.yaml's anchors are resolved: each service states its own settings.
        def ignore_aliases(self, data):
            return True

    return HEADER + yaml.dump(doc, Dumper=Plain, sort_keys=False, width=100)


def limits(compose: Path) -> dict:
    """The sandbox's compose limits as task.toml states them (cpus, memory_mb)."""
    d = compose_defaults(compose)
    return {"cpus": float(d[settings.CPUS.name]),
            "memory_mb": budget.to_bytes(d[settings.MEM_LIMIT.name]) >> 20}


__all__ = ["agent_compose", "add_draw", "verifier_compose", "render", "limits", "AUDIT_ARTIFACT",
           "RUN_STATE", "MAIN", "SOLUTION", "TESTS"]
