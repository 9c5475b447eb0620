"""What the egress audit of a Harbor trial must show beyond counts (docs/harbor.md): the search
a task asks for, and no record the run could not have made.

search: a task answered through NCBI BLAST names its staged sample and how many of its reads a
search must hold; the audit shows a real search as an allowed Put whose records' sequence
digests (auditwire.query_seq_digest) are reads of that sample, then an allowed poll and an
allowed fetch of the RID that Put's reply created, in that order. A Put of made-up letters, of
one read, or one never polled and fetched is no search.

impossible: records no run of the stack writes, i.e. what someone with the egress container's
shell (a Harbor agent class on the host, say) could add: dated before the egress began or
after the verifier started, from a second client (the agent's container is the egress's only
client), a request in a tunnel never opened or past its close's count, a poll or fetch of a RID
no earlier Put of the run created.
"""

from __future__ import annotations

from pathlib import Path

from auditwire import QUERY_SEQS_LISTED, query_seq_digest

# Seconds a record's time may stray past the run's bounds: the egress and the verifier read
# the same host's clock, and a record is stamped when written, a few ms after its event.
CLOCK_SLACK_S = 5.0


class StagedInputError(Exception):
    """The verifier cannot read its own copy of the staged input (not the agent's doing)."""


def read_digests(seqs) -> set[str]:
    """The digest of each read, as biotool's client sends it (upper-cased, '.' as N) and as
    written (the gate's digest keeps letters only)."""
    digests = set()
    for seq in seqs:
        digests.add(query_seq_digest(seq))
        digests.add(query_seq_digest(seq.upper().replace("U", "T").replace(".", "N")))
    return digests


def sample_digests(reads: Path) -> set[str]:
    """read_digests of each read of a staged FASTQ."""
    try:
        with reads.open("r", encoding="ascii", errors="replace") as fh:
            digests = read_digests(line.strip() for i, line in enumerate(fh) if i % 4 == 1)
    except OSError as exc:
        raise StagedInputError(f"the staged reads {reads} cannot be read in the verifier "
                               f"({exc.strerror or exc})") from None
    if not digests:
        raise StagedInputError(f"the staged reads {reads} hold no read")
    return digests


def _allowed(rec: dict, what: str) -> bool:
    return rec.get("source") == "gate" and rec.get("event") == "request" \
        and rec.get("what") == what and rec.get("decision") == "allowed" \
        and rec.get("http_status") == 200


def _time(rec: dict) -> float:
    t = rec.get("time")
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else 0.0


DRAWN = "drawn"  # a search rule's `reads` when the draw wrote them: their digests are the truth's


def check_search(records: list[dict], rule: dict, drawn: set[str] | None = None) -> dict:
    """The search the task asks for (rule: reads, min_records, program, database), from the
    audit's records: {ok, broken, searches, sample_reads_searched}. `drawn`: the digests of
    the reads a drawn task's draw wrote (rule reads DRAWN), else the staged file's are read."""
    sample = drawn if rule["reads"] == DRAWN and drawn else sample_digests(Path(rule["reads"]))
    name = "the drawn reads" if rule["reads"] == DRAWN else Path(rule["reads"]).name
    want = int(rule.get("min_records", 1))
    searches, covered = [], set()
    for put in (r for r in records if _allowed(r, "put")):
        rid = put.get("new_rid")
        listed = [d for d in str(put.get("query_seqs") or "").split(",") if d]
        of_sample = {d for d in listed[:QUERY_SEQS_LISTED] if d in sample}
        polls = [r for r in records if _allowed(r, "poll") and r.get("rid") == rid
                 and _time(r) >= _time(put)]
        fetches = [r for r in records if _allowed(r, "fetch") and r.get("rid") == rid
                   and polls and _time(r) >= min(_time(p) for p in polls)]
        right = all(rule.get(k) is None or put.get(k) == rule[k] for k in ("program", "database"))
        done = bool(rid) and right and bool(polls) and bool(fetches)
        searches.append({"rid": rid, "program": put.get("program"),
                         "database": put.get("database"), "records": put.get("query_records"),
                         "records_of_sample": len(of_sample), "polled": bool(polls),
                         "fetched": bool(fetches), "complete": done})
        if done:
            covered |= of_sample
    broken = []
    if len(covered) < want:
        what = f"{rule.get('program') or 'BLAST'} against {rule.get('database') or 'any database'}"
        if not searches:
            broken.append(f"no search reached NCBI: the task needs a {what} of at least {want} "
                          f"reads of {name}, polled and fetched")
        else:
            broken.append(f"{len(covered)} read(s) of {name} searched in "
                          f"complete searches ({what}: an allowed Put, then a poll and a fetch "
                          f"of its RID); the task needs at least {want}")
    return {"ok": not broken, "broken": broken, "searches": searches,
            "sample_reads_searched": len(covered), "rule": rule}


def impossible(audit: dict, started: float | None, not_after: float | None) -> list[str]:
    """Why records in this audit could not have been written by this run's egress ([] when
    none): each reason names its first example."""
    records, tunnels = audit["records"], audit["tunnels"]
    found = []

    def outside(t) -> bool:
        if not isinstance(t, (int, float)) or isinstance(t, bool):
            return False
        return (started is not None and t < started - CLOCK_SLACK_S) or \
            (not_after is not None and t > not_after + CLOCK_SLACK_S)

    dated = [r for r in records if outside(r.get("time"))] + \
        [t for t in tunnels if outside(t.get("opened")) or outside(t.get("closed"))]
    if dated:
        first = dated[0]
        found.append(f"{len(dated)} record(s) dated outside the run (from the egress's start "
                     f"{started} to the verifier's {not_after}); first: "
                     f"{first.get('what') or first.get('event') or 'tunnel'} at "
                     f"{first.get('time') or first.get('opened')}")
    clients = sorted({str(c) for c in [r.get("client") for r in records] +
                      [t.get("client") for t in tunnels] if c})
    if len(clients) > 1:
        found.append(f"records from {len(clients)} clients ({', '.join(clients[:4])}): the "
                     "agent's container is the egress's only client")
    opened = {t["tunnel"]: t for t in tunnels}
    listed_all = not audit.get("tunnels_counted", {}).get("opened")
    in_tunnel: dict[str, int] = {}
    for r in records:
        if r.get("source") == "gate" and r.get("event") == "request":
            tid = str(r.get("tunnel"))
            in_tunnel[tid] = in_tunnel.get(tid, 0) + 1
    if listed_all:
        stray = [t for t in in_tunnel if t not in opened]
        if stray:
            found.append(f"request record(s) in {len(stray)} tunnel(s) never opened; first: "
                         f"tunnel {stray[0]}")
    over = [t for t, n in in_tunnel.items() if t in opened and not opened[t]["open"]
            and opened[t].get("reason") != "the egress restarted"
            and isinstance(opened[t].get("requests"), int) and n > opened[t]["requests"]]
    if over:
        found.append(f"tunnel {over[0]} holds more request records than its close counted "
                     f"({in_tunnel[over[0]]} > {opened[over[0]]['requests']})")
    created: dict[str, float] = {}
    orphans = []
    for r in records:  # oldest first
        if _allowed(r, "put") and r.get("new_rid"):
            created.setdefault(str(r["new_rid"]), _time(r))
        elif r.get("source") == "gate" and r.get("event") == "request" \
                and r.get("what") in ("poll", "fetch") and r.get("decision") == "allowed":
            if str(r.get("rid")) not in created:
                orphans.append(r)
    if orphans:
        found.append(f"{len(orphans)} allowed poll/fetch record(s) of a RID no earlier Put of "
                     f"this run created; first: {orphans[0].get('what')} of "
                     f"{orphans[0].get('rid')}")
    return found
