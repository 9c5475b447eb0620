"""`biotool list` and `biotool references`: what the image knows and whether it is usable."""

from __future__ import annotations

import importlib
import importlib.util
import shutil

from biotool import staging
from biotool.competence import bounded
from biotool.provenance import provenance, used


def family_status(family: str) -> dict:
    """A tool family's commands and whether its binaries and Python packages are present."""
    desc = dict(importlib.import_module(f"biotool.{family}.cli").describe())
    req = desc.pop("requires", {})
    missing = [b for b in req.get("binaries", []) if shutil.which(b) is None]
    missing += [m for m in req.get("python", []) if importlib.util.find_spec(m) is None]
    desc.update(family=family, usable=not missing)
    if missing:
        desc["reason"] = f"missing here: {', '.join(missing)}"
    return desc


def list_everything() -> dict:
    from biotool.cli import FAMILIES

    families = [family_status(f) for f in FAMILIES]
    items = [staging.status(e) for e in staging.load_manifests()]
    unusable = [i for i in items if not i["usable"]]
    spots = [f"{i['kind']} {i['name']}: {i['reason']}" for i in unusable]
    return {
        "families": families,
        "items": items,
        "staged": sum(1 for i in items if i["usable"]),
        "not_staged": len(unusable),
        "competence": bounded(1.0 if not unusable else 0.8, 1.0, blind_spots=spots,
                              remedy="tools that need an unstaged item will refuse it by name"
                              if unusable else ""),
    }


def references() -> dict:
    """Staged references with every index file and its sha256, and whether each is usable."""
    out, usable_used = [], []
    for entry in staging.load_manifests():
        if entry["kind"] != "reference":
            continue
        st = staging.status(entry)
        rec = staging.find("reference", entry["name"]) if st["staged"] else None
        row = {"name": entry["name"], "aliases": entry.get("aliases", []),
               "title": entry.get("title", ""), "organism": entry.get("organism", ""),
               "set": st["set"], "staged": st["staged"], "usable": st["usable"]}
        if rec:
            row["path"] = str(staging.path_of(rec))
            row["sha256"] = rec["sha256"]
            row["indexes"] = {k: {"path": str(staging.path_of(rec, k)), "sha256": v["sha256"]}
                              for k, v in rec["files"].items() if k != "main"}
            if st["usable"]:
                usable_used.append(used("reference", rec["name"], rec["sha256"]))
        if "reason" in st:
            row["reason"] = st["reason"]
        out.append(row)
    return {"references": out, "home": str(staging.home()),
            "provenance": provenance(*usable_used)}
