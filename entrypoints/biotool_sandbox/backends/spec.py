"""A run as its caller asks for it, frozen before anything of it exists: what `up` is given."""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import settings
from ..engine.limits import Limits
from .capabilities import Asks


@dataclass(frozen=True)
class RunSpec:
    """One run of the stack. mode: default, gpu or offline; image and egress_image override
    BIOTOOL_(CUDA_)IMAGE and BIOTOOL_EGRESS_IMAGE; extra_ca: a CA the gate trusts upstream
    (tests: a mock NCBI); compose: the compose file (default BIOTOOL_COMPOSE_FILE, the
    checkout's); timeout: seconds until the egress is ready; site: a staged site folder;
    limits: the sandbox's (None fields: compose.yaml's defaults); relay: https://HOST:PORT of
    the site's NCBI relay (relay_tls: the gate's certificates); runtime: the sandbox's OCI
    runtime (runsc: gVisor), egress keeps the engine's default; blast: the run declares NCBI
    BLAST, and its gate refuses to start past what the host's schedule sustains."""

    mode: str = "default"
    image: str | None = None
    egress_image: str | None = None
    extra_ca: str | None = None
    compose: str | None = None
    timeout: float = 180
    site: str | None = None
    limits: Limits = field(default_factory=Limits)
    relay: str | None = None
    relay_tls: str | None = None
    runtime: str | None = None
    blast: bool = False

    @property
    def offline(self) -> bool:
        return self.mode == "offline"

    def asks(self) -> Asks:
        """What this run asks of its backend: the stack's limits always, the egress rule unless
        offline, and the runtime given (--runtime, else BIOTOOL_RUNTIME)."""
        given = (self.runtime or "").strip()
        runtime = given or (settings.RUNTIME.raw() or "").strip() or None
        from_env = runtime is not None and not given
        return Asks(limits=True, network_rule=not self.offline, runtime=runtime,
                    runtime_source=settings.RUNTIME.name if from_env else "--runtime")
