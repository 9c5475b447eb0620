"""The site's NCBI relay: the one process that talks to NCBI for every run of a site.

NCBI's limit (one request every 10 s) is per client address, so runs on several hosts that
leave through one address need one authority, not one schedule per host. Each run's gate
(gatekeeper.py, started with BIOTOOL_NCBI_RELAY) keeps everything per run (CONNECT and SNI
checks, its CA, the run's RIDs, the per-RID poll rule, the audit) and sends its decided
requests here instead of to NCBI; this relay

  - accepts only gates: mutual TLS, the client's certificate signed by the site CA (no
    certificate, or one from another CA, ends the handshake before a byte of HTTP);
  - parses every request again with the gate's own canonical parse (blastapi.py) and builds
    the upstream request from that form alone, so a gate bug cannot widen what NCBI gets;
  - applies NCBI's interval with the same fair schedule the gates use on one host
    (schedule.py), on this process's own state directory: one process, one authority;
  - answers 429 + Retry-After (X-Biotool-Egress: paced) when no slot frees within HOLD_S,
    which the gate passes back and biotool's client waits out;
  - sends to NCBI, or to a self-hosted BLAST URL API (--upstream), with a fixed User-Agent.

Records are `BIOTOOL_RELAY {json}` lines on stdout (the relay's container log); the per-run
audit stays the gate's. Standard library only (it runs in the egress image: EGRESS_MODE=relay).
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import io
import json
import re
import socket
import socketserver
import ssl
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).parent))  # blastapi, schedule, gatekeeper beside this file
import blastapi  # noqa: E402
import gatekeeper  # noqa: E402 - its bounded-read and handshake helpers, not its server
import schedule as schedule_mod  # noqa: E402

PREFIX = "BIOTOOL_RELAY"
RELAY_PORT = 8443
DEFAULT_UPSTREAM = "https://blast.ncbi.nlm.nih.gov/Blast.cgi"
MAX_CONNECTIONS = 256          # gates connected at once; more are closed at once
BODY_BUDGET = 64 << 20         # request bodies held at once, all gates together
RUN_HEADER = "X-Biotool-Run"   # the gate's run id: the schedule is fair between runs
_RUN = re.compile(r"[A-Za-z0-9_.-]{1,32}")
# What a gate needs in BIOTOOL_NCBI_RELAY_TLS (a directory), and the relay in its --tls dir.
CLIENT_FILES = ("site-ca.pem", "client.pem", "client.key")
SERVER_FILES = ("site-ca.pem", "server.pem", "server.key")

_log_lock = threading.Lock()


def log(rec: dict) -> None:
    rec = {"time": round(time.time(), 3), **{k: gatekeeper.cap(v) for k, v in rec.items()}}
    line = f"{PREFIX} {json.dumps(rec, ensure_ascii=True, separators=(',', ':'))}\n"
    with _log_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


# ---------------------------------------------------------------- the gate's side

def parse_url(url: str) -> tuple[str, int]:
    """(host, port) of BIOTOOL_NCBI_RELAY, which must be https:// with no path, user or query."""
    parts = urlsplit(url.strip())
    if parts.scheme != "https" or not parts.hostname or parts.username or parts.query \
            or parts.path not in ("", "/"):
        raise ValueError(f"the NCBI relay {url!r} is not https://HOST[:PORT]")
    return parts.hostname, parts.port or RELAY_PORT


def client_context(tls_dir: str) -> ssl.SSLContext:
    """The gate's TLS to the relay: trusts the site CA only, presents the gate's certificate."""
    d = Path(tls_dir)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_verify_locations(cafile=str(d / CLIENT_FILES[0]))
    ctx.load_cert_chain(str(d / CLIENT_FILES[1]), str(d / CLIENT_FILES[2]))
    return ctx


# ---------------------------------------------------------------- the relay

def server_context(tls_dir: str) -> ssl.SSLContext:
    """Mutual TLS: the relay's certificate, and a client certificate from the site CA required."""
    d = Path(tls_dir)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(d / SERVER_FILES[1]), str(d / SERVER_FILES[2]))
    ctx.load_verify_locations(cafile=str(d / SERVER_FILES[0]))
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def peer_name(cert: dict | None) -> str:
    """The client certificate's common name (the gate's identity in records and fairness)."""
    for rdn in (cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)[:64]
    return "?"


class Relay:
    """The relay's configuration and its one schedule."""

    def __init__(self, tls_dir: str, state_dir: str, upstream: str = DEFAULT_UPSTREAM,
                 extra_ca: str | None = None, min_interval: float = gatekeeper.MIN_INTERVAL_S,
                 hold_s: float = gatekeeper.HOLD_S,
                 upstream_address: tuple[str, int] | None = None):
        parts = urlsplit(upstream)
        if parts.scheme != "https" or not parts.hostname or parts.query:
            raise ValueError(f"--upstream {upstream!r} is not an https:// URL of Blast.cgi")
        self.upstream_host, self.upstream_port = parts.hostname, parts.port or 443
        self.upstream_path = parts.path or "/Blast.cgi"
        self.upstream_address = upstream_address  # unit tests: connect here, check the name
        self.server_ctx = server_context(tls_dir)
        self.upstream_ctx = ssl.create_default_context()
        if extra_ca:
            self.upstream_ctx.load_verify_locations(cafile=extra_ca)
        self.schedule = schedule_mod.Schedule(Path(state_dir), min_interval)
        self.hold_s = hold_s
        self.bodies = gatekeeper.ByteBudget(BODY_BUDGET)
        self.connections = threading.BoundedSemaphore(MAX_CONNECTIONS)


class RelayServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address, relay: Relay):
        self.relay = relay
        super().__init__(address, Handler)

    def process_request(self, request, client_address):
        if not self.relay.connections.acquire(blocking=False):  # bounded threads, never a queue
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.relay.connections.release()

    def finish_request(self, request, client_address):
        """TLS first, within a deadline: a client without the site CA's certificate is refused
        before any HTTP is read."""
        try:
            tls = gatekeeper.handshake(request, self.relay.server_ctx, gatekeeper.HANDSHAKE_S)
        except (OSError, ssl.SSLError) as exc:
            log({"event": "tls", "address": client_address[0], "decision": "denied",
                 "reason": f"not a gate of this site: TLS refused ({type(exc).__name__}: {exc})"})
            return
        try:
            Handler(tls, client_address, self)
        except OSError:
            pass
        finally:
            try:
                tls.close()
            except OSError:
                pass


class Handler(http.server.BaseHTTPRequestHandler):
    """Requests from one authenticated gate: re-checked, paced site-wide, sent upstream."""

    protocol_version = "HTTP/1.1"
    timeout = gatekeeper.IDLE_S
    server_version = "biotool-relay"
    sys_version = ""
    server: RelayServer

    def setup(self):
        super().setup()
        self.peer = peer_name(self.connection.getpeercert())
        self.reader = gatekeeper.DeadlineReader(self.connection)
        self.rfile = io.BufferedReader(self.reader, 65536)

    def log_message(self, *args):  # the records are the log
        pass

    def handle_one_request(self):
        self.reader.deadline = time.monotonic() + gatekeeper.IDLE_S  # a whole request, bounded
        try:
            super().handle_one_request()
        except (TimeoutError, socket.timeout):
            self.close_connection = True

    def do_GET(self):
        self.serve()

    def do_POST(self):
        self.serve()

    def record(self, decision: str, reason: str, status, **extra) -> None:
        log({"event": "request", "client": self.peer, "address": self.client_address[0],
             "run": getattr(self, "run", None), "method": self.command,
             "decision": decision, "reason": reason, "http_status": status, **extra})

    def answer(self, status: int, reason: str, *, decision: str = "denied",
               retry_after: float | None = None, **extra) -> None:
        paced = decision == "paced"
        text = f"biotool relay: {'paced' if paced else 'refused'}: {reason}\n".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("X-Biotool-Egress", decision)
        if retry_after is not None:
            self.send_header("Retry-After", str(max(1, int(retry_after + 0.999))))
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)
        self.record(decision, reason, status, **extra)

    def serve(self) -> None:
        relay = self.server.relay
        run = (self.headers.get(RUN_HEADER) or "").strip()
        self.run = run if _RUN.fullmatch(run) else None
        parts = urlsplit(self.path)
        if parts.path not in gatekeeper.BLAST_PATHS:
            self.close_connection = True
            return self.answer(403, f"path {parts.path[:80]} is not the BLAST URL API")
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            return self.answer(411, "chunked request bodies are refused; send Content-Length")
        raw_length = (self.headers.get("Content-Length") or "0").strip()
        if not (raw_length.isascii() and raw_length.isdigit()) \
                or int(raw_length) > gatekeeper.MAX_BODY:
            self.close_connection = True
            return self.answer(413, f"Content-Length {raw_length[:20]!r} is not at most "
                                    f"{gatekeeper.MAX_BODY} bytes")
        length = int(raw_length)
        if not relay.bodies.take(length):
            self.close_connection = True
            return self.answer(503, "the relay holds too many request bodies; ask again",
                               retry_after=relay.schedule.min_interval)
        try:
            body = self.rfile.read(length) if length else b""
            if len(body) < length:
                self.close_connection = True
                return self.record("denied", "request body cut short", None)
            self.reader.deadline = None  # read in time: from here on the socket's own timeouts
            self.connection.settimeout(gatekeeper.UPSTREAM_S)
            raw = body if self.command == "POST" else parts.query.encode("latin-1", "replace")
            if self.command == "GET" and body:
                return self.answer(400, "GET with a body")
            try:
                request = blastapi.parse(self.command, raw)
            except blastapi.Refused as exc:
                return self.answer(exc.status, exc.reason)
            self.forward(request)
        finally:
            relay.bodies.give(length)

    def forward(self, request: "blastapi.Request") -> None:
        relay = self.server.relay
        what = request.kind
        key = f"{self.peer[:24]}/{self.run or '-'}"  # fair between runs, whichever host they are on
        try:
            slot = relay.schedule.acquire(key, relay.hold_s)
        except schedule_mod.Busy as exc:
            return self.answer(429, str(exc), decision="paced", retry_after=exc.retry_after,
                               what=what, rid=request.rid)
        except OSError as exc:
            return self.answer(503, f"the relay's NCBI schedule is unusable ({exc})",
                               retry_after=relay.schedule.min_interval, what=what)
        form = request.encoded()
        method = "POST" if what == "put" else "GET"
        target = relay.upstream_path if method == "POST" else f"{relay.upstream_path}?{form}"
        headers = {"Host": relay.upstream_host, "Connection": "close",
                   **gatekeeper.UPSTREAM_HEADERS}
        if method == "POST":
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn = http.client.HTTPSConnection(relay.upstream_host, relay.upstream_port,
                                           timeout=gatekeeper.UPSTREAM_S,
                                           context=relay.upstream_ctx)
        try:
            if relay.upstream_address:
                sock = socket.create_connection(relay.upstream_address,
                                                timeout=gatekeeper.UPSTREAM_S)
                conn.sock = relay.upstream_ctx.wrap_socket(sock,
                                                           server_hostname=relay.upstream_host)
            conn.request(method, target, body=form.encode() if method == "POST" else None,
                         headers=headers)
            resp = conn.getresponse()
            data = resp.read(gatekeeper.MAX_REPLY + 1)
            upstream = [(k, v) for k, v in resp.getheaders()
                        if k.lower() not in gatekeeper.HOP_BY_HOP]
            status, reason = resp.status, resp.reason
        except (OSError, ssl.SSLError, http.client.HTTPException) as exc:
            self.close_connection = True
            return self.answer(502, f"upstream {relay.upstream_host} failed: "
                                    f"{type(exc).__name__}: {exc}", decision="error",
                               what=what, rid=request.rid, sent_upstream=True, slot=slot)
        finally:
            conn.close()
        if len(data) > gatekeeper.MAX_REPLY:
            self.close_connection = True
            return self.answer(502, f"upstream reply over {gatekeeper.MAX_REPLY >> 20} MB",
                               decision="error", what=what, rid=request.rid, sent_upstream=True)
        self.send_response(status, reason)
        for k, v in upstream:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.record("allowed", f"BLAST {what} sent upstream", status, what=what, rid=request.rid,
                    sent_upstream=True, slot=round(slot, 3), bytes_received=len(data))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", default=f"0.0.0.0:{RELAY_PORT}")
    ap.add_argument("--tls", required=True,
                    help=f"directory holding {', '.join(SERVER_FILES)} (the site CA signs gates)")
    ap.add_argument("--state-dir", required=True, help="the relay's own schedule state")
    ap.add_argument("--upstream", default=DEFAULT_UPSTREAM,
                    help="NCBI's Blast.cgi, or a self-hosted BLAST URL API's (https)")
    ap.add_argument("--extra-ca", help="an extra CA trusted upstream (tests: a mock NCBI)")
    args = ap.parse_args(argv)
    extra = args.extra_ca if args.extra_ca and Path(args.extra_ca).is_file() else None
    try:
        relay = Relay(args.tls, args.state_dir, args.upstream, extra)
        probe = Path(args.state_dir) / ".writable"
        probe.write_text("ok\n")
        probe.unlink()
    except (OSError, ValueError, ssl.SSLError) as exc:
        print(f"egress relay: cannot start ({exc})", file=sys.stderr)
        return 2
    host, _, port = args.listen.rpartition(":")
    server = RelayServer((host, int(port)), relay)
    print(f"egress relay: ready on {args.listen}, upstream {args.upstream}", file=sys.stderr,
          flush=True)
    server.serve_forever(poll_interval=0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
