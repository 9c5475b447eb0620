"""What biotool's Inspect providers share: one file transfer over each one's exec channel,
Inspect's exec result, and an egress audit every sandbox of theirs knows.

`biotool` (compose.py, the docker SDK) and `biotool-apptainer` (apptainer.py, `apptainer exec
instance://`) differ only in how a command reaches the container (`transfer`).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Literal, Union, overload

from inspect_ai.util import (ExecResult, OutputLimitExceededError, SandboxEnvironment,
                             SandboxEnvironmentLimits)
from typing_extensions import override

from .files import WORKDIR, check_write, read_argv, read_result, resolve, write_argv


def result(code: int, out: bytes, err: bytes) -> ExecResult[str]:
    """Inspect's ExecResult, refusing a stream past its exec output limit."""
    limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
    for stream in (out, err):
        if len(stream) > limit:
            raise OutputLimitExceededError(SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR,
                                           stream[-limit:].decode("utf-8", "replace"))
    return ExecResult(success=code == 0, returncode=code,
                      stdout=out.decode("utf-8", "replace"), stderr=err.decode("utf-8", "replace"))


class BiotoolSandbox(SandboxEnvironment):
    """A sandbox of this project's providers: it moves files by the one transfer below and knows
    its own egress audit (biotool's from the engine, biotool-apptainer's offline answer), so
    egress_audit needs no egress sandbox. `workdir`: where relative paths and files land."""

    workdir = WORKDIR

    @abstractmethod
    async def transfer(self, argv: list[str], stdin: bytes | None) -> tuple[int, bytes, bytes]:
        """Run argv (a files.py script) in the sandbox in `workdir`: exit code, stdout, stderr."""

    @abstractmethod
    async def audit(self) -> dict:
        """Every egress attempt of this sample's run: records (host, port, decision, ...) and
        counts, in engine.egress_audit.audit's shape."""

    @override
    async def write_file(self, file: str, contents: str | bytes) -> None:
        path = resolve(file, self.workdir)
        data = contents.encode("utf-8") if isinstance(contents, str) else contents
        code, _, err = await self.transfer(write_argv(path), data)
        check_write(path, code, err)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    @override
    async def read_file(self, file: str, text: bool = True) -> Union[str | bytes]:
        path = resolve(file, self.workdir)
        code, out, err = await self.transfer(read_argv(path), None)
        return read_result(path, code, out, err, text)
