#!/usr/bin/env python3
"""Merge the shards of an hpc/episodes.sbatch job array into one result.

    python3 hpc/merge.py RESULTS --tasks tasks.txt --per-task 10 [--out DIR]

Writes DIR/episodes.jsonl (one line per episode, in tasks-file order: its command, exit code,
times, parsed JSON stdout and, from a runtime with a gate, its egress audit) and DIR/summary.json
(counts, exit codes, failed episodes, the most array tasks seen running at once). DIR defaults to RESULTS. Exit 1, writing nothing,
when a shard is missing or disagrees with the tasks file, or an episode's stdout or audit is
not JSON (an episode that failed with nothing on stdout, as biotool does on an error, is recorded
as failed, with its stderr's last line); exit 2 on bad usage. Standard library only, so it
runs on any login node.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def episodes(tasks: Path) -> list[str]:
    """The tasks file's episodes: every line but blank ones and # comments (as the sbatch does)."""
    lines = tasks.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    """The most intervals open at one instant (an end before a start at the same time)."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def last_line(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:500] if lines else ""


def merge(results: Path, commands: list[str], per_task: int) -> tuple[list[dict], dict, list[str]]:
    problems: list[str] = []
    n_shards = -(-len(commands) // per_task)
    shards = []
    for task in range(n_shards):
        path = results / "shards" / f"{task}.json"
        first = task * per_task
        want = {"first": first, "count": min(per_task, len(commands) - first),
                "total": len(commands), "per_task": per_task}
        try:
            shard = json.loads(path.read_text(encoding="utf-8"))
        except OSError:
            problems.append(f"shard {task} is missing ({path}): array task {task} did not finish")
            continue
        except ValueError:
            problems.append(f"shard {task}: {path} is not JSON")
            continue
        got = {key: shard.get(key) for key in want}
        if got != want:
            problems.append(f"shard {task} disagrees with the tasks file: it has {got}, "
                            f"expected {want}")
            continue
        shards.append(shard)
    shard_of = {i: s for s in shards for i in range(s["first"], s["first"] + s["count"])}

    records = []
    for i, command in enumerate(commands):
        if i not in shard_of:
            continue  # its shard's problem is already reported
        out = results / "episodes" / str(i)
        try:
            meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
            recorded = (out / "command").read_text(encoding="utf-8").rstrip("\n")
            stdout = (out / "stdout.json").read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError) as exc:
            problems.append(f"episode {i}: its files are incomplete ({exc})")
            continue
        if recorded != command:
            problems.append(f"episode {i} ran {recorded!r}, but the tasks file says {command!r}")
            continue
        record = {"episode": i, "shard": shard_of[i]["task"], "job": shard_of[i]["job"],
                  "command": command, "exit_code": meta["exit_code"],
                  "started": meta["started"], "ended": meta["ended"],
                  "duration_s": round(meta["ended"] - meta["started"], 3)}
        if not stdout.strip() and meta["exit_code"] != 0:
            record.update(result=None, error=last_line(out / "stderr.log"))
        else:
            try:
                record["result"] = json.loads(stdout)
            except ValueError:
                problems.append(f"episode {i} ({command!r}, exit {meta['exit_code']}): its stdout "
                                f"is not JSON: {stdout[:200]!r}")
                continue
        if (out / "audit.json").is_file():  # a runtime with a gate: the episode's audit
            try:
                record["audit"] = json.loads((out / "audit.json").read_text(encoding="utf-8"))
            except ValueError:
                problems.append(f"episode {i}: its audit.json is not JSON")
                continue
        records.append(record)

    codes: dict[str, int] = {}
    for r in records:
        codes[str(r["exit_code"])] = codes.get(str(r["exit_code"]), 0) + 1
    summary = {
        "episodes": len(records), "shards": len(shards), "per_task": per_task,
        "exit_codes": dict(sorted(codes.items())),
        "failed": [{"episode": r["episode"], "exit_code": r["exit_code"], "command": r["command"]}
                   for r in records if r["exit_code"] != 0],
        "max_concurrent_shards": max_overlap([(s["started"], s["ended"]) for s in shards]),
        "shard_times": [{"task": s["task"], "host": s["host"], "started": s["started"],
                         "ended": s["ended"]} for s in shards],
    }
    return records, summary, problems


def write(path: Path, text: str) -> None:
    # Through a temporary name, so a reader never sees half a summary.
    part = path.with_name(path.name + ".part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="the job's BIOTOOL_RESULTS directory")
    parser.add_argument("--tasks", type=Path, required=True, help="the job's BIOTOOL_TASKS file")
    parser.add_argument("--per-task", type=int, required=True, help="the job's BIOTOOL_PER_TASK")
    parser.add_argument("--out", type=Path, help="where to write (default: RESULTS)")
    args = parser.parse_args(argv)
    if args.per_task < 1:
        parser.error("--per-task must be at least 1")
    try:
        commands = episodes(args.tasks)
    except OSError as exc:
        parser.error(f"--tasks: {exc}")
    if not commands:
        parser.error(f"--tasks: {args.tasks} has no episodes")
    if not (args.results / "shards").is_dir():
        parser.error(f"{args.results} has no shards/ folder: is it the job's BIOTOOL_RESULTS?")

    records, summary, problems = merge(args.results, commands, args.per_task)
    if problems:
        for line in problems:
            print(f"merge: {line}", file=sys.stderr)
        print(f"merge: {len(problems)} problem(s); nothing written", file=sys.stderr)
        return 1
    out = args.out or args.results
    out.mkdir(parents=True, exist_ok=True)
    write(out / "episodes.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    write(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    print(json.dumps({"episodes": summary["episodes"], "shards": summary["shards"],
                      "exit_codes": summary["exit_codes"], "out": str(out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
