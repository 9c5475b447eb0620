#!/bin/bash
# Oracle: biotool's restriction_sites (Biopython's Restriction) on the drawn sequence.
set -euo pipefail
python3 - <<'PY' > /tmp/re-args.json
import json
seq = "".join(line.strip() for line in open("/task/sequence.fasta") if not line.startswith(">"))
enzymes = open("/task/enzymes.txt").read().split()
print(json.dumps({"sequence": seq, "enzymes": enzymes, "linear": True}))
PY
biotool -q call restriction_sites @/tmp/re-args.json > /tmp/sites.json
python3 - <<'PY'
import json
cuts = {e["enzyme"]: e["cuts"] for e in json.load(open("/tmp/sites.json"))["cutters"]}
enzymes = open("/task/enzymes.txt").read().split()
json.dump({f"enzyme{i}_cuts": sorted(cuts.get(name, [])) for i, name in enumerate(enzymes, 1)},
          open("/logs/artifacts/answer.json", "w"))
PY
