#!/bin/bash
# Oracle: molperceive's labels (the pinned RDKit) for the drawn molecules.
set -euo pipefail
mapfile -t smiles < <(cut -f1 /task/molecules.smi)
molperceive label "${smiles[@]}" > /tmp/labels.json
python3 - <<'PY'
import json
mols = json.load(open("/tmp/labels.json"))["molecules"]
ids = [line.split("\t")[1].strip() for line in open("/task/molecules.smi") if line.strip()]
answer = {}
for name, mol in zip(ids, mols):
    answer[f"{name}_formula"] = mol["labels"]["formula"]
    answer[f"{name}_heavy_atoms"] = mol["labels"]["heavy_atom_count"]
json.dump(answer, open("/logs/artifacts/answer.json", "w"))
PY
