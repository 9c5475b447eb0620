"""What a harness does as the agent inside a run's sandbox: exec a command, copy files."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path, PurePosixPath

from .engine import runs
from .engine.execute import not_started, run_in
from .errors import EngineError, LauncherError
from .timeouts import checked

AGENT_UID = 1000


def _sandbox(run: str):
    c = runs.container_of(run, "sandbox")
    if c is None:
        raise runs.unknown_run(run, "it has no sandbox container")
    if c.status != "running":
        raise EngineError(f"sandbox of run {run} is {c.status}, not running")
    return c


def exec_(run: str, cmd: list[str], *, workdir: str = "/work", env: dict | None = None,
          timeout: float | None = None, user: str | None = None) -> dict:
    """Run cmd as the agent; exit code, stdout, stderr and wall time (run_in's bounds).

    Its own options are checked before the engine is asked, and a command that never started
    (no such command, an unusable --workdir) is an error of its own (exit 2), never an
    exit_code the command could have returned."""
    if not cmd or not cmd[0]:
        raise LauncherError("exec needs a command after the run id (biotool-sandbox exec RUN -- CMD...)"
                            if not cmd else "exec: the command word is empty")
    timeout = checked(timeout)
    if not workdir or not PurePosixPath(workdir).is_absolute() or "\0" in workdir:
        raise LauncherError(f"--workdir {workdir!r} is not an absolute path in the sandbox")
    ran = run_in(_sandbox(run), cmd, workdir=workdir, env=env, user=user, timeout=timeout)
    why = not_started(ran.code, ran.stdout, ran.stderr, cmd, wrapped=bool(timeout),
                      started=ran.started)
    if why:
        culprit = f"--workdir {workdir}" if "chdir" in why or "cwd" in why else f"command {cmd[0]!r}"
        raise LauncherError(f"exec: {culprit} did not start in run {run}: {why[:300]}")
    return {"run": run, "command": list(cmd), "exit_code": ran.code, "timed_out": ran.timed_out,
            "oom_killed": ran.oom_killed, "stdout": ran.stdout.decode("utf-8", "replace"),
            "stderr": ran.stderr.decode("utf-8", "replace"), "duration_s": round(ran.duration_s, 3)}


def split_spec(spec: str) -> tuple[str | None, str]:
    """'RUN:/path' -> (RUN, '/path'); a host path -> (None, path)."""
    head, sep, tail = spec.partition(":")
    if sep and head.startswith(runs.RUN_PREFIX) and "/" not in head:
        runs.check_run_name(head)
        if not tail.startswith("/"):
            raise LauncherError(f"{spec}: the path inside the sandbox must be absolute")
        return head, tail
    return None, spec


def _safe_members(tar: tarfile.TarFile, dest: Path):
    root = dest.resolve()
    for m in tar.getmembers():
        # is_relative_to, not a string prefix: /out must not admit /outside/...
        if not (root / m.name).resolve().is_relative_to(root) or m.issym() or m.islnk() or m.isdev():
            raise LauncherError(f"refusing archive member {m.name!r} from the sandbox (link or outside {dest})")
        yield m


def cp(src: str, dest: str) -> dict:
    """Copy into (HOST -> RUN:/path) or out of (RUN:/path -> HOST) a run's sandbox."""
    src_run, src_path = split_spec(src)
    dest_run, dest_path = split_spec(dest)
    if bool(src_run) == bool(dest_run):
        raise LauncherError("cp needs exactly one side as RUN:/path (e.g. cp in.fa bts-1a2b3c4d:/work/)")
    if dest_run:
        return _copy_in(dest_run, Path(src_path), dest_path)
    return _copy_out(src_run, src_path, Path(dest_path))


def _copyable(src: Path) -> Path:
    """src (a link at the top followed) when it and everything under it is a regular file or a
    directory: what cp out admits (_safe_members), so no FIFO, device, socket or link enters
    a sandbox either."""
    import os
    import stat

    if not os.path.lexists(src):
        raise LauncherError(f"{src} does not exist")
    try:
        top = src.resolve(strict=True)
    except (OSError, RuntimeError):
        raise LauncherError(f"{src} is a broken link or a link loop") from None
    paths = [top]
    if top.is_dir():
        for dirpath, dirnames, filenames in os.walk(top):
            paths += [Path(dirpath) / n for n in dirnames + filenames]
    for path in paths:
        try:
            mode = path.lstat().st_mode
        except OSError as exc:
            raise LauncherError(f"{path}: cannot read it ({exc.strerror})") from None
        if stat.S_ISLNK(mode) or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            kind = ("a link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket")
            raise LauncherError(f"{path} is {kind}: cp copies regular files and directories only")
    return top


def _copy_in(run: str, src: Path, dest: str) -> dict:
    path = _copyable(src)
    c = _sandbox(run)
    # Into a directory (trailing slash or existing dir) keeps the name; otherwise rename.
    probe = c.exec_run(["test", "-d", dest])
    if dest.endswith("/") or probe.exit_code == 0:
        parent, name = dest.rstrip("/") or "/", src.name
    else:
        parent, name = str(PurePosixPath(dest).parent), PurePosixPath(dest).name
    buf = io.BytesIO()
    files = 0
    with tarfile.open(fileobj=buf, mode="w") as tar:
        def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
            nonlocal files
            info.uid = info.gid = AGENT_UID
            info.uname = info.gname = ""
            files += info.isfile()
            return info
        tar.add(str(path), arcname=name, filter=owned)
    try:
        ok = c.put_archive(parent, buf.getvalue())
    except Exception as exc:
        raise EngineError(f"copy into {run}:{parent} failed ({exc})") from None
    if not ok:
        raise EngineError(f"copy into {run}:{parent} was refused by the engine")
    return {"run": run, "direction": "in", "source": str(src),
            "destination": f"{parent.rstrip('/')}/{name}", "files": files, "archive_bytes": len(buf.getvalue())}


def _copy_out(run: str, src: str, dest: Path) -> dict:
    import docker.errors

    c = _sandbox(run)
    try:
        stream, stat = c.get_archive(src)
    except docker.errors.NotFound:
        raise LauncherError(f"{run}:{src} does not exist") from None
    except Exception as exc:
        raise EngineError(f"copy out of {run}:{src} failed ({exc})") from None
    data = b"".join(stream)
    into_dir = dest.is_dir()
    target_dir = dest if into_dir else dest.parent
    if not target_dir.is_dir():
        raise LauncherError(f"{target_dir} is not a directory on the host")
    files = 0
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = list(_safe_members(tar, target_dir))
        root = stat["name"]
        for m in members:
            if not into_dir:  # rename the top entry to dest's name
                m.name = dest.name + m.name[len(root):] if m.name.startswith(root) else m.name
            files += m.isfile()
        tar.extractall(target_dir, members=members, filter="data")
    final = dest / stat["name"] if into_dir else dest
    return {"run": run, "direction": "out", "source": src, "destination": str(final),
            "files": files, "archive_bytes": len(data)}


