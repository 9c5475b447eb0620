#!/bin/bash
# Oracle: salmon (selective alignment, k=31) on the drawn transcripts and reads; the ranking and
# the absent set from its NumReads.
set -euo pipefail
work=$(mktemp -d)
salmon index -t /task/transcripts.fasta -i "$work/index" -k 31 -p 2 > "$work/index.log" 2>&1
salmon quant -i "$work/index" -l A -r /task/reads.fastq -p 2 --validateMappings \
    -o "$work/quant" > "$work/quant.log" 2>&1
python3 - "$work/quant/quant.sf" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
counts = {r["Name"]: float(r["NumReads"]) for r in rows}
ranked = sorted(counts, key=lambda t: -counts[t])
json.dump({"top": ranked[0], "top3": ranked[:3],
           "absent": sorted(t for t, c in counts.items() if c < 1)},
          open("/logs/artifacts/answer.json", "w"))
PY
