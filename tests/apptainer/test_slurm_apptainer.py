"""hpc/episodes.sbatch on the node's real Slurm with its default runtime, hpc/run-apptainer.sh:
a throttled job array of 20 offline episodes of the SIF submitted by the node's user, merged by
hpc/merge.py; and a hung episode killed at its timeout while the batch goes on."""

from __future__ import annotations

import json
import subprocess
import sys

from biotool_testing import polling
from biotool_testing.hpc_node import NODE_SIF
from biotool_testing.paths import REPO

HPC = REPO / "hpc"
SAMPLE = "/opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq"
PROBE = ("python3 -c \"import json, os; print(json.dumps({'uid': os.getuid(), "
         "'root_writable': os.access('/', os.W_OK), "
         "'site_writable': os.access('/opt/biotool-site', os.W_OK), "
         "'interfaces': [l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]]}))\"")
VARIANT = ("biotool call variant_annotate "
           "'{\"reference\": \"MN908947.3\", \"position\": 23403, \"ref\": \"A\", \"alt\": \"G\"}'")
# 20 episodes, 2 per array task: 10 tasks, at most 2 at once.
EPISODES = ([
    "biotool list",
    f"biotool taxonomy --local --sample 20 --fastq {SAMPLE}",
    f"biotool align --fastq {SAMPLE} --reference MN908947.3",
    "biotool doctor --no-sha",
    PROBE,
] * 3) + [VARIANT, VARIANT, "biotool taxonomy --local --fastq /work/absent.fastq",
          "biotool references", "biotool version"]
# Limits that only call a job that never ends a failure: ten times a busy host's few minutes.
JOB_LIMIT_S = 2400
EPISODE_TIMEOUT_S = 900
HUNG_TIMEOUT_S = 10


def _site(node):
    """The site overlay the episodes bind read-only; anyone could write its folder."""
    site = node.results / "site"
    site.mkdir(exist_ok=True)
    (site / "staged.json").write_text('{"items": {}}\n')
    site.chmod(0o777)
    return site


def _submit(node, tasks: str, results: str, array: str, timeout_s: int) -> str:
    env = ",".join(["ALL", f"BIOTOOL_TASKS={tasks}", "BIOTOOL_PER_TASK=2",
                    f"BIOTOOL_RESULTS={results}", f"BIOTOOL_SIF={NODE_SIF}",
                    f"BIOTOOL_RUNTIME={HPC / 'run-apptainer.sh'}",
                    f"BIOTOOL_SITE={_site(node)}", f"BIOTOOL_EPISODE_TIMEOUT={timeout_s}"])
    ran = node.sh(f"sbatch --parsable --array={array} --cpus-per-task=1 --mem=1G --time=60 "
                  f"--chdir={node.results} --output={results}-task-%a.log --export={env} "
                  f"{HPC / 'episodes.sbatch'}")
    assert ran.code == 0, ran
    return ran.stdout.strip()


def _states(node, job: str) -> list[dict]:
    out = node.sh(f"scontrol -o show job {job}").stdout
    return [dict(f.split("=", 1) for f in line.split() if "=" in f)
            for line in out.splitlines() if line.strip()]


def _wait(node, job: str) -> tuple[list[dict], list[int]]:
    running_at_once = []

    def finished():
        states = [s["JobState"] for s in _states(node, job)]
        running_at_once.append(states.count("RUNNING"))
        return states and all(s in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT") for s in states)
    try:
        polling.until(f"job array {job} to finish", finished, limit_s=JOB_LIMIT_S, every_s=2)
    finally:
        node.sh(f"scancel {job}")
    return _states(node, job), running_at_once


def _merge(results, tasks, per_task=2) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(HPC / "merge.py"), str(results), "--tasks", str(tasks),
                           "--per-task", str(per_task)], capture_output=True, text=True, timeout=60)


def test_a_job_array_of_20_apptainer_episodes_runs_throttled_and_merges(node):
    tasks, results = node.results / "tasks.txt", node.results / "array"
    tasks.write_text("# 20 episodes for tests/apptainer/test_slurm_apptainer.py\n"
                     + "\n".join(EPISODES) + "\n")
    job = _submit(node, str(tasks), str(results), "0-9%2", EPISODE_TIMEOUT_S)
    states, running_at_once = _wait(node, job)
    logs = {p.name: p.read_text(errors="replace")[-1500:] for p in node.results.glob("array-task-*.log")}
    assert len(states) == 10 and {(s["JobState"], s["ExitCode"]) for s in states} \
        == {("COMPLETED", "0:0")}, (states, logs)
    assert max(running_at_once) <= 2

    merged = _merge(results, tasks)
    assert merged.returncode == 0, merged.stderr
    summary = json.loads((results / "summary.json").read_text())
    rows = [json.loads(line) for line in (results / "episodes.jsonl").read_text().splitlines()]
    assert summary["episodes"] == 20 and summary["shards"] == 10
    assert summary["exit_codes"] == {"0": 19, "2": 1}, summary
    assert summary["max_concurrent_shards"] <= 2
    assert [r["shard"] for r in rows] == [i // 2 for i in range(20)]
    for i in range(3):
        listing, taxonomy, align, doctor, probe = (r["result"] for r in rows[5 * i:5 * i + 5])
        assert listing["site"] == "/opt/biotool-site"
        assert taxonomy["mode"] == "local" and taxonomy["n"] > 0
        assert "Severe acute respiratory syndrome coronavirus 2" in json.dumps(taxonomy["summary"])
        assert align["reference"] == "MN908947.3" and align["mapped"] == 200
        assert all(c["ok"] for c in doctor["checks"] if c["required"]), doctor
        assert probe == {"uid": node.uid, "root_writable": False, "site_writable": False,
                         "interfaces": ["lo"]}, probe
    annotated = [r["result"] for r in rows[15:17]]
    assert annotated[0] == annotated[1] and "D614G" in json.dumps(annotated[0]), annotated
    assert rows[17]["result"] is None and "no such file" in rows[17]["error"]
    assert rows[18]["exit_code"] == rows[19]["exit_code"] == 0
    # Nothing of an episode stays on the node: no instance, no scratch folder.
    assert node.sh("apptainer instance list --json").json["instances"] == []
    assert node.sh("ls /tmp | grep -c '^biotool-' || true").stdout.strip() == "0"


def test_a_hung_episode_is_killed_at_its_timeout_and_the_batch_goes_on(node):
    tasks, results = node.results / "hung.txt", node.results / "hung"
    tasks.write_text("sleep 3600\nbiotool list\n")
    job = _submit(node, str(tasks), str(results), "0", HUNG_TIMEOUT_S)
    states, _ = _wait(node, job)
    assert [(s["JobState"], s["ExitCode"]) for s in states] == [("COMPLETED", "0:0")], states
    merged = _merge(results, tasks)
    assert merged.returncode == 0, merged.stderr
    rows = [json.loads(line) for line in (results / "episodes.jsonl").read_text().splitlines()]
    assert [r["exit_code"] for r in rows] == [124, 0], rows
    assert rows[0]["ended"] - rows[0]["started"] >= HUNG_TIMEOUT_S
    # The killed episode's processes went with it.
    assert node.sh("pgrep -u hpcuser -x sleep || true").stdout.strip() == ""
