"""A run's limits: the options checked and set as compose.yaml's variables, held against what
this engine and host allow, and the engine's own refusals named by the option they came from."""

from __future__ import annotations

from dataclasses import dataclass, fields

from .. import settings
from ..errors import EngineError, LauncherError
from . import budget
from .images import Wanted
from .variables import Variables

# Per-run limits passed to compose.yaml (see there and docs/rules.md, the container layer, for the defaults).
LIMIT_ENV = {"cpus": settings.CPUS.name, "memory": settings.MEM_LIMIT.name,
             "work_size": settings.WORK_SIZE.name}
ENGINE_MIN_CPUS = 0.01  # the daemon refuses a CPU limit below this (NanoCPUs < 1e7)


@dataclass(frozen=True)
class Limits:
    """The sandbox's limits a run asks for; None keeps compose.yaml's default."""

    cpus: str | float | None = None
    memory: str | None = None
    work_size: str | None = None

    def variables(self) -> dict[str, str]:
        """{compose variable: value} for the limits given, each checked (LauncherError names
        the bad one by its option)."""
        from commandline.kinds import Size

        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            value = str(value).strip()
            option = f"--{f.name.replace('_', '-')}"
            if f.name == "cpus":
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
            out[LIMIT_ENV[f.name]] = value
        return out


def limit_source(var: str, variables: Variables) -> str:
    """Who set the compose variable var: the option, the caller's environment, or compose.yaml."""
    return variables.set_by(var) or f"{var} (the compose file's value)"


def check_host_limits(variables: Variables, ncpu: int, memtotal: int) -> None:
    """Refuse before anything is created what the engine would refuse when it creates the
    containers (a CPU limit outside [0.01, the host's CPUs]) or could never honour (a memory
    limit over the host's memory): the engine's own refusal comes only after compose has
    made the run's volumes and networks, and compose does not always report it."""
    cpus_var, mem_var = LIMIT_ENV["cpus"], LIMIT_ENV["memory"]
    raw = variables.value(cpus_var)
    if raw and ncpu:
        try:
            cpus = float(raw)
        except ValueError:
            raise LauncherError(f"{limit_source(cpus_var, variables)} {raw!r} is not a number "
                                "of CPUs") from None
        if not ENGINE_MIN_CPUS <= cpus <= ncpu:
            raise LauncherError(f"{limit_source(cpus_var, variables)} {raw}: this engine allows "
                                f"{ENGINE_MIN_CPUS:g} to {ncpu} CPUs (the host has {ncpu})")
    raw = variables.value(mem_var)
    if raw and memtotal and budget.to_bytes(raw) > memtotal:
        raise LauncherError(f"{limit_source(mem_var, variables)} {raw} is more than this host's "
                            f"{budget.shown(memtotal)} of memory")


# What the daemon's refusal to create or start a container is about, so its line names the
# option it came from (Docker 20.10's wording; anything else stays the engine's failure).
REFUSAL_CULPRITS = (("cpu", "cpus"), ("nanocpus", "cpus"), ("memory", "memory"))


def refusal_error(said: str, variables: Variables,
                  images: list[Wanted]) -> LauncherError | EngineError:
    """The daemon's one-line refusal, naming the option it came from: exit 2 when that is an
    option (or variable) the caller set, else the engine's failure (exit 4)."""
    line = " ".join(said.split())[:400] or "no message"
    low = line.lower()
    for image in images:
        if image.name and image.name.lower() in low and any(
                w in low for w in ("no such image", "not found", "pull access denied")):
            return LauncherError(f"{image.source} {image.name}: the engine refused it: {line}")
    for word, limit in REFUSAL_CULPRITS:
        if word in low:
            var = LIMIT_ENV[limit]
            return LauncherError(f"{limit_source(var, variables)}: the engine refused it: {line}")
    return EngineError(f"the engine refused the run: {line}")
