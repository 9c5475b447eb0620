"""The `blastdb-tar` preparer: NCBI prebuilt BLAST database tarballs (+ taxdb) unpacked, an
alias `db` over the volumes, and each sequence's taxid and scientific name recorded; a
protein one (`molecule = "protein"`) records its sequence count instead, and with
indexes = ["diamond"] gets a DIAMOND database built from its sequences."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from biotool.staging import StagingError
from biotool.stagebuild.tools import Prepared, run_tool, safe_extract


def prepare(entry: Mapping[str, Any], fetched: list[Path], item_dir: Path) -> Prepared:
    db_dir = item_dir / "blastdb"
    db_dir.mkdir()
    protein = entry.get("molecule") == "protein"
    volumes = []
    for archive in fetched:
        safe_extract(archive, db_dir)
        stem = archive.name.split(".tar")[0]
        if stem != "taxdb":
            volumes.append(stem)
    if not volumes:
        raise StagingError("no BLAST database among the fetched archives (only taxdb)")
    # An alias named `db`: the path the local search opens, over the volumes as NCBI names them.
    (db_dir / ("db.pal" if protein else "db.nal")).write_text(
        f"TITLE {entry.get('title') or volumes[0]}\nDBLIST {' '.join(volumes)}\n")
    env = {**os.environ, "BLASTDB": str(db_dir)}
    files = {"main": db_dir, "blastdb": db_dir}
    if protein:
        # Swiss-Prot's half a million taxa would bloat the inventory every command reads; the
        # database carries its taxids, and taxdb beside it names them for blastp's sscinames.
        facts = {"sequences": _blastdb_count(db_dir / "db", env),
                 "use": "blastp -db {blastdb}/db -query proteins.faa"}
        if "diamond" in entry.get("indexes", []):
            files["diamond"] = item_dir / f"{entry['name']}.dmnd"
            _diamond(db_dir / "db", files["diamond"], facts["sequences"], env)
            facts["use"] += "; diamond blastp -d {diamond} -q proteins.faa"
        return Prepared(files, facts)
    out = run_tool(["blastdbcmd", "-db", str(db_dir / "db"), "-entry", "all", "-outfmt",
                   "%a\t%T\t%S\t%t"], env=env)
    taxa = {}
    for line in out.splitlines():
        acc, taxid, sciname, title = (line.split("\t") + ["", "", ""])[:4]
        if sciname in ("", "N/A"):
            sciname = title.split(",")[0]
        taxa[acc] = {"sciname": sciname, "taxid": int(taxid) if taxid.isdigit() and
                     int(taxid) > 0 else None}
    if not taxa:
        raise StagingError("the BLAST database holds no sequences")
    return Prepared(files, {"taxa": taxa, "use": "blastn -db {blastdb}/db -query sequences.fa"})


def _blastdb_count(db: Path, env: dict) -> int:
    """The number of sequences in a BLAST database, as blastdbcmd -info reports it."""
    info = run_tool(["blastdbcmd", "-db", str(db), "-info"], env=env)
    for line in info.splitlines():
        words = line.split()
        if len(words) > 1 and words[1] == "sequences;":
            n = int(words[0].replace(",", ""))
            if n:
                return n
    raise StagingError("the BLAST database holds no sequences")


def _diamond(db: Path, out: Path, expected: int, env: dict) -> None:
    """A DIAMOND database of every sequence of the BLAST database `db`; refused unless it
    holds as many sequences as the BLAST database does."""
    fasta = out.with_name(out.name + ".faa")
    with open(fasta, "w") as fh:
        run_tool(["blastdbcmd", "-db", str(db), "-entry", "all"], env=env, stdout=fh)
    try:
        run_tool(["diamond", "makedb", "--in", str(fasta), "-d", str(out), "--threads",
                  str(os.cpu_count() or 1)])
    finally:
        fasta.unlink()
    info = run_tool(["diamond", "dbinfo", "-d", str(out)])
    got = next((int(l.split()[-1]) for l in info.splitlines() if l.split()[:1] == ["Sequences"]),
               None)
    if got != expected:
        raise StagingError(f"diamond makedb wrote {got} sequences of the BLAST database's "
                           f"{expected}")
