#!/bin/bash
# Oracle: biotool's variant caller on the staged reads, the longest deletion it supports.
set -euo pipefail
biotool -q variants --reference MN908947.3 \
    --fastq /opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq --top 10 > /logs/artifacts/variants.json
python3 - <<'PY'
import json
variants = json.load(open("/logs/artifacts/variants.json"))["variants"]
dels = [v for v in variants if v["type"] == "deletion"]
best = max(dels, key=lambda v: (v["length"], v["depth"]))
json.dump({"pos": best["pos"], "ref": best["ref"], "alt": best["alt"]},
          open("/logs/artifacts/answer.json", "w"))
PY
