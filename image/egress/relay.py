"""The site's NCBI relay: the one process that talks to NCBI for every run of a site.

NCBI's limit (biotool/ncbirule.py: one request every 10 s) is per client address, so runs on
several hosts that leave through one address need one authority, not one schedule per host.
Each run's gate (gatekeeper.py, started with BIOTOOL_NCBI_RELAY) keeps everything per run
(CONNECT and SNI checks, its CA, the run's RIDs, the per-RID poll rule, the audit) and sends
its decided requests here instead of to NCBI (upstream.py); this relay

  - accepts only gates: mutual TLS, the client's certificate signed by the site CA (no
    certificate, or one from another CA, ends the handshake before a byte of HTTP);
  - checks every request again with the gate's own policy (blastrequest.py, its memory bounded by
    construction) and builds the upstream request from the canonical form alone, so a gate
    bug cannot widen what NCBI gets; request bytes are bounded per run, per gate and in all,
    and a waiting request keeps only its canonical form (MEMORY_LIMIT's sum);
  - binds each RID to the gate (its certificate) and run that created it, and keeps NCBI's
    one-poll-per-RID-per-minute rule itself (rids.py), from when each poll was written;
  - applies NCBI's interval with the same fair schedule the gates use on one host
    (schedule.py), fair between gates by their certificates (never a header), on a state
    directory that survives a restart (a volume); an empty schedule at start reads as a
    contact made then: one process, one authority;
  - answers 429 + Retry-After (X-Biotool-Egress: paced) when no slot frees within HOLD_S,
    which the gate passes back and biotool's client waits out;
  - sends to NCBI, or to a self-hosted BLAST URL API (--upstream), with a fixed User-Agent.

It is served by the same pieces as the gate's tunnels (serving.py: handshake and request
deadlines, the body budget, refusals). Records are `BIOTOOL_RELAY {json}` lines on stdout
(the relay's container log); the per-run audit stays the gate's. Standard library only (it
runs in the egress image: EGRESS_MODE=relay).
"""

from __future__ import annotations

import argparse
import re
import socket
import ssl
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).parent))  # its modules beside it (also in the repository)
import audit  # noqa: E402
import blastreply  # noqa: E402
import blastrequest  # noqa: E402
import gate as gate_mod  # noqa: E402 - the gate's NCBI intervals and hold
import rids as rids_mod  # noqa: E402
import schedule as schedule_mod  # noqa: E402
import serving  # noqa: E402
import upstream  # noqa: E402
from biotool import ncbirule  # noqa: E402
import auditwire  # noqa: E402

DEFAULT_UPSTREAM = f"https://{ncbirule.HOST}/Blast.cgi"
MAX_CONNECTIONS = 256          # gates connected at once; more are closed at once
MAX_RIDS = 20_000              # RIDs remembered, all gates together (oldest first out)
# The relay's memory, what its container is given (k8s/relay.yaml, docs/relay.md: 256 MiB) and
# what fills it; tests/unit/sandbox/test_relay_memory.py measures each part with tracemalloc.
MEMORY_LIMIT = 256 << 20
BASELINE = 64 << 20            # the process at rest (~25 MB) and MAX_CONNECTIONS' TLS buffers
BODY_BUDGET = 64 << 20         # request bytes held at once, all gates together: a body while it
#                                is read and parsed, then only its canonical form (never larger)
#                                until it is sent; the decoded QUERY is never kept
HOST_BODY_BUDGET = BODY_BUDGET // 2  # per gate certificate (one per host): half the site's
RUN_BODY_BUDGET = blastrequest.MAX_BODY  # per run (the gate's run id): its gate sends one at a time
PARSES = 1                     # bodies parsed at once: the relay's pace is one request per 10 s
PARSE_PEAK = 8 * blastrequest.MAX_BODY   # one parse's transient beside its body (measured ~63 MB
#                                for 8 MB of letters with one character above U+FFFF)
REPLY_PEAK = upstream.MAX_REPLY      # a reply read from upstream (one at a time while each
#                                send ends within NCBI's interval; slower sends overlap)
_RUN = re.compile(r"[A-Za-z0-9_.-]{1,32}")
# What the relay needs in its --tls dir (a gate's: upstream.CLIENT_FILES).
SERVER_FILES = ("site-ca.pem", "server.pem", "server.key")


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

    def __init__(self, tls_dir: str, state_dir: str, upstream_url: str = DEFAULT_UPSTREAM,
                 extra_ca: str | None = None, min_interval: float = gate_mod.MIN_INTERVAL_S,
                 hold_s: float = gate_mod.HOLD_S, poll_interval: float = gate_mod.POLL_INTERVAL_S,
                 upstream_address: tuple[str, int] | None = None):
        parts = urlsplit(upstream_url)
        if parts.scheme != "https" or not parts.hostname or parts.query:
            raise ValueError(f"--upstream {upstream_url!r} is not an https:// URL of Blast.cgi")
        self.upstream_host, self.upstream_port = parts.hostname, parts.port or 443
        self.upstream_path = parts.path or "/Blast.cgi"
        self.upstream_address = upstream_address  # unit tests: connect here, check the name
        self.server_ctx = server_context(tls_dir)
        self.upstream_ctx = upstream.verified_context(extra_ca)
        self.schedule = schedule_mod.Schedule(Path(state_dir), min_interval)
        self.schedule.begin()  # a schedule lost with a restart: a contact made now
        self.rids = rids_mod.Rids(state_dir, poll_interval, MAX_RIDS)
        self.hold_s = hold_s
        self.admission = Admission()
        self.parsing = threading.BoundedSemaphore(PARSES)  # the relay's memory: see MEMORY_LIMIT
        self.connections = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.records = audit.Records(audit.RELAY)


class Admission:
    """The request bytes the relay holds, bounded per run, per gate certificate and in all: a
    request over any of them is refused (503) before its body is read."""

    def __init__(self, total: int = BODY_BUDGET, host: int = HOST_BODY_BUDGET,
                 run: int = RUN_BODY_BUDGET):
        self.total, self.host_limit, self.run_limit = serving.ByteBudget(total), host, run
        self.hosts: dict[str, serving.ByteBudget] = {}
        self.runs: dict[tuple[str, str], serving.ByteBudget] = {}
        self.lock = threading.Lock()

    def _budget(self, table: dict, key, limit: int) -> "serving.ByteBudget":
        with self.lock:  # idle entries go once there are many: the tables stay bounded
            if key not in table and len(table) >= MAX_CONNECTIONS:
                for k in [k for k, b in table.items() if not b.used]:
                    del table[k]
            return table.setdefault(key, serving.ByteBudget(limit))

    def take(self, peer: str, run: str, n: int) -> str | None:
        """None when `n` bytes fit every budget (then taken; `give` them back), else why not."""
        budgets = [(self._budget(self.runs, (peer, run), self.run_limit),
                    f"this run already holds request bytes at the relay (at most "
                    f"{self.run_limit} per run); send one at a time"),
                   (self._budget(self.hosts, peer, self.host_limit),
                    f"this gate's runs hold too many request bytes at the relay (at most "
                    f"{self.host_limit} per gate certificate); ask again"),
                   (self.total, "the relay holds too many request bodies; ask again")]
        taken = []
        for budget, why in budgets:
            if not budget.take(n):
                for b in taken:
                    b.give(n)
                return why
            taken.append(budget)
        return None

    def give(self, peer: str, run: str, n: int) -> None:
        self._budget(self.runs, (peer, run), self.run_limit).give(n)
        self._budget(self.hosts, peer, self.host_limit).give(n)
        self.total.give(n)


@dataclass(frozen=True)
class Pending:
    """What a request keeps while it waits for its slot: the canonical form as bytes (never
    longer than the body it came from) and what the relay checks, not the decoded QUERY."""
    kind: str
    rid: str | None
    form: bytes

    @classmethod
    def of(cls, request: "blastrequest.Request") -> "Pending":
        return cls(request.kind, request.rid, request.form.encode("ascii"))


class RelayServer(serving.Server):
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
            tls = serving.handshake(request, self.relay.server_ctx, serving.HANDSHAKE_S)
        except (OSError, ssl.SSLError) as exc:
            self.relay.records.write({
                "event": auditwire.TLS, "address": client_address[0], "decision": "denied",
                "reason": f"not a gate of this site: TLS refused ({type(exc).__name__}: {exc})"})
            return
        serving.serve_then_close(tls, lambda: Handler(tls, client_address, self))


class Handler(serving.Handler):
    """Requests from one authenticated gate: re-checked, paced site-wide, sent upstream."""

    server_version = "biotool-relay"
    who = "relay"
    server: RelayServer

    def setup(self):
        self.timeout = serving.IDLE_S
        super().setup()
        self.peer = peer_name(self.connection.getpeercert())

    def handle_one_request(self):
        self.start_request()  # a whole request, bounded
        try:
            super().handle_one_request()
        except (TimeoutError, socket.timeout):
            self.close_connection = True

    def do_GET(self):
        self.serve()

    def do_POST(self):
        self.serve()

    def record(self, decision: str, reason: str, status, **extra) -> None:
        self.server.relay.records.write({
            "event": auditwire.REQUEST, "client": self.peer, "address": self.client_address[0],
            "run": getattr(self, "run", None), "method": self.command, "decision": decision,
            "reason": reason, "http_status": status, **extra})

    def answer(self, status: int, reason: str, *, decision: str = "denied",
               retry_after: float | None = None, close: bool = False, **extra) -> None:
        self.refuse(status, reason, decision, retry_after=retry_after, close=close)
        self.record(decision, reason, status, **extra)

    def serve(self) -> None:
        relay = self.server.relay
        run = (self.headers.get(upstream.RUN_HEADER) or "").strip()
        self.run = run if _RUN.fullmatch(run) else None
        try:
            parts = blastrequest.request_path(self.command, self.path)
            length = blastrequest.body_length(self.headers)
        except blastrequest.Refused as exc:
            return self.answer(exc.status, exc.reason, close=True)
        run_key = self.run or "-"
        why = relay.admission.take(self.peer, run_key, length)
        if why:
            return self.answer(503, why, retry_after=relay.schedule.min_interval, close=True)
        try:
            body = self.rfile.read(length) if length else b""
            if len(body) < length:
                self.close_connection = True
                return self.record("denied", "request body cut short", None)
            self.request_read(upstream.UPSTREAM_S)
            try:
                with relay.parsing:  # one parse's peak at a time; its leftovers freed inside
                    request = blastrequest.parse(self.command, blastrequest.raw_params(
                        self.command, parts, self.headers.get("Content-Type"), body))
                    body = None
                    pending = Pending.of(request)
                    del request
            except blastrequest.Refused as exc:
                return self.answer(exc.status, exc.reason, close=exc.close)
            self.forward(pending)
        finally:
            relay.admission.give(self.peer, run_key, length)

    def forward(self, request: Pending) -> None:
        relay = self.server.relay
        what, rid = request.kind, request.rid
        owner = f"{self.peer}/{self.run or '-'}"
        if what != "put":
            info = relay.rids.get(rid)
            if info is None or info.get("owner") != owner:
                return self.answer(403, f"RID {rid} was not created by this gate's run",
                                   what=what, rid=rid)
            early = relay.rids.too_early(rid, what)
            if early:
                return self.answer(429, early.reason, decision="paced", retry_after=early.wait,
                                   what=what, rid=rid)
        try:  # fair between gates by the certificate the handshake proved, never a header
            slot = relay.schedule.acquire(self.peer, relay.hold_s)
        except schedule_mod.Busy as exc:
            return self.answer(429, str(exc), decision="paced", retry_after=exc.retry_after,
                               what=what, rid=rid)
        except OSError as exc:
            return self.answer(503, f"the relay's NCBI schedule is unusable ({exc})",
                               retry_after=relay.schedule.min_interval, what=what)
        polled = relay.rids.counts_as_poll(rid, what)
        if polled:
            relay.rids.mark(rid, last_poll=slot + relay.schedule.reserve)

        def written(t: float) -> None:  # NCBI's intervals count from the write
            relay.schedule.stamp(slot, t)
            if polled:
                relay.rids.mark(rid, last_poll=t)
        method = "POST" if what == "put" else "GET"
        try:
            reply = upstream.send(relay.upstream_host, relay.upstream_port, relay.upstream_ctx,
                                  method, relay.upstream_path,
                                  request.form if method == "POST" else request.form.decode(),
                                  address=relay.upstream_address, written=written)
        except upstream.Failed as exc:
            return self.answer(502, f"upstream {relay.upstream_host} failed: {exc}",
                               decision="error", close=True, what=what, rid=rid,
                               sent_upstream=True, slot=slot)
        except upstream.TooLarge as exc:
            if what != "fetch":
                return self.answer(502, str(exc), decision="error", close=True, what=what,
                                   rid=rid, sent_upstream=True)
            # Too large to pass on: a cut-off report (the gate passes it on as one, and
            # biotool's client halves the batch).
            reply = upstream.Reply(exc.status, "OK", [("Content-Type", "application/json")],
                                   blastreply.CUT_OFF)
        new_rid = None
        if what == "put":
            new_rid = rids_mod.handed_out(reply.data)
            if new_rid:
                relay.rids.remember(new_rid, owner)
        elif what == "poll" and gate_mod._READY.search(reply.data):
            relay.rids.mark(rid, ready=True)
        self.reply(reply.status, blastreply.reason(reply.status),
                   [(k, v) for k, v in reply.headers if k.lower() in ("content-type", "retry-after")],
                   reply.data)
        self.record("allowed", f"BLAST {what} sent upstream", reply.status, what=what,
                    rid=rid, sent_upstream=True, slot=round(slot, 3),
                    bytes_received=len(reply.data), **({"new_rid": new_rid} if new_rid else {}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", default=f"0.0.0.0:{upstream.RELAY_PORT}")
    ap.add_argument("--tls", required=True,
                    help=f"directory holding {', '.join(SERVER_FILES)} (the site CA signs gates)")
    ap.add_argument("--state-dir", required=True,
                    help="the relay's own schedule and RIDs (a volume that survives a restart)")
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
