"""Local taxonomy benchmark: reads per second of `biotool taxonomy --local` on the demo panel.

    python bench/taxonomy_bench.py [--reads 1000] [--runs 3] [--threads 1]

The reads are the 200 real ARTIC nanopore reads of refs/demo/sarscov2, repeated to --reads
(renamed, so every one is searched). The demo manifests are staged into a temporary home
through the real staging code (or BIOTOOL_HOME is used if it already holds the panel).
Three timings in one process, each the median of --runs:
  search:  biotool.taxonomy.local.local_search (blastn in chunks, parsing, taxa naming)
  blastn:  one bare `blastn -outfmt 6` over the same reads and database (the peer)
  command: the whole `biotool taxonomy --local` subprocess (start-up, sampling, summary)
Prints one JSON object with reads/s and the ratios search/blastn and command/blastn.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import repeated

REPO = Path(__file__).resolve().parents[1]
ARTIC = REPO / "refs" / "demo" / "sarscov2" / "MT007544.fastq"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reads", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    from biotool import staging
    from biotool.deadline import Deadline
    from biotool.stagebuild import build
    from biotool.taxonomy import local, sequences

    with tempfile.TemporaryDirectory(prefix="taxbench-") as tmp:
        tmp = Path(tmp)
        if staging.find("database", "demo-viral-panel") is None:
            os.environ["BIOTOOL_HOME"] = str(tmp / "home")
            manifests = tmp / "refs"
            manifests.mkdir()
            # Only the panel's manifest: staging models would dominate the benchmark's time.
            (manifests / "databases.toml").write_text((REPO / "refs/databases.toml").read_text())
            (manifests / "demo").symlink_to(REPO / "refs" / "demo")
            build.stage(manifests, tmp / "home", ["demo"])
        base = list(sequences.read_fastq(ARTIC))
        reads = [(f"{q}_{i}", s) for i in range(args.reads // len(base) + 1)
                 for q, s in base][:args.reads]
        fq = tmp / "reads.fastq"
        fq.write_text("".join(f"@{q}\n{s}\n+\n{'5' * len(s)}\n" for q, s in reads))
        fa = tmp / "reads.fa"
        fa.write_text(sequences.to_fasta(reads))
        rec = local.staged_database("demo-viral-panel")
        db = rec.path("blastdb") / "db"

        search_s, _ = repeated(lambda: local.local_search(reads, 5, Deadline.from_now(3600),
                                                          "demo-viral-panel",
                                                          threads=args.threads), args.runs)
        blast_cmd = ["blastn", "-db", str(db), "-query", str(fa), "-outfmt",
                     f"6 {local.FIELDS}", "-max_target_seqs", "5", "-max_hsps", "1",
                     "-evalue", "1e-5", "-num_threads", str(args.threads)]
        blast_s, _ = repeated(lambda: subprocess.run(blast_cmd, check=True, capture_output=True),
                              args.runs)
        cli = [sys.executable, "-m", "biotool", "-q", "taxonomy", "--fastq", str(fq), "--local",
               "--sample", str(args.reads), "--threads", str(args.threads)]
        env = {**os.environ}
        env.pop("HTTPS_PROXY", None)
        cmd_s, _ = repeated(lambda: subprocess.run(cli, check=True, capture_output=True, env=env),
                            args.runs)
        found = local.local_search(reads, 5, Deadline.from_now(3600), "demo-viral-panel")
        out = {
            "reads": len(reads), "runs": args.runs, "threads": args.threads,
            "database": rec.name, "blastn": subprocess.run(
                ["blastn", "-version"], capture_output=True, text=True).stdout.split("\n")[0],
            "search_s": round(search_s, 3), "blastn_s": round(blast_s, 3),
            "command_s": round(cmd_s, 3),
            "search_reads_per_s": round(len(reads) / search_s, 1),
            "blastn_reads_per_s": round(len(reads) / blast_s, 1),
            "command_reads_per_s": round(len(reads) / cmd_s, 1),
            "ratio_search_vs_blastn": round(search_s / blast_s, 3),
            "ratio_command_vs_blastn": round(cmd_s / blast_s, 3),
            "reads_with_hits": sum(1 for q in found.searched if found.hits[q]),
        }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
