"""A run's egress audit read through the engine: the gate's store, by exec in a running egress or
from the run's state volume, whatever became of the egress, summarised by audit.report."""

from __future__ import annotations

from auditwire import RUN_STATE, STORE

from .. import settings
from ..audit import offline, report
from ..errors import EngineError
from . import runs
from .client import client
from .composefile import SERVICE_LABEL
from .images import run_images


def audit(run: str) -> dict:
    """Every egress attempt the run's proxy logged, as records, with counts, and the images
    the run ran (the audit is the run's record)."""
    dc = client()
    return {**_egress_audit(run), "images": run_images(runs.by_service(run, dc), dc)}


def _egress_audit(run: str) -> dict:
    """The store is read where it lies, whatever became of the egress: by exec while the
    container runs, else from its volume (the egress stopped, killed, restarting, or out of
    restarts), so the audit outlives the egress. A store that cannot be read is an error
    (EngineError, exit 4), never an empty audit."""
    found = runs.containers(run)
    eg = runs.container_of(run, "egress") if found else None
    if not found:
        volume = runs.state_volume(run)
        if volume is None:
            raise runs.unknown_run(run)
        # Brought down with its audit kept (down --keep-audit): the store alone remains.
        return report(run, None, read_store(run, None, volume), {"running": False,
                                                                 "restarts": None,
                                                                 "oom_killed": None})
    if eg is None:
        sb = runs.container_of(run, "sandbox")
        if sb is None:
            raise runs.unknown_run(run)
        return offline(run, f"run {run} has no egress proxy ({sb.labels.get(SERVICE_LABEL)}): "
                            "there is no way out to log")
    text = eg.logs(stdout=True, stderr=False).decode("utf-8", "replace")
    # The gate's own bounded store: what an agent's flood of the container log cannot evict.
    store = read_store(run, eg, runs.state_volume(run))
    if not store:  # the gate writes the store's header before it serves anything
        raise EngineError(f"the audit of run {run} cannot be read: its store is empty")
    state = eg.attrs.get("State") or {}
    # A restarted proxy kept the run's state (compose.yaml); one that stayed down ended the run.
    return report(run, text, store,
                  {"running": bool(state.get("Running")) and not state.get("Restarting"),
                   "restarts": eg.attrs.get("RestartCount", 0),
                   "oom_killed": bool(state.get("OOMKilled"))})


def read_store(run: str, egress, volume: str | None) -> str:
    """The gate's store as text: by exec in a running egress, else from the run's state
    volume through a throw-away container (read-only, no network, no capabilities) on the
    egress's own image; EngineError when neither way reads it."""
    why = []
    state = (egress.attrs.get("State") or {}) if egress is not None else {}
    if state.get("Running") and not state.get("Restarting"):
        try:
            code, out = egress.exec_run(["cat", "--", STORE], user="proxy", demux=False)
            if code == 0:
                return out.decode("utf-8", "replace")
            why.append(f"cat in the egress exited {code}")
        except Exception as exc:  # the SDK's APIError: it stopped or restarted meanwhile
            why.append(f"exec in the egress failed ({exc})")
    if volume is None:
        raise EngineError(f"the audit of run {run} cannot be read: its egress is "
                          f"{state.get('Status') or 'gone'} and its state volume is missing"
                          + (f" ({'; '.join(why)})" if why else ""))
    image = egress.attrs.get("Image") if egress is not None else settings.EGRESS_IMAGE.get()
    try:
        out = client().containers.run(
            image, entrypoint=["cat", "--", STORE], user="proxy", network_mode="none",
            read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges:true"],
            mem_limit="128m", volumes={volume: {"bind": RUN_STATE, "mode": "ro"}},
            labels={"org.biotool.audit-of": run}, remove=True, stdout=True, stderr=False)
    except Exception as exc:  # ContainerError (cat failed), ImageNotFound, APIError
        raise EngineError(f"the audit of run {run} cannot be read from its state volume "
                          f"{volume} ({' '.join(str(exc).split())[:300]})") from None
    return out.decode("utf-8", "replace")
