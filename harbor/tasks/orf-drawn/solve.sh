#!/bin/bash
# Oracle: biotool's find_orfs on the drawn sequence; the longest ORF (listed first) is the one.
set -euo pipefail
python3 - <<'PY' > /tmp/orf-args.json
import json
seq = "".join(line.strip() for line in open("/task/sequence.fasta") if not line.startswith(">"))
print(json.dumps({"sequence": seq, "min_protein_length": 30, "max_orfs": 5}))
PY
biotool -q call find_orfs @/tmp/orf-args.json > /tmp/orfs.json
python3 - <<'PY'
import json
orf = json.load(open("/tmp/orfs.json"))["orfs"][0]
json.dump({k: orf[k] for k in ("strand", "start", "end", "protein")},
          open("/logs/artifacts/answer.json", "w"))
PY
