"""Honest BLAST runs beside flooding ones on one host (issue 48, item 3): every honest one scores 1.

    python bench/blast_concurrency_bench.py [--honest 4] [--flooders 2] [--hold 120]

Brings up --honest runs that declare BLAST (`up --blast`) and --flooders that do not, all with
the egress hold --hold s, every egress reaching one mock NCBI (tests/biotool_testing/mock_ncbi.py,
TLS under NCBI's name, its rules checked). Each honest run gets the reads-organism-blast task's
own draw (made in the image, as its draw service makes it) and runs the task's oracle as written
(paths moved); each flooder posts Puts of made-up letters back to back for as long. Each honest
run is then graded by the task's grader in the image on its own egress audit and truth.
Prints one JSON object: each honest run's reward, search and time, each flooder's answers by
HTTP status, and the mock's count of breaches of NCBI's rules (0 expected). Needs the images
(`make image`); takes minutes: NCBI's one contact every 10 s is shared by every run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import repo_paths  # noqa: F401 - puts tests/ on the path

from biotool_testing import certificates, stack

TASK = stack.REPO / "harbor" / "tasks" / "reads-organism-blast"
ARTIFACTS = "/tmp/logs/artifacts"  # /logs is Harbor's mount; the stack's root is read-only
FLOOD = ("end=$((SECONDS+{seconds})); while [ $SECONDS -lt $end ]; do "
         "curl -sS -m 300 -o /dev/null -w '%{{http_code}}\\n' -d "
         "'CMD=Put&PROGRAM=blastn&DATABASE=nt&QUERY=" + "ACGTTGCA" * 8 + "' "
         "https://blast.ncbi.nlm.nih.gov/Blast.cgi || echo failed; done")


def honest(run: dict, folder: Path, out: dict) -> None:
    key = json.loads((TASK / "key.json").read_text())
    drew = stack.python_in_image(folder, "-m", "biotool_sandbox.harbor_draw", "--draw", key["draw"],
                    "--public", "/g/task", "--truth", "/g/truth.json")
    if drew.returncode != 0:
        out["error"] = drew.stderr[-500:]
        return
    stack.launcher("exec", run["run"], "--", "mkdir", "-p", "/work/task")
    stack.launcher("cp", str(folder / "task" / "reads.fastq"),
                   f"{run['run']}:/work/task/reads.fastq")
    stack.launcher("cp", str(TASK / "solve.sh"), f"{run['run']}:/work/solve.sh")
    start = time.monotonic()
    res = stack.launcher("exec", run["run"], "--timeout", "1700", "--", "bash", "-c",
                         f"mkdir -p {ARTIFACTS} && sed -e 's#/logs/artifacts#{ARTIFACTS}#g' "
                         f"-e 's#/task/#/work/task/#g' /work/solve.sh | bash && "
                         f"cat {ARTIFACTS}/answer.json", timeout=1800)
    out["agent_s"] = round(time.monotonic() - start, 1)
    out["exit_code"] = res["exit_code"]
    (folder / "answer.json").write_text(res["stdout"] or "{}")
    code, store = stack.container(run["containers"]["egress"]).exec_run(
        ["cat", "--", "/var/lib/biotool-egress-run/audit.jsonl"], user="proxy")
    (folder / "audit.jsonl").write_bytes(store)
    (folder / "key.json").write_bytes((TASK / "key.json").read_bytes())
    (folder / "out").mkdir()
    graded = stack.python_in_image(folder, "-m", "biotool_sandbox.harbor_grade", "--key", "/g/key.json",
                      "--answer", "/g/answer.json", "--audit", "/g/audit.jsonl",
                      "--out", "/g/out", "--truth", "/g/truth.json")
    reward = json.loads((folder / "out" / "reward.json").read_text())
    out.update(grader_exit=graded.returncode, reward=reward.get("reward"),
               search_reads=reward.get("search_reads"), paced=reward.get("egress_paced"),
               organism=json.loads((folder / "truth.json").read_text())["values"]["organism"])


def flood(run: dict, seconds: int, out: dict) -> None:
    res = stack.launcher("exec", run["run"], "--timeout", str(seconds + 330), "--", "bash",
                         "-c", FLOOD.format(seconds=seconds), timeout=seconds + 400)
    out["answers"] = dict(Counter(res["stdout"].split()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--honest", type=int, default=4)
    ap.add_argument("--flooders", type=int, default=2)
    ap.add_argument("--hold", type=int, default=120)
    ap.add_argument("--flood-s", type=int, default=420, help="how long each flooder floods")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="blast-concurrency-"))
    certs = certificates.server_ca(tmp / "ca", stack.ALLOWED_HOST)
    # Small runs (2.5g each with the egress), their tmpfs leaving the 1g processes need.
    env = {"BIOTOOL_EGRESS_HOLD_S": str(args.hold), "BIOTOOL_TMP_SIZE": "256m",
           "BIOTOOL_VARTMP_SIZE": "64m"}
    small = ("--memory", "2g", "--work-size", "256m", "--extra-ca", certs["ca"])
    runs, mock = [], None
    try:
        for i in range(args.honest + args.flooders):
            runs.append(stack.launcher("up", *(("--blast",) if i < args.honest else ()),
                                       *small, env=env))
        mock = stack.start_mock_ncbi(runs, certs, f"{runs[0]['run']}-ncbi", "--rtoe", "1")
        results = [{"run": r["run"], "declared": i < args.honest} for i, r in enumerate(runs)]
        threads = [threading.Thread(target=flood, args=(r, args.flood_s, out))
                   for r, out in zip(runs[args.honest:], results[args.honest:])]
        for t in threads:
            t.start()
        time.sleep(15)  # the flood under way before the honest runs ask
        for i, (r, out) in enumerate(zip(runs[:args.honest], results[:args.honest])):
            (tmp / f"honest{i}").mkdir()
            threads.append(threading.Thread(target=honest, args=(r, tmp / f"honest{i}", out)))
            threads[-1].start()
        for t in threads:
            t.join()
        seen = stack.mock_requests(mock)
        print(json.dumps({"honest": args.honest, "flooders": args.flooders, "hold_s": args.hold,
                          "runs": results, "mock_requests": len(seen["requests"]),
                          "mock_violations": len(seen["violations"]),
                          "all_honest_scored_1": all(r.get("reward") == 1
                                                     for r in results if r["declared"])},
                         indent=1))
    finally:
        if mock is not None:
            mock.remove(force=True)
        for r in runs:
            stack.launcher("down", r["run"], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
