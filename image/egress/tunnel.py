"""The gate's tunnel server: one CONNECT from Squid at a time per thread, vetted before TLS.

Squid relays each allowed CONNECT here (a loopback-only cache_peer). The tunnel answers it
(only an allowlisted host:port, at most MAX_TUNNELS open per run), checks the TLS
ClientHello's SNI itself (clienthello.py: absent, repeated, malformed, with a NUL, or not the
CONNECT host: the tunnel is closed before any handshake), then ends TLS with a certificate
from this run's own CA (the sandbox trusts that CA and nothing else) and hands the requests
inside to gate.Requests. Each tunnel is recorded when it opens and when it closes: the two
records are counted in the store's flood windows like any other, and a close is counted
exactly when its opening was (so the audit never holds half a tunnel). Once the run's audit
store is full no tunnel opens (503): nothing the store cannot record gets in.
Standard library only.
"""

from __future__ import annotations

import socketserver
import ssl

import clienthello
import gate as gate_mod
import serving
import auditwire

HEAD_MAX = 16 << 10  # a CONNECT head from Squid is far smaller


class Tunnel(socketserver.BaseRequestHandler):
    """One CONNECT from Squid: answer it, vet the ClientHello, end TLS, serve requests."""

    server: "GateServer"

    def handle(self) -> None:
        gate = self.server.gate
        sock = self.request
        sock.settimeout(serving.HANDSHAKE_S)
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
            gate.log({**base, "event": auditwire.TUNNEL, "method": parts[0], "url": target, "decision": "denied",
                      "reason": "not an allowlisted CONNECT target", "http_status": 403,
                      "code": "connect-target"})
            return
        if gate.records.full:
            sock.sendall(b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
                         b"Content-Length: 0\r\n\r\n")
            gate.log({**base, "event": auditwire.TUNNEL, "method": "CONNECT", "url": target, "host": host,
                      "decision": "denied", "http_status": 503, "code": "store-full",
                      "reason": "this run's audit store is full: no tunnel opens"})
            return
        if not gate.tunnels.acquire(blocking=False):
            sock.sendall(b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
                         b"Content-Length: 0\r\n\r\n")
            gate.log({**base, "event": auditwire.TUNNEL, "method": "CONNECT", "url": target, "host": host,
                      "decision": "denied", "http_status": 503, "code": "tunnels-max",
                      "reason": f"more than {gate_mod.MAX_TUNNELS} tunnels open at once"})
            return
        try:
            self._tunnel(sock, gate, base, host, int(port), internal)
        finally:
            gate.tunnels.release()

    def _tunnel(self, sock, gate: "gate_mod.Gate", base: dict, host: str, port: int,
                internal: bool) -> None:
        sock.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        opened = ""
        if not internal:
            opened = gate.log({**base, "event": auditwire.OPEN, "method": "CONNECT", "url": f"{host}:{port}",
                               "host": host, "port": port, "decision": "allowed",
                               "reason": "tunnel open"})
        stats = {"requests": 0, "bytes_sent": 0, "bytes_received": 0}
        reason = "closed"
        try:
            kind, sni = clienthello.peek_hello(sock, serving.HANDSHAKE_S)
            if internal:
                return
            shown = clienthello.escape_sni(sni)
            if kind != "sni" or sni != host.encode():
                why = {"not_tls": "not TLS inside the tunnel",
                       "no_sni": "TLS ClientHello without SNI",
                       "malformed": "malformed or fragmented TLS ClientHello",
                       "timeout": "no TLS ClientHello in time",
                       "closed": "closed before a TLS ClientHello"}.get(kind)
                if kind == "sni":
                    why = f"TLS SNI {shown} is not the CONNECT host {host}"
                if kind == "not_tls":
                    try:
                        sock.sendall(b"HTTP/1.1 403 Forbidden\r\nConnection: close\r\n"
                                     b"Content-Length: 0\r\n\r\n")
                    except OSError:
                        pass
                if kind != "closed":
                    gate.log({**base, "event": auditwire.TLS, "host": host, "port": port, "sni": shown,
                              "decision": "denied", "reason": why, "code": f"tls-{kind}"})
                reason = why
                return
            try:
                tls = serving.handshake(sock, gate.server_ctx, serving.HANDSHAKE_S)
            except (OSError, ssl.SSLError) as exc:
                reason = f"TLS handshake failed ({type(exc).__name__})"
                gate.log({**base, "event": auditwire.TLS, "host": host, "port": port, "sni": shown,
                          "decision": "denied", "reason": reason, "code": "tls-handshake"})
                return
            tls.settimeout(serving.IDLE_S)
            serving.serve_then_close(tls, lambda: gate_mod.Requests(
                tls, base, self.server, host=host, port=port, sni=shown, stats=stats))
        finally:
            if not internal:  # kept where its opening was (room kept), counted where it was
                gate.log({**base, "event": auditwire.CLOSE, "url": f"{host}:{port}", "host": host, "port": port,
                          "decision": "allowed", "reason": reason, **stats},
                         "owed" if opened == "kept" else "count")


class GateServer(serving.Server):
    request_queue_size = 64

    def __init__(self, address, gate: "gate_mod.Gate"):
        self.gate = gate
        super().__init__(address, Tunnel)
