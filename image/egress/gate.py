"""One run's gate: its state (allowlist, TLS, RIDs, budgets, its place in the host-wide NCBI
schedule) and the HTTP requests inside its tunnels, each one decision and one record.

Each request inside a tunnel (tunnel.py has vetted the CONNECT, the SNI and the handshake) is
  - checked against the BLAST request policy (blastrequest.py), with one Host header naming the
    tunnel's host, and bounded bodies (per request, and held at once per run);
  - a poll or fetch only of a RID this run created, one poll per RID per minute (rids.py);
  - recorded as decided once it holds this run's pending lock and its NCBI slot (so a request
    refused there is never on record as decided), and again with its outcome, for which the
    store keeps room; an allowed Put's records say what was searched (PROGRAM, DATABASE, the
    number of records, sha256 digests of QUERY and of its titles), never the query itself;
  - refused with a fixed reason code beside the reason's text, the code alone keying the
    store's flood counting (auditstore.flood_key);
  - paced host-wide: at most one request every NCBI interval across every run (schedule.py,
    on a volume only egress containers mount, shared fairly); a request over the rules gets
    429 with Retry-After and X-Biotool-Egress: paced;
  - relayed from its canonical form alone (upstream.py), NCBI's contact counted from the
    request's write (schedule.stamp), and the answer rebuilt on the way back from checked
    values only (blastreply.filter_reply: no identifier, fixed reason phrase and headers);
  - or, with a site relay configured (BIOTOOL_NCBI_RELAY), sent to that relay only (mutual
    TLS), which holds NCBI's interval for the whole site; the host-wide schedule is skipped
    then, and a relay that fails means 502, never NCBI directly.
Standard library only.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import secrets
import socket
import ssl
import threading
import time
from pathlib import Path

import audit
import blastreply
import blastrequest
import rids as rids_mod
import schedule as schedule_mod
import serving
import upstream
from biotool import ncbirule
import auditwire

JITTER_S = ncbirule.JITTER_S
MIN_INTERVAL_S = ncbirule.SLOT_S
POLL_INTERVAL_S = ncbirule.POLL_INTERVAL_S + JITTER_S
HOLD_S = ncbirule.DEFAULT_HOLD_S  # the longest a request waits for its fair turn before a 429
BODY_BUDGET = 2 * blastrequest.MAX_BODY  # request bodies held at once per run: the gate has 512m
MAX_TUNNELS = 32              # open tunnels per run; more are answered 503
_READY = re.compile(rb"Status\s*=\s*READY")
_FULL = "this run's audit store is full: no further request of the run is relayed"


class Gate:
    """One run's gate: its identity, its RIDs, its place in the host-wide schedule."""

    def __init__(self, allow, cert: str, key: str, state_dir: str, extra_ca: str | None = None,
                 run: str | None = None, min_interval: float = MIN_INTERVAL_S,
                 poll_interval: float = POLL_INTERVAL_S, hold_s: float = HOLD_S,
                 upstream_address: tuple[str, int] | None = None, run_state: str | None = None,
                 relay: str | None = None, relay_tls: str | None = None,
                 records: "audit.Records | None" = None):
        # upstream_address: connect there instead of resolving the host (unit tests only;
        # the certificate is still checked against the host name).
        self.upstream_address = upstream_address
        # relay: the site's NCBI relay (relay.py), then the one authority on NCBI's interval.
        self.relay, self.relay_ctx = None, None
        if relay:
            self.relay = upstream.parse_relay_url(relay)
            self.relay_ctx = upstream.relay_client_context(relay_tls or "")
        self.allow = {(h, p) for h, p in allow}
        self.run = run or secrets.token_hex(8)
        self.records = records or audit.Records(audit.GATE)
        self.rids = rids_mod.Rids(run_state, poll_interval)
        self.bodies = serving.ByteBudget(BODY_BUDGET)
        self.pending = threading.Lock()   # one request of this run waits for a slot at a time
        self.relay_not_before = 0.0       # monotonic: the relay's last Retry-After, when it paced
        self.tunnels = threading.BoundedSemaphore(MAX_TUNNELS)
        self.ids = itertools.count(1)
        self.hold_s = hold_s
        self.schedule = schedule_mod.Schedule(Path(state_dir), min_interval)
        try:  # as the relay does: a schedule emptied since the last contact counts from now
            if self.relay is None:  # with a relay, the host's schedule is never used
                self.schedule.begin()
        except (schedule_mod.lockedstate.LockTimeout, OSError):
            pass  # read() treats it the same way at the first request's turn
        self.server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        self.server_ctx.load_cert_chain(cert, key)
        self.server_ctx.set_alpn_protocols(["http/1.1"])
        self.upstream_ctx = upstream.verified_context(extra_ca)

    def log(self, rec: dict, how: str = "flood", echo: bool = True) -> str:
        return self.records.write(rec, how, echo)


def refusal_code(exc: "blastrequest.Refused") -> str:
    """A refusal's fixed code: its own, or the place that raised it. blastrequest raises one
    Refused per rule, so the raising line names the rule without any of the request's text."""
    code = getattr(exc, "code", None)
    if isinstance(code, str) and code:
        return code
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"blastrequest.{tb.tb_frame.f_code.co_name}:{tb.tb_lineno}" if tb else "blastrequest"


def searched(request: "blastrequest.Request") -> dict:
    """What an allowed Put searched, for its records: the program, the database, how many
    records, and digests of the query, of its titles and of each record's sequence (the query
    itself is not kept). The per-record digests let a verifier tell a search of a staged
    sample's reads from one of made-up letters (auditwire.query_seq_digest)."""
    query = request.params.get("QUERY", "")
    # NCBI's line rule (LF, CR LF or a lone CR), as the policy scanned it: a CR-only FASTA's
    # records are each counted and digested.
    titles, seqs = [], [[]]
    for line in blastrequest.query_lines(query):
        if line.lstrip(" \t").startswith(">"):
            titles.append(line.strip(" \t"))
            seqs.append([])
        else:
            seqs[-1].append(line)
    records = ["".join(parts) for parts in (seqs[1:] if titles else seqs)]
    return {"program": request.params.get("PROGRAM"), "database": request.params.get("DATABASE"),
            "query_records": request.records or len(titles) or 1,
            "query_sha256": hashlib.sha256(query.encode("utf-8")).hexdigest(),
            "titles_sha256": hashlib.sha256("\n".join(titles).encode("utf-8")).hexdigest(),
            "query_seqs": ",".join(auditwire.query_seq_digest(s)
                                   for s in records[:auditwire.QUERY_SEQS_LISTED])}


class Requests(serving.Handler):
    """The HTTP requests inside one TLS tunnel, each checked, paced, relayed and logged."""

    server_version = "biotool-egress"

    def __init__(self, request, base, server, *, host, port, sni, stats):
        self.base, self.tunnel_host, self.tunnel_port, self.sni, self.stats = base, host, port, sni, stats
        self.gate: Gate = server.gate
        self.timeout = serving.IDLE_S
        super().__init__(request, base.get("client") or "", server)

    def handle_one_request(self):
        # requestline too: an answer before parse_request (the 414) logs it, and without it
        # the answer raised and was never sent (issue 47).
        self.command, self.path, self.request_version = None, "", "HTTP/1.1"
        self.requestline = ""
        self.start_request()
        try:
            self.raw_requestline = self.rfile.readline(65537)
        except (TimeoutError, socket.timeout, OSError) as exc:
            self.close_connection = True
            if self.reader.got and isinstance(exc, (TimeoutError, socket.timeout)):
                # Part of a request line came, the rest never did: a denial, not an idle close.
                self.new_record(self.reader.got)
                self.finish_record("denied", f"request line not read within "
                                             f"{serving.IDLE_S:.0f} s", None, code="line-timeout")
            return
        if not self.raw_requestline:
            self.close_connection = True
            return
        self.new_record(len(self.raw_requestline))
        # From here every way out records the request once: an over-long line, a head the
        # parser refuses (or raises on), an agent gone before its answer included.
        try:
            if len(self.raw_requestline) > 65536:
                return self.deny(414, "request line too long", code="line-too-long", close=True)
            try:
                parsed = self.parse_request()
            except (TimeoutError, socket.timeout):
                self.close_connection = True
                return self.finish_record("denied", f"request head not read within "
                                                    f"{serving.IDLE_S:.0f} s", None,
                                          code="head-timeout")
            if not parsed:   # it has answered 400/505 itself
                self.close_connection = True
                return self.finish_record("denied", "malformed HTTP request",
                                          self.wfile.n and 400, code="malformed-head")
            self.sent += len(str(self.headers).encode("latin-1", "replace"))
            self.gatekeep()
        except blastrequest.Refused as exc:
            self.deny(exc.status, exc.reason, code=refusal_code(exc), close=exc.close)
        except (TimeoutError, socket.timeout) as exc:
            self.close_connection = True
            if not self.recorded:
                self.finish_record("denied", f"request not read within {serving.IDLE_S:.0f} s "
                                   f"({type(exc).__name__})", None, code="request-timeout")
        except Exception as exc:  # noqa: BLE001 - a request the checks did not foresee is still recorded
            self.close_connection = True
            if not self.recorded and self.relayed:  # it went upstream: never call it denied
                self.finish_record("allowed", f"relayed, then the gate failed "
                                   f"({type(exc).__name__})", 502, sent_upstream=True)
            elif not self.recorded:
                why = f"request not understood ({type(exc).__name__})"
                try:
                    self.deny(400, why, code="not-understood", close=True)
                except OSError:
                    pass  # recorded all the same (deny)
        finally:
            self.gate.bodies.give(self.held)
            self.held = 0
            try:
                self.wfile.flush()
            except OSError:
                self.close_connection = True

    def new_record(self, sent: int) -> None:
        self.sent, self.wfile.n, self.held = sent, 0, 0
        self.recorded = self.relayed = self.owed = False
        self.rec = {**self.base, "event": auditwire.REQUEST, "request": next(self.gate.ids),
                    "host": self.tunnel_host, "port": self.tunnel_port, "sni": self.sni}

    def finish_record(self, decision: str, reason: str, status, code: str | None = None,
                      **extra) -> None:
        """The request's one outcome record; a decided request's is written into the room
        the store kept for it, never counted away (its `decided` record must not stand alone)."""
        self.recorded = True
        self.stats["requests"] += 1
        self.stats["bytes_sent"] += self.sent
        self.stats["bytes_received"] += self.wfile.n
        self.gate.log({**self.rec, "method": getattr(self, "command", None),
                       "url": f"https://{self.tunnel_host}{getattr(self, 'path', '')}",
                       "decision": decision, "reason": reason, "http_status": status,
                       "bytes_sent": self.sent, "bytes_received": self.wfile.n,
                       **({"code": code} if code else {}), **extra},
                      "owed" if self.owed else "flood")
        self.owed = False

    def deny(self, status: int, reason: str, *, code: str, retry_after: float | None = None,
             close: bool = False, **extra) -> None:
        decision = "paced" if status == 429 else "denied"
        try:
            self.refuse(status, reason, decision, retry_after=retry_after, close=close)
        finally:  # recorded even when the agent left before its answer
            self.finish_record(decision, reason, status, code=code, **extra)

    def read_body(self, length: int) -> bytes | None:
        """The body, held against the run's budget; None when refused or cut short (answered
        and recorded)."""
        gate = self.gate
        if not gate.bodies.take(length):
            # Read past, never kept, so the client is not cut off mid-send before the answer.
            left = length
            while left > 0:
                chunk = self.rfile.read(min(left, 65536))
                if not chunk:
                    break
                left -= len(chunk)
            self.sent += length - left
            self.deny(503, f"this run's gate already holds {gate.bodies.used} bytes of "
                           f"request bodies (at most {BODY_BUDGET}); send one at a time",
                      code="body-budget", retry_after=gate.schedule.min_interval, close=True)
            return None
        self.held = length
        body = self.rfile.read(length) if length else b""
        self.sent += len(body)
        if len(body) < length:
            self.close_connection = True
            self.finish_record("denied", "request body cut short", None, code="body-cut")
            return None
        self.request_read(serving.IDLE_S)
        return body

    def gatekeep(self) -> None:
        gate = self.gate
        method = self.command
        parts = blastrequest.request_path(method, self.path)
        hosts = self.headers.get_all("Host") or []
        named = hosts[0].strip().lower().rstrip(".") if len(hosts) == 1 else None
        if named not in (self.tunnel_host, f"{self.tunnel_host}:{self.tunnel_port}"):
            return self.deny(403, f"Host header {hosts!r} is not the tunnel's host "
                                  f"{self.tunnel_host}", code="host-header", close=True)
        body = self.read_body(blastrequest.body_length(self.headers))
        if body is None:
            return
        raw = blastrequest.raw_params(method, parts, self.headers.get("Content-Type"), body)
        if gate.records.full:  # checked once the body is read: a clean answer
            return self.deny(503, _FULL, code="store-full", close=True)
        request = blastrequest.parse(method, raw)
        what, rid = request.kind, request.rid
        self.rec.update(what=what, rid=rid, **(searched(request) if what == "put" else {}))
        if what != "put":
            if gate.rids.get(rid) is None:
                return self.deny(403, f"RID {rid} was not created by this run", code="rid-unknown")
            early = gate.rids.too_early(rid, what)
            if early:
                return self.deny(429, early.reason, code="rid-poll-early", retry_after=early.wait)
        form = request.encoded()
        url = f"https://{self.tunnel_host}{upstream.target(parts.path, method, form)}"
        if not gate.pending.acquire(blocking=False):
            return self.deny(429, "this run already has a request waiting for its NCBI slot",
                             code="run-pending", retry_after=gate.schedule.min_interval)
        if gate.relay is not None:  # the site's relay holds NCBI's interval, not this host
            try:
                wait = gate.relay_not_before - time.monotonic()
                if wait > 0:  # the relay said when: asking it sooner only fills the audit
                    return self.deny(429, f"the site's NCBI relay paced this run; it may ask "
                                          f"again in {wait:.1f} s", code="relay-retry-after",
                                     retry_after=wait)
                if not self.decided(method, url, what):
                    return self.deny(503, _FULL, code="store-full", close=True)
                return self.via_relay(parts.path, form, request)
            finally:
                gate.pending.release()
        try:
            slot = gate.schedule.acquire(gate.run, gate.hold_s)
        except schedule_mod.Busy as exc:
            return self.deny(429, str(exc), code="slot-busy", retry_after=exc.retry_after)
        except OSError as exc:
            return self.deny(503, f"the host-wide NCBI schedule is unusable ({exc.strerror or exc})",
                             code="schedule-unusable", retry_after=gate.schedule.min_interval)
        finally:
            gate.pending.release()
        # Decided, and recorded so, once the slot is granted; a request refused at the lock or
        # the slot above never has a `decided` record.
        if not self.decided(method, url, what):
            return self.deny(503, _FULL, code="store-full", close=True)
        polled = gate.rids.counts_as_poll(rid, what)
        if polled:  # until it is written, the poll counts from the latest it can leave
            gate.rids.mark(rid, last_poll=slot + gate.schedule.reserve)

        def written(t: float) -> None:  # NCBI's intervals count from the write, not the grant
            gate.schedule.stamp(slot, t)
            if polled:
                gate.rids.mark(rid, last_poll=t)
        self.relay(parts.path, form, request, written)

    def decided(self, method: str, url: str, what: str) -> bool:
        """The request's `decided` record (the store keeps room for its outcome); False when
        the store is full. Written to the store alone: it lies between the slot's grant and
        the send, where a blocked write to the container log would delay the request (its
        outcome record, with the same fields, goes to both)."""
        self.owed = bool(self.gate.log({**self.rec, "event": auditwire.DECIDED, "method": method,
                                        "url": url, "decision": "allowed",
                                        "reason": f"BLAST {what} decided; relaying"},
                                       echo=False))
        return self.owed

    def via_relay(self, path: str, form: str, request: "blastrequest.Request") -> None:
        """The decided request through the site's relay, the run's poll rule still kept here:
        a poll the relay paced did not reach NCBI, so its poll time is given back."""
        gate, rid = self.gate, request.rid
        self.rec["relay"] = "%s:%d" % gate.relay
        counts = gate.rids.counts_as_poll(rid, request.kind)
        before = (gate.rids.get(rid) or {}).get("last_poll")
        if counts:
            gate.rids.mark(rid, last_poll=time.time())
        if self.relay(path, form, request) and counts:
            gate.rids.mark(rid, last_poll=before)

    def relay(self, path: str, form: str, request: "blastrequest.Request", written=None) -> bool:
        """Send the decided request upstream (its `decided` record is already written, so one
        the agent abandons mid-relay still has its record) and the reply back; True when the
        site's relay paced it (429)."""
        gate, method, what = self.gate, self.command, request.kind
        via = gate.relay  # (host, port) of the site's relay, or None: straight to the host
        self.relayed = True
        note = ""  # what the record adds about the reply
        try:
            if via:
                reply = upstream.send(*via, gate.relay_ctx, method, path, form,
                                      extra={upstream.RUN_HEADER: gate.run[:32]})
            else:
                reply = upstream.send(self.tunnel_host, self.tunnel_port, gate.upstream_ctx,
                                      method, path, form, address=gate.upstream_address,
                                      written=written)
        except upstream.Failed as exc:
            if via:  # fail closed: no way to NCBI but the relay
                self.deny(502, f"the site's NCBI relay {via[0]}:{via[1]} failed or is "
                               f"unreachable ({exc}); nothing else is tried",
                          code="relay-failed", close=True, sent_upstream=False)
                return False
            self.deny(502, f"upstream {self.tunnel_host} failed: {exc}", code="upstream-failed",
                      close=True, sent_upstream=True)
            return False
        except upstream.TooLarge as exc:
            if what != "fetch":
                self.deny(502, str(exc), code="reply-too-large", close=True, sent_upstream=True)
                return False
            # A report too large to check goes back as cut off: biotool's client halves the
            # batch and asks again, and none of its bytes reach the agent.
            reply = upstream.Reply(exc.status, "", [], blastreply.CUT_OFF)
            note = f"; the {exc}, passed on as a cut-off report"
        if via and reply.status == 429 and reply.header("X-Biotool-Egress") == "paced":
            return self.relay_paced(reply)  # the relay's own answer: not a report, no RID
        status = reply.status
        data = blastreply.filter_reply(what, reply.data)  # rebuilt from checked values only
        headers = blastreply.reply_headers(reply.headers, data)
        del reply  # the upstream's bytes are not held while the agent reads
        rid = None
        if what == "put":
            rid = rids_mod.handed_out(data)
            if rid:
                gate.rids.remember(rid)
        elif what == "poll" and _READY.search(data):
            gate.rids.mark(request.rid, ready=True)
        extra = {"new_rid": rid} if rid else {}
        try:
            self.reply(status, blastreply.reason(status), headers, data)
        except OSError:  # the agent left before its reply: the request still went upstream
            self.close_connection = True
            self.finish_record("allowed", f"BLAST {what} relayed{note}; the client left "
                               "before the reply", status, sent_upstream=True, **extra)
            return False
        self.finish_record("allowed", f"BLAST {what} relayed{note}", status, sent_upstream=True,
                           **extra)
        return False

    def relay_paced(self, reply: "upstream.Reply") -> bool:
        """The relay's 429 passed on as it came (Retry-After included), recorded as paced;
        until that Retry-After this run's gate answers 429 itself."""
        try:
            after = float(reply.header("Retry-After") or 0)
        except ValueError:
            after = 0.0
        self.gate.relay_not_before = time.monotonic() + min(max(after, 1.0), 120.0)
        try:
            self.reply(reply.status, reply.reason, reply.headers, reply.data)
        except OSError:
            self.close_connection = True
        self.finish_record("paced", f"the site's NCBI relay paced it ({ncbirule.RULE}, and "
                                    f"a site leaves through one address)", reply.status,
                           code="relay-paced", sent_upstream=False)
        return True
