#!/bin/bash
# Oracle: biotool's taxonomy by remote NCBI BLAST through the egress, a sample of the drawn
# reads small enough for one submission (NCBI's 40 queries at most).
set -euo pipefail
biotool -q taxonomy --fastq /task/reads.fastq --sample 10 --remote --timeout 1500 \
    > /logs/artifacts/taxonomy.json
python3 - <<'PY'
import json
summary = json.load(open("/logs/artifacts/taxonomy.json"))["summary"]
json.dump({"organism": summary["dominant"]}, open("/logs/artifacts/answer.json", "w"))
PY
