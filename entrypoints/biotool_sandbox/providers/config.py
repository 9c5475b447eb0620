"""The typed config of the `biotool` provider; `biotool-apptainer`'s is its backend's
ApptainerConfig (backends/apptainer.py), read by the same rule: a typed value, or the short
string a task names (here "MODE[:RUNTIME]", there a SIF path)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from .. import settings

# Inspect's config name -> the launcher's mode.
MODES = {"enforced": "default", "offline": "offline", "gpu": "gpu"}


class StackConfig(BaseModel):
    """sandbox=SandboxEnvironmentSpec("biotool", StackConfig(mode=..., runtime=...)), or the
    string "MODE[:RUNTIME]" (e.g. "enforced:runsc", gVisor); runtime None: BIOTOOL_RUNTIME,
    else the engine's."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    mode: Literal["enforced", "offline", "gpu"] = "enforced"
    runtime: str | None = None

    @classmethod
    def of(cls, config: object) -> StackConfig:
        """The config Inspect hands the provider: None, a StackConfig, or "MODE[:RUNTIME]"."""
        if isinstance(config, StackConfig):
            return config
        name = "enforced" if config is None else config
        mode, _, runtime = name.partition(":") if isinstance(name, str) else ("", "", "")
        if mode not in MODES or (name.count(":") and not runtime):
            raise ValueError(f"sandbox=('biotool', {config!r}): the config is one of "
                             f"{', '.join(MODES)} (default enforced), optionally with the "
                             f"sandbox's runtime after a colon (enforced:runsc)")
        return cls(mode=mode, runtime=runtime or None)

    @property
    def launcher_mode(self) -> str:
        return MODES[self.mode]

    @property
    def image(self) -> str:
        """The sandbox image this mode runs (BIOTOOL_CUDA_IMAGE for gpu, else BIOTOOL_IMAGE)."""
        return (settings.CUDA_IMAGE if self.mode == "gpu" else settings.IMAGE).get()
