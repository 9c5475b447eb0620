"""A production gene table (the demo table's columns) from one versioned RefSeq annotation
release's GFF3, built at staging time: symbols, synonyms and descriptions from its gene
features, CDS models from its CDS features. (NCBI Gene's gene_info is not used: it is
recalculated daily and no earlier copy is kept, so no pin of it survives a day.)

One row per protein-coding GeneID: its MANE Select CDS where the annotation tags one, else
its RefSeq Select CDS, else its longest (ties: the smaller protein_id). Partial CDS are
skipped. `seqids = "ucsc"` renames RefSeq chromosome accessions to the UCSC names the GRCh38
analysis set uses (NC_000017.11 -> chr17, the mitochondrion -> chrM) and drops the
scaffolds (NT_, NW_) that set names differently.
"""

from __future__ import annotations

import gzip
import urllib.parse
from pathlib import Path

COLUMNS = ("reference", "seqid", "symbol", "gene", "gene_id", "locus_tag", "synonyms",
           "product", "protein_id", "strand", "cds", "source")


def _open(path: Path):
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rt", encoding="utf-8") if gz else open(path, encoding="utf-8")


def _attrs(text: str, unquote: bool = True) -> dict[str, str]:
    out = {}
    for part in text.strip().split(";"):
        key, sep, value = part.partition("=")
        if sep:
            out[key] = urllib.parse.unquote(value) if unquote else value
    return out


def _gene_ids(a: dict[str, str]) -> dict[str, str]:
    return dict(x.split(":", 1) for x in a.get("Dbxref", "").split(",") if ":" in x)


def read_genes(path: Path) -> dict[str, dict]:
    """GeneID -> {"symbol", "synonyms", "locus_tag", "description"} from the GFF's gene lines
    (RefSeq writes `gene`, `gene_synonym` comma-separated, `locus_tag`, `description`)."""
    genes = {}
    with _open(path) as fh:
        for line in fh:
            f = line.rstrip("\n").split("\t")
            if line.startswith("#") or len(f) != 9 or f[2] != "gene":
                continue
            a = _attrs(f[8])
            gid = _gene_ids(a).get("GeneID")
            if gid and gid not in genes:
                genes[gid] = {"symbol": a.get("gene") or a.get("Name", ""),
                              "locus_tag": a.get("locus_tag", ""),
                              # split before unescaping: a synonym may hold a %2C comma
                              "synonyms": [urllib.parse.unquote(s) for s in _attrs(
                                  f[8], unquote=False).get("gene_synonym", "").split(",") if s],
                              "description": a.get("description", "")}
    return genes


def _ucsc(seqid: str, region: dict) -> str | None:
    # Only the primary chromosomes (NC_ accessions) have plain chrN names in the analysis set;
    # unlocalized and alt scaffolds (NT_, NW_) carry their chromosome's number too.
    if not seqid.startswith("NC_"):
        return None
    if region.get("genome") == "mitochondrion":
        return "chrM"
    if region.get("genome") == "chromosome" and region.get("Name"):
        return "chr" + region["Name"]
    return None


def read_cds(path: Path, seqids: str = "refseq") -> list[dict]:
    """Every complete CDS model: {"protein_id", "gene_id", "gene", "product", "seqid",
    "strand", "segments", "tags"}, segments ascending on the plus strand."""
    names: dict[str, str | None] = {}
    cds: dict[tuple[str, str], dict] = {}
    with _open(path) as fh:
        for line in fh:
            if line.startswith("#"):
                continue
            f = line.rstrip("\n").split("\t")
            if len(f) != 9:
                continue
            a = _attrs(f[8])
            if f[2] == "region":
                names[f[0]] = _ucsc(f[0], a) if seqids == "ucsc" else f[0]
                continue
            if f[2] != "CDS" or "start_range" in a or "end_range" in a or a.get("partial"):
                continue
            pid = a.get("protein_id") or a.get("Name") or a.get("ID", "")
            xref = _gene_ids(a)
            rec = cds.setdefault((pid, f[0]), {
                "protein_id": pid, "gene_id": xref.get("GeneID", ""), "gene": a.get("gene", ""),
                "product": a.get("product", ""), "seqid": f[0], "strand": f[6],
                "segments": [], "tags": a.get("tag", "")})
            rec["segments"].append((int(f[3]), int(f[4])))
    out = []
    for rec in cds.values():
        seqid = names.get(rec["seqid"], rec["seqid"] if seqids != "ucsc" else None)
        if not seqid or not rec["gene_id"]:
            continue
        rec["seqid"] = seqid
        rec["segments"] = sorted(set(rec["segments"]))
        out.append(rec)
    return out


def _rank(rec: dict) -> tuple:
    length = sum(b - a + 1 for a, b in rec["segments"])
    return ("MANE Select" not in rec["tags"], "RefSeq Select" not in rec["tags"], -length,
            rec["protein_id"])


def build(gff: Path, out: Path, reference: str, seqids: str = "refseq",
          source: str = "refseq") -> int:
    """Write the table to `out`; the number of genes in it."""
    genes = read_genes(gff)
    best: dict[str, dict] = {}
    for rec in read_cds(gff, seqids):
        cur = best.get(rec["gene_id"])
        if cur is None or _rank(rec) < _rank(cur):
            best[rec["gene_id"]] = rec
    rows = []
    for gid, rec in best.items():
        info = genes.get(gid, {})
        symbol = info.get("symbol") or rec["gene"]
        rows.append((rec["seqid"], rec["segments"][0][0], {
            "reference": reference, "seqid": rec["seqid"], "symbol": symbol, "gene": symbol,
            "gene_id": gid, "locus_tag": info.get("locus_tag", ""),
            "synonyms": ";".join(info.get("synonyms", [])),
            "product": rec["product"] or info.get("description", ""),
            "protein_id": rec["protein_id"], "strand": rec["strand"],
            "cds": ",".join(f"{a}..{b}" for a, b in rec["segments"]), "source": source}))
    rows.sort(key=lambda r: (r[0], r[1], r[2]["symbol"]))
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(f"# Gene table of {reference}: {source} annotation GFF3 genes and CDS models "
                 "(one CDS per gene: MANE Select, else RefSeq Select, else the longest).\n")
        fh.write("# cds: 1-based inclusive segments on seqid, joined in order; synonyms "
                 "separated by ';'.\n")
        fh.write("\t".join(COLUMNS) + "\n")
        for _, _, row in rows:
            fh.write("\t".join(str(row[c]).replace("\t", " ") for c in COLUMNS) + "\n")
    return len(rows)
