"""Inspect AI sandbox provider `biotool`: every sample in a fresh run of the enforced stack.

    Task(..., sandbox="biotool")                       the sandbox + egress proxy (enforced)
    Task(..., sandbox=("biotool", "offline"))          no network at all
    Task(..., sandbox=("biotool", "gpu"))              the CUDA image with NVIDIA GPUs reserved
    Task(..., sandbox=SandboxEnvironmentSpec("biotool", StackConfig(mode=..., runtime="runsc")))

Registered through the `inspect_ai` entry point in pyproject.toml. It drives the compose
backend (backends/compose.py up/down) and the engine's exec, not `docker compose exec`: exit
codes, stdin and timeouts are right on any engine, and Inspect's compose mount policy is not
in the way of the shared pacing volume. Images: BIOTOOL_IMAGE, BIOTOOL_EGRESS_IMAGE,
BIOTOOL_CUDA_IMAGE (gpu). Beside the agent's `default`, a run with a proxy exposes its egress
container as the sandbox `egress`, as Inspect's k8s sandbox does with k8s/values.yaml (the
agent's tools use `default`). `egress_audit()` (audit.py) gives a scorer every allowed and
denied egress attempt of the sample's run.
"""

from __future__ import annotations

import asyncio
import errno
import os
from typing import Any

from inspect_ai.util import (
    ExecResult,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    sandboxenv,
)
from typing_extensions import override

from ..backends import compose as stack
from ..backends.spec import RunSpec
from ..engine import budget, egress_audit, images, runs
from ..engine.client import client
from ..engine.composefile import compose_file
from ..engine.execute import exec_bytes, run_in
from ..engine.variables import Variables
from ..errors import EngineError, LauncherError
from .audit import EGRESS
from .config import StackConfig
from .files import resolve
from .sandbox import BiotoolSandbox, result


def _record_images(run: str, ran: dict) -> None:
    """The images the sample's run ran (image ID, reference, repo digests, revision), as an
    info event in the sample's log: Inspect hands sample_init a copy of the sample's metadata,
    so the log's own record of the sample is its transcript."""
    from inspect_ai.log import transcript

    transcript().info({"biotool_run": run, "images": ran}, source="biotool sandbox")


class _RunContainer(BiotoolSandbox):
    """One container of a sample's run, driven through the docker SDK."""

    def __init__(self, run: str, mode: str, container) -> None:
        super().__init__()
        self.run, self.mode, self.container = run, mode, container

    @classmethod
    @override
    async def sample_cleanup(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                             environments: dict[str, SandboxEnvironment], interrupted: bool) -> None:
        # `default` and `egress` are one run: each run goes down once.
        ids = {env.run for env in environments.values() if isinstance(env, _RunContainer)}
        for run in sorted(ids):
            await asyncio.to_thread(stack.down, run, quiet=True)

    @override
    async def exec(self, cmd: list[str], input: str | bytes | None = None, cwd: str | None = None,
                   env: dict[str, str] | None = None, user: str | None = None,
                   timeout: int | None = None, timeout_retry: bool = True,
                   concurrency: bool = True) -> ExecResult[str]:
        data = input.encode("utf-8") if isinstance(input, str) else input
        ran = await asyncio.to_thread(
            run_in, self.container, cmd, stdin=data,
            workdir=resolve(cwd, self.workdir) if cwd else self.workdir, env=env,
            user=user, timeout=timeout)
        if ran.refusal:
            raise PermissionError(errno.EACCES, f"cannot execute ({ran.refusal})", cmd[0])
        if ran.timed_out:
            raise TimeoutError(f"command timed out after {timeout}s (killed in the sandbox)")
        return result(ran.code, ran.stdout, ran.stderr)

    @override
    async def transfer(self, argv: list[str], stdin: bytes | None) -> tuple[int, bytes, bytes]:
        return await asyncio.to_thread(exec_bytes, self.container, argv, stdin=stdin,
                                       workdir=self.workdir)

    @override
    async def audit(self) -> dict:
        return await asyncio.to_thread(egress_audit.audit, self.run)


class EgressEnvironment(_RunContainer):
    """The run's egress container (Squid + the gate) as the sandbox `egress`, for scorers."""

    workdir = "/"


@sandboxenv(name="biotool")
class BiotoolSandboxEnvironment(_RunContainer):
    """One sample's sandbox container in its own run (compose project) of the enforced stack."""

    @classmethod
    @override
    def config_deserialize(cls, config: dict[str, Any]) -> StackConfig:
        return StackConfig(**config)

    @classmethod
    @override
    def default_concurrency(cls) -> int | None:
        # Each sample is a whole stack (sandbox + Squid): a few per core at most, and no more
        # than the host's memory budget holds (the launcher refuses a run past it).
        by_cpu = 2 * (os.cpu_count() or 1)
        try:
            return min(by_cpu, budget.concurrency(client(), Variables.of(compose_file(None))))
        except (EngineError, LauncherError):
            return by_cpu

    @classmethod
    @override
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        cfg = StackConfig.of(config)
        wanted = images.requested(cfg.launcher_mode, Variables.of(compose_file(None)))
        await asyncio.to_thread(lambda: images.check_present(client(), wanted))

    @classmethod
    @override
    async def sample_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                          metadata: dict[str, str]) -> dict[str, SandboxEnvironment]:
        cfg = StackConfig.of(config)
        mode = cfg.launcher_mode
        info = await asyncio.to_thread(stack.up, RunSpec(mode=mode, image=cfg.image,
                                                         runtime=cfg.runtime))
        run = info["run"]
        _record_images(run, info.get("images") or {})
        try:
            container = await asyncio.to_thread(runs.container_of, run, "sandbox")
            if container is None:
                raise RuntimeError(f"run {run} started without a sandbox container")
            egress = await asyncio.to_thread(runs.container_of, run, "egress")
            envs: dict[str, SandboxEnvironment] = {"default": cls(run, mode, container)}
            if egress is not None:  # an offline run has none
                envs[EGRESS] = EgressEnvironment(run, mode, egress)
        except BaseException:
            await asyncio.to_thread(stack.down, run, quiet=True)
            raise
        return envs

    @classmethod
    @override
    async def cli_cleanup(cls, id: str | None) -> None:
        """`inspect sandbox cleanup biotool RUN`: take that run down (RUN as printed in logs)."""
        if id:
            await asyncio.to_thread(stack.down, id, quiet=True)
