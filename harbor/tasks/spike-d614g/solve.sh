#!/bin/bash
# Oracle: biotool's variant annotation on the staged gene annotation.
set -euo pipefail
biotool -q call variant_annotate \
    '{"reference": "MN908947.3", "position": 23403, "ref": "A", "alt": "G"}' > /tmp/annotation.json
python3 - <<'PY'
import json
ann = json.load(open("/tmp/annotation.json"))["annotations"][0]
json.dump({"gene": ann["gene"], "hgvs_p": ann["hgvs_p"], "effect": ann["effect"]},
          open("/logs/artifacts/answer.json", "w"))
PY
