"""The host-wide NCBI schedule every egress shares: its volume, and a declared BLAST run's place
in it, freed when the run goes down."""

from __future__ import annotations

from auditwire import RUN_STATE, SCHEDULE_DIR

from .. import settings
from ..errors import EngineError
from .composefile import SERVICE_LABEL

SCHEDULE_VOLUME = "biotool-ncbi-schedule"
# Host-wide, egress-only: a small tmpfs owned by the egress image's proxy user (uid 13).
SCHEDULE_VOLUME_OPTS = {"type": "tmpfs", "device": "tmpfs", "o": "size=16m,uid=13,gid=13,mode=0700"}


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


def free_blast_place(container) -> None:
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
