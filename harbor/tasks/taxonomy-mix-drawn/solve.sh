#!/bin/bash
# Oracle: biotool's local taxonomy on the staged panel, every read searched (--sample above
# the file's read count), the organisms and the dominant one's count from its summary.
set -euo pipefail
biotool -q taxonomy --fastq /task/reads.fastq --local --sample 1000000 > /tmp/taxonomy.json
python3 - <<'PY'
import json
summary = json.load(open("/tmp/taxonomy.json"))["summary"]
assert summary["whole_input"] and "other_organisms" not in summary, "not every read was counted"
organisms = summary["organisms"]
json.dump({"organisms": [o["name"] for o in organisms], "dominant": summary["dominant"],
           "dominant_reads": organisms[0]["reads"]}, open("/logs/artifacts/answer.json", "w"))
PY
