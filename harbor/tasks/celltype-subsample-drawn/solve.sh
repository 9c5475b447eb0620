#!/bin/bash
# Oracle: biotool's cell typing with the staged CellTypist model on the drawn sample.
set -euo pipefail
biotool -q celltype --matrix /task/sample --model celltypist \
    --reference demo-pbmc68k-celltypist > /tmp/celltype.json
python3 - <<'PY'
import json
result = json.load(open("/tmp/celltype.json"))
comp = result["celltypist"]["composition"]
assert "composition_other" not in result["celltypist"], "more types than the composition lists"
top = max(comp, key=lambda c: c["cells"])
json.dump({"cells": result["matrix"]["cells"], "dominant": top["cell_type"],
           "dominant_cells": top["cells"]}, open("/logs/artifacts/answer.json", "w"))
PY
