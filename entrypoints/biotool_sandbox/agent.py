"""What a harness does as the agent inside a run's sandbox: exec a command, copy files."""

from __future__ import annotations

import io
import re
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from . import oom, stack
from .errors import EngineError, LauncherError
from .timeouts import TIMEOUT_BIN, checked, host_deadline, timed_out, with_timeout, wrapper_refused

AGENT_UID = 1000


def _sandbox(run: str):
    c = stack.container_of(run, "sandbox")
    if c is None:
        raise stack.unknown_run(run, "it has no sandbox container")
    if c.status != "running":
        raise EngineError(f"sandbox of run {run} is {c.status}, not running")
    return c


@dataclass(frozen=True)
class Exec:
    """One engine exec as the engine reports it: the exit code, the output, and whether the
    exec's process started at all (the engine gave it a PID); one that never started carries
    the engine's own exit code (126/127) and message, never the command's."""

    code: int
    stdout: bytes
    stderr: bytes
    started: bool


@dataclass(frozen=True)
class Ran:
    """One command run as the agent: its exit code and output, its wall time, whether the
    timeout ended it, the engine's or the wrapper's one-line refusal to start it (None
    when it started), whether the out-of-memory killer ended it, and whether the engine
    started the exec's process (the command, or our timeout wrapper)."""

    code: int
    stdout: bytes
    stderr: bytes
    duration_s: float
    timed_out: bool
    refusal: str | None
    oom_killed: bool = False
    started: bool = True


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


def run_in(container, cmd: list[str], *, stdin: bytes | None = None, workdir: str = "/work",
           env: dict | None = None, user: str | None = None, timeout: float | None = None) -> Ran:
    """The one exec of an agent's command, for the CLI and the Inspect provider alike: under
    GNU timeout by its absolute path when `timeout` is given, and bounded on the host too
    (exec_bytes' deadline), so neither the image's PATH nor a child holding the output open
    decides when it ends."""
    start = time.monotonic()
    done = exec_process(container, with_timeout(cmd, timeout), stdin=stdin, workdir=workdir,
                        env=env, user=user, deadline=host_deadline(timeout))
    code, out, err = done.code, done.stdout, done.stderr
    elapsed = time.monotonic() - start
    if code == 126 and not (out or err) and user:
        # Docker 20.10 at times drops its own message for an unknown user: it is said here.
        out = _unknown_user(container, user) or out
    late = timed_out(code, elapsed, timeout)
    # A SIGKILL the agent cannot tell from `kill -9`: the cgroup says when memory was the cause.
    why = oom.reason(container) if code == 137 and not late else None
    if why:
        err += (b"" if not err or err.endswith(b"\n") else b"\n") + f"biotool-sandbox: {why}\n".encode()
    refusal = _exec_refusal(code, out, err, cmd, wrapped=bool(timeout), started=done.started)
    return Ran(code, out, err, elapsed, late, refusal, oom_killed=bool(why), started=done.started)


def _engine_line(code: int, out: bytes, err: bytes) -> str:
    """What the engine said of an exec it could not start, as one line."""
    said = " ".join((out + err).decode("utf-8", "replace").split())
    return said or f"the engine did not start it (exit {code})"


def _exec_refusal(code: int, out: bytes, err: bytes, cmd: list[str], wrapped: bool, *,
                  started: bool) -> str | None:
    """The engine's or our timeout wrapper's one-line refusal to execute cmd (permission
    denied), else None. The engine's counts only when it started no process (its own report,
    whatever the text); a started command's output is its own, whatever it prints."""
    if code != 126 or not cmd:
        return None
    if not started:
        # Wrapped, the engine failed to start our wrapper (its workdir, say), not cmd.
        line = _engine_line(code, out, err)
        return line if not wrapped and "permission denied" in line.lower() else None
    if not wrapped or out:
        return None
    line = err.decode("utf-8", "replace").strip()
    if "\n" in line or "permission denied" not in line.lower():
        return None
    return line if wrapper_refused(line, TIMEOUT_BIN, cmd[0]) else None


def not_started(code: int, out: bytes, err: bytes, cmd: list[str], wrapped: bool, *,
                started: bool) -> str | None:
    """The engine's or our timeout wrapper's one line saying cmd never started (not found,
    not executable, no such working directory), else None. The engine's is known by what it
    reports (no process started), never by the text, so a command that prints the engine's
    words and exits 126 is a result; our wrapper's is its exact line naming cmd[0], alone on
    stderr (exit 126/127 is also what a shell says of a script it cannot run)."""
    if not cmd:
        return None
    if not started:
        return _engine_line(code, out, err)
    if code not in (126, 127) or out:
        return None
    line = err.decode("utf-8", "replace").strip()
    if not line or "\n" in line:
        return None
    if wrapped:
        quoted = re.fullmatch(f"{re.escape(TIMEOUT_BIN)}: failed to run command [‘'](.*)[’']: (.*)",
                              line, re.IGNORECASE)
        if quoted and quoted.group(1) == cmd[0]:
            return line
    return None


def _unknown_user(container, user: str) -> bytes | None:
    """The engine's message for a USER[:GROUP] name missing from the image's files, else None."""
    name, _, group = user.partition(":")
    for kind, db, key in (("user", "passwd", name), ("group", "group", group)):
        if key and not key.isdigit() and exec_bytes(container, ["getent", db, key])[0] != 0:
            return f"unable to find {kind} {key}: no matching entries in {db} file\r\n".encode()
    return None


def exec_bytes(container, argv: list[str], *, stdin: bytes | None = None, workdir: str = "/work",
               env: dict | None = None, user: str | None = None,
               deadline: float | None = None) -> tuple[int, bytes, bytes]:
    """exec_process's exit code, stdout and stderr."""
    done = exec_process(container, argv, stdin=stdin, workdir=workdir, env=env, user=user,
                        deadline=deadline)
    return done.code, done.stdout, done.stderr


def exec_process(container, argv: list[str], *, stdin: bytes | None = None,
                 workdir: str = "/work", env: dict | None = None, user: str | None = None,
                 deadline: float | None = None) -> Exec:
    """One exec with stdin fed and closed (exec_run cannot): exit code, stdout and stderr as
    bytes, and whether its process started (exec inspect's Pid: the engine sets it only once
    the runtime started the process; a failed start keeps 0 and its own 126/127).

    deadline bounds the wait on the host too (a child holding the output open would keep the
    stream alive past any in-container timeout); past it, TimeoutError.
    """
    import socket
    import threading

    from docker.utils.socket import consume_socket_output, demux_adaptor, frames_iter

    api = container.client.api
    try:
        ex = api.exec_create(container.id, argv, stdin=True, stdout=True, stderr=True,
                             workdir=workdir, environment=env or None, user=user or "")
        sock = api.exec_start(ex["Id"], socket=True)
    except Exception as exc:  # the SDK raises APIError and friends
        raise EngineError(f"exec in {container.name} failed ({exc})") from None
    raw = getattr(sock, "_sock", sock)
    raw.settimeout(deadline)

    def feed() -> None:
        try:
            if stdin:
                raw.sendall(stdin)
            raw.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the command exited without reading all of its input

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        frames = (demux_adaptor(*f) for f in frames_iter(sock, tty=False))
        out, err = consume_socket_output(frames, demux=True)
    except (socket.timeout, TimeoutError):
        raise TimeoutError(f"no end of output from {argv[0]} within {deadline:g}s") from None
    finally:
        sock.close()
    writer.join(timeout=5)
    state = api.exec_inspect(ex["Id"])
    code = state.get("ExitCode")
    return Exec(code if code is not None else -1, out or b"", err or b"",
                started=bool(state.get("Pid")))


def split_spec(spec: str) -> tuple[str | None, str]:
    """'RUN:/path' -> (RUN, '/path'); a host path -> (None, path)."""
    head, sep, tail = spec.partition(":")
    if sep and head.startswith(stack.RUN_PREFIX) and "/" not in head:
        stack.check_run_name(head)
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


def audit(run: str) -> dict:
    """Every egress attempt the run's proxy logged, as records, with counts, and the images
    the run ran (the audit is the run's record)."""
    from .runimages import run_images

    dc = stack.client()
    return {**_egress_audit(run), "images": run_images(stack.by_service(run, dc), dc)}


def _egress_audit(run: str) -> dict:
    """The store is read where it lies, whatever became of the egress: by exec while the
    container runs, else from its volume (the egress stopped, killed, restarting, or out of
    restarts), so the audit outlives the egress. A store that cannot be read is an error
    (EngineError, exit 4), never an empty audit."""
    from .audit import report, summarise

    found = stack.containers(run)
    eg = stack.container_of(run, "egress") if found else None
    if not found:
        volume = stack.state_volume(run)
        if volume is None:
            raise stack.unknown_run(run)
        # Brought down with its audit kept (down --keep-audit): the store alone remains.
        return report(run, None, read_store(run, None, volume), {"running": False,
                                                                 "restarts": None,
                                                                 "oom_killed": None})
    if eg is None:
        sb = stack.container_of(run, "sandbox")
        if sb is None:
            raise stack.unknown_run(run)
        return {"run": run, "offline": True, "records": [], "counts": summarise([]),
                "tunnels": [], "open_tunnels": [], "unparsed_lines": 0,
                "note": f"run {run} has no egress proxy ({sb.labels.get(stack.SERVICE_LABEL)}): "
                        "there is no way out to log"}
    text = eg.logs(stdout=True, stderr=False).decode("utf-8", "replace")
    # The gate's own bounded store: what an agent's flood of the container log cannot evict.
    store = read_store(run, eg, stack.state_volume(run))
    if not store:  # the gate writes the store's header before it serves anything
        raise EngineError(f"the audit of run {run} cannot be read: its store is empty")
    state = eg.attrs.get("State") or {}
    # A restarted proxy kept the run's state (compose.yaml); one that stayed down ended the run.
    return report(run, text, store,
                  {"running": bool(state.get("Running")) and not state.get("Restarting"),
                   "restarts": eg.attrs.get("RestartCount", 0),
                   "oom_killed": bool(state.get("OOMKilled"))})


def read_store(run: str, egress, volume: str | None) -> str:
    """The gate's store as text: by exec in a running egress, else from the run's state
    volume through a throw-away container (read-only, no network, no capabilities) on the
    egress's own image; EngineError when neither way reads it."""
    from auditwire import RUN_STATE, STORE

    why = []
    state = (egress.attrs.get("State") or {}) if egress is not None else {}
    if state.get("Running") and not state.get("Restarting"):
        try:
            code, out = egress.exec_run(["cat", "--", STORE], user="proxy", demux=False)
            if code == 0:
                return out.decode("utf-8", "replace")
            why.append(f"cat in the egress exited {code}")
        except Exception as exc:  # the SDK's APIError: it stopped or restarted meanwhile
            why.append(f"exec in the egress failed ({exc})")
    if volume is None:
        raise EngineError(f"the audit of run {run} cannot be read: its egress is "
                          f"{state.get('Status') or 'gone'} and its state volume is missing"
                          + (f" ({'; '.join(why)})" if why else ""))
    image = egress.attrs.get("Image") if egress is not None else stack.egress_image()
    try:
        out = stack.client().containers.run(
            image, entrypoint=["cat", "--", STORE], user="proxy", network_mode="none",
            read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges:true"],
            mem_limit="128m", volumes={volume: {"bind": RUN_STATE, "mode": "ro"}},
            labels={"org.biotool.audit-of": run}, remove=True, stdout=True, stderr=False)
    except Exception as exc:  # ContainerError (cat failed), ImageNotFound, APIError
        raise EngineError(f"the audit of run {run} cannot be read from its state volume "
                          f"{volume} ({' '.join(str(exc).split())[:300]})") from None
    return out.decode("utf-8", "replace")
