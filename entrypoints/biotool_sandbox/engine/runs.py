"""A run: its id (a compose project, or a Harbor trial's), its state folder on the host, and
its containers and volumes looked up on the engine by label."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from ..errors import LauncherError
from .client import client
from .composefile import PROJECT_LABEL, SANDBOX_SERVICES, SERVICE_LABEL, STATE_VOLUME, VOLUME_LABEL

RUN_PREFIX = "bts-"


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
