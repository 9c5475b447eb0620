#!/usr/bin/env python3
"""A faithful mock of NCBI's BLAST URL API (Blast.cgi), standard library only.

It speaks the real protocol: `CMD=Put` (POST) answers the QBlastInfo page with `RID = ` and
`RTOE = `; `CMD=Get&FORMAT_OBJECT=SearchInfo` answers `Status=WAITING` until the search is
due, then `Status=READY`; `CMD=Get&FORMAT_TYPE=JSON2_S` answers the JSON2_S report. Hits come
from shared k-mers against a small FASTA database (by default the repository's demo panel,
named with the taxa of refs/databases.toml). Failure modes reproduce what the real service
has done: no RID, an HTML rate-limit page, truncated JSON, Status=FAILED / UNKNOWN, never
ready, an empty report, an HTML page instead of JSON; and a redirect elsewhere (which a
client must not follow). Every request is recorded with its time on the server's clock
(injectable), and breaches of NCBI's pacing rules are listed.

Standalone: python3 tests/biotool_testing/mock_ncbi.py --port 8443 [--tls-cert C --tls-key K] [--mode ok]
GET /_mock/requests returns {"requests": [...], "violations": [...]} as JSON.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import random
import re
import ssl
import string
import sys
import threading
import time
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

REPO = Path(__file__).resolve().parents[2]  # it also runs as a script, without the package
MODES = ("ok", "norid", "ratelimit", "ratelimit429", "truncate", "failed", "unknown", "never",
         "empty", "emptyjson", "html", "redirect")
REDIRECT_TO = "https://evil.example/blast/Blast.cgi"  # mode redirect: where Put points
K = 11
_COMP = str.maketrans("ACGTN", "TGCAN")

PUT_PAGE = """<!DOCTYPE html>
<html><head><title>NCBI Blast</title></head><body>
<!--QBlastInfoBegin
    RID = {rid}
    RTOE = {rtoe}
QBlastInfoEnd
-->
<p>Your request has been successfully submitted and put into the Blast Queue.</p>
</body></html>
"""
STATUS_PAGE = """<html><head><title>Status</title></head><body>
<!--QBlastInfoBegin
\tStatus={status}
QBlastInfoEnd
-->
{extra}</body></html>
"""
RATE_PAGE = """<!DOCTYPE html><html><head><title>NCBI - Too Many Requests</title></head>
<body><h1>Too Many Requests</h1><p>Your usage limit has been exceeded; you are sending
requests too frequently. Please wait and try again later.</p></body></html>
"""
ERROR_PAGE = """<!DOCTYPE html><html><head><title>NCBI Blast: Error</title></head><body>
<div class="error msInf">Message ID#24 Error: Query contains no sequence data</div>
</body></html>
"""


@functools.lru_cache(maxsize=1)
def _default_index() -> "KmerIndex":
    return KmerIndex(read_panel())


def read_panel() -> list[dict]:
    """The demo panel's sequences with NCBI-style titles, taxids and scientific names."""
    manifest = tomllib.loads((REPO / "refs" / "databases.toml").read_text())
    entry = manifest["database"][0]
    taxa = entry.get("taxa", {})
    out = []
    for src in entry["source"]:
        name, seq = None, []
        for line in (REPO / "refs" / src).read_text().splitlines() + [">"]:
            if line.startswith(">"):
                if name:
                    ident, _, desc = name.partition(" ")
                    acc = ident.strip("|").split("|")[-1] if "|" in ident else ident
                    t = taxa.get(acc, {})
                    out.append({"id": ident, "accession": acc, "title": desc.strip() or
                                t.get("sciname", acc), "taxid": t.get("taxid", 0),
                                "sciname": t.get("sciname", ""), "seq": "".join(seq).upper()})
                name, seq = line[1:].strip(), []
            else:
                seq.append(line.strip())
    return out


class KmerIndex:
    """Shared-k-mer search: enough to give each read a plausible best hit and score."""

    def __init__(self, records: list[dict]):
        self.records = records
        self.index: dict[str, set[int]] = {}
        for i, rec in enumerate(records):
            s = rec["seq"]
            for j in range(len(s) - K + 1):
                self.index.setdefault(s[j:j + K], set()).add(i)

    def search(self, seq: str, hitlist: int) -> list[dict]:
        hits = []
        for strand, q in (("Plus", seq), ("Minus", seq.translate(_COMP)[::-1])):
            counts: dict[int, list[int]] = {}
            for j in range(len(q) - K + 1):
                for i in self.index.get(q[j:j + K], ()):
                    counts.setdefault(i, []).append(j)
            for i, pos in counts.items():
                if len(pos) < 3:
                    continue
                span = pos[-1] - pos[0] + K
                ident = min(span, len(pos) + K - 1)
                bits = round(1.8 * ident, 1)
                hits.append((bits, i, strand, pos[0], span, ident))
        hits.sort(key=lambda h: -h[0])
        out, seen = [], set()
        for bits, i, strand, start, span, ident in hits:
            if i in seen:
                continue
            seen.add(i)
            rec = self.records[i]
            n = len(out) + 1
            out.append({"num": n, "description": [{
                "id": f"gi|0|ref|{rec['accession']}|", "accession": rec["accession"].split(".")[0],
                "title": rec["title"], "taxid": rec["taxid"], "sciname": rec["sciname"]}],
                "len": len(rec["seq"]), "hsps": [{
                    "num": 1, "bit_score": bits, "score": int(bits * 2),
                    "evalue": float(f"{10 ** -(bits / 5):.3g}"), "identity": ident,
                    "query_from": start + 1, "query_to": start + span, "query_strand": "Plus",
                    "hit_from": 1, "hit_to": span, "hit_strand": strand, "align_len": span,
                    "gaps": 0, "qseq": "N" * span, "hseq": "N" * span, "midline": "|" * span}]})
            if len(out) >= hitlist:
                break
        return out


def big_report(size: int) -> bytes:
    """A well-formed JSON2_S report of about `size` bytes: one query whose hits carry long
    alignments, as a search with many long reads and hits answers."""
    hsp = {"num": 1, "bit_score": 1.0, "evalue": 1.0, "identity": 1, "align_len": 1,
           "query_from": 1, "query_to": 1, "hit_from": 1, "hit_to": 1,
           "qseq": "A" * 50_000, "hseq": "A" * 50_000, "midline": "|" * 50_000}
    hit = json.dumps({"num": 1, "description": [{"title": "x", "taxid": 1, "sciname": "x"}],
                      "len": 1, "hsps": [hsp]})
    hits = ",".join([hit] * max(1, size // len(hit)))
    return ('{"BlastOutput2":[{"report":{"results":{"search":{"query_title":"q1","query_len":1,'
            '"hits":[' + hits + ']}}}}]}').encode()


def parse_fasta(text: str) -> list[tuple[str, str]]:
    out, name, seq = [], None, []
    for line in text.splitlines() + [">"]:
        if line.startswith(">"):
            if name is not None:
                out.append((name, "".join(seq).upper()))
            name, seq = line[1:].strip(), []
        elif line.strip():
            seq.append(line.strip())
    return out


class MockNCBI:
    def __init__(self, mode: str = "ok", rtoe: int = 0, ready_after: float = 0.0,
                 truncate_above: int = 10, clock=time.time, min_interval: float = 10.0,
                 poll_interval: float = 60.0, records: list[dict] | None = None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.mode, self.rtoe, self.ready_after = mode, rtoe, ready_after
        self.truncate_above, self.clock = truncate_above, clock
        self.min_interval, self.poll_interval = min_interval, poll_interval
        self.kmers = KmerIndex(records) if records is not None else _default_index()
        self.rids: dict[str, dict] = {}
        self.requests: list[dict] = []
        self.violations: list[str] = []
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        # Scripted answers (tests of what the gate passes back): {"put" | "poll" | "get":
        # (status, reason, [(header, value)], body)}, answered after the request is recorded.
        self.script: dict[str, tuple[int, str, list, bytes]] = {}

    # ---- protocol
    def _record(self, method: str, params: dict, headers: dict | None = None) -> float:
        now = self.clock()
        rid = params.get("RID", "")
        cmd = params.get("CMD", "")
        what = "put" if cmd == "Put" else ("poll" if params.get("FORMAT_OBJECT") == "SearchInfo"
                                           else "get" if cmd == "Get" else cmd or "?")
        if self.requests and now - self.requests[-1]["t"] < self.min_interval - 1e-6:
            self.violations.append(f"{what} at {now:.3f} only {now - self.requests[-1]['t']:.3f}"
                                   f" s after the previous request")
        if what == "poll" and rid in self.rids:
            info = self.rids[rid]
            last = info.get("last_poll")
            if last is not None and now - last < self.poll_interval - 1e-6:
                self.violations.append(f"RID {rid} polled {now - last:.3f} s after its last poll")
            if now - info["t_put"] < info["rtoe"] - 1e-6:
                self.violations.append(f"RID {rid} polled before its RTOE")
            info["last_poll"] = now
        n_queries = len(parse_fasta(params.get("QUERY", ""))) if what == "put" else 0
        # The query's digest (not the query): what an egress audit's Put record must match.
        digest = hashlib.sha256(params["QUERY"].encode("utf-8")).hexdigest() \
            if what == "put" and "QUERY" in params else None
        self.requests.append({"t": now, "method": method, "what": what, "rid": rid,
                              "queries": n_queries, "query_sha256": digest,
                              "params": {k: v for k, v in params.items() if k != "QUERY"},
                              "headers": dict(headers or {})})
        return now

    def handle(self, method: str, params: dict, headers: dict | None = None) -> tuple:
        with self.lock:
            now = self._record(method, params, headers)
            scripted = self.script.get(self.requests[-1]["what"])
            if scripted:
                status, reason, extra, body = scripted
                ctype = next((v for k, v in extra if k.lower() == "content-type"), "text/html")
                return status, ctype, body, reason, [h for h in extra
                                                     if h[0].lower() != "content-type"]
            cmd = params.get("CMD")
            if cmd == "Put":
                status, ctype, body = self._put(params, now)
                m = re.search(rb"RID = (\w+)", body)
                self.requests[-1]["rid"] = m.group(1).decode() if m else ""
                return status, ctype, body
            if cmd == "Get" and params.get("FORMAT_OBJECT") == "SearchInfo":
                return self._status(params.get("RID", ""), now)
            if cmd == "Get":
                return self._report(params.get("RID", ""), params)
            return 400, "text/html", ERROR_PAGE.encode()

    def _put(self, params: dict, now: float):
        if self.mode == "ratelimit":
            return 200, "text/html", RATE_PAGE.encode()
        if self.mode == "ratelimit429":
            return 429, "text/html", RATE_PAGE.encode()
        if self.mode == "redirect":
            return 302, "text/html", b"<html><title>Moved</title></html>"
        queries = parse_fasta(params.get("QUERY", ""))
        if self.mode == "norid" or not queries:
            return 200, "text/html", ERROR_PAGE.encode()
        rid = "".join(random.choices(string.ascii_uppercase + string.digits, k=11))
        self.rids[rid] = {"queries": queries, "t_put": now, "rtoe": self.rtoe,
                          "hitlist": int(params.get("HITLIST_SIZE", "50") or 50),
                          "db": params.get("DATABASE", "nt"), "program": params.get("PROGRAM")}
        return 200, "text/html", PUT_PAGE.format(rid=rid, rtoe=self.rtoe).encode()

    def _status(self, rid: str, now: float):
        info = self.rids.get(rid)
        if info is None or self.mode == "unknown":
            status = "UNKNOWN"
        elif self.mode == "failed":
            status = "FAILED"
        elif self.mode == "never" or now - info["t_put"] < max(self.ready_after, 0):
            status = "WAITING"
        else:
            status = "READY"
        extra = ("<!--QBlastInfoBegin\n\tThereAreHits=yes\nQBlastInfoEnd\n-->\n"
                 if status == "READY" else "")
        return 200, "text/html", STATUS_PAGE.format(status=status, extra=extra).encode()

    def _report(self, rid: str, params: dict):
        info = self.rids.get(rid)
        if info is None:
            return 200, "text/html", STATUS_PAGE.format(status="UNKNOWN", extra="").encode()
        if params.get("FORMAT_TYPE") != "JSON2_S":
            return 400, "text/html", ERROR_PAGE.encode()
        if self.mode == "html":
            return 200, "text/html", RATE_PAGE.encode()
        if self.mode == "empty":
            return 200, "application/json", b""
        if self.mode == "emptyjson":
            return 200, "application/json", b'{"BlastOutput2": []}'
        reports = []
        for i, (title, seq) in enumerate(info["queries"], 1):
            reports.append({"report": {
                "program": info["program"] or "blastn", "version": "BLASTN 2.16.0+",
                "reference": "Zheng Zhang et al. (2000)", "search_target": {"db": info["db"]},
                "params": {"expect": 0.05, "sc_match": 1, "sc_mismatch": -2,
                           "filter": "L;m;"},
                "results": {"search": {
                    "query_id": f"Query_{i}", "query_title": title, "query_len": len(seq),
                    "hits": self.kmers.search(seq, info["hitlist"]),
                    "stat": {"db_num": 100000000, "db_len": 1000000000000}}}}})
        body = json.dumps({"BlastOutput2": reports}).encode()
        if self.mode == "truncate" and len(info["queries"]) > self.truncate_above:
            body = body[: len(body) // 2]  # cut off mid-JSON, as a 200 MB reply once arrived
        return 200, "application/json", body

    # ---- serving
    def serve(self, port: int = 0, host: str = "127.0.0.1", tls_cert: str | None = None,
              tls_key: str | None = None, background: bool = True) -> int:
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):  # quiet: the recorded requests are the log
                pass

            def _send(self, status: int, ctype: str, body: bytes, reason: str | None = None,
                      extra: list = ()):
                self.send_response(status, reason)
                self.send_header("Content-Type", ctype)
                for k, v in extra:
                    self.send_header(k, v)
                if status in (301, 302, 303, 307, 308):
                    self.send_header("Location", REDIRECT_TO)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _dispatch(self, method: str, params: dict):
                path = urlsplit(self.path).path
                if method == "GET" and path == "/_mock/requests":
                    with mock.lock:
                        body = json.dumps({"requests": mock.requests,
                                           "violations": mock.violations}).encode()
                    return self._send(200, "application/json", body)
                if path not in ("/blast/Blast.cgi", "/Blast.cgi"):
                    return self._send(404, "text/html", b"<html><title>404</title></html>")
                self._send(*mock.handle(method, params, {k: self.headers.get(k, "") for k in
                                                         ("User-Agent", "Accept")}))

            def do_GET(self):
                q = parse_qs(urlsplit(self.path).query, keep_blank_values=True)
                self._dispatch("GET", {k: v[-1] for k, v in q.items()})

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                q = parse_qs(self.rfile.read(n).decode(), keep_blank_values=True)
                self._dispatch("POST", {k: v[-1] for k, v in q.items()})

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        if tls_cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(tls_cert, tls_key)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        if background:
            # A short poll interval so that close() returns promptly between tests.
            threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        else:
            self.server.serve_forever()
        return self.server.server_address[1]

    def close(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=8443)
    ap.add_argument("--host", default="0.0.0.0")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--mode", default="ok", choices=MODES)
    ap.add_argument("--rtoe", type=int, default=0, help="RTOE announced on submission (s)")
    ap.add_argument("--ready-after", type=float, default=0.0,
                    help="seconds after submission before Status=READY")
    ap.add_argument("--truncate-above", type=int, default=10,
                    help="mode truncate: cut the report of batches larger than this")
    ap.add_argument("--min-interval", type=float, default=10.0)
    ap.add_argument("--poll-interval", type=float, default=60.0)
    ap.add_argument("--big-report", type=int, default=0, metavar="MB",
                    help="every fetch answers a JSON2_S report of about MB megabytes")
    args = ap.parse_args(argv)
    mock = MockNCBI(args.mode, args.rtoe, args.ready_after, args.truncate_above,
                    min_interval=args.min_interval, poll_interval=args.poll_interval)
    if args.big_report:
        mock.script["get"] = (200, "OK", [("Content-Type", "application/json")],
                              big_report(args.big_report << 20))
    print(f"mock NCBI BLAST ({args.mode}) on {args.host}:{args.port} "
          f"{'TLS' if args.tls_cert else 'plain HTTP'}", file=sys.stderr, flush=True)
    try:
        mock.serve(args.port, args.host, args.tls_cert, args.tls_key, background=False)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
