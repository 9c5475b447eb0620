"""The NCBI gate: every request to an allowlisted host, seen, checked, paced and logged.

Squid relays each allowed CONNECT here (a loopback-only cache_peer). The gate answers it,
checks the TLS ClientHello's SNI itself (absent, repeated, malformed, with a NUL, or not the
CONNECT host: the tunnel is closed before any handshake), then ends TLS with a certificate
from this run's own CA (the sandbox trusts that CA and nothing else), so each HTTP request
inside the tunnel is one decision and one audit record:

  - only the BLAST URL API: POST /Blast.cgi with CMD=Put, GET /Blast.cgi with CMD=Get and a
    RID; one Host header naming the tunnel's host; bounded bodies; each request parsed once
    into a canonical form (blastapi.py: exact names, '&' only, values decoded once, only
    the parameters biotool's client sends, QUERY sequence data, never an accession), and the
    upstream request built from that form alone, with a fixed User-Agent and Accept;
  - reports cut on the way back to taxonomic and alignment fields (no accession, GI,
    sequence id or hit sequence), so raw access sees what biotool returns;
  - the decision recorded before anything is relayed, the outcome after it;
  - a RID may be polled or fetched only by the run that created it (RIDs live in this
    process: each run has its own gate, so no run sees another's RIDs or results);
  - NCBI's rules host-wide: at most one request every 10 s across every run (schedule.py, on
    a volume only egress containers mount, shared fairly), one poll per RID per minute (a
    report fetch before the RID was seen READY counts as a poll);
    a request over the rules gets 429 with Retry-After and X-Biotool-Egress: paced;
  - or, with a site relay configured (BIOTOOL_NCBI_RELAY), every decided request goes to that
    relay only (relay.py, mutual TLS), which holds NCBI's interval for the whole site; the
    host-wide schedule is skipped then, and a relay that fails means 502, never NCBI directly.

Records are `BIOTOOL_GATE {json}` lines on stdout, string fields cut before escaping, ASCII
only, and the same lines in the run's bounded audit store (auditstore.py: floods counted,
never rotated away; when full, the run's requests are refused). Standard library only.
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import io
import itertools
import json
import os
import re
import secrets
import select
import socket
import socketserver
import ssl
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote_from_bytes, urlsplit

sys.path.insert(0, str(Path(__file__).parent))  # its modules beside it (also in the repository)
import auditstore  # noqa: E402
import blastapi  # noqa: E402
import schedule as schedule_mod  # noqa: E402
from biotool import ncbirule, rules as rules_mod  # noqa: E402 - copied beside it in the image

PREFIX = "BIOTOOL_GATE"
GATE_PORT = 3130
BLAST_PATHS = ("/Blast.cgi", "/blast/Blast.cgi")
JITTER_S = 0.5                # added to NCBI's intervals for network jitter
MIN_INTERVAL_S = ncbirule.MIN_INTERVAL_S + JITTER_S
POLL_INTERVAL_S = ncbirule.POLL_INTERVAL_S + JITTER_S
HOLD_S = 30.0                 # the longest a request waits for its fair turn before a 429
MAX_BODY = 8 << 20            # 40 queries of long reads fit easily
BODY_BUDGET = 2 * MAX_BODY    # request bodies held at once per run: the gate's memory is 512m
MAX_REPLY = 256 << 20         # biotool's own client refuses more than this too
MAX_TUNNELS = 32              # open tunnels per run; more are answered 503
MAX_RIDS = 1000               # RIDs remembered per run (oldest first out)
HEAD_MAX = 16 << 10           # a CONNECT head from Squid is far smaller
PEEK_MAX = 5 + (16 << 10)     # one whole TLS record: the largest ClientHello in one record
HANDSHAKE_S = 15.0            # the whole TLS handshake, however slowly its bytes come
IDLE_S = 60.0                 # a whole request (line, head, body) from the moment the gate waits
UPSTREAM_S = 300.0
FIELD_CAP = 200               # characters of any string field, cut before escaping
URL_CAP = 600
_RID = re.compile(rb"RID\s*=\s*([A-Za-z0-9_-]{1,64})")
_READY = re.compile(rb"Status\s*=\s*READY")
UPSTREAM_HEADERS = {"User-Agent": "biotool-egress", "Accept": "*/*"}  # never the agent's bytes
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailer", "trailers", "transfer-encoding", "upgrade", "content-length"}

RIDS_FILE = "rids.json"       # in the run's state dir: a restarted gate keeps the run's RIDs

_log_lock = threading.Lock()
STORE: "auditstore.Store | None" = None  # this run's bounded audit (main: --audit FILE)


def cap(value, limit: int = FIELD_CAP):
    """A string field cut to `limit` characters before it is escaped (JSON, ASCII only)."""
    if value is None or isinstance(value, (int, float, bool)):
        return value
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."


def log(rec: dict) -> bool:
    """Write a record to stdout (the container log) and to the run's audit store; False when
    the store is full and did not keep it."""
    rec = {"time": round(time.time(), 3), **{k: cap(v, URL_CAP if k == "url" else FIELD_CAP)
                                              for k, v in rec.items()}}
    line = f"{PREFIX} {json.dumps(rec, ensure_ascii=True, separators=(',', ':'))}\n"
    with _log_lock:
        sys.stdout.write(line)
        sys.stdout.flush()
    return STORE.write(rec) if STORE is not None else True


def escape_sni(raw: bytes | None) -> str | None:
    """The SNI as sent, percent-escaped outside [A-Za-z0-9.-] (a NUL or newline stays visible)."""
    if raw is None:
        return None
    return quote_from_bytes(raw[:FIELD_CAP], safe=".-")


def client_hello_sni(data: bytes) -> tuple[str, bytes | None]:
    """('sni', name) | ('no_sni', None) | ('incomplete', None) | ('not_tls' | 'malformed', None).

    Parses one TLS record holding a whole ClientHello (what every TLS client sends first);
    a hello split across records, or with two host names, is 'malformed' and refused.
    """
    if len(data) < 5:
        return "incomplete", None
    if data[0] != 0x16 or data[1] != 0x03:
        return "not_tls", None
    rec_len = int.from_bytes(data[3:5], "big")
    if len(data) < 5 + rec_len:
        return "incomplete", None
    body = data[5:5 + rec_len]
    try:
        if body[0] != 1:
            return "malformed", None
        hs_len = int.from_bytes(body[1:4], "big")
        hello = body[4:4 + hs_len]
        if len(hello) != hs_len:
            return "malformed", None
        p = 2 + 32
        p += 1 + hello[p]                                   # session id
        p += 2 + int.from_bytes(hello[p:p + 2], "big")      # cipher suites
        p += 1 + hello[p]                                   # compression methods
        if p >= len(hello):
            return "no_sni", None
        end = p + 2 + int.from_bytes(hello[p:p + 2], "big")
        if end > len(hello):
            return "malformed", None
        p += 2
        found = None
        while p + 4 <= end:
            etype = int.from_bytes(hello[p:p + 2], "big")
            elen = int.from_bytes(hello[p + 2:p + 4], "big")
            ext = hello[p + 4:p + 4 + elen]
            p += 4 + elen
            if etype != 0:
                continue
            if found is not None or len(ext) != elen:
                return "malformed", None
            q, names = 2, []
            list_end = min(len(ext), 2 + int.from_bytes(ext[0:2], "big"))
            while q + 3 <= list_end:
                ntype, nlen = ext[q], int.from_bytes(ext[q + 1:q + 3], "big")
                names.append((ntype, ext[q + 3:q + 3 + nlen]))
                q += 3 + nlen
            hosts = [n for t, n in names if t == 0]
            if len(hosts) != 1:
                return "malformed", None
            found = hosts[0]
        return ("sni", found) if found is not None else ("no_sni", None)
    except IndexError:
        return "malformed", None


def peek_hello(sock: socket.socket, timeout: float) -> tuple[str, bytes | None]:
    """Wait for the client's first TLS record without consuming it (the handshake reads it)."""
    sock.settimeout(timeout)
    data = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            data = sock.recv(PEEK_MAX, socket.MSG_PEEK)
        except (TimeoutError, socket.timeout):
            break
        except OSError:
            return "closed", None
        if not data:
            return "closed", None
        kind, sni = client_hello_sni(data)
        if kind != "incomplete" or len(data) >= PEEK_MAX:
            return (kind if kind != "incomplete" else "malformed"), sni
        time.sleep(0.02)
    return ("timeout" if not data else "malformed"), None


class Counting:
    """A writer that counts the bytes the agent receives."""

    def __init__(self, raw):
        self.raw, self.n = raw, 0

    def write(self, b) -> int:
        self.n += len(b)
        return self.raw.write(b)

    def flush(self):
        return self.raw.flush()

    def close(self):
        return self.raw.close()

    @property
    def closed(self) -> bool:
        return self.raw.closed


class DeadlineReader(io.RawIOBase):
    """The tunnel's bytes, each read bounded by what is left of one deadline: a client that
    sends a byte just before every timeout cannot hold a request open past it."""

    def __init__(self, sock):
        self.sock, self.deadline, self.got = sock, None, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        left = IDLE_S if self.deadline is None else self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("request not read in time")
        self.sock.settimeout(left)
        n = self.sock.recv_into(buf)
        self.got += n
        return n


class ByteBudget:
    """Bytes of request bodies a run's gate holds at once; a request over it is refused
    rather than read, so 32 tunnels of 8 MB Puts cannot exhaust the gate's memory."""

    def __init__(self, limit: int):
        self.limit, self.used, self.lock = limit, 0, threading.Lock()

    def take(self, n: int) -> bool:
        with self.lock:
            if n and self.used + n > self.limit:
                return False
            self.used += n
            return True

    def give(self, n: int) -> None:
        with self.lock:
            self.used -= n


def handshake(sock, ctx: ssl.SSLContext, seconds: float) -> ssl.SSLSocket:
    """The server side of TLS, done within `seconds` in all (a per-read timeout alone lets a
    slow client stretch it for ever)."""
    tls = ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
    tls.setblocking(False)
    deadline = time.monotonic() + seconds
    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            wait = ([tls], [])
        except ssl.SSLWantWriteError:
            wait = ([], [tls])
        left = deadline - time.monotonic()
        if left <= 0 or not any(select.select(*wait, [], left)[:2]):
            tls.close()
            raise TimeoutError("TLS handshake not done in time")
    tls.setblocking(True)
    return tls


class Gate:
    """One run's gate: its identity, its RIDs, its place in the host-wide schedule."""

    def __init__(self, allow, cert: str, key: str, state_dir: str, extra_ca: str | None = None,
                 run: str | None = None, min_interval: float = MIN_INTERVAL_S,
                 poll_interval: float = POLL_INTERVAL_S, hold_s: float = HOLD_S,
                 upstream_address: tuple[str, int] | None = None, run_state: str | None = None,
                 relay: str | None = None, relay_tls: str | None = None):
        # upstream_address: connect there instead of resolving the host (unit tests only;
        # the certificate is still checked against the host name).
        self.upstream_address = upstream_address
        # relay: the site's NCBI relay (relay.py), then the one authority on NCBI's interval.
        self.relay, self.relay_ctx = None, None
        if relay:
            import relay as relay_mod  # here, not at the top: relay.py imports this module

            self.relay = relay_mod.parse_url(relay)
            self.relay_ctx = relay_mod.client_context(relay_tls or "")
        self.allow = {(h, p) for h, p in allow}
        self.run = run or secrets.token_hex(8)
        self.rids_path = Path(run_state) / RIDS_FILE if run_state else None
        self.rids: dict[str, dict] = load_rids(self.rids_path)
        self.rid_lock = threading.Lock()
        self.bodies = ByteBudget(BODY_BUDGET)
        self.pending = threading.Lock()   # one request of this run waits for a slot at a time
        self.tunnels = threading.BoundedSemaphore(MAX_TUNNELS)
        self.ids = itertools.count(1)
        self.poll_interval, self.hold_s = poll_interval, hold_s
        self.schedule = schedule_mod.Schedule(Path(state_dir), min_interval)
        self.server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        self.server_ctx.load_cert_chain(cert, key)
        self.server_ctx.set_alpn_protocols(["http/1.1"])
        self.upstream_ctx = ssl.create_default_context()
        if extra_ca:
            self.upstream_ctx.load_verify_locations(cafile=extra_ca)

    def remember_rid(self, rid: str) -> None:
        with self.rid_lock:
            self.rids[rid] = {"created": time.time(), "last_poll": None}
            while len(self.rids) > MAX_RIDS:
                self.rids.pop(next(iter(self.rids)))
            self.save_rids()

    def mark_rid(self, rid: str, **fields) -> None:
        with self.rid_lock:
            if rid in self.rids:
                self.rids[rid].update(fields)
                self.save_rids()

    def save_rids(self) -> None:
        """The run's RIDs on its state volume (caller holds rid_lock), replaced atomically."""
        if self.rids_path is None:
            return
        tmp = self.rids_path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(self.rids, separators=(",", ":")))
            os.replace(tmp, self.rids_path)
        except OSError as exc:  # the RIDs still work in memory; a restart would lose them
            print(f"egress gate: cannot save RIDs ({exc})", file=sys.stderr, flush=True)


def load_rids(path: Path | None) -> dict[str, dict]:
    """RIDs a previous start of this run's gate saved; what does not parse is dropped, since
    the file is the gate's own and anything odd in it means damage."""
    if path is None or not path.is_file():
        return {}
    try:
        raw = json.loads(path.read_text()[:(MAX_RIDS * 200)])
    except (OSError, ValueError):
        return {}
    ok = re.compile(r"[A-Za-z0-9_-]{1,64}")
    out = {}
    for rid, info in (raw.items() if isinstance(raw, dict) else ()):
        if ok.fullmatch(str(rid)) and isinstance(info, dict) \
                and isinstance(info.get("created"), (int, float)):
            last = info.get("last_poll")
            out[rid] = {"created": float(info["created"]),
                        "last_poll": float(last) if isinstance(last, (int, float)) else None,
                        **({"ready": True} if info.get("ready") is True else {})}
    return dict(list(out.items())[-MAX_RIDS:])


class Tunnel(socketserver.BaseRequestHandler):
    """One CONNECT from Squid: answer it, vet the ClientHello, end TLS, serve requests."""

    server: "GateServer"

    def handle(self) -> None:
        gate = self.server.gate
        sock = self.request
        sock.settimeout(HANDSHAKE_S)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < HEAD_MAX:
                chunk = sock.recv(4096)
                if not chunk:
                    return
                head += chunk
        except OSError:
            return
        lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        xff = [v.strip() for line in lines[1:] if line.lower().startswith("x-forwarded-for:")
               for v in line.split(":", 1)[1].split(",")]
        client = xff[-1] if xff else None   # Squid appends the address it saw last
        internal = client in ("127.0.0.1", "::1")  # the entrypoint's warm-up, relayed by Squid
        tid = f"{gate.run[:8]}-{next(gate.ids)}"
        base = {"tunnel": tid, "client": client}
        target = parts[1] if len(parts) == 3 else ""
        host, _, port = target.rpartition(":")
        host = host.lower().rstrip(".")
        if parts[0] != "CONNECT" or not port.isdigit() or (host, int(port)) not in gate.allow:
            sock.sendall(b"HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
            log({**base, "event": "tunnel", "method": parts[0], "url": target, "decision": "denied",
                 "reason": "not an allowlisted CONNECT target", "http_status": 403})
            return
        if not gate.tunnels.acquire(blocking=False):
            sock.sendall(b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
                         b"Content-Length: 0\r\n\r\n")
            log({**base, "event": "tunnel", "method": "CONNECT", "url": target, "host": host,
                 "decision": "denied", "http_status": 503,
                 "reason": f"more than {MAX_TUNNELS} tunnels open at once"})
            return
        try:
            self._tunnel(sock, gate, base, host, int(port), internal)
        finally:
            gate.tunnels.release()

    def _tunnel(self, sock, gate: Gate, base: dict, host: str, port: int, internal: bool) -> None:
        sock.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if not internal:
            log({**base, "event": "open", "method": "CONNECT", "url": f"{host}:{port}", "host": host,
                 "port": port, "decision": "allowed", "reason": "tunnel open"})
        stats = {"requests": 0, "bytes_sent": 0, "bytes_received": 0}
        reason = "closed"
        try:
            kind, sni = peek_hello(sock, HANDSHAKE_S)
            if internal:
                return
            if kind != "sni" or sni != host.encode():
                why = {"not_tls": "not TLS inside the tunnel",
                       "no_sni": "TLS ClientHello without SNI",
                       "malformed": "malformed or fragmented TLS ClientHello",
                       "timeout": "no TLS ClientHello in time",
                       "closed": "closed before a TLS ClientHello"}.get(kind)
                if kind == "sni":
                    why = f"TLS SNI {escape_sni(sni)} is not the CONNECT host {host}"
                if kind == "not_tls":
                    try:
                        sock.sendall(b"HTTP/1.1 403 Forbidden\r\nConnection: close\r\n"
                                     b"Content-Length: 0\r\n\r\n")
                    except OSError:
                        pass
                if kind != "closed":
                    log({**base, "event": "tls", "host": host, "port": port, "sni": escape_sni(sni),
                         "decision": "denied", "reason": why})
                reason = why
                return
            try:
                tls = handshake(sock, gate.server_ctx, HANDSHAKE_S)
            except (OSError, ssl.SSLError) as exc:
                reason = f"TLS handshake failed ({type(exc).__name__})"
                log({**base, "event": "tls", "host": host, "port": port, "sni": escape_sni(sni),
                     "decision": "denied", "reason": reason})
                return
            tls.settimeout(IDLE_S)
            try:
                Requests(tls, base, self.server, host=host, port=port, sni=escape_sni(sni),
                         stats=stats)
            except OSError:
                pass
            finally:
                try:
                    tls.close()
                except OSError:
                    pass
        finally:
            if not internal:
                log({**base, "event": "close", "url": f"{host}:{port}", "host": host, "port": port,
                     "decision": "allowed", "reason": reason, **stats})


class Requests(http.server.BaseHTTPRequestHandler):
    """The HTTP requests inside one TLS tunnel, each checked, paced, relayed and logged."""

    protocol_version = "HTTP/1.1"
    timeout = IDLE_S
    server_version = "biotool-egress"
    sys_version = ""

    def __init__(self, request, base, server, *, host, port, sni, stats):
        self.base, self.tunnel_host, self.tunnel_port, self.sni, self.stats = base, host, port, sni, stats
        self.gate: Gate = server.gate
        super().__init__(request, base.get("client") or "", server)

    def setup(self):
        super().setup()
        self.reader = DeadlineReader(self.connection)
        self.rfile = io.BufferedReader(self.reader, 65536)
        self.wfile = Counting(self.wfile)

    def log_message(self, *args):  # the audit records are the log
        pass

    def handle_one_request(self):
        self.command, self.path, self.request_version = None, "", "HTTP/1.1"
        self.reader.deadline = time.monotonic() + IDLE_S  # line, head and body, all of it
        self.reader.got = 0
        try:
            self.raw_requestline = self.rfile.readline(65537)
        except (TimeoutError, socket.timeout, OSError) as exc:
            self.close_connection = True
            if self.reader.got and isinstance(exc, (TimeoutError, socket.timeout)):
                # Part of a request line came, the rest never did: a denial, not an idle close.
                self.new_record(self.reader.got)
                self.finish_record("denied", f"request line not read within {IDLE_S:.0f} s", None)
            return
        if not self.raw_requestline:
            self.close_connection = True
            return
        self.new_record(len(self.raw_requestline))
        if len(self.raw_requestline) > 65536:
            return self.deny(414, "request line too long", close=True)
        try:
            parsed = self.parse_request()
        except (TimeoutError, socket.timeout):
            self.close_connection = True
            return self.finish_record("denied", f"request head not read within {IDLE_S:.0f} s",
                                      None)
        if not parsed:   # it has answered 400/505 itself
            self.close_connection = True
            return self.finish_record("denied", "malformed HTTP request", self.wfile.n and 400)
        self.sent += len(str(self.headers).encode("latin-1", "replace"))
        try:
            self.gatekeep()
        except (TimeoutError, socket.timeout) as exc:
            self.close_connection = True
            if not self.recorded:
                self.finish_record("denied", f"request not read within {IDLE_S:.0f} s "
                                   f"({type(exc).__name__})", None)
        except Exception as exc:  # noqa: BLE001 - a request the checks did not foresee is still recorded
            self.close_connection = True
            if not self.recorded and self.relayed:  # it went upstream: never call it denied
                self.finish_record("allowed", f"relayed, then the gate failed "
                                   f"({type(exc).__name__})", 502, sent_upstream=True)
            elif not self.recorded:
                why = f"request not understood ({type(exc).__name__})"
                try:
                    self.deny(400, why, close=True)
                except OSError:
                    self.finish_record("denied", why, None)
        finally:
            self.gate.bodies.give(self.held)
            self.held = 0
            try:
                self.wfile.flush()
            except OSError:
                self.close_connection = True

    def new_record(self, sent: int) -> None:
        self.sent, self.wfile.n, self.held = sent, 0, 0
        self.recorded = self.relayed = False
        self.rec = {**self.base, "event": "request", "request": next(self.gate.ids),
                    "host": self.tunnel_host, "port": self.tunnel_port, "sni": self.sni}

    def finish_record(self, decision: str, reason: str, status, **extra) -> None:
        self.recorded = True
        self.stats["requests"] += 1
        self.stats["bytes_sent"] += self.sent
        self.stats["bytes_received"] += self.wfile.n
        log({**self.rec, "method": getattr(self, "command", None),
             "url": f"https://{self.tunnel_host}{getattr(self, 'path', '')}",
             "decision": decision, "reason": reason, "http_status": status,
             "bytes_sent": self.sent, "bytes_received": self.wfile.n, **extra})

    def reply(self, status: int, body: bytes, headers: list[tuple[str, str]], close: bool) -> None:
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def deny(self, status: int, reason: str, *, retry_after: float | None = None,
             close: bool = False, **extra) -> None:
        paced = status == 429
        text = f"biotool egress: {'paced' if paced else 'refused'}: {reason}\n".encode()
        headers = [("Content-Type", "text/plain; charset=utf-8"),
                   ("X-Biotool-Egress", "paced" if paced else "denied")]
        if retry_after is not None:
            headers.append(("Retry-After", str(max(1, int(retry_after + 0.999)))))
        self.reply(status, text, headers, close)
        self.finish_record("paced" if paced else "denied", reason, status, **extra)

    def gatekeep(self) -> None:
        gate = self.gate
        method, target = self.command, self.path
        if method not in ("GET", "POST"):
            return self.deny(405, f"method {method} is not used by the BLAST URL API", close=True)
        parts = urlsplit(target)
        if not target.startswith("/") or parts.path not in BLAST_PATHS:
            return self.deny(403, f"path {parts.path or target} is not the BLAST URL API "
                                  f"({' or '.join(BLAST_PATHS)})", close=True)
        hosts = self.headers.get_all("Host") or []
        named = hosts[0].strip().lower().rstrip(".") if len(hosts) == 1 else None
        if named not in (self.tunnel_host, f"{self.tunnel_host}:{self.tunnel_port}"):
            return self.deny(403, f"Host header {hosts!r} is not the tunnel's host "
                                  f"{self.tunnel_host}", close=True)
        if self.headers.get("Transfer-Encoding"):
            return self.deny(411, "chunked or encoded request bodies are refused; send "
                                  "Content-Length", close=True)
        length_raw = self.headers.get_all("Content-Length") or []
        if len(length_raw) > 1 or (length_raw and not (length_raw[0].strip().isascii()
                                                       and length_raw[0].strip().isdigit())):
            return self.deny(400, "bad Content-Length", close=True)
        length = int(length_raw[0]) if length_raw else 0
        if length > MAX_BODY:
            return self.deny(413, f"request body of {length} bytes is over {MAX_BODY} bytes",
                             close=True)
        if not gate.bodies.take(length):
            # Read past, never kept, so the client is not cut off mid-send before the answer.
            left = length
            while left > 0:
                chunk = self.rfile.read(min(left, 65536))
                if not chunk:
                    break
                left -= len(chunk)
            self.sent += length - left
            return self.deny(503, f"this run's gate already holds {gate.bodies.used} bytes of "
                                  f"request bodies (at most {BODY_BUDGET}); send one at a time",
                             retry_after=gate.schedule.min_interval, close=True)
        self.held = length
        body = self.rfile.read(length) if length else b""
        self.sent += len(body)
        if len(body) < length:
            self.close_connection = True
            return self.finish_record("denied", "request body cut short", None)
        self.reader.deadline = None  # read in time: from here on the socket's own timeouts
        self.connection.settimeout(IDLE_S)
        if method == "POST":
            if parts.query:
                return self.deny(403, "POST with a query string: parameters go in the body only")
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if ctype != "application/x-www-form-urlencoded":
                return self.deny(415, f"POST body type {ctype or '(none)'} is not "
                                      f"application/x-www-form-urlencoded")
            raw_params = body
        else:
            if body:
                return self.deny(400, "GET with a body", close=True)
            raw_params = parts.query.encode("latin-1", "replace")
        if STORE is not None and STORE.full:  # checked once the body is read: a clean answer
            return self.deny(503, "this run's audit store is full: no further request of the "
                                  "run is relayed", close=True)
        try:
            request = blastapi.parse(method, raw_params)
        except blastapi.Refused as exc:
            return self.deny(exc.status, exc.reason)
        what, rid = request.kind, request.rid
        self.rec.update(what=what, rid=rid)
        if what != "put":
            with gate.rid_lock:
                known = gate.rids.get(rid)
            if known is None:
                return self.deny(403, f"RID {rid} was not created by this run")
            # Until a RID is seen READY, fetching its report asks what a poll asks.
            counts = what == "poll" or not known.get("ready")
            if counts and known["last_poll"] is not None:
                wait = known["last_poll"] + gate.poll_interval - time.time()
                if wait > 0:
                    return self.deny(429, f"RID {rid} was asked about {gate.poll_interval - wait:.1f}"
                                          f" s ago; NCBI allows one poll per RID every "
                                          f"{ncbirule.POLL_INTERVAL_S:.0f} s (a fetch before "
                                          f"READY counts as one)",
                                     retry_after=wait)
        # Decided, and recorded so, before the wait for NCBI's slot: once the slot is granted
        # the request leaves at once, so the host-wide interval holds at NCBI's end too.
        form = request.encoded()
        target = parts.path if method == "POST" else f"{parts.path}?{form}"
        if not log({**self.rec, "event": "decided", "method": method,
                    "url": cap(f"https://{self.tunnel_host}{target}", URL_CAP),
                    "decision": "allowed", "reason": f"BLAST {what} decided; relaying"}):
            return self.deny(503, "this run's audit store is full: no further request of the "
                                  "run is relayed", close=True)
        if not gate.pending.acquire(blocking=False):
            return self.deny(429, "this run already has a request waiting for its NCBI slot",
                             retry_after=gate.schedule.min_interval)
        if gate.relay is not None:  # the site's relay holds NCBI's interval, not this host
            try:
                return self.via_relay(method, target, form, request, what)
            finally:
                gate.pending.release()
        try:
            slot = gate.schedule.acquire(gate.run, gate.hold_s)
        except schedule_mod.Busy as exc:
            return self.deny(429, str(exc), retry_after=exc.retry_after)
        except OSError as exc:
            return self.deny(503, f"the host-wide NCBI schedule is unusable ({exc.strerror or exc})",
                             retry_after=gate.schedule.min_interval)
        finally:
            gate.pending.release()
        if what != "put":
            with gate.rid_lock:
                counts = rid in gate.rids and (what == "poll" or not gate.rids[rid].get("ready"))
            if counts:
                gate.mark_rid(rid, last_poll=slot)
        self.relay(method, target, form.encode() if method == "POST" else None, request, what)

    def via_relay(self, method: str, target: str, form: str, request: "blastapi.Request",
                  what: str) -> None:
        """The decided request through the site's relay, the run's poll rule still kept here:
        a poll the relay paced did not reach NCBI, so its poll time is given back."""
        gate, rid = self.gate, request.rid
        self.rec["relay"] = "%s:%d" % gate.relay
        with gate.rid_lock:
            known = gate.rids.get(rid) if what != "put" else None
            counts = known is not None and (what == "poll" or not known.get("ready"))
            before = known["last_poll"] if known else None
        if counts:
            gate.mark_rid(rid, last_poll=time.time())
        paced = self.relay(method, target, form.encode() if method == "POST" else None, request,
                           what)
        if paced and counts:
            gate.mark_rid(rid, last_poll=before)

    def relay(self, method: str, target: str, body: bytes | None, request: "blastapi.Request",
              what: str) -> bool:
        """Send the decided request upstream (its `decided` record is already written, so one
        the agent abandons mid-relay still has its record) and the reply back; True when the
        site's relay paced it (429)."""
        gate = self.gate
        via = gate.relay  # (host, port) of the site's relay, or None: straight to the host
        host, port = via or (self.tunnel_host, self.tunnel_port)
        headers = {"Host": host, "Connection": "close", **UPSTREAM_HEADERS}
        if via:
            headers["X-Biotool-Run"] = gate.run[:32]  # the relay is fair between runs
        if method == "POST":
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        self.relayed = True
        conn = http.client.HTTPSConnection(host, port, timeout=UPSTREAM_S,
                                           context=gate.relay_ctx if via else gate.upstream_ctx)
        try:
            if gate.upstream_address and not via:
                raw = socket.create_connection(gate.upstream_address, timeout=UPSTREAM_S)
                conn.sock = gate.upstream_ctx.wrap_socket(raw, server_hostname=self.tunnel_host)
            conn.request(method, target, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read(MAX_REPLY + 1)
            upstream = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP]
            status, upstream_reason = resp.status, resp.reason
        except (OSError, ssl.SSLError, http.client.HTTPException) as exc:
            if via:  # fail closed: no way to NCBI but the relay
                self.deny(502, f"the site's NCBI relay {host}:{port} failed or is unreachable "
                               f"({type(exc).__name__}: {exc}); nothing else is tried",
                          close=True, sent_upstream=False)
                return False
            return self.deny(502, f"upstream {self.tunnel_host} failed: {type(exc).__name__}: {exc}",
                             close=True, sent_upstream=True)
        finally:
            conn.close()
        paced = bool(via) and status == 429 and \
            any(k.lower() == "x-biotool-egress" and v == "paced" for k, v in upstream)
        if len(data) > MAX_REPLY:
            return self.deny(502, f"upstream reply over {MAX_REPLY >> 20} MB", close=True,
                             sent_upstream=True)
        if paced:  # the relay's own answer: not a report, and no RID in it
            return self.relay_paced(status, upstream_reason, upstream, data)
        rid = None
        if what == "put":
            m = _RID.search(data)
            if m:
                rid = m.group(1).decode()
                gate.remember_rid(rid)
        elif what == "poll" and _READY.search(data):
            gate.mark_rid(request.rid, ready=True)
        elif what == "fetch":
            data = blastapi.filter_report(data)
            upstream = [(k, v) for k, v in upstream if k.lower() != "content-encoding"]
        extra = {"new_rid": rid} if rid else {}
        try:
            self.send_response(status, upstream_reason)
            for k, v in upstream:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:  # the agent left before its reply: the request still went upstream
            self.close_connection = True
            return self.finish_record("allowed", f"BLAST {what} relayed; the client left before "
                                      "the reply", status, sent_upstream=True, **extra)
        self.finish_record("allowed", f"BLAST {what} relayed", status, sent_upstream=True, **extra)
        return False

    def relay_paced(self, status: int, reason: str, headers: list, data: bytes) -> bool:
        """The relay's 429 passed on as it came (Retry-After included), recorded as paced."""
        try:
            self.send_response(status, reason)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            self.close_connection = True
        self.finish_record("paced", f"the site's NCBI relay paced it ({ncbirule.RULE}, and "
                                    f"a site leaves through one address)", status,
                           sent_upstream=False)
        return True


class GateServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, address, gate: Gate):
        self.gate = gate
        super().__init__(address, Tunnel)


def host_certificate_names(allow) -> list[str]:
    return sorted({h for h, _ in allow})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", default="/etc/biotool/rules.toml")
    ap.add_argument("--listen", default=f"127.0.0.1:{GATE_PORT}")
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--extra-ca", help="an extra CA the gate trusts upstream (tests only)")
    ap.add_argument("--ready-file")
    ap.add_argument("--audit", help="this run's bounded audit store (auditstore.py)")
    ap.add_argument("--run-state", help="this run's own state dir (its RIDs), kept across restarts")
    ap.add_argument("--relay", default=os.environ.get("BIOTOOL_NCBI_RELAY") or None,
                    help="https://HOST:PORT of the site's NCBI relay (default BIOTOOL_NCBI_RELAY)")
    ap.add_argument("--relay-tls", default=os.environ.get("BIOTOOL_NCBI_RELAY_TLS") or None,
                    help="directory with site-ca.pem, client.pem, client.key "
                         "(default BIOTOOL_NCBI_RELAY_TLS)")
    args = ap.parse_args(argv)
    try:
        allow = rules_mod.load(args.rules).egress_allow
    except rules_mod.RulesError as exc:
        print(f"egress gate: {exc}", file=sys.stderr)
        return 2
    extra = args.extra_ca if args.extra_ca and os.path.isfile(args.extra_ca) else None
    try:
        probe = Path(args.state_dir) / ".writable"
        probe.write_text("ok\n")
        probe.unlink()
    except OSError as exc:
        print(f"egress gate: state dir {args.state_dir} is not writable ({exc})", file=sys.stderr)
        return 2
    global STORE
    if args.audit:
        STORE = auditstore.Store(args.audit)
    try:
        gate = Gate(allow, args.cert, args.key, args.state_dir, extra, run_state=args.run_state,
                    relay=args.relay, relay_tls=args.relay_tls)
    except (OSError, ValueError, ssl.SSLError) as exc:  # a relay set but unusable: no egress
        print(f"egress gate: the NCBI relay is not usable ({exc})", file=sys.stderr)
        return 2
    if STORE is not None and STORE.size:  # a restart: the audit says so, and what survived
        log({"event": "gate_restart", "decision": "allowed", "rids_kept": len(gate.rids),
             "reason": "the gate started again in this run; its RIDs, CA and audit were kept"})
    host, _, port = args.listen.rpartition(":")
    server = GateServer((host, int(port)), gate)
    if args.ready_file:
        Path(args.ready_file).write_text("gate up\n")
    via = f", through the site's NCBI relay {args.relay}" if gate.relay else ""
    print(f"egress gate: listening on {args.listen} for {sorted(gate.allow)}{via}",
          file=sys.stderr, flush=True)
    server.serve_forever(poll_interval=0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
