#!/bin/bash
# Oracle: biotool's variant annotation of the drawn substitution on the staged gene annotation.
set -euo pipefail
python3 - <<'PY' > /tmp/variant-args.json
import json
reference, position, ref, alt = open("/task/variant.tsv").read().split()
print(json.dumps({"reference": reference, "position": int(position), "ref": ref, "alt": alt}))
PY
biotool -q call variant_annotate @/tmp/variant-args.json > /tmp/annotation.json
python3 - <<'PY'
import json
ann = json.load(open("/tmp/annotation.json"))["annotations"][0]
json.dump({k: ann[k] for k in ("gene", "hgvs_c", "hgvs_p", "effect")},
          open("/logs/artifacts/answer.json", "w"))
PY
