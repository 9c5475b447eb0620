"""`biotool taxonomy`: which organisms the reads come from, remote (NCBI BLAST) or local.

The output is read into an agent's context, so it is bounded: the --top best hits over all
queries (not per query), each with taxonomic and alignment fields only, each of its type. No
identifier is ever returned (an accession, a GI or a strain designation can carry the source
dataset's identity back to the agent): titles and names are reduced to organism and product
words by biotool/hittext.py, the rule the egress gate applies to NCBI's reports too. Per-query hits go to a file only when --hits-out asks for one.
"""

from __future__ import annotations

import json
import re

from biotool import hittext
from biotool.arms import declared
from biotool.deadline import BudgetRefusal, Deadline
from biotool.output import InputError, ProgramError, ToolFailure
from biotool.progress import log

HITS_PER_QUERY = 5  # hits asked per query, whatever --top: enough to see ties and strains
MAX_TITLE = hittext.MAX_TEXT
# The only hit fields an agent ever sees, taxonomic and alignment ones, each with its check.
PUBLIC_FIELDS = {"sciname": hittext.public_text, "taxid": hittext.taxid,
                 "title": hittext.public_text, "bit_score": hittext.number,
                 "evalue": hittext.number, "pident": hittext.number,
                 "align_len": hittext.integer, "query_len": hittext.integer,
                 "query_from": hittext.integer, "query_to": hittext.integer,
                 "hit_from": hittext.integer, "hit_to": hittext.integer}


def public_hit(hit: dict) -> dict:
    """A hit as the agent sees it: no accession, titles and names reduced to taxonomy's
    words, every value of its type (one that is not is left out)."""
    out = {}
    for key, check in PUBLIC_FIELDS.items():
        value = check(hit.get(key)) if key in hit else None
        if value is not None:
            out[key] = value
    return out


def top_hits(hits: dict[str, list], searched: list[str], top: int) -> list[dict]:
    """The `top` best hits over every query (bit score, then query order), each with its query."""
    order = {q: i for i, q in enumerate(searched)}
    pool = [(q, h) for q in searched for h in hits.get(q, [])]
    pool.sort(key=lambda qh: (-(qh[1].get("bit_score") or 0.0), order[qh[0]]))
    return [{"query": q, **public_hit(h)} for q, h in pool[:top]]


def write_hits(path, hits: dict[str, list], searched: list[str]) -> None:
    """Per-query hits as JSON Lines ({"query", "hits"} per query), published atomically."""
    from biotool.files import published

    with published(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            for q in searched:
                fh.write(json.dumps({"query": q, "hits": [public_hit(h) for h in
                                                          hits.get(q, [])]}) + "\n")


def choose_mode(local: bool, remote: bool) -> tuple[str, str]:
    """("remote" | "local", why): remote when the egress proxy is reachable, unless forced."""
    from biotool import net

    if local and remote:
        raise InputError("taxonomy: --local and --remote are exclusive")
    if local:
        return "local", "--local given"
    if remote:
        return "remote", "--remote given"
    if net.proxy_reachable():
        return "remote", "the egress proxy (HTTPS_PROXY) is reachable"
    try:
        net.proxy_from_env()
    except ProgramError as exc:  # say why a set HTTPS_PROXY was not used
        return "local", f"HTTPS_PROXY is not usable ({exc}): offline"
    return "local", "no reachable egress proxy (HTTPS_PROXY unset or not answering): offline"


def identify(deadline: Deadline, fasta: str | None = None, fastq: str | None = None,
             top: int = 5, sample: int = 100, local: bool = False,
             remote: bool = False, database: str | None = None, email: str = "",
             seed: int = 0, threads: int = 1, hits_out: str | None = None) -> dict:
    from biotool.files import output_file
    from biotool.provenance import provenance
    from biotool.taxonomy import influenza, sequences, summary

    if database is not None and not database.strip():
        raise InputError("--database: empty name (give a staged database name, or leave the "
                         "option out for the default)")
    hits_path = output_file(hits_out, "--hits-out") if hits_out is not None else None
    query_set = sequences.load_queries(fasta, fastq, sample, seed)
    queries = list(query_set.queries)
    if query_set.empty or query_set.no_acgt:
        log(f"taxonomy: skipped {query_set.empty} empty and {query_set.no_acgt} N-only "
            f"records (nothing to search)")
    mode, why = choose_mode(local, remote)
    panel_rec = None
    if mode == "local":
        from biotool.taxonomy.local import staged_database

        panel_rec = staged_database(database)  # a bad --database is named before any work
    log(f"taxonomy: {len(queries)} queries, {mode} search ({why})")
    if mode == "remote":
        from biotool.taxonomy.ncbi import remote_search

        db = database or "nt"
        if not re.fullmatch(r"[A-Za-z0-9_.\-/]{1,64}", db):
            raise InputError(f"--database: {db!r} is not an NCBI BLAST database name "
                             f"(e.g. nt, core_nt, refseq_viral_genomes)")
        found = remote_search(queries, HITS_PER_QUERY, deadline, db, email, log=log)
    else:
        from biotool.taxonomy.local import local_search

        found = local_search(queries, HITS_PER_QUERY, deadline, database, threads=threads)
    local_db, searched, hits = found.database, list(found.searched), found.hits
    if not searched:  # local work refuses a spent budget; NCBI's failures are its own (exit 4)
        spent = BudgetRefusal if mode == "local" else ToolFailure
        raise spent(f"taxonomy: --timeout {deadline.seconds:g} s ran out before any query was "
                    f"searched ({mode}); raise --timeout or lower --sample")
    result = {
        "mode": mode,
        "mode_reason": why,
        "input": {"source": query_set.source, "format": query_set.format,
                  "records": query_set.total, "sampled": query_set.sampled,
                  "skipped": query_set.skipped, "seed": seed},
        "n": len(searched),
        "truncated": found.truncated,
        "hits": top_hits(hits, searched, top),
        "summary": summary.summarize(hits, searched, query_set.total, local_db,
                                     fmt=query_set.format),
    }
    if hits_path is not None:
        write_hits(hits_path, hits, searched)
        result["hits_file"] = str(hits_path)
    if found.truncated:
        result["truncated_reason"] = (f"--timeout {deadline.seconds:g} s ran out: "
                                      f"{len(searched)} of {len(queries)} queries searched")
    flu = influenza.tiers({q: hits.get(q, []) for q in searched}, panel=local_db,
                          panel_subtypes=influenza.database_subtypes(panel_rec.taxa or {})
                          if panel_rec else None)
    if flu:
        result["influenza"] = flu
    result["search"] = {**found.where, "hits_per_query": HITS_PER_QUERY}
    result["provenance"] = provenance(found.used)
    return declared(result, summary.HEDGES.under("summary") | influenza.HEDGES.under("influenza"))
