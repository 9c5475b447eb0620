"""An HPC node in a container (image/hpc/build-node.sh): real Apptainer, squashfuse, Slurm and
munge, run the way most sites run Apptainer today, setuid-less on user namespaces, as a user
the sandbox image has never seen. The tests and bench/apptainer_bench.py drive it with `docker exec`.

The node sees the SIF at /hpc/biotool-sandbox.sif, this checkout read-only at its own path (so
host paths under it mean the same inside), and a results folder the node's user owns at the
host path it is given.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from biotool_testing import polling
from biotool_testing.paths import REPO
from biotool_testing.ran import Ran

APPTAINER_VERSION = (REPO / "image" / "hpc" / "APPTAINER_VERSION").read_text().strip()
NODE_IMAGE = os.environ.get("HPC_NODE_IMAGE", f"biotool-hpc-node:{APPTAINER_VERSION}")
SIF = Path(os.environ.get("BIOTOOL_SIF", REPO / "out" / "biotool-sandbox.sif"))
NODE_SIF = "/hpc/biotool-sandbox.sif"
# The egress image's SIF (make egress-sif): an episode's own gate when it reaches the relay.
EGRESS_SIF = Path(os.environ.get("BIOTOOL_EGRESS_SIF", REPO / "out" / "biotool-egress.sif"))
NODE_EGRESS_SIF = "/hpc/biotool-egress.sif"
NODE_USER = "hpcuser"
LABEL = "biotool-hpc-node"
# What Apptainer needs in a container here (docs/hpc.md): no capability for the user, who runs
# it. CAP_SYS_ADMIN is root's, for slurmd: Slurm 26.05 starts each job step in a new mount and
# PID namespace. The user's processes get no capability from it (CapEff 0, and the node has no
# setuid starter); --init reaps what Apptainer's instances leave to PID 1.
SECURITY = ["--init", "--cap-add", "SYS_ADMIN", "--security-opt", "seccomp=unconfined",
            "--security-opt", "apparmor=unconfined", "--security-opt", "systempaths=unconfined",
            "--device", "/dev/fuse"]
# The offline shape of hpc/run-apptainer.sh and the provider.
OFFLINE = ["--containall", "--net", "--network", "none"]


def sif_record(sif: Path = SIF) -> dict:
    """The record image/hpc/build-sif.sh wrote beside the SIF ({} when there is none)."""
    path = Path(f"{sif}.json")
    return json.loads(path.read_text()) if path.is_file() else {}


def sif_is_current(image: str, sif: Path = SIF, make: str = "sif") -> tuple[bool, str]:
    """Whether the SIF was built from the image's current id, and what is wrong when not."""
    if not sif.is_file():
        return False, f"{sif} does not exist: run make {make}"
    record = sif_record(sif)
    image_id = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", image],
                              capture_output=True, text=True).stdout.strip()
    if record.get("image_id") != image_id:
        return False, (f"{sif} was built from {record.get('image_id', 'an unrecorded image')}, "
                       f"not {image} ({image_id or 'absent'}): run make {make}")
    return True, ""


@dataclass
class Node:
    name: str
    results: Path  # host path, bound at the same path in the node, owned by the node's user
    uid: int

    def sh(self, script: str, *, user: str = NODE_USER, timeout: float = 1200,
           env: dict[str, str] | None = None) -> Ran:
        """`script` in bash on the node, as its user unless told otherwise."""
        argv = ["docker", "exec", "-u", user, "-w", str(self.results)]
        for key, value in (env or {}).items():
            argv += ["-e", f"{key}={value}"]
        argv += [self.name, "bash", "-c", script]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            # The client's death leaves the command running in the node: stop what the user runs.
            subprocess.run(["docker", "exec", self.name, "pkill", "-KILL", "-u", user],
                           capture_output=True)
            raise AssertionError(f"on the node, after {timeout} s: {script[:200]}") from exc
        return Ran(code=p.returncode, stdout=p.stdout, stderr=p.stderr)

    def apptainer(self, line: str, *, shape: list[str] = OFFLINE, binds: list[str] = (),
                  workdir: bool = True, pwd: str = "/work", timeout: float = 1200,
                  env: dict[str, str] | None = None) -> Ran:
        """`line` in bash in the SIF, in a fresh episode folder (its /work and --workdir)."""
        episode = f"{self.results}/ep-{uuid.uuid4().hex[:8]}"
        args = [*shape, *[a for b in binds for a in ("--bind", b)],
                "--bind", f"{episode}/work:/work", "--pwd", pwd]
        if workdir:
            args += ["--workdir", f"{episode}/tmp"]
        # By /usr/bin/env, as the provider does: Apptainer's --env splits values at commas.
        command = ["/usr/bin/env", *[f"{k}={v}" for k, v in (env or {}).items()], "bash", "-c", line]
        script = (f"mkdir -p {episode}/work {episode}/tmp && "
                  f"apptainer --quiet exec {shlex.join(args)} {NODE_SIF} {shlex.join(command)}; "
                  f"rc=$?; rm -rf {episode}; exit $rc")
        return self.sh(script, timeout=timeout)


def start(results: Path, sif: Path = SIF, image: str = NODE_IMAGE, hostname: str = "hpcnode") -> Node:
    """A running node (munged, slurmctld and slurmd up) that sees the SIF and this checkout."""
    uid = int(subprocess.run(["docker", "run", "--rm", "--entrypoint", "id", image, "-u", NODE_USER],
                             capture_output=True, text=True, check=True).stdout)
    results.mkdir(parents=True, exist_ok=True)
    os.chown(results, uid, uid)
    name = f"biotool-hpc-node-{uuid.uuid4().hex[:8]}"
    egress = ["-v", f"{EGRESS_SIF}:{NODE_EGRESS_SIF}:ro"] if EGRESS_SIF.is_file() else []
    subprocess.run(["docker", "run", "-d", "--name", name, "--hostname", hostname,
                    "--label", LABEL, *SECURITY,
                    "-v", f"{sif}:{NODE_SIF}:ro", *egress, "-v", f"{REPO}:{REPO}:ro",
                    "-v", f"{results}:{results}", image],
                   capture_output=True, text=True, check=True)
    node = Node(name=name, results=results, uid=uid)

    def ready() -> bool:
        return "ready" in subprocess.run(["docker", "logs", name], capture_output=True,
                                         text=True).stdout
    try:
        polling.until("the HPC node's Slurm to start", ready, every_s=0.5)
        polling.until("the node to be idle in Slurm",
                      lambda: node.sh("sinfo -h -N -o %T").stdout.strip() == "idle", every_s=1)
    except AssertionError:
        logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True)
        stop(node)
        raise AssertionError(f"the HPC node did not start: {logs.stdout[-2000:]}{logs.stderr[-2000:]}")
    return node


def stop(node: Node) -> None:
    """The node, then the networks a test joined it to (labelled with its name): docker's
    disconnect would drop the node's own name from its /etc/hosts, which Slurm resolves."""
    subprocess.run(["docker", "rm", "-f", node.name], capture_output=True)
    nets = subprocess.run(["docker", "network", "ls", "-q", "--filter", f"label={LABEL}={node.name}"],
                          capture_output=True, text=True).stdout.split()
    if nets:
        subprocess.run(["docker", "network", "rm", *nets], capture_output=True)


class SandboxOnNode:
    """The image tests' `sandbox` runner (biotool_testing.images.Runner's `run`) on the node:
    each command a fresh `apptainer exec` of the SIF in the offline shape. The docker shape's
    keywords (user, read_only, network_mode, tmpfs, HOME) are what Apptainer's shape already
    is, so they are not passed on; other environment variables are. A volume is copied into the
    node's results folder first, since the node sees no host path outside this checkout."""

    def __init__(self, node: Node):
        self.node = node

    def run(self, command, timeout: float = 1200, volumes: dict | None = None,
            environment: dict | None = None, **_shape) -> Ran:
        line = command if isinstance(command, str) else shlex.join(command)
        binds = []
        for host, spec in (volumes or {}).items():
            copy = self.node.results / "volumes" / uuid.uuid4().hex[:8]
            copy.parent.mkdir(exist_ok=True)
            subprocess.run(["cp", "-a", host, str(copy)], check=True)
            subprocess.run(["chown", "-R", f"{self.node.uid}:{self.node.uid}", str(copy.parent)],
                           check=True)
            binds.append(f"{copy}:{spec['bind']}:{spec.get('mode', 'rw')}")
        env = {k: v for k, v in (environment or {}).items() if k != "HOME"}
        return self.node.apptainer(line, binds=binds, env=env or None, timeout=timeout)

    def biotool(self, *args: str, **kwargs) -> Ran:
        return self.run(["biotool", *args], **kwargs)
