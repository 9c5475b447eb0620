#!/bin/bash
# Oracle: biotool's cell typing with the staged CellTypist model.
set -euo pipefail
biotool -q celltype --matrix /opt/biotool/samples/demo-pbmc68k-heldout --model celltypist > /tmp/celltype.json
python3 - <<'PY'
import json
comp = json.load(open("/tmp/celltype.json"))["celltypist"]["composition"]
top = max(comp, key=lambda c: c["cells"])
json.dump({"cells": sum(c["cells"] for c in comp), "dominant": top["cell_type"],
           "dominant_cells": top["cells"]}, open("/logs/artifacts/answer.json", "w"))
PY
