"""The BLAST request policy: what the gate (and the site relay, again) relays of the BLAST URL
API, each request parsed once into a canonical form (blastreply.py: what comes back).

Before the parameters, the request itself: GET or POST only, to the BLAST paths only, with
one Content-Length of at most MAX_BODY (no chunked bodies), a POST form-encoded with nothing
in its query string, a GET with no body.

The gate decides on the canonical form and builds the upstream request from it alone, so
NCBI receives exactly what was decided, never the agent's bytes: NCBI's documented parameter
names in their exact case, `&` as the one separator, every value decoded once (strict UTF-8)
and encoded again by the gate, and only the parameters biotool's client sends, per command,
each with a value rule (DATABASE from NCBI's names, RID by rids.py's one grammar). `QUERY`
must be sequence data (FASTA or raw letters, NCBI's ASCII line rules): an accession or a GI
names a record rather than searching for one, which the benchmark forbids (it would identify
the source dataset). It is checked while it is decoded, in chunks, with caps on lines,
records and title length, so a request's memory is bounded by its size, never by how many
lines it holds.

Standard library only, and rids.py beside it.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from urllib.parse import SplitResult, unquote_to_bytes, urlsplit

from rids import RID

BLAST_PATHS = ("/Blast.cgi", "/blast/Blast.cgi")
MAX_BODY = 8 << 20  # 40 queries of long reads fit easily

MAX_QUERY_LINES = 250_000   # an 8 MB FASTA of 60-letter lines has ~140,000
MAX_QUERY_RECORDS = 100     # biotool sends at most 40 per Put; NCBI caps a Put anyway
MAX_TITLE_LINE = 1000       # characters of one FASTA title line
MAX_VALUE = 1024            # bytes of any parameter but QUERY, as sent
DECODE_CHUNK = 1 << 16      # QUERY is decoded and checked this many bytes at a time
FORM_SAFE = "*-._~ "        # what the canonical form leaves unescaped (space becomes '+')
_UNSAFE = re.compile(rb"[^A-Za-z0-9*\-._~ ]")
_ESCAPES = [b"%%%02X" % b for b in range(256)]

PROGRAMS = ("blastn", "blastp", "blastx", "tblastn", "tblastx")
# NCBI's BLAST databases served by the URL API (its documented names), by exact name: a
# free-form name could carry an accession or any text to NCBI and back.
DATABASES = (
    "nt", "core_nt", "nr", "clustered_nr", "refseq_rna", "refseq_protein", "refseq_select_rna",
    "refseq_select_prot", "refseq_genomic", "refseq_genomes", "refseq_representative_genomes",
    "swissprot", "pdb", "pdbaa", "pdbnt", "landmark", "est", "est_human", "est_mouse",
    "est_others", "gss", "htgs", "sts", "wgs", "tsa_nt", "tsa_nr", "env_nt", "env_nr", "pat",
    "patnt", "chromosome",
    "Betacoronavirus", "16S_ribosomal_RNA", "18S_fungal_sscRNA_typestrains",
    "28S_fungal_sscRNA_typestrains", "ITS_RefSeq_Fungi", "ITS_eukaryote_sequences",
    "LSU_eukaryote_rRNA", "LSU_prokaryote_rRNA", "SSU_eukaryote_rRNA",
    "ref_viruses_rep_genomes", "ref_prok_rep_genomes", "ref_euk_rep_genomes",
    "ref_viroids_rep_genomes", "mito", "human_genome", "mouse_genome", "Viral_genomes",
)
_TOOL = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
_EMAIL = re.compile(r"[^@\s&=]{1,64}@[^@\s&=]{1,253}")
_RAW = re.compile(rb"[A-Za-z0-9_.~%+=&*\-]*")  # what a form encoder writes; no ';', no spaces
_SEQUENCE_PIECE = re.compile(r"[A-Za-z*\- \t]*")
_BREAKS = re.compile(r"\r\n|\r|\n")
_SEQUENCE_CHUNK = re.compile(r"[A-Za-z*\- \t\r\n]*")
_TITLE_BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff]")
_DROP_LETTERS = str.maketrans("", "", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


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


def _database(value: str) -> str | None:
    return None if value in DATABASES else \
        f"must be one of NCBI's BLAST database names ({', '.join(DATABASES[:6])}, ...)"


def _hitlist(value: str) -> str | None:
    return None if value.isascii() and value.isdigit() and 1 <= int(value) <= 100 else \
        "must be a whole number from 1 to 100"


class _QueryScan:
    """QUERY validated as it is decoded, chunk by chunk, never held as a list of lines: FASTA
    records (or raw sequence letters), each record with letters of its own, never an
    accession or GI (NCBI would search the record it names). NCBI's own line rules, not
    Python's: lines end at LF, CR LF or CR only; whitespace is ASCII space and tab; a title
    line starts with '>' in its first column; outside titles only ASCII sequence letters."""

    def __init__(self):
        self.line, self.mode, self.cr = 1, "start", False  # mode: start | title | seq
        self.title_len = 0
        self.records = [0]  # letters per record; the first is any text before a '>' title
        self.first = ""     # the current line's first characters, for the message
        self.lead = False   # the current line began with spaces or tabs

    def feed(self, text: str) -> None:
        if self.cr and text.startswith("\n"):
            text = text[1:]  # the LF of a CR LF split between two chunks
        self.cr = text.endswith("\r")
        if self.mode != "title" and ">" not in text and _SEQUENCE_CHUNK.fullmatch(text):
            return self._sequence_only(text)
        pieces = _BREAKS.split(text)
        for i, piece in enumerate(pieces):
            if i:
                self._end_line()
            if piece:
                self._piece(piece)

    def _sequence_only(self, text: str) -> None:
        """A chunk of sequence lines only (the common case), checked and counted whole: the
        same rules as line by line, at the speed of one regular expression."""
        breaks = text.count("\n") + text.count("\r") - text.count("\r\n")
        self.line += breaks
        if self.line > MAX_QUERY_LINES:
            raise Refused(403, f"QUERY has more than {MAX_QUERY_LINES} lines")
        self.records[-1] += len(text) - len(text.translate(_DROP_LETTERS))
        tail = text
        if breaks:
            tail = text[max(text.rfind("\n"), text.rfind("\r")) + 1:]
            self.mode, self.first, self.lead = "start", "", False
        if tail.strip(" \t"):
            self.mode = "seq"
        elif tail and self.mode == "start":
            self.lead = True

    def _end_line(self) -> None:
        self.line += 1
        if self.line > MAX_QUERY_LINES:
            raise Refused(403, f"QUERY has more than {MAX_QUERY_LINES} lines")
        self.mode, self.first, self.lead = "start", "", False

    def _piece(self, piece: str) -> None:
        n = self.line
        if self.mode == "start":
            if self.lead and piece.lstrip(" \t").startswith(">"):
                raise Refused(403, f"QUERY line {n}: whitespace before '>' (a FASTA title "
                                   f"starts in the first column)")
            if piece.startswith(">"):
                if len(self.records) > 1 and not self.records[-1]:
                    raise Refused(403, f"QUERY must be sequence data: the FASTA record before "
                                       f"line {n} holds none")
                if len(self.records) > MAX_QUERY_RECORDS:
                    raise Refused(403, f"QUERY has more than {MAX_QUERY_RECORDS} FASTA records")
                self.records.append(0)
                self.mode, self.title_len, piece = "title", 0, piece[1:]
            elif piece.lstrip(" \t").startswith(">"):
                raise Refused(403, f"QUERY line {n}: whitespace before '>' (a FASTA title "
                                   f"starts in the first column)")
            elif not piece.strip(" \t"):
                self.lead = True
                return  # blank so far: the line's kind is still open
            else:
                self.mode = "seq"
        if not self.first:
            self.first = piece[:40]
        if self.mode == "title":
            self.title_len += len(piece)
            if self.title_len > MAX_TITLE_LINE:
                raise Refused(403, f"QUERY line {n} (a FASTA title) is over {MAX_TITLE_LINE} "
                                   f"characters")
            if _TITLE_BAD.search(piece):
                raise Refused(403, f"QUERY line {n} (a FASTA title) holds a control character")
            return
        if not _SEQUENCE_PIECE.fullmatch(piece):
            raise Refused(403, f"QUERY must be sequence data (FASTA or raw sequence letters), "
                               f"not an accession or GI: line {n} holds {self.first!r}")
        self.records[-1] += len(piece) - len(piece.translate(_DROP_LETTERS))

    def finish(self) -> None:
        if len(self.records) > 1 and not self.records[-1]:
            raise Refused(403, "QUERY must be sequence data: the last FASTA record holds none")
        if not sum(self.records):
            raise Refused(403, "QUERY holds no sequence letters")

    @property
    def count(self) -> int:
        """FASTA records (raw letters with no title count as one)."""
        return max(1, len(self.records) - 1)


def query_lines(query: str) -> list[str]:
    """QUERY's lines by NCBI's rule (each ends at LF, CR LF or a lone CR), as _QueryScan
    reads them."""
    return _BREAKS.split(query)


def _decoded(value: bytes):
    """A form value's bytes, percent- and '+'-decoded in bounded chunks (never split inside a
    %XX), so a value of many escapes is never one list of millions of pieces."""
    i, n = 0, len(value)
    while i < n:
        j = min(n, i + DECODE_CHUNK)
        if j < n:
            k = value.rfind(b"%", j - 2, j)
            if k > i:
                j = k
        yield unquote_to_bytes(value[i:j].replace(b"+", b" "))
        i = j


def _form_encoded(value: bytes) -> str:
    """`value` as the gate writes it in a form: unreserved bytes as they are, a space as '+',
    every other byte %XX (a regular expression's speed: most of a QUERY is letters)."""
    return _UNSAFE.sub(lambda m: _ESCAPES[m.group()[0]], value).replace(b" ", b"+").decode()


def _query_value(raw: bytes) -> tuple[str, str, int]:
    """QUERY's decoded text, its canonical encoding and its record count, validated while it
    is decoded; else Refused. Memory: the two strings, never a per-line list."""
    scan, decoder = _QueryScan(), codecs.getincrementaldecoder("utf-8")("strict")
    text: list[str] = []  # about len(raw) / DECODE_CHUNK pieces
    form: list[str] = []
    try:
        for chunk in _decoded(raw):
            part = decoder.decode(chunk)
            scan.feed(part)
            text.append(part)
            form.append(_form_encoded(chunk))
        scan.feed(decoder.decode(b"", final=True))
    except UnicodeDecodeError:
        raise Refused(400, "parameter QUERY is not UTF-8 once decoded") from None
    scan.finish()
    decoded = "".join(text)
    text.clear()  # the pieces go as soon as they are joined: at most two copies at once
    return decoded, "".join(form), scan.count


def _ascii_value(key: str, raw: bytes) -> str:
    """A short parameter's value, decoded; ASCII only (every rule below is ASCII)."""
    if len(raw) > MAX_VALUE:
        raise Refused(403, f"parameter {key} is over {MAX_VALUE} bytes")
    value = unquote_to_bytes(raw.replace(b"+", b" "))
    if not value.isascii():
        raise Refused(400, f"parameter {key} holds a byte that is not ASCII")
    return value.decode("ascii")


_COMMON = {"tool": _matching(_TOOL, "a tool name of letters, digits, '.', '_' or '-'"),
           "email": _matching(_EMAIL, "an e-mail address")}
# Per request kind: every parameter biotool's client sends, with its value rule, in the order
# the gate writes them upstream; then the ones a request of that kind must carry. QUERY's
# rule is _QueryScan, applied while it is decoded.
PARAMS = {
    "put": {"CMD": _fixed("Put"), "PROGRAM": _one_of(PROGRAMS),
            "DATABASE": _database, "QUERY": None,
            "HITLIST_SIZE": _hitlist, "FORMAT_TYPE": _fixed("JSON2_S"), **_COMMON},
    "poll": {"CMD": _fixed("Get"), "FORMAT_OBJECT": _fixed("SearchInfo"),
             "RID": _matching(RID, "a RID"), **_COMMON},
    "fetch": {"CMD": _fixed("Get"), "FORMAT_TYPE": _fixed("JSON2_S"),
              "RID": _matching(RID, "a RID"), **_COMMON},
}
REQUIRED = {"put": ("CMD", "PROGRAM", "DATABASE", "QUERY"),
            "poll": ("CMD", "FORMAT_OBJECT", "RID"), "fetch": ("CMD", "FORMAT_TYPE", "RID")}
NAMES = frozenset(n for p in PARAMS.values() for n in p)


@dataclass(frozen=True)
class Request:
    """One canonical BLAST URL API request: its kind, its parameters decoded, the form the
    gate sends upstream (PARAMS order, `&`-joined, each value encoded by the gate) and, for a
    Put, how many FASTA records QUERY holds."""
    kind: str
    params: dict[str, str]
    form: str
    records: int = 0

    @property
    def rid(self) -> str | None:
        return self.params.get("RID")

    def encoded(self) -> str:
        return self.form


def _pairs(raw: bytes):
    """(name, sep, value) of each `&`-separated pair, one at a time (never a list of all of
    them: the caller stops at the first unknown or repeated name), each value copied once."""
    i = 0
    while raw and i <= len(raw):
        j = raw.find(b"&", i)
        j = len(raw) if j < 0 else j
        k = raw.find(b"=", i, j)
        name = raw[i:j if k < 0 else k][:64].decode("ascii")
        value = raw[k + 1:j] if k >= 0 else b""
        if b"=" in value:
            raise Refused(400, f"parameter {name[:40]!r} holds a bare '=' (a form encoder "
                               f"writes %3D)")
        yield name, (b"=" if k >= 0 else b""), value
        i = j + 1


def parse(method: str, raw: bytes) -> Request:
    """The canonical form of a query string (GET) or form body (POST), or Refused. Memory is
    bounded by construction: QUERY is decoded and checked in chunks, other values are short."""
    if not _RAW.fullmatch(raw):
        bad = next(bytes([b]) for b in raw if not _RAW.fullmatch(bytes([b])))
        raise Refused(400, f"the parameters hold {bad!r}, which a form encoder never writes "
                           f"(separators are '&' only; values are percent-encoded)")
    params: dict[str, str] = {}
    query_raw = None
    for key, sep, value in _pairs(raw):
        if not sep or key not in NAMES:
            raise Refused(403, f"parameter {key[:40]!r} is not one the sandbox relays (it relays "
                               f"{', '.join(sorted(NAMES))})")
        if key in params or (key == "QUERY" and query_raw is not None):
            raise Refused(400, f"parameter {key} is repeated")
        if key == "QUERY":
            query_raw = value
        else:
            params[key] = _ascii_value(key, value)
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
    if query_raw is not None and kind != "put":
        raise Refused(403, f"parameter QUERY is not relayed with a BLAST {kind}")
    missing = [k for k in REQUIRED[kind] if k not in params and
               not (k == "QUERY" and query_raw is not None)]
    if missing:
        raise Refused(403, f"a BLAST {kind} needs {', '.join(missing)}")
    records, query_form = 0, ""
    if query_raw is not None:  # checked last: the cheap refusals come first
        params["QUERY"], query_form, records = _query_value(query_raw)
    form = "&".join(
        f"{k}={query_form if k == 'QUERY' else _form_encoded(params[k].encode())}"
        for k in PARAMS[kind] if k in params)
    return Request(kind, params, form, records)
