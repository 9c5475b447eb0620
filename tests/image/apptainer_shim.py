#!/usr/bin/env python3
"""A test stand-in for `apptainer`, on docker: exactly the subcommands and flags the
`biotool-apptainer` Inspect provider uses (entrypoints/biotool_sandbox/apptainer.py), anything
else refused with exit 255 as Apptainer's FATAL is, so the provider cannot lean on a flag that
this shim would only fake.

    apptainer version
    apptainer instance start --containall [--net --network none] [--bind SRC:DST[:ro]]...
                             [--workdir DIR] SIF NAME
    apptainer instance stop NAME
    apptainer instance list --json
    apptainer [--quiet] exec --cleanenv [--pwd DIR] instance://NAME CMD...

An instance is a container in hpc/run-docker.sh's shape of Apptainer: `docker run -d` with a
read-only root, HOME it cannot write, the binds as volumes, /tmp and /var/tmp from the workdir
(WORKDIR/tmp, WORKDIR/var_tmp, as Apptainer makes them; in-memory without one), and no network
only when asked for (without --net, Apptainer shares the host's: here --network host). Apptainer
runs as the caller, who owns what it binds: a caller that is root is played by uid 12345, who
is given the writable binds. The SIF is a text file naming the docker image it stands for:
`biotool-shim-image: biotool-sandbox:latest`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# Not the image tests' own label: a session's teardown removes every container carrying that
# one, a concurrent session's running instances included.
LABEL = "biotool-apptainer-shim"
SIF_HEAD = "biotool-shim-image:"
STAND_IN_UID = 12345
VERSION = "1.3.6+biotool-shim"


def fatal(message: str) -> None:
    print(f"FATAL:   {message}", file=sys.stderr)
    sys.exit(255)


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        fatal(f"docker {args[0]} failed: {proc.stderr.strip().splitlines()[-1:] or proc.returncode}")
    return proc


def container(name: str) -> str:
    return f"apptainer-shim-{name}"


def running(name: str) -> bool:
    proc = docker("container", "inspect", "-f", "{{.State.Running}}", container(name), check=False)
    return proc.returncode == 0 and proc.stdout.strip() == "true"


def options(args: list[str], flags: set[str], valued: set[str], repeated: set[str]) -> tuple[dict, list[str]]:
    """Leading --flags of args (refusing any not listed), then the positionals."""
    seen: dict = {name: [] for name in repeated}
    i = 0
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        if arg in flags:
            seen[arg] = True
            i += 1
        elif arg in valued or arg in repeated:
            if i + 1 >= len(args):
                fatal(f"flag needs an argument: {arg}")
            if arg in repeated:
                seen[arg].append(args[i + 1])
            else:
                seen[arg] = args[i + 1]
            i += 2
        else:
            fatal(f"apptainer shim: flag {arg} is not implemented (tests/image/apptainer_shim.py)")
    return seen, args[i:]


def caller() -> tuple[str, int | None]:
    """docker's --user for the caller, and the uid to hand writable binds to (None: the caller's own)."""
    if os.getuid() == 0:
        return f"{STAND_IN_UID}:{STAND_IN_UID}", STAND_IN_UID
    return f"{os.getuid()}:{os.getgid()}", None


def instance_start(args: list[str]) -> None:
    opts, rest = options(args, {"--containall", "--net"}, {"--network", "--workdir"}, {"--bind"})
    if len(rest) != 2:
        fatal("instance start needs SIF and NAME")
    sif, name = rest
    if not opts.get("--containall"):
        fatal("apptainer shim: only --containall instances are implemented")
    if opts.get("--network") not in (None, "none") or ("--network" in opts) != bool(opts.get("--net")):
        fatal("apptainer shim: networking is implemented as --net --network none or no flag at all")
    try:
        head = Path(sif).read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        fatal(f"could not open image {sif}: {exc}")
    if not head.startswith(SIF_HEAD):
        fatal(f"{sif} is not a shim SIF (a line '{SIF_HEAD} IMAGE')")
    image = head[len(SIF_HEAD):].strip()
    user, hand_to = caller()
    mounts: list[str] = []
    writable: list[Path] = []
    for spec in opts["--bind"]:
        parts = spec.split(":")
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "ro") or "," in spec:
            fatal(f"apptainer shim: bind spec {spec!r} is not implemented (SRC:DST or SRC:DST:ro)")
        if not Path(parts[0]).exists():
            fatal(f"container creation failed: mount {parts[0]}->{parts[1]} error: "
                  f"while mounting {parts[0]}: mount source {parts[0]} doesn't exist")
        mounts += ["-v", spec]
        if len(parts) == 2:
            writable.append(Path(parts[0]))
    if opts.get("--workdir"):
        workdir = Path(opts["--workdir"])
        if not workdir.is_dir():
            fatal(f"workdir {workdir} does not exist")
        for sub, dest in (("tmp", "/tmp"), ("var_tmp", "/var/tmp")):
            (workdir / sub).mkdir(mode=0o700, exist_ok=True)
            writable.append(workdir / sub)
            mounts += ["-v", f"{workdir / sub}:{dest}"]
    else:
        mounts += ["--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
    if hand_to is not None:
        for path in writable:
            os.chown(path, hand_to, hand_to)
    network = "none" if opts.get("--net") else "host"
    proc = docker("run", "-d", "--name", container(name), "--label", f"{LABEL}={name}",
                  "--label", f"{LABEL}.sif={os.path.abspath(sif)}",
                  "--label", f"{LABEL}.uid={os.getuid()}",
                  "--network", network, "--user", user, "--read-only",
                  "-e", "HOME=/home/agent", *mounts, image, "sleep", "infinity", check=False)
    if proc.returncode != 0:
        if "is already in use" in proc.stderr:
            fatal(f"instance {name} already exists")
        fatal(f"failed to start instance {name}: {proc.stderr.strip()}")
    print(f"INFO:    instance started successfully", file=sys.stderr)


def instance_stop(args: list[str]) -> None:
    _, rest = options(args, set(), set(), set())
    if len(rest) != 1:
        fatal("instance stop needs NAME (the shim implements no --all)")
    name = rest[0]
    if docker("rm", "-f", container(name), check=False).returncode != 0:
        fatal(f"no instance found with name {name}")
    print(f"INFO:    Stopping {name} instance", file=sys.stderr)


def instance_list(args: list[str]) -> None:
    opts, rest = options(args, {"--json"}, set(), set())
    if rest or not opts.get("--json"):
        fatal("apptainer shim: only `instance list --json` is implemented")
    ids = docker("ps", "-q", "--filter", f"label={LABEL}.uid={os.getuid()}").stdout.split()
    found = []
    for doc in json.loads(docker("inspect", *ids).stdout) if ids else []:
        labels = doc["Config"]["Labels"]
        found.append({"instance": labels[LABEL], "pid": doc["State"]["Pid"],
                      "img": labels[f"{LABEL}.sif"], "ip": "", "logErrPath": "", "logOutPath": ""})
    print(json.dumps({"instances": found}, indent=4))


def exec_(args: list[str]) -> None:
    opts, rest = options(args, {"--cleanenv"}, {"--pwd"}, set())
    if not opts.get("--cleanenv"):
        # Without it Apptainer hands the host's environment in; the shim implements only this.
        fatal("apptainer shim: exec is implemented with --cleanenv only")
    if len(rest) < 2 or not rest[0].startswith("instance://"):
        fatal("apptainer shim: exec is implemented as exec instance://NAME CMD...")
    name = rest[0][len("instance://"):]
    if not running(name):
        fatal(f"no instance found with name {name}")
    pwd = ["-w", opts["--pwd"]] if opts.get("--pwd") else []
    # exec in place: stdin, stdout, stderr, the exit code and a kill of the caller's group
    # all reach the docker CLI as they would reach Apptainer.
    os.execvp("docker", ["docker", "exec", "-i", *pwd, container(name), *rest[1:]])


def main(argv: list[str]) -> None:
    if argv[:1] == ["--quiet"]:
        argv = argv[1:]
    if argv == ["version"]:
        print(VERSION)
        return
    if argv[:1] == ["exec"]:
        return exec_(argv[1:])
    handlers = {"start": instance_start, "stop": instance_stop, "list": instance_list}
    if argv[:1] == ["instance"] and len(argv) > 1 and argv[1] in handlers:
        return handlers[argv[1]](argv[2:])
    fatal(f"apptainer shim: {' '.join(argv[:2]) or '(nothing)'} is not implemented "
          "(tests/image/apptainer_shim.py)")


if __name__ == "__main__":
    main(sys.argv[1:])
