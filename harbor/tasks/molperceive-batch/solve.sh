#!/bin/bash
# Oracle: molperceive's labels (the pinned RDKit) for the batch.
set -euo pipefail
molperceive label 'CN1C=NC2=C1C(=O)N(C(=O)N2C)C' 'CC(=O)Oc1ccccc1C(=O)O' 'Oc1ccccc1' > /tmp/labels.json
python3 - <<'PY'
import json
mols = json.load(open("/tmp/labels.json"))["molecules"]
answer = {}
for name, mol in zip(("caffeine", "aspirin", "phenol"), mols):
    answer[f"{name}_formula"] = mol["labels"]["formula"]
    answer[f"{name}_heavy_atoms"] = mol["labels"]["heavy_atom_count"]
json.dump(answer, open("/logs/artifacts/answer.json", "w"))
PY
