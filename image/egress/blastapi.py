"""The BLAST request policy: what the gate (and the site relay, again) relays of the BLAST URL
API, each request parsed once into a canonical form, and each report cut to what biotool's
own client returns.

Before the parameters, the request itself: GET or POST only, to the BLAST paths only, with
one Content-Length of at most MAX_BODY (no chunked bodies), a POST form-encoded with nothing
in its query string, a GET with no body.

The gate decides on the canonical form and builds the upstream request from it alone, so
NCBI receives exactly what was decided, never the agent's bytes: NCBI's documented parameter
names in their exact case, `&` as the one separator, every value decoded once (strict UTF-8)
and encoded again by the gate, and only the parameters biotool's client sends, per command,
each with a value rule. `QUERY` must be sequence data (FASTA or raw letters): an accession or
a GI names a record rather than searching for one, which the benchmark forbids (it would
identify the source dataset). For the same reason a report goes back with taxonomic and
alignment fields only: no accession, GI or sequence id, no hit sequences, titles cut.

Standard library only (it runs in the egress image beside gatekeeper.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import SplitResult, quote, unquote_to_bytes, urlsplit

BLAST_PATHS = ("/Blast.cgi", "/blast/Blast.cgi")
MAX_BODY = 8 << 20  # 40 queries of long reads fit easily

PROGRAMS = ("blastn", "blastp", "blastx", "tblastn", "tblastx")
_DATABASE = re.compile(r"[A-Za-z0-9_.]{1,64}")
_RID = re.compile(r"[A-Z0-9]{6,32}")
_TOOL = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
_EMAIL = re.compile(r"[^@\s&=]{1,64}@[^@\s&=]{1,253}")
_RAW = re.compile(rb"[A-Za-z0-9_.~%+=&*\-]*")  # what a form encoder writes; no ';', no spaces
_SEQUENCE_LINE = re.compile(r"[A-Za-z*\-]*")
TITLE_CAP = 200


class Refused(Exception):
    """The request is not one the gate relays: status, a one-line reason, and whether the
    connection is closed after the answer (when what follows it cannot be trusted)."""

    def __init__(self, status: int, reason: str, close: bool = False):
        super().__init__(reason)
        self.status, self.reason, self.close = status, reason, close


def request_path(method: str, target: str) -> SplitResult:
    """The request target, split, when it is a GET or POST to a BLAST path; else Refused."""
    if method not in ("GET", "POST"):
        raise Refused(405, f"method {method} is not used by the BLAST URL API", close=True)
    parts = urlsplit(target)
    if not target.startswith("/") or parts.path not in BLAST_PATHS:
        raise Refused(403, f"path {parts.path or target} is not the BLAST URL API "
                           f"({' or '.join(BLAST_PATHS)})", close=True)
    return parts


def body_length(headers) -> int:
    """The body's length from one plain Content-Length (at most MAX_BODY); else Refused."""
    if headers.get("Transfer-Encoding"):
        raise Refused(411, "chunked or encoded request bodies are refused; send Content-Length",
                      close=True)
    raw = headers.get_all("Content-Length") or []
    if len(raw) > 1 or (raw and not (raw[0].strip().isascii() and raw[0].strip().isdigit())):
        raise Refused(400, "bad Content-Length", close=True)
    length = int(raw[0]) if raw else 0
    if length > MAX_BODY:
        raise Refused(413, f"request body of {length} bytes is over {MAX_BODY} bytes", close=True)
    return length


def raw_params(method: str, parts: SplitResult, content_type: str | None, body: bytes) -> bytes:
    """The parameters as sent: a POST's form body, a GET's query string; else Refused."""
    if method == "GET":
        if body:
            raise Refused(400, "GET with a body", close=True)
        return parts.query.encode("latin-1", "replace")
    if parts.query:
        raise Refused(403, "POST with a query string: parameters go in the body only")
    ctype = (content_type or "").split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        raise Refused(415, f"POST body type {ctype or '(none)'} is not "
                           f"application/x-www-form-urlencoded")
    return body


def _fixed(expected: str):
    def check(value: str) -> str | None:
        return None if value == expected else f"must be {expected}"
    return check


def _matching(pattern: re.Pattern, what: str):
    def check(value: str) -> str | None:
        return None if pattern.fullmatch(value) else f"must be {what}"
    return check


def _one_of(values: tuple[str, ...]):
    def check(value: str) -> str | None:
        return None if value in values else f"must be one of {', '.join(values)}"
    return check


def _hitlist(value: str) -> str | None:
    return None if value.isascii() and value.isdigit() and 1 <= int(value) <= 100 else \
        "must be a whole number from 1 to 100"


def _query(value: str) -> str | None:
    """Sequence data only: FASTA records (or raw sequence letters), each record with letters
    of its own, never an accession or GI (NCBI would search the record it names)."""
    records = [0]  # letters per record; the first is any text before a '>' title
    for n, line in enumerate(value.splitlines(), start=1):
        line = line.strip()
        if line.startswith(">"):
            if any(ord(c) < 32 for c in line):
                return f"line {n} (a FASTA title) holds a control character"
            if len(records) > 1 and not records[-1]:
                return f"must be sequence data: the FASTA record before line {n} holds none"
            records.append(0)
            continue
        bare = "".join(line.split())
        if not _SEQUENCE_LINE.fullmatch(bare):
            return (f"must be sequence data (FASTA or raw sequence letters), not an accession "
                    f"or GI: line {n} holds {line[:40]!r}")
        records[-1] += len(bare)
    if len(records) > 1 and not records[-1]:
        return "must be sequence data: the last FASTA record holds none"
    return None if sum(records) else "holds no sequence letters"


_COMMON = {"tool": _matching(_TOOL, "a tool name of letters, digits, '.', '_' or '-'"),
           "email": _matching(_EMAIL, "an e-mail address")}
# Per request kind: every parameter biotool's client sends, with its value rule, in the order
# the gate writes them upstream; then the ones a request of that kind must carry.
PARAMS = {
    "put": {"CMD": _fixed("Put"), "PROGRAM": _one_of(PROGRAMS),
            "DATABASE": _matching(_DATABASE, "a BLAST database name"), "QUERY": _query,
            "HITLIST_SIZE": _hitlist, "FORMAT_TYPE": _fixed("JSON2_S"), **_COMMON},
    "poll": {"CMD": _fixed("Get"), "FORMAT_OBJECT": _fixed("SearchInfo"),
             "RID": _matching(_RID, "a RID"), **_COMMON},
    "fetch": {"CMD": _fixed("Get"), "FORMAT_TYPE": _fixed("JSON2_S"),
              "RID": _matching(_RID, "a RID"), **_COMMON},
}
REQUIRED = {"put": ("CMD", "PROGRAM", "DATABASE", "QUERY"),
            "poll": ("CMD", "FORMAT_OBJECT", "RID"), "fetch": ("CMD", "FORMAT_TYPE", "RID")}
NAMES = frozenset(n for p in PARAMS.values() for n in p)


@dataclass(frozen=True)
class Request:
    """One canonical BLAST URL API request: its kind and its parameters, decoded."""
    kind: str
    params: dict[str, str]

    @property
    def rid(self) -> str | None:
        return self.params.get("RID")

    def encoded(self) -> str:
        """The form the gate sends upstream: PARAMS order, `&`-joined, each value encoded."""
        return "&".join(f"{k}={quote(self.params[k], safe='')}" for k in PARAMS[self.kind]
                        if k in self.params)


def parse(method: str, raw: bytes) -> Request:
    """The canonical form of a query string (GET) or form body (POST), or Refused."""
    if not _RAW.fullmatch(raw):
        bad = next(bytes([b]) for b in raw if not _RAW.fullmatch(bytes([b])))
        raise Refused(400, f"the parameters hold {bad!r}, which a form encoder never writes "
                           f"(separators are '&' only; values are percent-encoded)")
    params: dict[str, str] = {}
    for pair in raw.split(b"&") if raw else []:
        name, sep, value = pair.partition(b"=")
        key = name.decode("ascii")
        if not sep or key not in NAMES:
            raise Refused(403, f"parameter {key[:40]!r} is not one the sandbox relays (it relays "
                               f"{', '.join(sorted(NAMES))})")
        if key in params:
            raise Refused(400, f"parameter {key} is repeated")
        try:
            params[key] = unquote_to_bytes(value.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(400, f"parameter {key} is not UTF-8 once decoded") from None
    cmd = params.get("CMD")
    if method == "POST" and cmd == "Put":
        kind = "put"
    elif method == "GET" and cmd == "Get" and "FORMAT_OBJECT" in params:
        kind = "poll"
    elif method == "GET" and cmd == "Get":
        kind = "fetch"
    else:
        raise Refused(403, f"CMD={cmd} by {method} is not allowed (the sandbox allows CMD=Put by "
                           f"POST, and CMD=Get with a RID by GET)")
    for key, value in params.items():
        if key not in PARAMS[kind]:
            raise Refused(403, f"parameter {key} is not relayed with a BLAST {kind}")
        why = PARAMS[kind][key](value)
        if why:
            raise Refused(403, f"{key} {why}")
    missing = [k for k in REQUIRED[kind] if k not in params]
    if missing:
        raise Refused(403, f"a BLAST {kind} needs {', '.join(missing)}")
    return Request(kind, params)


# ---------------------------------------------------------------- on the way back

_DESCRIPTION = ("title", "taxid", "sciname")
_HSP = ("num", "bit_score", "score", "evalue", "identity", "positive", "gaps", "align_len",
        "query_from", "query_to", "query_strand", "hit_from", "hit_to", "hit_strand")
_SEARCH = ("query_title", "query_len")


def _cut(value):
    return value[:TITLE_CAP] if isinstance(value, str) else value


def _search(search: dict) -> dict:
    out = {k: _cut(search[k]) for k in _SEARCH if k in search}
    hits = []
    for hit in search.get("hits") or []:
        if not isinstance(hit, dict):
            continue
        hits.append({
            "num": hit.get("num"),
            "description": [{k: _cut(d[k]) for k in _DESCRIPTION if k in d}
                            for d in hit.get("description") or [] if isinstance(d, dict)],
            "len": hit.get("len"),
            "hsps": [{k: h[k] for k in _HSP if k in h}
                     for h in hit.get("hsps") or [] if isinstance(h, dict)]})
    out["hits"] = hits
    if isinstance(search.get("message"), str):
        out["message"] = _cut(search["message"])
    return out


# What a report that does not parse is passed on as: it reads as a cut-off report (biotool's
# client then halves the batch and asks again), and carries none of the original's bytes.
CUT_OFF = b'{"BlastOutput2":['
_TITLE = re.compile(rb"<title>(.{0,200}?)</title>", re.I | re.S)
_QBLAST = re.compile(rb"QBlastInfoBegin(.{0,2000}?)QBlastInfoEnd", re.S)
_WORDS = re.compile(rb"<[^>]*>|[A-Za-z]{1,6}_?\d{4,}(?:\.\d+)?|gi\|[^ ]*")


def _status_page(body: bytes) -> bytes:
    """A page that is not a report (a status or error page), kept to what a client reads of
    it: its title, its QBlastInfo blocks and some words, without anything shaped like an
    accession or a GI."""
    title = _TITLE.search(body)
    info = b"".join(b"<!--QBlastInfoBegin" + m.group(1) + b"QBlastInfoEnd-->"
                    for m in _QBLAST.finditer(body))
    words = b" ".join(_WORDS.sub(b" ", body).split())[:400]
    return (b"<html><head><title>" + (title.group(1) if title else b"") + b"</title></head><body>"
            + info + b"<p>" + words + b"</p></body></html>")


def filter_report(body: bytes) -> bytes:
    """A JSON2_S report with taxonomic and alignment fields only; a status page reduced to
    what a client reads of it; CUT_OFF for JSON that does not parse or is not a report."""
    text = body.decode("utf-8", "replace").lstrip("\ufeff").strip()
    if not text.startswith(("{", "[")):
        return _status_page(body)
    try:
        doc = json.loads(text)
        reports = doc.get("BlastOutput2") if isinstance(doc, dict) else None
        if isinstance(reports, dict):
            reports = [reports]
        if not isinstance(reports, list):
            return CUT_OFF
        out = []
        for entry in reports:
            search = (((entry or {}).get("report") or {}).get("results") or {}).get("search") \
                if isinstance(entry, dict) else None
            out.append({"report": {"results": {"search": _search(search)}}}
                       if isinstance(search, dict) else {})
    except (ValueError, TypeError, AttributeError, RecursionError):
        return CUT_OFF
    return json.dumps({"BlastOutput2": out}, separators=(",", ":")).encode()
