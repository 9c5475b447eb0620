"""compose.yaml's variables as one run sees them: what its options set, over the caller's
environment, over compose.yaml's own `${VAR:-default}` declarations; and who set each one,
which every refusal of a value names."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .. import settings

# The `up` options that set a compose variable (--image sets the CUDA image's in --mode gpu).
OPTION_OF = {settings.CPUS.name: "--cpus", settings.MEM_LIMIT.name: "--memory",
             settings.WORK_SIZE.name: "--work-size", settings.IMAGE.name: "--image",
             settings.CUDA_IMAGE.name: "--image", settings.EGRESS_IMAGE.name: "--egress-image"}


def compose_defaults(compose: Path) -> dict[str, str]:
    """{VAR: default} for every `${VAR:-default}` in the compose file."""
    text = compose.read_text(encoding="utf-8")
    return dict(re.findall(r"\$\{(BIOTOOL_[A-Z0-9_]+):-([^}]+)\}", text))


@dataclass(frozen=True)
class Variables:
    """One run's compose variables: `given` (set from its options, or by the launcher itself),
    the caller's `environ`, and the compose file's `defaults`, each read in that order."""

    compose: Path
    given: Mapping[str, str] = field(default_factory=dict)
    environ: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, compose: Path, given: Mapping[str, str] | None = None,
           environ: Mapping[str, str] | None = None) -> Variables:
        """The run's variables over compose.yaml's defaults (environ: this process's)."""
        return cls(compose, dict(given or {}), dict(os.environ if environ is None else environ),
                   compose_defaults(compose))

    def value(self, var: str) -> str:
        """What compose will use for var ("" where nothing sets it)."""
        return self.given.get(var) or self.environ.get(var) or self.defaults.get(var, "")

    def set_by(self, var: str) -> str | None:
        """The option or variable that set var, or None where compose.yaml's default holds."""
        if var in self.given and var in OPTION_OF:
            return OPTION_OF[var]
        return var if self.environ.get(var) else None

    def with_given(self, given: Mapping[str, str]) -> Variables:
        """These variables with more set by the run (by variable name)."""
        return Variables(self.compose, {**self.given, **given}, self.environ, self.defaults)

    def env(self) -> dict[str, str]:
        """The environment `docker compose` runs in: the caller's, with the run's own values."""
        return {**self.environ, **self.given}
