"""`biotool list` and `biotool references`: what the image (and a site overlay, BIOTOOL_SITE_DIR)
knows, whether it is usable, and where each staged item came from (`origin`, `source`)."""

from __future__ import annotations

import importlib.util
import os
import shutil

from biotool import family, staging
from biotool.arms import Hedges, declared
from biotool.competence import bounded
from biotool.family import Family
from biotool.provenance import provenance, used


def family_status(name: str, fam: Family) -> dict:
    """A tool family's commands and whether its binaries and Python packages are present."""
    missing = [b.name for b in fam.binaries if shutil.which(b.name) is None]
    missing += [m for m in fam.python if importlib.util.find_spec(m) is None]
    desc = {"commands": list(fam.commands), "summary": fam.summary,
            **(fam.listing() if fam.listing else {}), "family": name, "usable": not missing}
    if missing:
        desc["reason"] = f"missing here: {', '.join(missing)}"
    return desc


TITLE_CHARS = 60


def list_everything() -> dict:
    families = [family_status(name, fam) for name, fam in family.every().items()]
    manifests = staging.load_manifests()
    statuses = [staging.status(e) for e in manifests]
    # Items a site overlay stages that the image's manifests do not name are listed too.
    named = {(e["kind"], e["name"]) for e in manifests}
    statuses += [staging.status(i.record()) for i in staging.staged_items()
                 if (i.kind, i.name) not in named]
    items = [st.record() for st in statuses]
    for i in items:
        # `references` and provenance carry digests (and a site item's source); here an image
        # item's are noise (a sample's digest stays: nothing else reports it, and graders check
        # inputs by it).
        if i.get("kind") != "sample":
            i.pop("sha256", None)
        if i.get("origin") != "site":
            i.pop("source", None)
        if len(i.get("title") or "") > TITLE_CHARS:  # `biotool references` keeps them whole
            i["title"] = i["title"][:TITLE_CHARS - 3].rstrip() + "..."
    unusable = [(st, i) for st, i in zip(statuses, items) if not st.usable]
    how, by_set, spots = {}, {}, []
    for st, i in unusable:
        # A whole set left out of the build is one reason, said once (the output stays small).
        if st.remedy:
            how[i["set"]] = staging.how_to_stage(i["set"])
            # staged: false and its set say it; how_to_stage says what to do; its title and
            # kind are the manifest's (refs/*.toml), of no use until the set is staged.
            del i["reason"]
            i.pop("title", None)
            i.pop("kind", None)
            by_set.setdefault(i["set"], []).append(i["name"])
        else:
            spots.append(f"{i['kind']} {i['name']}: {i['reason']}")
    # The names are in items (staged: false); listing them again would double the output.
    spots += [f"{len(names)} item(s) of set {name!r} are not staged here (see items, "
              f"how_to_stage)" for name, names in by_set.items()]
    from biotool.system.toolbox import summary

    return declared({
        "families": families,
        "tools": summary(),
        "items": items,
        "home": str(staging.home()),
        "site": staging.inventory().site,
        "staged": sum(1 for i in items if i["usable"]),
        "not_staged": len(unusable),
        "how_to_stage": how,
        "competence": bounded(1.0 if not unusable else 0.8, 1.0, blind_spots=spots,
                              remedy="tools that need an unstaged item will refuse it by name"
                              if unusable else ""),
    }, Hedges.of("competence"))  # items and how_to_stage say what is missing, in both arms


def _annotations(reference: str) -> dict[str, str]:
    """{database name: GTF path} of the gene annotations staged on this reference's names."""
    return {i.name: str(i.path()) for i in staging.staged_items("database")
            if i.format == "gtf" and i.reference == reference and i.usable}


def references() -> dict:
    """Staged references with every index and its sha256, the GTFs staged on their sequence
    names (`annotation`), and whether each is usable. An
    index's path is relative to the folder of the reference's `path` (kept short: the output
    is read into an agent's context) and is what its tool is given (bwa's, bowtie2's and
    hisat2's prefix); `biotool index` gives it whole."""
    from biotool.alignment import indexes
    out, usable_used = [], []
    entries = [e for e in staging.load_manifests() if e["kind"] == "reference"]
    named = {e["name"] for e in entries}
    entries += [i.record() for i in staging.staged_items("reference") if i.name not in named]
    for entry in entries:
        st = staging.status(entry)
        rec = staging.find("reference", entry["name"]) if st.staged else None
        row = {"name": entry["name"], "aliases": entry.get("aliases", []),
               "title": entry.get("title", ""), "organism": entry.get("organism", ""),
               "set": st.set, "staged": st.staged, "usable": st.usable}
        if st.origin is not None:
            row["origin"] = st.origin
        if st.staged and st.origin == "site":
            # An image item's source is its manifest's (as in `list`); a site's is news.
            row["source"] = st.source
        if rec:
            main = rec.path()
            row["path"] = str(main)
            row["sha256"] = rec.sha256
            row["indexes"] = {k: {"path": os.path.relpath(indexes.aligner_path(
                                  k, rec.path(k)), main.parent), "sha256": v.sha256}
                              for k, v in rec.files.items() if k != "main"}
            gtfs = _annotations(rec.name)
            if gtfs:
                row["annotation"] = gtfs
            if st.usable:
                usable_used.append(used("reference", rec.name, rec.sha256))
        if st.reason is not None:
            row["reason"] = st.reason
        out.append(row)
    return {"references": out, "home": str(staging.home()),
            "site": staging.inventory().site,
            "provenance": provenance(*usable_used)}
