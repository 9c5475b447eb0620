"""hpc/episodes.sbatch on a real single-node Slurm (Debian's slurm-wlm and munge, started
here) with hpc/run-docker.sh, the runtime of docker nodes: a throttled job array of 3 tasks x 2
episodes of the image, offline, then hpc/merge.py over the shards.

run-docker.sh is the docker run shape of `apptainer exec --containall --net --network none`
(APPTAINER_SHAPE in tests/biotool_testing/images.py); the template with real Apptainer is
tests/apptainer/test_slurm_apptainer.py.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from biotool_testing import polling

REPO = Path(__file__).resolve().parents[2]
HPC = REPO / "hpc"
DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo")
SAMPLE = "/opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq"
PROBE = ("python3 -c \"import json, os; print(json.dumps({'uid': os.getuid(), "
         "'root_writable': os.access('/', os.W_OK), "
         "'site_writable': os.access('/opt/biotool-site', os.W_OK)}))\"")
# 6 episodes, 2 per array task: 3 tasks, throttled to 1 at a time on a node with room for 2.
TASKS = f"""# episodes for tests/image/test_slurm.py
biotool list
biotool taxonomy --local --fastq {SAMPLE}

biotool align --fastq {SAMPLE} --reference MN908947.3
biotool doctor
{PROBE}
biotool taxonomy --local --fastq /work/absent.fastq
"""
# Limits that only call a job that never ends a failure: ten times a busy host's minute or two.
JOB_LIMIT_S = 1800
EPISODE_TIMEOUT_S = 600

pytestmark = pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in DAEMONS),
    reason="Slurm and munge are not installed (apt-get install slurm-wlm munge; .ci/run does)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Slurm:
    """munged, slurmctld and slurmd for one node, all under one private directory."""

    def __init__(self, root: Path):
        self.root, self.procs = root, []
        self.node = socket.gethostname().split(".")[0]
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def _start(self, name: str, argv: list[str]):
        log = open(self.root / f"{name}.out", "wb")
        self.procs.append((name, subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                                  env=self.env, start_new_session=True)))

    def log(self, name: str) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else "(no log)"

    def start(self):
        r = self.root
        for sub in ("munge", "ctld", "spool"):
            (r / sub).mkdir(mode=0o700)
        key, sock = r / "munge" / "munge.key", r / "munge" / "munge.socket"
        subprocess.run(["mungekey", "--create", "--keyfile", str(key)], check=True, timeout=30)
        # munged refuses a socket directory others can write; the private root keeps it ours.
        self._start("munged", ["munged", "--foreground", "--force", f"--key-file={key}",
                               f"--socket={sock}", f"--pid-file={r / 'munge' / 'munged.pid'}",
                               f"--seed-file={r / 'munge' / 'seed'}",
                               f"--log-file={r / 'munged.log'}"])
        polling.until("munged's socket", sock.exists, every_s=0.2)
        self.conf.write_text(f"""\
ClusterName=biotooltest
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={r / 'ctld'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={r / 'ctld' / 'slurmctld.pid'}
SlurmdPidFile={r / 'spool' / 'slurmd.pid'}
SlurmctldLogFile={r / 'slurmctld.log'}
SlurmdLogFile={r / 'slurmd.log'}
# No cgroups in a container: processes tracked by parentage, no task containment.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={r / 'jobcomp.txt'}
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MinJobAge=600
NodeName={self.node} NodeAddr=127.0.0.1 CPUs=2 RealMemory=4096 State=UNKNOWN
PartitionName=debug Nodes={self.node} Default=YES MaxTime=30 State=UP
""")
        self._start("slurmctld", ["slurmctld", "-D", "-c", "-f", str(self.conf)])
        self._start("slurmd", ["slurmd", "-D", "-N", self.node, "-f", str(self.conf)])

        def idle():
            p = self.cmd("sinfo", "-h", "-N", "-o", "%T", check=False)
            return p.returncode == 0 and p.stdout.strip() == "idle"
        try:
            polling.until("the node to be idle", idle, every_s=1)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nslurmctld: {self.log('slurmctld')}\n"
                                 f"slurmd: {self.log('slurmd')}") from None

    def cmd(self, *argv: str, check: bool = True, timeout: int = 30):
        p = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(argv)}: exit {p.returncode}\n{p.stderr}")
        return p

    def stop(self):
        self.cmd("scancel", "--full", "--user=root", check=False, timeout=10)
        for _, proc in reversed(self.procs):
            proc.terminate()
        for _, proc in reversed(self.procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)  # its own session: slurmstepd and job steps go too
                proc.wait(timeout=5)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    root = tmp_path_factory.mktemp("slurm")
    os.chmod(root, 0o700)
    cluster = Slurm(root)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def _job_states(slurm: Slurm, job: str) -> list[dict]:
    out = slurm.cmd("scontrol", "-o", "show", "job", job).stdout
    return [dict(f.split("=", 1) for f in line.split() if "=" in f)
            for line in out.splitlines() if line.strip()]


def test_job_array_runs_throttled_offline_episodes_and_the_shards_merge(slurm, images,
                                                                        docker_client, tmp_path):
    tasks, results, site = tmp_path / "tasks.txt", tmp_path / "results", tmp_path / "site"
    tasks.write_text(TASKS)
    # A site overlay anyone could write, so only the read-only bind keeps episodes out of it.
    site.mkdir()
    (site / "staged.json").write_text('{"items": {}}\n')
    os.chmod(site, 0o777)
    env = ",".join([f"ALL,BIOTOOL_TASKS={tasks}", "BIOTOOL_PER_TASK=2",
                    f"BIOTOOL_RESULTS={results}",
                    f"BIOTOOL_RUNTIME={HPC / 'run-docker.sh'}", f"BIOTOOL_SITE={site}",
                    f"BIOTOOL_IMAGE={images['sandbox']}", f"BIOTOOL_EPISODE_TIMEOUT={EPISODE_TIMEOUT_S}"])
    # The template's own 2 CPUs and 8G do not fit this node twice; 1 CPU each leaves room for
    # 2 at once, so it is the %1 throttle that keeps the tasks one at a time.
    job = slurm.cmd("sbatch", "--parsable", "--array=0-2%1", "--cpus-per-task=1", "--mem=1G",
                    "--time=30", f"--chdir={tmp_path}", f"--output={tmp_path}/task-%a.log",
                    f"--export={env}", str(HPC / "episodes.sbatch")).stdout.strip()
    try:
        running_at_once = []

        def finished():
            states = [s["JobState"] for s in _job_states(slurm, job)]
            running_at_once.append(states.count("RUNNING"))
            return all(s in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT") for s in states)
        polling.until(f"job array {job} to finish", finished, limit_s=JOB_LIMIT_S, every_s=1)
    finally:
        slurm.cmd("scancel", job, check=False)
    states = _job_states(slurm, job)
    logs = {p.name: p.read_text(errors="replace")[-1500:] for p in tmp_path.glob("task-*.log")}
    assert len(states) == 3 and {(s["JobState"], s["ExitCode"]) for s in states} \
        == {("COMPLETED", "0:0")}, (states, logs)
    # Sampled once a second, never two at once (a fast host may finish a task unsampled);
    # the shards' own start and end times below say it for every moment.
    assert max(running_at_once) <= 1

    merged = subprocess.run([sys.executable, str(HPC / "merge.py"), str(results),
                             "--tasks", str(tasks), "--per-task", "2"],
                            capture_output=True, text=True, timeout=60)
    assert merged.returncode == 0, merged.stderr
    summary = json.loads((results / "summary.json").read_text())
    rows = [json.loads(line) for line in (results / "episodes.jsonl").read_text().splitlines()]
    assert summary["episodes"] == 6 and summary["shards"] == 3
    assert summary["exit_codes"] == {"0": 5, "2": 1}
    assert summary["failed"] == [{"episode": 5, "exit_code": 2,
                                  "command": "biotool taxonomy --local --fastq /work/absent.fastq"}]
    # The throttle as the shards saw it: no two array tasks' runs overlap.
    assert summary["max_concurrent_shards"] == 1
    assert [r["shard"] for r in rows] == [0, 0, 1, 1, 2, 2]
    listing, taxonomy, align, doctor, probe, absent = (r["result"] for r in rows)
    assert listing["site"] == "/opt/biotool-site"
    assert taxonomy["mode"] == "local" and taxonomy["n"] > 0
    assert "Severe acute respiratory syndrome coronavirus 2" in json.dumps(taxonomy["summary"])
    assert align["reference"] == "MN908947.3" and align["mapped"] == 200
    assert all(c["ok"] for c in doctor["checks"] if c["required"]), doctor
    assert probe == {"uid": 12345, "root_writable": False, "site_writable": False}
    assert absent is None and "no such file" in rows[5]["error"]
    assert not docker_client.containers.list(ignore_removed=True, all=True, filters={"label": "biotool-hpc-episode"})

    # A missing shard, and a result that is not JSON, each fail the merge and write nothing.
    for name, damage, message in (
            ("missing", lambda d: (d / "shards" / "1.json").unlink(), "shard 1 is missing"),
            ("garbled", lambda d: (d / "episodes" / "3" / "stdout.json").write_text("{oops"),
             "episode 3 ('biotool doctor', exit 0): its stdout is not JSON")):
        copy = tmp_path / name
        shutil.copytree(results, copy)
        (copy / "summary.json").unlink()
        damage(copy)
        bad = subprocess.run([sys.executable, str(HPC / "merge.py"), str(copy), "--tasks",
                              str(tasks), "--per-task", "2"], capture_output=True, text=True,
                             timeout=60)
        assert bad.returncode == 1 and message in bad.stderr, (name, bad.stderr)
        assert not (copy / "summary.json").exists()
