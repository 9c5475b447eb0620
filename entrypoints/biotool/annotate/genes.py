"""Gene look-up by symbol or ID in the staged gene annotation table (refs/annotations.toml).

Symbols are not unique (influenza "HA" is in two strains here; one GeneID can carry two CDS),
so every answer lists all matches and says how many tie.
"""

from __future__ import annotations

import csv
import difflib
from typing import TYPE_CHECKING

from biotool.annotate import arguments
from biotool.competence import bounded, not_applicable
from biotool.output import InputError
from biotool.provenance import provenance, used

if TYPE_CHECKING:  # staging is imported where a table is read, not when annotate loads
    from biotool.staging.item import StagedItem

TABLE_FORMAT = "gene-table"
ID_COLUMNS = ("gene_id", "locus_tag", "protein_id", "seqid")


def table_records() -> list[StagedItem]:
    """Every staged gene table's inventory item (demo, production, site); InputError if none."""
    from biotool import staging

    found = [item for item in staging.staged_items("database")
             if item.format == TABLE_FORMAT and item.usable]
    if not found:
        raise InputError("reference: no gene annotation table is staged here (manifest "
                         "refs/annotations.toml, database demo-gene-annotation); see `biotool list`")
    return sorted(found, key=lambda i: (i.set != "demo", i.name))


def parse_cds(text: str) -> list[tuple[int, int]]:
    segs = []
    for part in text.split(","):
        a, _, b = part.partition("..")
        segs.append((int(a), int(b)))
    return segs


_ROWS: dict[str, list[dict]] = {}


def _read_table(path: str) -> list[dict]:
    if path not in _ROWS:
        with open(path, newline="") as fh:
            lines = [ln for ln in fh if not ln.startswith("#")]
        out = []
        for row in csv.DictReader(lines, delimiter="\t"):
            row["segments"] = parse_cds(row["cds"])
            row["synonym_list"] = [s for s in row["synonyms"].split(";") if s]
            out.append(row)
        _ROWS[path] = out
    return _ROWS[path]


def tables() -> list[tuple[dict, list[dict]]]:
    """Every staged table as (its provenance item, its rows, each with parsed `segments`)."""
    return [(used("database", rec.name, rec.sha256), _read_table(str(rec.path())))
            for rec in table_records()]


def rows() -> tuple[list[dict], dict]:
    """All rows of every staged table, and the provenance item of the first table."""
    groups = tables()
    return [r for _, table in groups for r in table], groups[0][0]


def _norm(text: str) -> str:
    from biotool.annotate.policy import fold

    return fold(text).casefold().strip()


def describe_row(row: dict) -> dict:
    segs = row["segments"]
    length = sum(b - a + 1 for a, b in segs)
    return {"symbol": row["symbol"], "gene": row["gene"], "gene_id": row["gene_id"] or None,
            "locus_tag": row["locus_tag"] or None, "synonyms": row["synonym_list"],
            "product": row["product"], "protein_id": row["protein_id"] or None,
            "reference": row["reference"], "seqid": row["seqid"], "strand": row["strand"],
            "start": min(a for a, _ in segs), "end": max(b for _, b in segs),
            "cds_segments": [list(s) for s in segs], "cds_length_nt": length,
            "protein_length_aa": length // 3 - 1, "annotation_source": row["source"]}


def find(query: str, reference: str | None = None) -> tuple[list[dict], str, list[dict], dict]:
    """(matching rows, how they matched, all rows considered, provenance item)."""
    groups = tables()
    if reference:
        from biotool.annotate.sequences import staged_reference

        ref = staged_reference(reference)
        groups = [(p, [r for r in t if r["reference"] == ref.name or r["seqid"] == reference])
                  for p, t in groups]
    table = [r for _, t in groups for r in t]
    q = _norm(query)
    for how, test in (
        ("symbol", lambda r: _norm(r["symbol"]) == q),
        ("gene", lambda r: _norm(r["gene"]) == q),
        ("id", lambda r: any(r[c] and _norm(r[c]) == q for c in ID_COLUMNS)),
        ("synonym", lambda r: any(_norm(s) == q for s in r["synonym_list"])),
    ):
        # Each hit with its table's provenance: the first hit's table is the one used.
        hits = [(p, r) for p, t in groups for r in t if test(r)]
        if hits:
            return [r for _, r in hits], how, table, hits[0][0]
    return [], "", table, groups[0][0]


def gene_lookup(args: arguments.GeneLookup) -> dict:
    query = args.query
    hits, how, table, prov = find(query, args.reference)
    if not hits:
        names = sorted({r["symbol"] for r in table} | {r["gene"] for r in table})
        close = difflib.get_close_matches(query, names, n=3, cutoff=0.5)
        return {"query": query, "matches": [], "count": 0,
                "competence": not_applicable(
                    f"no gene {query!r} in the staged table (it covers only the demo "
                    "references)", remedy=f"did you mean {', '.join(close)}?" if close else
                    "check the symbol; the table holds " + ", ".join(names[:40])),
                "provenance": provenance(prov)}
    matches = [describe_row(r) for r in hits]
    refs = sorted({m["reference"] + ":" + m["seqid"] for m in matches})
    spots = []
    if len(matches) > 1:
        spots.append(f"{len(matches)} records match {query!r} ({', '.join(refs)}); "
                     "name the reference or use an ID")
    if how == "synonym":
        spots.append("matched a synonym, not the official symbol")
    conf = (1.0 if how in ("symbol", "id") else 0.8) / len(matches)
    return {"query": query, "matched_on": how, "count": len(matches), "matches": matches,
            "competence": bounded(conf, 1.0 if len(matches) == 1 else 0.0,
                                  alternatives=len(matches) - 1, ties=len(matches) - 1,
                                  blind_spots=spots,
                                  remedy="pass reference (and an ID) to pick one"
                                  if len(matches) > 1 else ""),
            "provenance": provenance(prov)}
