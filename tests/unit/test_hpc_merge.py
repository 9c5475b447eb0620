"""hpc/merge.py on results laid out as hpc/episodes.sbatch writes them (the real job array
runs in tests/image/test_slurm.py): what it merges and every way it refuses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

MERGE = Path(__file__).resolve().parents[2] / "hpc" / "merge.py"
COMMANDS = ["biotool list", "biotool version", "biotool taxonomy --local --fastq x"]


def _results(root: Path, per_task: int = 2) -> tuple[Path, Path]:
    tasks = root / "tasks.txt"
    tasks.write_text("# a comment\n" + "\n\n".join(COMMANDS) + "\n")
    results = root / "results"
    for i, command in enumerate(COMMANDS):
        out = results / "episodes" / str(i)
        out.mkdir(parents=True)
        (out / "command").write_text(command + "\n")
        failed = command.endswith(" x")
        (out / "stdout.json").write_text("" if failed else json.dumps({"i": i}) + "\n")
        error = "biotool: error: --fastq x: no such file\n"
        (out / "stderr.log").write_text(error if failed else "")
        (out / "meta.json").write_text(json.dumps(
            {"episode": i, "exit_code": 2 if failed else 0,
             "started": 10.0 + i, "ended": 11.0 + i}))
    (results / "shards").mkdir()
    for task, first in enumerate(range(0, len(COMMANDS), per_task)):
        count = min(per_task, len(COMMANDS) - first)
        (results / "shards" / f"{task}.json").write_text(json.dumps(
            {"task": task, "job": f"7_{task}", "host": "n1", "first": first, "count": count,
             "total": len(COMMANDS), "per_task": per_task,
             "started": 10.0 + first, "ended": 10.0 + first + count}))
    return tasks, results


def _merge(results: Path, tasks: Path, per_task: int = 2):
    return subprocess.run([sys.executable, str(MERGE), str(results), "--tasks", str(tasks),
                           "--per-task", str(per_task)], capture_output=True, text=True, timeout=30)


def test_merges_every_episode_in_order_with_its_exit_code(tmp_path):
    tasks, results = _results(tmp_path)
    ran = _merge(results, tasks)
    assert ran.returncode == 0, ran.stderr
    rows = [json.loads(line) for line in (results / "episodes.jsonl").read_text().splitlines()]
    assert [(r["command"], r["shard"], r["exit_code"]) for r in rows] == [
        (COMMANDS[0], 0, 0), (COMMANDS[1], 0, 0), (COMMANDS[2], 1, 2)]
    assert [r["result"] for r in rows] == [{"i": 0}, {"i": 1}, None]
    assert rows[2]["error"] == "biotool: error: --fastq x: no such file"
    summary = json.loads((results / "summary.json").read_text())
    assert summary["exit_codes"] == {"0": 2, "2": 1}
    assert summary["failed"] == [{"episode": 2, "exit_code": 2, "command": COMMANDS[2]}]
    # Shard 0 ends at 12.0 as shard 1 starts: touching, not overlapping.
    assert summary["max_concurrent_shards"] == 1


def test_an_enforced_episode_s_audit_is_merged_with_it(tmp_path):
    tasks, results = _results(tmp_path)
    audit = {"run": "biotool-x", "summary": {"allowed": 3, "denied": 0}}
    (results / "episodes" / "1" / "audit.json").write_text(json.dumps(audit))
    ran = _merge(results, tasks)
    assert ran.returncode == 0, ran.stderr
    rows = [json.loads(line) for line in (results / "episodes.jsonl").read_text().splitlines()]
    assert rows[1]["audit"] == audit and "audit" not in rows[0] and "audit" not in rows[2]


def test_overlapping_shards_are_counted(tmp_path):
    tasks, results = _results(tmp_path, per_task=1)
    ran = _merge(results, tasks, per_task=1)
    assert ran.returncode == 0, ran.stderr
    assert json.loads((results / "summary.json").read_text())["max_concurrent_shards"] == 1
    shard = results / "shards" / "2.json"
    shard.write_text(json.dumps({**json.loads(shard.read_text()), "started": 10.5}))
    assert _merge(results, tasks, per_task=1).returncode == 0
    assert json.loads((results / "summary.json").read_text())["max_concurrent_shards"] == 2


@pytest.mark.parametrize("damage, message", [
    (lambda r: (r / "shards" / "1.json").unlink(), "shard 1 is missing"),
    (lambda r: (r / "shards" / "0.json").write_text("{"), "shard 0: "),
    (lambda r: (r / "episodes" / "1" / "stdout.json").write_text("not json"),
     "episode 1 ('biotool version', exit 0): its stdout is not JSON"),
    (lambda r: (r / "episodes" / "0" / "stdout.json").write_text(""),
     "episode 0 ('biotool list', exit 0): its stdout is not JSON"),
    (lambda r: (r / "episodes" / "1" / "meta.json").unlink(),
     "episode 1: its files are incomplete"),
    (lambda r: (r / "episodes" / "0" / "command").write_text("biotool doctor\n"),
     "episode 0 ran 'biotool doctor'"),
    (lambda r: (r / "episodes" / "1" / "audit.json").write_text("{"),
     "episode 1: its audit.json is not JSON"),
])
def test_a_missing_shard_or_a_result_not_json_fails_and_writes_nothing(tmp_path, damage, message):
    tasks, results = _results(tmp_path)
    damage(results)
    ran = _merge(results, tasks)
    assert ran.returncode == 1 and message in ran.stderr, ran.stderr
    assert not (results / "summary.json").exists() and not (results / "episodes.jsonl").exists()


def test_a_shard_of_another_split_is_refused(tmp_path):
    tasks, results = _results(tmp_path, per_task=2)
    ran = _merge(results, tasks, per_task=1)
    assert ran.returncode == 1 and "shard 0 disagrees with the tasks file" in ran.stderr


def test_bad_usage_is_exit_2(tmp_path):
    tasks, results = _results(tmp_path)
    assert _merge(results, tasks, per_task=0).returncode == 2
    assert _merge(tmp_path / "nowhere", tasks).returncode == 2
    (tmp_path / "empty.txt").write_text("# nothing\n\n")
    assert _merge(results, tmp_path / "empty.txt").returncode == 2
