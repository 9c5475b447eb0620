"""The production data as image layers of its own, below the project's code.

The Dockerfile's `data` stage sees only refs/, the pin lock and the staging code: it stages
the production sets there (`python -m biotool.staging layers`), and `split()` moves what was
staged into SLOTS numbered folders, each copied into the image by a COPY of its own
(`COPY --from=data /data/N/ /opt/biotool/`). So a change to the rest of the code rebuilds
no data at all, and no layer holds more than one large part: a reference's FASTA (with its
.fai) and each of its folder indexes get a folder each, the databases share one, the models
another, the samples another, and the inventory (staged.json, manifests) comes last. An
item that changes rebuilds its own layer; docker re-copies the later ones locally, with the
same digests, so a registry stores nothing new for them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from biotool.staging import INVENTORY, KINDS, StagingError

SLOTS = 8  # the Dockerfile's COPY --from=data lines; a unit test keeps the two in step
DATA_SETS = ("production",)  # sets fetched from the network, staged below the code
LAYER_LIMIT = 8e9  # bytes: some registries refuse layers past ~10 GB
_SHARED = {"database": "databases", "model": "models", "sample": "samples"}


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def parts(inventory: dict) -> list[tuple[str, list[str]]]:
    """(layer name, paths relative to the staging home) in a stable order, the inventory last."""
    out: dict[str, list[str]] = {}
    items = sorted(inventory.get("items", {}).values(),
                   key=lambda i: (KINDS.index(i["kind"]), i["name"]))
    for item in items:
        files = item.get("files") or {}
        if not files:
            continue
        if item["kind"] == "reference":
            own = [files["main"]["path"]] + [f["path"] for k, f in files.items() if k == "faidx"]
            out[f"reference {item['name']}"] = own
            for index, f in files.items():
                if index not in ("main", "faidx"):
                    out[f"reference {item['name']} {index} index"] = [f["path"]]
        else:
            out.setdefault(_SHARED[item["kind"]], []).append(f"{item['kind']}s/{item['name']}")
    out["inventory"] = [INVENTORY, "manifests", "pins.tofu.toml"]
    return list(out.items())


def split(home: Path, out: Path, slots: int = SLOTS) -> list[dict]:
    """Move the staged `home` into out/1 .. out/<slots> (each made, empty when unused); what
    each layer holds and its size."""
    home, out = Path(home), Path(out)
    for n in range(1, slots + 1):
        (out / str(n)).mkdir(parents=True, exist_ok=True)
    try:
        inventory = json.loads((home / INVENTORY).read_text())
    except FileNotFoundError:
        return []
    planned = parts(inventory)
    if len(planned) > slots:
        raise StagingError(f"the production data needs {len(planned)} layers and the "
                           f"Dockerfile copies {slots}: add COPY --from=data lines and raise "
                           "biotool.stagebuild.layers.SLOTS")
    report = []
    for n, (name, paths) in enumerate(planned, start=1):
        size = 0
        for rel in paths:
            src = home / rel
            if not src.exists():
                continue
            size += _size(src)
            dest = out / str(n) / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dest)
        report.append({"layer": n, "holds": name, "bytes": size})
        over = " (over the ~8 GB some registries accept)" if size > LAYER_LIMIT else ""
        print(f"staging: layer {n}: {name}, {size / 1e6:.1f} MB{over}", file=sys.stderr)
    return report
