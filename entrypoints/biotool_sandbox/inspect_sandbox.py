"""Inspect AI sandbox provider `biotool`: every sample in a fresh run of the enforced stack.

    Task(..., sandbox="biotool")                       the sandbox + egress proxy (enforced)
    Task(..., sandbox=("biotool", "offline"))          no network at all
    Task(..., sandbox=("biotool", "gpu"))              the CUDA image with NVIDIA GPUs reserved

Registered through the `inspect_ai` entry point in pyproject.toml. It drives the launcher
(stack.up/down and the docker SDK's exec), not `docker compose exec`: exit codes, stdin and
timeouts are right on any engine, and Inspect's compose mount policy is not in the way of the
shared pacing volume. Images: BIOTOOL_IMAGE, BIOTOOL_EGRESS_IMAGE, BIOTOOL_CUDA_IMAGE (gpu).
Beside the agent's `default`, a run with a proxy exposes its egress container as the sandbox
`egress`, as Inspect's k8s sandbox does with k8s/values.yaml (the agent's tools use `default`).
`egress_audit()` gives a scorer every allowed and denied egress attempt of the sample's run, on
this provider and on any other with an `egress` sandbox (`sandbox_audit`).
"""

from __future__ import annotations

import asyncio
import errno
import os
from typing import Literal, Union, overload

from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    sandbox,
    sandboxenv,
)

from . import agent, audit, budget, inspect_io, settings, stack
from .errors import EngineError, LauncherError
from .inspect_io import WORKDIR

# Inspect's config string -> the launcher's mode.
MODES = {"enforced": "default", "offline": "offline", "gpu": "gpu"}
EGRESS = "egress"  # the egress service's sandbox name, here and in k8s/values.yaml


def _parts(config: SandboxEnvironmentConfigType | None) -> tuple[str, str | None]:
    """Inspect's config: None, a mode name, or MODE:RUNTIME (e.g. "enforced:runsc", gVisor)."""
    name = "enforced" if config is None else config
    mode, _, runtime = name.partition(":") if isinstance(name, str) else ("", "", "")
    if mode not in MODES or (name.count(":") and not runtime):
        raise ValueError(f"sandbox=('biotool', {config!r}): the config is one of "
                         f"{', '.join(MODES)} (default enforced), optionally with the sandbox's "
                         f"runtime after a colon (enforced:runsc)")
    return MODES[mode], runtime or None


def mode_of(config: SandboxEnvironmentConfigType | None) -> str:
    """The launcher mode for Inspect's config."""
    return _parts(config)[0]


def runtime_of(config: SandboxEnvironmentConfigType | None) -> str | None:
    """The sandbox's runtime the config names (None: BIOTOOL_RUNTIME, else the engine's)."""
    return _parts(config)[1]


def _image_for(mode: str) -> str:
    return (settings.CUDA_IMAGE if mode == "gpu" else settings.IMAGE).get()


def _record_images(run: str, images: dict) -> None:
    """The images the sample's run ran (image ID, reference, repo digests, revision), as an
    info event in the sample's log: Inspect hands sample_init a copy of the sample's metadata,
    so the log's own record of the sample is its transcript."""
    from inspect_ai.log import transcript

    transcript().info({"biotool_run": run, "images": images}, source="biotool sandbox")


class _RunContainer(inspect_io.AuditedSandbox):
    """One container of a sample's run, driven through the docker SDK."""

    workdir = WORKDIR

    def __init__(self, run: str, mode: str, container) -> None:
        super().__init__()
        self.run, self.mode, self.container = run, mode, container

    @classmethod
    async def sample_cleanup(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                             environments: dict[str, SandboxEnvironment], interrupted: bool) -> None:
        # `default` and `egress` are one run: each run goes down once.
        runs = {env.run for env in environments.values() if isinstance(env, _RunContainer)}
        for run in sorted(runs):
            await asyncio.to_thread(stack.down, run, quiet=True)

    async def exec(self, cmd: list[str], input: str | bytes | None = None, cwd: str | None = None,
                   env: dict[str, str] | None = None, user: str | None = None,
                   timeout: int | None = None, timeout_retry: bool = True,
                   concurrency: bool = True) -> ExecResult[str]:
        data = input.encode("utf-8") if isinstance(input, str) else input
        ran = await asyncio.to_thread(
            agent.run_in, self.container, cmd, stdin=data,
            workdir=inspect_io.resolve(cwd, self.workdir) if cwd else self.workdir, env=env,
            user=user, timeout=timeout)
        if ran.refusal:
            raise PermissionError(errno.EACCES, f"cannot execute ({ran.refusal})", cmd[0])
        if ran.timed_out:
            raise TimeoutError(f"command timed out after {timeout}s (killed in the sandbox)")
        return inspect_io.result(ran.code, ran.stdout, ran.stderr)

    async def write_file(self, file: str, contents: str | bytes) -> None:
        path = inspect_io.resolve(file, self.workdir)
        data = contents.encode("utf-8") if isinstance(contents, str) else contents
        code, _, err = await asyncio.to_thread(
            agent.exec_bytes, self.container, inspect_io.write_argv(path), stdin=data,
            workdir=self.workdir)
        inspect_io.check_write(path, code, err)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> Union[str | bytes]:
        path = inspect_io.resolve(file, self.workdir)
        code, out, err = await asyncio.to_thread(
            agent.exec_bytes, self.container, inspect_io.read_argv(path), workdir=self.workdir)
        return inspect_io.read_result(path, code, out, err, text)

    async def audit(self) -> dict:
        """Every egress attempt of this run: records (host, port, decision, ...) and counts."""
        return await asyncio.to_thread(agent.audit, self.run)


class EgressEnvironment(_RunContainer):
    """The run's egress container (Squid + the gate) as the sandbox `egress`, for scorers."""

    workdir = "/"


@sandboxenv(name="biotool")
class BiotoolSandboxEnvironment(_RunContainer):
    """One sample's sandbox container in its own run (compose project) of the enforced stack."""

    @classmethod
    def default_concurrency(cls) -> int | None:
        # Each sample is a whole stack (sandbox + Squid): a few per core at most, and no more
        # than the host's memory budget holds (the launcher refuses a run past it).
        by_cpu = 2 * (os.cpu_count() or 1)
        try:
            return min(by_cpu, budget.concurrency(stack.client(), stack.compose_file(None),
                                                  dict(os.environ)))
        except (EngineError, LauncherError):
            return by_cpu

    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        mode = mode_of(config)
        images = [_image_for(mode)] + ([] if mode == "offline" else
                                       [settings.EGRESS_IMAGE.get()])

        def check() -> None:
            import docker.errors

            dc = stack.client()
            for name in images:
                try:
                    dc.images.get(name)
                except docker.errors.ImageNotFound:
                    target = "image-cuda" if mode == "gpu" and name == images[0] else "image"
                    raise RuntimeError(f"image {name} is not on this engine: build it with "
                                       f"`make {target}`") from None

        await asyncio.to_thread(check)

    @classmethod
    async def sample_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                          metadata: dict[str, str]) -> dict[str, SandboxEnvironment]:
        mode = mode_of(config)
        info = await asyncio.to_thread(stack.up, mode, image=_image_for(mode),
                                       runtime=runtime_of(config))
        run = info["run"]
        _record_images(run, info.get("images") or {})
        try:
            container = await asyncio.to_thread(stack.container_of, run, "sandbox")
            if container is None:
                raise RuntimeError(f"run {run} started without a sandbox container")
            egress = await asyncio.to_thread(stack.container_of, run, "egress")
            envs: dict[str, SandboxEnvironment] = {"default": cls(run, mode, container)}
            if egress is not None:  # an offline run has none
                envs[EGRESS] = EgressEnvironment(run, mode, egress)
        except BaseException:
            await asyncio.to_thread(stack.down, run, quiet=True)
            raise
        return envs


    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        """`inspect sandbox cleanup biotool RUN`: take that run down (RUN as printed in logs)."""
        if id:
            await asyncio.to_thread(stack.down, id, quiet=True)


async def egress_audit(name: str | None = None) -> dict:
    """The current sample's egress audit, for a scorer: `audit = await egress_audit()`.

    On `biotool`, `name` is any of the run's sandboxes (default `default`) and the audit is
    read from the engine: the egress container's log and the gate's store; on
    `biotool-apptainer` it is the offline answer (there is no way out). On any other
    provider it names the egress service's sandbox (default `egress`), read through the
    sandbox API by sandbox_audit."""
    env = sandbox(name) if name else sandbox()
    try:  # as_type: Inspect hands out its event-recording proxy of the environment
        return await env.as_type(inspect_io.AuditedSandbox).audit()
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
    gate's bounded store, which keeps Squid's records too, summarised as agent.audit
    summarises it. A store begun by an older egress lacks Squid's records, which are then in
    the container's log only: the result's `proxy_log` says so."""
    try:
        text = await egress.read_file(audit.STORE)
    except (OSError, RuntimeError, OutputLimitExceededError) as exc:
        raise RuntimeError(f"egress_audit: the gate's audit store {audit.STORE} cannot be read "
                           f"in the egress sandbox ({type(exc).__name__}: {exc})") from None
    # The read ran in the container, so it runs; its restarts are the engine's to say.
    return audit.report(run, None, text, {"running": True, "restarts": None, "oom_killed": None})
