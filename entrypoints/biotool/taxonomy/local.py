"""blastn against a BLAST database staged at build time (the offline path; same hit shape)."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from biotool.deadline import Deadline
from biotool.output import InputError, ToolFailure
from biotool.procs import OutOfTime, run_bounded
from biotool.taxonomy.searched import SearchResult

if TYPE_CHECKING:  # staging is imported where a database is looked up
    from biotool.staging.item import StagedItem

FIELDS = "qseqid saccver stitle pident length evalue bitscore qstart qend sstart send qlen"
CHUNK = 500         # queries in the first blastn call: --timeout stops between calls with a
#                    partial result, and each call reloads the database and starts blastn
MAX_CHUNK = 20000   # later calls grow to about a quarter of the time left, up to this
# Megablast (blastn's default) seeds on 28 exact bases and masks low-complexity stretches
# (DUST), so a read of a panel organism can match nothing: one whose few errors leave no 28
# exact bases in a row (1 of 20,000 HIV-1 reads at 0.5% errors), or one half masked (an
# A- and G-rich HIV-1 read with 1 error). Those reads are searched again with 11-base seeds
# and no mask; a hit counts only over >= 90% of the read at >= 90% identity, what sequencing
# errors leave of the read's own source and not what a relative shares.
SECOND_PASS = ("-task", "blastn", "-dust", "no")
SECOND_PASS_IDENTITY = 90.0
SECOND_PASS_COVER = 0.9


def staged_database(name: str | None) -> StagedItem:
    """The staged item of a BLAST database by name or alias (the first staged one if None)."""
    from biotool import staging

    if name:
        rec = staging.require("database", name, "--database")
    else:
        # A taxonomy panel carries its organisms (`taxa`); other BLAST databases (gene
        # annotation sets) would name no organism, so they are never the default here.
        usable = [i for i in staging.staged_items("database")
                  if i.usable and "blastdb" in i.files and i.taxa]
        if not usable:
            raise InputError(f"no taxonomy BLAST database is staged under {staging.home()}; "
                             f"local search is impossible here (see `biotool list`)")
        rec = sorted(usable, key=lambda i: (i.set != "production", i.name))[0]
    if "blastdb" not in rec.files:
        raise InputError(f"--database: {rec.name} is not a BLAST database (no blastdb index)")
    if rec.molecule == "protein":
        raise InputError(f"--database: {rec.name} is a protein database and taxonomy "
                         f"searches nucleotides (blastn); search proteins with blastp or "
                         f"diamond: {rec.use_line()}")
    return rec


def _organism(acc: str, title: str, taxa: dict) -> tuple[str, int | None]:
    entry = taxa.get(acc) or taxa.get(acc.split(".")[0]) or {}
    if entry:
        return entry.get("sciname", ""), entry.get("taxid")
    return ("" if title in ("", "N/A") else title.split(",")[0]), None


def _blastn(db_prefix: Path, queries: list, top: int, threads: int, until: float, tmp: str,
            taxa: dict, name: str, extra: tuple[str, ...] = ()) -> dict[str, list]:
    """One blastn call on `queries`: {query id: its hits in the remote shape}. OutOfTime at
    `until` (monotonic), ToolFailure if blastn fails."""
    from biotool.taxonomy.sequences import to_fasta

    qpath = Path(tmp) / "q.fa"
    qpath.write_text(to_fasta(queries))
    opath = Path(tmp) / "q.tsv"
    cmd = ["blastn", *extra, "-db", str(db_prefix), "-query", str(qpath), "-outfmt",
           f"6 {FIELDS}", "-max_target_seqs", str(max(1, top)), "-max_hsps", "1",
           "-evalue", "1e-5", "-num_threads", str(max(1, threads)), "-out", str(opath)]
    # Killed with its threads at the deadline, not left running past --timeout (the tool's
    # watcher runs on the real clock, whatever clock the deadline reads).
    rc, said = run_bounded(cmd, until)
    if rc != 0:
        raise ToolFailure(f"blastn on {name} failed (exit {rc}): {said}")
    hits: dict[str, list] = {}
    for line in opath.read_text().splitlines():
        f = line.split("\t")
        if len(f) != 12:
            continue
        sciname, taxid = _organism(f[1], f[2], taxa)
        hits.setdefault(f[0], []).append({
            "accession": f[1], "title": f[2] if f[2] != "N/A" else sciname,
            "taxid": taxid, "sciname": sciname, "bit_score": float(f[6]),
            "evalue": float(f[5]), "pident": float(f[3]), "align_len": int(f[4]),
            "query_len": int(f[11]), "query_from": int(f[7]), "query_to": int(f[8]),
            "hit_from": int(f[9]), "hit_to": int(f[10]),
        })
    return hits


def _own_source(hit: dict) -> bool:
    """Whether a second-pass hit is the read's own source read through sequencing errors
    (near-whole read, near-identical), not a relative's shared stretch."""
    return hit["pident"] >= SECOND_PASS_IDENTITY and \
        hit["align_len"] >= SECOND_PASS_COVER * hit["query_len"]


def local_search(queries: list, top: int, deadline: Deadline, database: str | None,
                 threads: int = 1) -> SearchResult:
    """blastn of `queries` [(id, seq)] against the staged database; hits in the remote shape.
    Queries megablast found nothing for are searched again by blastn's short seeds without
    the low-complexity mask (SECOND_PASS), keeping only hits that are their own source."""
    if shutil.which("blastn") is None:
        raise ToolFailure("blastn is not on PATH (ncbi-blast+ is missing from this environment)")
    rec = staged_database(database)
    db_prefix = rec.path("blastdb") / "db"
    taxa = rec.taxa or {}
    clock = deadline.clock
    hits: dict[str, list] = {}
    searched: list[str] = []
    truncated = False
    with tempfile.TemporaryDirectory(prefix="biotool-blast-") as tmp:
        start, size = 0, CHUNK
        while start < len(queries):
            chunk = queries[start:start + size]
            left = deadline.left()
            t0 = clock()
            if left <= 0:
                truncated = True
                break
            try:
                hits.update(_blastn(db_prefix, chunk, top, threads, time.monotonic() + left,
                                    tmp, taxa, rec.name))
            except OutOfTime:
                truncated = True
                break
            searched.extend(q for q, _ in chunk)
            start += len(chunk)
            # Fewer, larger calls once the speed is known, but a call cut by --timeout loses
            # its whole chunk, so none is planned to take more than a quarter of what is left.
            rate = len(chunk) / max(clock() - t0, 1e-3)
            size = int(min(MAX_CHUNK, max(CHUNK, rate * deadline.left() / 4)))
        done = set(searched)
        missed = [(q, seq) for q, seq in queries if q in done and q not in hits]
        if missed and deadline.left() > 0:
            try:
                again = _blastn(db_prefix, missed, top, threads,
                                time.monotonic() + deadline.left(), tmp, taxa, rec.name,
                                SECOND_PASS)
            except OutOfTime:  # the first pass's answer stands: those reads matched nothing
                again = {}
            for q, found in again.items():
                kept = [h for h in found if _own_source(h)]
                if kept:
                    hits[q] = kept
    for q in searched:
        hits.setdefault(q, [])
        hits[q] = sorted(hits[q], key=lambda h: -h["bit_score"])[:top]
    from biotool.provenance import used

    return SearchResult(hits, tuple(searched), truncated,
                        where={"database": rec.name, "title": rec.title or "",
                               "program": "blastn"},
                        used=used("database", rec.name, rec.sha256,
                                  blastdb_sha256=rec.files["blastdb"].sha256),
                        database=rec.name)
