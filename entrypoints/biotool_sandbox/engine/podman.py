"""Podman behind the Docker API (DOCKER_HOST at `podman system service`): what the enforced
stack needs that this engine does not give, found by asking it, so `up` refuses instead of
starting a run without its limits (docs/harnesses.md, Podman).

Tried with Podman 4.3.1 (Debian 12), rootless, on cgroup v1: the stack's network rule holds
(the sandbox has no route out, the proxy refuses off-rule CONNECTs), but the size of a tmpfs
volume is refused and the containers get no CPU, memory or pids limit at all.
"""

from __future__ import annotations

import secrets

from commandline.errors import one_line

PROBE_LABEL = "org.biotool.probe"
LIBPOD_INFO = "/v4.0.0/libpod/info"  # Podman's own API: rootless and the cgroup version


def version(dc) -> str | None:
    """Podman's version when the engine behind the client is Podman, else None."""
    try:
        components = dc.version().get("Components") or []
    except Exception:  # noqa: BLE001 - an engine that cannot say is not known to be Podman
        return None
    for part in components:
        if part.get("Name") == "Podman Engine":
            return str(part.get("Version") or "?")
    return None


def _tmpfs_size_refused(dc) -> str | None:
    """Podman's reason when it will not make a size-capped tmpfs volume (compose.yaml's /work,
    egress-ca and the NCBI schedule), else None; the probe volume is removed either way."""
    name = f"biotool-probe-{secrets.token_hex(4)}"
    try:
        volume = dc.volumes.create(name, driver="local", labels={PROBE_LABEL: "tmpfs-size"},
                                   driver_opts={"type": "tmpfs", "device": "tmpfs", "o": "size=1m"})
    except Exception as exc:  # docker.errors.APIError: the engine's own words
        return one_line(str(getattr(exc, "explanation", None) or exc))[:200]
    try:
        volume.remove(force=True)
    except Exception:  # noqa: BLE001 - a probe volume left behind is labelled, and empty
        pass
    return None


def _limits_dropped(dc) -> bool:
    """Whether Podman runs rootless on cgroup v1, where it applies no CPU, memory or pids
    limit (it creates the container and drops them)."""
    try:
        host = dc.api.get(dc.api.base_url + LIBPOD_INFO, timeout=10).json()["host"]
        return bool(host["security"]["rootless"]) and host["cgroupVersion"] == "v1"
    except Exception:  # noqa: BLE001 - no libpod answer: nothing known to be missing
        return False


def missing(dc) -> list[str]:
    """What of the stack's shape this Podman engine cannot carry (empty: nothing found)."""
    gaps = []
    said = _tmpfs_size_refused(dc)
    if said:
        gaps.append(f"size-capped tmpfs volumes (/work's cap; Podman said: {said})")
    if _limits_dropped(dc):
        gaps.append("CPU, memory and pids limits (rootless Podman on cgroup v1 drops them)")
    return gaps
