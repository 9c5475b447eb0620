"""The egress audit a scorer reads of the current sample, on biotool's providers and on any
other provider with an `egress` sandbox (the k8s values, a compose file of its own)."""

from __future__ import annotations

from inspect_ai.util import OutputLimitExceededError, SandboxEnvironment, sandbox

from .. import audit
from .sandbox import BiotoolSandbox

EGRESS = "egress"  # the egress service's sandbox name, here and in k8s/values.yaml


async def egress_audit(name: str | None = None) -> dict:
    """The current sample's egress audit, for a scorer: `audit = await egress_audit()`.

    On `biotool`, `name` is any of the run's sandboxes (default `default`) and the audit is
    read from the engine: the egress container's log and the gate's store; on
    `biotool-apptainer` it is the offline answer (there is no way out). On any other
    provider it names the egress service's sandbox (default `egress`), read through the
    sandbox API by sandbox_audit."""
    env = sandbox(name) if name else sandbox()
    try:  # as_type: Inspect hands out its event-recording proxy of the environment
        return await env.as_type(BiotoolSandbox).audit()
    except TypeError:
        pass
    if not name:
        try:
            env = sandbox(EGRESS)
        except ValueError:
            raise ValueError(f"egress_audit: this sample has no sandbox named {EGRESS!r}, so no "
                             "egress service whose audit could be read") from None
    return await sandbox_audit(env)


async def sandbox_audit(egress: SandboxEnvironment, run: str | None = None) -> dict:
    """The audit through any provider's sandbox API, from the egress service's sandbox: the
    gate's bounded store, which keeps Squid's records too, summarised as engine.egress_audit.audit
    summarises it. A store begun by an older egress lacks Squid's records, which are then in
    the container's log only: the result's `proxy_log` says so."""
    try:
        text = await egress.read_file(audit.STORE)
    except (OSError, RuntimeError, OutputLimitExceededError) as exc:
        raise RuntimeError(f"egress_audit: the gate's audit store {audit.STORE} cannot be read "
                           f"in the egress sandbox ({type(exc).__name__}: {exc})") from None
    # The read ran in the container, so it runs; its restarts are the engine's to say.
    return audit.report(run, None, text, {"running": True, "restarts": None, "oom_killed": None})
