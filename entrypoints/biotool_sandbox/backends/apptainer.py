"""The Apptainer command lines of the `biotool-apptainer` Inspect provider, its settings, and
the bounded host-side run of one such command.

One sample is one Apptainer instance in the offline shape of hpc/run-apptainer.sh: `--containall
--net --network none`, a per-sample node-local /work, the site overlay read-only at
/opt/biotool-site and /tmp and /var/tmp on per-sample node-local scratch (`--workdir`).
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from .. import settings
from ..engine.execute import WORKDIR
from ..errors import EngineError, LauncherError
from ..timeouts import with_timeout
from .capabilities import Capabilities

SITE_MOUNT = "/opt/biotool-site"
# Instances and their per-sample folders are named alike, so cleanup finds one from the other.
PREFIX = "bta-"
# Sets Inspect's env for the command: run by absolute path, and not `apptainer exec --env`,
# which splits its value at commas.
ENV_BIN = "/usr/bin/env"
BASH = "/bin/bash"
ARGV_INLINE_MAX = 128 * 1024
# Runs the command a staged file holds (NUL-terminated arguments), with its exit code.
ARGV_READER = 'mapfile -d "" -t argv < "$1" && rm -f -- "$1" && exec "${argv[@]}"'
START_TIMEOUT = 300  # a SIF on a shared filesystem can take minutes to mount on a cold node
STOP_TIMEOUT = 60    # `instance stop` kills what TERM left after its own 10 s
# Each ApptainerConfig field's variable, read where the config leaves the field out.
SETTING_OF = {"apptainer": settings.APPTAINER, "sif": settings.SIF, "site": settings.SITE,
              "scratch": settings.SCRATCH}
# A site's own binds (often its shared filesystems) would reach into the offline sandbox.
SITE_BIND_VARS = ("APPTAINER_BIND", "APPTAINER_BINDPATH", "SINGULARITY_BIND",
                  "SINGULARITY_BINDPATH")
# An instance runs offline, unconfined by cgroup limits (the batch system's allocation bounds
# it), as the user who started it, on Apptainer's own runtime.
CAPABILITIES = Capabilities(
    backend="Apptainer", limits=False, network_rule=False, runtimes=(), user_switching=False,
    why_not=(("user_switching", "Apptainer runs every command as the user who started the "
                                "instance (no user switching in sandbox='biotool-apptainer')"),))


class ApptainerConfig(BaseModel):
    """sandbox=SandboxEnvironmentSpec("biotool-apptainer", ApptainerConfig(...)); any field left
    out is read from its environment variable in SETTING_OF (scratch then from TMPDIR, then
    /tmp)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    sif: str | None = None
    site: str | None = None
    scratch: str | None = None
    apptainer: str | None = None


@dataclass(frozen=True)
class Settings:
    """A checked configuration: every path exists."""

    apptainer: str
    sif: Path
    site: Path | None
    scratch: Path


@dataclass(frozen=True)
class Sample:
    """One sample's instance and its node-local folders (work at /work, tmp for --workdir)."""

    name: str
    root: Path

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"


def _bindable(what: str, path: Path) -> Path:
    # Apptainer's --bind spec is SRC:DST[:OPTS][,...]: a colon or comma in a path splits it.
    if ":" in str(path) or "," in str(path):
        raise LauncherError(f"{what} {path}: a path with ':' or ',' cannot be bound by Apptainer")
    return path


def resolved(config: ApptainerConfig | str | None, environ: dict[str, str]) -> ApptainerConfig:
    """The config with each field it leaves out read from its variable (SETTING_OF)."""
    if isinstance(config, str):
        config = ApptainerConfig(sif=config)
    elif config is None:
        config = ApptainerConfig()
    elif not isinstance(config, ApptainerConfig):
        raise LauncherError(f"sandbox=('biotool-apptainer', {config!r}): the config is a SIF path "
                            "or an ApptainerConfig")
    return ApptainerConfig(**{field: getattr(config, field) or setting.raw(environ)
                              for field, setting in SETTING_OF.items()})


def locate(config: ApptainerConfig | str | None, environ: dict[str, str]) -> tuple[str, Path]:
    """The apptainer binary and the scratch folder (all cleanup needs), checked."""
    given = resolved(config, environ)
    if given.apptainer:
        tool = given.apptainer
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            raise LauncherError(f"apptainer {tool} (BIOTOOL_APPTAINER) is not an executable file")
    else:
        tool = shutil.which("apptainer", path=environ.get("PATH"))
        if tool is None:
            raise LauncherError("apptainer is not on PATH: install Apptainer, or set "
                                "BIOTOOL_APPTAINER to its path")
    scratch = _bindable("scratch", Path(given.scratch or environ.get("TMPDIR")
                                         or tempfile.gettempdir()).absolute())
    if not (scratch.is_dir() and os.access(scratch, os.W_OK | os.X_OK)):
        raise LauncherError(f"scratch {scratch} (BIOTOOL_SCRATCH) is not a writable directory")
    return tool, scratch


def settings(config: ApptainerConfig | str | None, environ: dict[str, str]) -> Settings:
    """The checked settings, or LauncherError naming what is missing (and the variable to set)."""
    tool, scratch = locate(config, environ)
    given = resolved(config, environ)
    if not given.sif:
        raise LauncherError("no SIF given: set BIOTOOL_SIF, or pass sandbox=('biotool-apptainer', "
                            "'PATH.sif') (`make sif` writes out/biotool-sandbox.sif)")
    sif = Path(given.sif).absolute()
    if not sif.is_file():
        raise LauncherError(f"SIF {sif} (BIOTOOL_SIF) does not exist: build it with `make sif` "
                            "or copy one in")
    site = None
    if given.site:
        site = _bindable("site overlay", Path(given.site).absolute())
        if not site.is_dir():
            raise LauncherError(f"site overlay {site} (BIOTOOL_SITE) is not a directory")
    return Settings(apptainer=tool, sif=sif, site=site, scratch=scratch)


def new_sample(scratch: Path) -> Sample:
    """A fresh per-sample folder under scratch, private to the caller, named as its instance."""
    name = PREFIX + secrets.token_hex(6)
    root = scratch / name
    root.mkdir(mode=0o700)
    for sub in ("work", "tmp"):
        (root / sub).mkdir(mode=0o700)
    return Sample(name=name, root=root)


def start_environ(environ: dict[str, str]) -> dict[str, str]:
    """The environment `instance start` runs in: the caller's without the site-wide binds."""
    return {k: v for k, v in environ.items() if k not in SITE_BIND_VARS}


def version_argv(s: Settings) -> list[str]:
    return [s.apptainer, "version"]


def start_argv(s: Settings, sample: Sample) -> list[str]:
    """`instance start` in hpc/run-apptainer.sh's offline shape."""
    site = ["--bind", f"{s.site}:{SITE_MOUNT}:ro"] if s.site else []
    return [s.apptainer, "instance", "start", "--containall", "--net", "--network", "none",
            "--bind", f"{sample.work}:{WORKDIR}", *site, "--workdir", str(sample.tmp),
            str(s.sif), sample.name]


def _command(cmd: list[str], env: dict[str, str] | None) -> list[str]:
    """cmd under ENV_BIN with Inspect's env pairs, each checked."""
    if not cmd:
        raise ValueError("exec needs a command")
    if "=" in cmd[0]:
        # ENV_BIN would take it for a variable and run the next argument instead.
        raise ValueError(f"command {cmd[0]!r}: a program name with '=' cannot be run")
    pairs = []
    for key, value in (env or {}).items():
        if not key or "=" in key or "\0" in key + value:
            raise ValueError(f"environment variable {key!r}: not a NAME=VALUE pair")
        pairs.append(f"{key}={value}")
    return [ENV_BIN, "--", *pairs, *cmd]


def argv_payload(cmd: list[str], env: dict[str, str] | None = None) -> bytes | None:
    """The command as NUL-terminated arguments when it is too long to pass inline, else None.
    Apptainer carries a command in its engine configuration, at most 1 MiB of JSON (1.4:
    "engine configuration too big"), where escaping can grow it sixfold."""
    command = _command(cmd, env)
    data = b"".join(a.encode("utf-8", "surrogateescape") + b"\0" for a in command)
    return data if len(data) > ARGV_INLINE_MAX else None


def exec_argv(apptainer: str, name: str, cmd: list[str], *, pwd: str = WORKDIR,
              env: dict[str, str] | None = None, timeout: int | None = None,
              argv_file: str | None = None) -> list[str]:
    """`exec` into the instance: the instance's own environment only (--cleanenv keeps the
    eval host's, API keys included, out), Inspect's env set by ENV_BIN just before cmd, all
    of it under the timeout wrapper. With argv_file (a file in the instance holding
    argv_payload), bash reads the command from it, removes it and runs it."""
    command = _command(cmd, env)
    if argv_file is not None:
        command = [BASH, "-c", ARGV_READER, "biotool-argv", argv_file]
    return [apptainer, "--quiet", "exec", "--cleanenv", "--pwd", pwd, f"instance://{name}",
            *with_timeout(command, timeout)]


def stage_argv(apptainer: str, name: str, argv_file: str) -> list[str]:
    """Writes its stdin (an argv_payload) to argv_file in the instance."""
    return [apptainer, "--quiet", "exec", "--cleanenv", f"instance://{name}",
            BASH, "-c", 'umask 077 && cat > "$1"', "biotool-argv", argv_file]


def stop_argv(apptainer: str, name: str) -> list[str]:
    return [apptainer, "instance", "stop", name]


def list_argv(apptainer: str) -> list[str]:
    return [apptainer, "instance", "list", "--json"]


async def run(argv: list[str], *, stdin: bytes | None = None, deadline: float | None = None,
              keep: int | None = None, environ: dict[str, str] | None = None
              ) -> tuple[int, bytes, bytes]:
    """Run argv on the host: exit code, stdout, stderr (each its last keep + 1 bytes at most).

    argv gets its own process group, killed with everything in it when deadline passes
    (TimeoutError) or the caller is cancelled, so nothing it started outlives the call.
    """
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
            env=environ)
    except OSError as exc:
        raise EngineError(f"{argv[0]} could not be started ({exc.strerror})") from None

    async def feed() -> None:
        try:
            proc.stdin.write(stdin)
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the command exited without reading all of its input
        finally:
            proc.stdin.close()

    async def tail(stream: asyncio.StreamReader) -> bytes:
        buf = bytearray()
        while chunk := await stream.read(1 << 16):
            buf += chunk
            if keep is not None and len(buf) > keep + 1:
                del buf[:len(buf) - keep - 1]
        return bytes(buf)

    try:
        async with asyncio.timeout(deadline):
            jobs = [tail(proc.stdout), tail(proc.stderr)] + ([feed()] if stdin is not None else [])
            out, err, *_ = await asyncio.gather(*jobs)
            code = await proc.wait()
    except TimeoutError:
        raise TimeoutError(f"no end of {argv[1:3]} from {argv[0]} within {deadline:g}s") from None
    finally:
        if proc.returncode is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await proc.wait()
    return code, out, err


def message(err: bytes) -> str:
    """Apptainer's message for a failed command: its last FATAL/ERROR line, else the last line."""
    lines = [l.strip() for l in err.decode("utf-8", "replace").splitlines() if l.strip()]
    fatal = [l for l in lines if l.startswith(("FATAL", "ERROR"))]
    return (fatal or lines or ["no message"])[-1]


def gone(err: bytes, name: str) -> bool:
    """Whether Apptainer said there is no instance `name`: exec's FATAL names it; `instance stop
    NAME` (1.4, exit 1) says only that the one instance it was given was not found."""
    text = err.decode("utf-8", "replace")
    return (re.search(f"no instance found with name {re.escape(name)}(?:\\s|$)", text) is not None
            or re.search(r'^Error for command "stop": no instance found\s*$', text, re.M) is not None)
