"""The BLAST reply filter: each answer the gate (and the site relay) passes back rebuilt from
checked values, so nothing identifying goes back (blastrequest.py: what goes out).

A Put's RID and RTOE, a poll's Status and ThereAreHits, a report's taxonomic and alignment
fields, each of its type, titles and names reduced by biotool/hittext.py, with a fixed reason
phrase and headers of the gate's own; a report over MAX_REPLY or the parse bounds goes back
as cut off (biotool's client halves the batch).

Standard library only, rids.py and blastrequest.py beside it, and biotool/hittext.py (copied
beside it in the egress image).
"""

from __future__ import annotations

import http.client
import json
import re

from biotool import hittext
from blastrequest import MAX_QUERY_RECORDS
from rids import RID_INFO

# What comes back is rebuilt from checked values, never passed on: a fixed reason phrase,
# allowlisted headers, and for each kind of request only what biotool's client reads.

MAX_REPLY = 32 << 20        # a reply's bytes, read in chunks (upstream.py); more is refused or cut off,
                            # well under the egress's 512 MB and the relay's 256 MB
MAX_CONTAINERS = 300_000    # JSON objects and arrays in a report parsed at once
MAX_VALUES = 1_500_000      # JSON values (commas) in one: json.loads' memory is bounded by them
MAX_REPORTS = MAX_QUERY_RECORDS
MAX_HITS = 100              # HITLIST_SIZE's ceiling
MAX_HSPS = 20
MAX_DESCRIPTIONS = 5
STATUSES = ("WAITING", "READY", "FAILED", "UNKNOWN")
_RTOE_INFO = re.compile(rb"RTOE\s*=\s*(\d{1,6})\s")
_STATUS_INFO = re.compile(rb"Status\s*=\s*([A-Z]{1,16})\s")
_HITS_INFO = re.compile(rb"ThereAreHits\s*=\s*(yes|no)\s")
_RATE = re.compile(rb"too many requests|rate limit|usage limit|exceeded|overload", re.I)
# NCBI's error messages a client may see, by a fixed phrase each (never the page's words).
_ERRORS = ((re.compile(rb"no sequence data", re.I), "Query contains no sequence data"),
           (re.compile(rb"cpu usage limit", re.I), "CPU usage limit was exceeded"),
           (re.compile(rb"database .{0,40}not found|no alias or index", re.I),
            "the database was not found"),
           (re.compile(rb"results? .{0,20}expired|rid .{0,20}not found", re.I),
            "the RID is unknown or expired"))


def reason(status: int) -> str:
    """The reason phrase the agent sees: the standard one for the status, never NCBI's."""
    try:
        return http.client.responses[status]
    except KeyError:
        return "Unknown"


def reply_headers(headers: list[tuple[str, str]], body: bytes) -> list[tuple[str, str]]:
    """The headers the agent sees: a Content-Type for what the gate rebuilt (`body`) and a
    numeric Retry-After; nothing of NCBI's else (no cookie, disposition, X-..., server)."""
    ctype = "application/json" if body.startswith((b"{", b"[")) else "text/html; charset=utf-8"
    out = [("Content-Type", ctype)]
    for k, v in headers:
        if k.lower() == "retry-after" and v.strip().isdigit() and len(v.strip()) <= 5:
            out.append(("Retry-After", v.strip()))
            break
    return out


def _page(title: str, info: list[tuple[str, str]], words: str = "") -> bytes:
    block = "".join(f"\n\t{k}={v}" if k != "RID" and k != "RTOE" else f"\n    {k} = {v}"
                    for k, v in info)
    qblast = f"<!--QBlastInfoBegin{block}\nQBlastInfoEnd\n-->\n" if info else ""
    return (f"<html><head><title>{title}</title></head><body>\n{qblast}"
            f"<p>{words}</p></body></html>\n").encode()


def _page_words(body: bytes) -> tuple[str, str]:
    """(title, words) for a page that is no answer: fixed phrases chosen by what it says."""
    if _RATE.search(body):
        return ("NCBI - Too Many Requests", "Too Many Requests: your usage limit has been "
                "exceeded; wait and try again later.")
    for pattern, phrase in _ERRORS:
        if pattern.search(body):
            return "NCBI Blast: Error", f"Error: {phrase}."
    return "NCBI Blast: page withheld", "NCBI answered with a page the sandbox does not pass on."


def filter_put(body: bytes) -> bytes:
    """A Put's answer: its RID and RTOE in a fixed page, or a fixed page naming what it was."""
    rid, rtoe = RID_INFO.search(body), _RTOE_INFO.search(body)
    if rid:
        info = [("RID", rid.group(1).decode())]
        if rtoe:
            info.append(("RTOE", rtoe.group(1).decode()))
        return _page("NCBI Blast", info, "Your request has been submitted.")
    title, words = _page_words(body)
    return _page(title, [], words)


def filter_status(body: bytes) -> bytes:
    """A SearchInfo answer (or a fetch's page that is no report): Status and ThereAreHits,
    each from its fixed set, in a fixed page; a fixed page naming it when it holds neither."""
    status, hits = _STATUS_INFO.search(body), _HITS_INFO.search(body)
    info = [("Status", status.group(1).decode())] if status and \
        status.group(1).decode() in STATUSES else []
    if hits and info:
        info.append(("ThereAreHits", hits.group(1).decode()))
    if info:
        return _page("Status", info)
    title, words = _page_words(body)
    return _page(title, [], words)


def _checked(entry: dict, fields: dict) -> dict:
    """The fields of `entry` that pass their type check (fields: name -> check)."""
    out = {}
    for key, check in fields.items():
        if key in entry:
            value = check(entry[key])
            if value is not None and value != "":
                out[key] = value
    return out


_DESCRIPTION = {"title": hittext.public_text, "taxid": hittext.taxid,
                "sciname": hittext.public_text}
_COUNT = hittext.integer
_HSP = {"num": _COUNT, "bit_score": hittext.number, "score": hittext.number,
        "evalue": hittext.number, "identity": _COUNT, "positive": _COUNT, "gaps": _COUNT,
        "align_len": _COUNT, "query_from": _COUNT, "query_to": _COUNT,
        "query_strand": hittext.strand, "hit_from": _COUNT, "hit_to": _COUNT,
        "hit_strand": hittext.strand}


def _list(value, cap: int) -> list[dict]:
    return [v for v in value[:cap] if isinstance(v, dict)] if isinstance(value, list) else []


def _search(search: dict) -> dict:
    """Hits with taxonomic and alignment fields, each value of its type. The query's title
    is not passed: biotool's client maps reports to queries by their order."""
    out = _checked(search, {"query_len": _COUNT})
    out["hits"] = [{**_checked(hit, {"num": _COUNT, "len": _COUNT}),
                    "description": [_checked(d, _DESCRIPTION)
                                    for d in _list(hit.get("description"), MAX_DESCRIPTIONS)],
                    "hsps": [_checked(h, _HSP) for h in _list(hit.get("hsps"), MAX_HSPS)]}
                   for hit in _list(search.get("hits"), MAX_HITS)]
    if isinstance(search.get("message"), str) and "no hits found" in search["message"].lower():
        out["message"] = "No hits found"
    return out


# What a report that does not parse (or is over the bounds) is passed on as: it reads as a
# cut-off report (biotool's client then halves the batch and asks again), and carries none
# of the original's bytes.
CUT_OFF = b'{"BlastOutput2":['


def within_bounds(body: bytes) -> bool:
    """Whether parsing `body` whole stays within MAX_REPLY, MAX_CONTAINERS and MAX_VALUES
    (counted over the bytes, strings included: an over-count only refuses sooner)."""
    return len(body) <= MAX_REPLY and body.count(b"{") + body.count(b"[") <= MAX_CONTAINERS \
        and body.count(b",") <= MAX_VALUES


def filter_report(body: bytes) -> bytes:
    """A JSON2_S report with taxonomic and alignment fields only, each value type-checked; a
    status page reduced to its Status; CUT_OFF for JSON that does not parse, is over the
    bounds or is not a report."""
    head = body[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head.startswith((b"{", b"[")):
        return filter_status(body)
    if not within_bounds(body):
        return CUT_OFF
    try:
        # latin-1: one byte a character whatever the bytes (the text is never wider than the
        # reply); what is not ASCII is removed by hittext anyway.
        doc = json.loads(body.decode("latin-1").lstrip("\xef\xbb\xbf"))
        reports = doc.get("BlastOutput2") if isinstance(doc, dict) else None
        if isinstance(reports, dict):
            reports = [reports]
        if not isinstance(reports, list):
            return CUT_OFF
        out = []
        for entry in reports[:MAX_REPORTS]:
            search = (((entry or {}).get("report") or {}).get("results") or {}).get("search") \
                if isinstance(entry, dict) else None
            out.append({"report": {"results": {"search": _search(search)}}}
                       if isinstance(search, dict) else {})
    except (ValueError, TypeError, AttributeError, RecursionError):
        return CUT_OFF
    return json.dumps({"BlastOutput2": out}, separators=(",", ":")).encode()


def filter_reply(kind: str, body: bytes) -> bytes:
    """What the agent gets back for a request of `kind` (put, poll or fetch)."""
    return {"put": filter_put, "poll": filter_status, "fetch": filter_report}[kind](body)
