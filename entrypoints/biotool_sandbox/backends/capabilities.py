"""What a backend can enforce of a run, declared once per backend (as Harbor's environments
declare `can_disable_internet`), and the one check of it against what a run asks for."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Capabilities:
    """One backend's declaration. `runtimes`: the OCI runtimes a run may name (empty: none can be
    chosen); `why_not`: the backend's own words for a capability it lacks, by field name."""

    backend: str
    limits: bool           # the sandbox's CPU, memory, process and tmpfs caps hold
    network_rule: bool     # the sandbox's one way out is the egress gate (else: no network)
    runtimes: tuple[str, ...]
    user_switching: bool   # a command can run as a user other than the sandbox's own
    why_not: tuple[tuple[str, str], ...] = ()

    def reason(self, capability: str, default: str) -> str:
        return dict(self.why_not).get(capability, default)


@dataclass(frozen=True)
class Asks:
    """What a run (or one command of it) asks of its backend; `runtime_source` names where the
    runtime came from (the option, or the variable)."""

    limits: bool = False
    network_rule: bool = False
    runtime: str | None = None
    runtime_source: str = "--runtime"
    user: str | None = None


def refusal(caps: Capabilities, asks: Asks) -> str | None:
    """The one-line refusal of the first thing asked that the backend cannot give, else None."""
    if asks.limits and not caps.limits:
        return caps.reason("limits", f"{caps.backend} cannot enforce the sandbox's limits")
    if asks.network_rule and not caps.network_rule:
        return caps.reason("network_rule", f"{caps.backend} runs the sandbox with no network "
                                           "only, never through the egress gate")
    if asks.runtime and asks.runtime not in caps.runtimes:
        said = caps.reason("runtimes", f"{caps.backend} cannot choose the sandbox's runtime")
        return (f"{asks.runtime_source} {asks.runtime[:64]!r} is not registered with this engine "
                f"(it has: {', '.join(caps.runtimes) or 'none'}); {said}")
    if asks.user is not None and not caps.user_switching:
        return f"exec as user {asks.user!r}: " + caps.reason(
            "user_switching", f"{caps.backend} runs every command as the sandbox's own user")
    return None
