"""Inspect AI sandbox provider `biotool-apptainer`: every sample in its own Apptainer instance of
the biotool SIF, offline, so a task written for `sandbox="biotool"` runs on HPC nodes unchanged
but for the sandbox name.

    Task(..., sandbox="biotool-apptainer")                         BIOTOOL_SIF (and BIOTOOL_SITE)
    Task(..., sandbox=("biotool-apptainer", "/shared/biotool-sandbox.sif"))
    Task(..., sandbox=SandboxEnvironmentSpec("biotool-apptainer", ApptainerConfig(sif=..., ...)))

There is no egress at all (`--net --network none`): `audit()` says so in the shape of
`biotool`'s offline runs. Apptainer runs everything as the calling user, so exec's `user` is
refused (SandboxUserUnsupportedError, by its backend's Capabilities). See docs/hpc.md,
"Inspect on HPC".
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from inspect_ai.util import (
    ExecResult,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUnavailableError,
    SandboxUserUnsupportedError,
    sandboxenv,
)
from typing_extensions import override

from ..audit import offline
from ..backends import apptainer
from ..backends.apptainer import ApptainerConfig, Sample
from ..backends.capabilities import Asks, refusal
from ..errors import EngineError, LauncherError
from ..timeouts import host_deadline, timed_out, wrapper_refused
from .files import WORKDIR, resolve
from .sandbox import BiotoolSandbox, result


def _refusal(code: int, out: bytes, err: bytes, cmd: list[str]) -> str | None:
    """ENV_BIN's one-line refusal to start cmd[0] (not executable), else None."""
    if code != 126 or out:
        return None
    line = err.decode("utf-8", "replace").strip()
    return line if "\n" not in line and wrapper_refused(line, apptainer.ENV_BIN, cmd[0]) else None


@sandboxenv(name="biotool-apptainer")
class ApptainerSandboxEnvironment(BiotoolSandbox):
    """One sample's Apptainer instance, its /work and its scratch, all node-local."""

    # Instances this process started and has not stopped: task_cleanup's last resort.
    _live: dict[str, tuple[str, Sample]] = {}

    def __init__(self, tool: str, sample: Sample) -> None:
        super().__init__()
        self.apptainer, self.sample = tool, sample

    @property
    def name(self) -> str:
        return self.sample.name

    @classmethod
    @override
    def config_deserialize(cls, config: dict[str, Any]) -> ApptainerConfig:
        return ApptainerConfig(**config)

    @classmethod
    @override
    def default_concurrency(cls) -> int | None:
        # One instance per sample, no per-sample proxy: about one sample per core this process
        # may use (under Slurm, the job's allocation).
        return max(1, len(os.sched_getaffinity(0)))

    @classmethod
    @override
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        s = apptainer.settings(config, dict(os.environ))
        code, _, err = await apptainer.run(apptainer.version_argv(s), deadline=60)
        if code != 0:
            raise EngineError(f"{s.apptainer} version failed (exit {code}): "
                              f"{apptainer.message(err)}")

    @classmethod
    @override
    async def sample_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                          metadata: dict[str, str]) -> dict[str, SandboxEnvironment]:
        s = apptainer.settings(config, dict(os.environ))
        sample = apptainer.new_sample(s.scratch)
        try:
            code, _, err = await apptainer.run(apptainer.start_argv(s, sample),
                                               deadline=apptainer.START_TIMEOUT,
                                               environ=apptainer.start_environ(dict(os.environ)))
            if code != 0:
                raise EngineError(f"apptainer instance start {sample.name} failed (exit {code}): "
                                  f"{apptainer.message(err)}")
        except BaseException:
            # A start that failed or timed out may still have left an instance behind.
            await _stop(s.apptainer, sample)
            raise
        cls._live[sample.name] = (s.apptainer, sample)
        return {"default": cls(s.apptainer, sample)}

    @classmethod
    @override
    async def sample_cleanup(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                             environments: dict[str, SandboxEnvironment], interrupted: bool) -> None:
        for env in environments.values():
            if isinstance(env, ApptainerSandboxEnvironment):
                cls._live.pop(env.name, None)
                await _stop(env.apptainer, env.sample)

    @classmethod
    @override
    async def task_cleanup(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                           cleanup: bool) -> None:
        if cleanup:
            for name in list(cls._live):
                await _stop(*cls._live.pop(name))

    @classmethod
    @override
    async def cli_cleanup(cls, id: str | None) -> None:
        """`inspect sandbox cleanup biotool-apptainer [NAME]`: stop that instance (all of this
        user's bta- instances without NAME) and remove its folder under the scratch."""
        tool, scratch = apptainer.locate(None, dict(os.environ))
        if id:
            if not id.startswith(apptainer.PREFIX) or "/" in id:
                raise LauncherError(f"{id!r} is not an instance of this provider "
                                    f"(they look like {apptainer.PREFIX}1a2b3c4d5e6f)")
            names = [id]
        else:
            code, out, err = await apptainer.run(apptainer.list_argv(tool), deadline=60)
            if code != 0:
                raise EngineError(f"apptainer instance list failed: {apptainer.message(err)}")
            names = [i["instance"] for i in json.loads(out or b"{}").get("instances") or []
                     if str(i.get("instance", "")).startswith(apptainer.PREFIX)]
            names += [p.name for p in scratch.glob(apptainer.PREFIX + "*") if p.name not in names]
        for name in names:
            await _stop(tool, Sample(name=name, root=scratch / name))

    @override
    async def exec(self, cmd: list[str], input: str | bytes | None = None, cwd: str | None = None,
                   env: dict[str, str] | None = None, user: str | None = None,
                   timeout: int | None = None, timeout_retry: bool = True,
                   concurrency: bool = True) -> ExecResult[str]:
        why = refusal(apptainer.CAPABILITIES, Asks(user=user))
        if why:
            raise SandboxUserUnsupportedError(why)
        payload = apptainer.argv_payload(cmd, env)
        argv_file = None
        if payload is not None:  # too long for Apptainer to carry: staged in the instance first
            argv_file = f"/tmp/.biotool-argv-{secrets.token_hex(8)}"
            code, _, err = await self._call(apptainer.stage_argv(self.apptainer, self.name, argv_file),
                                            payload)
            if code != 0:
                raise EngineError(f"instance {self.name}: a {len(payload)}-byte command could not "
                                  f"be staged in /tmp (exit {code}): {apptainer.message(err)}")
        argv = apptainer.exec_argv(self.apptainer, self.name, cmd, env=env, timeout=timeout,
                                   pwd=resolve(cwd) if cwd else WORKDIR,
                                   argv_file=argv_file)
        data = input.encode("utf-8") if isinstance(input, str) else input
        start = time.monotonic()
        code, out, err = await self._call(argv, data, deadline=host_deadline(timeout),
                                          keep=SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE)
        elapsed = time.monotonic() - start
        refused = _refusal(code, out, err, cmd)
        if refused:
            raise PermissionError(errno.EACCES, f"cannot execute ({refused})", cmd[0])
        if timed_out(code, elapsed, timeout):
            raise TimeoutError(f"command timed out after {timeout}s (killed in the sandbox)")
        return result(code, out, err)

    @override
    async def transfer(self, argv: list[str], stdin: bytes | None) -> tuple[int, bytes, bytes]:
        return await self._call(apptainer.exec_argv(self.apptainer, self.name, argv), stdin)

    async def _call(self, argv: list[str], stdin: bytes | None, **bounds) -> tuple[int, bytes, bytes]:
        """One `apptainer exec` into the instance; SandboxUnavailableError once it is gone."""
        code, out, err = await apptainer.run(argv, stdin=stdin, **bounds)
        # Apptainer's own answer (exit 255), not a command's that happens to exit 255.
        if code == 255 and not out and apptainer.gone(err, self.name):
            raise SandboxUnavailableError(f"instance {self.name} is not running "
                                          f"({apptainer.message(err)})")
        # `apptainer exec` dies of the signal that killed the command (it re-raises it): the
        # command's status is then a shell's 128 + N, as under docker exec.
        return (128 - code if code < 0 else code), out, err

    @override
    async def audit(self) -> dict:
        """There is no egress to audit: `biotool`'s offline answer, for the same scorer code."""
        return offline(self.name, f"instance {self.name} runs with --net --network none: there "
                                  "is no way out to log")


async def _stop(tool: str, sample: Sample) -> None:
    """Stop the instance if it runs and remove its folders; nothing of the sample is left."""
    try:
        code, _, err = await apptainer.run(apptainer.stop_argv(tool, sample.name),
                                           deadline=apptainer.STOP_TIMEOUT)
    finally:
        await asyncio.to_thread(_remove, sample.root)
    # One that never started (a failed start, a second cleanup) is no failure.
    if code != 0 and not apptainer.gone(err, sample.name):
        raise EngineError(f"apptainer instance stop {sample.name} failed (exit {code}): "
                          f"{apptainer.message(err)}")


def _remove(root: Path) -> None:
    """rmtree that first gives the owner back folders the agent locked (chmod 000 and the like)."""
    if not root.exists():
        return
    root.chmod(0o700)
    for top, dirs, _ in os.walk(root):
        for d in dirs:
            path = Path(top, d)
            if not path.is_symlink():
                path.chmod(0o700)
    shutil.rmtree(root)
