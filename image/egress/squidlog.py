"""Squid's own records into the run's audit store: the denials the gate never sees.

Squid ends some attempts itself (a CONNECT to a host off the allowlist, plain HTTP, an IP
literal) and writes a record of each to its access log: the container log, which an agent
can flood and Docker rotates, and which Inspect's sandbox API cannot read at all. So
render.py gives Squid a second access log, the same lines sent over loopback TCP to this
listener, which keeps each in the store (auditstore.py) under the store's rules: counted
past a burst, bounded, never evicting what came before.

A connection Squid closes at accept, because its client already holds the per-client cap
(render.CLIENT_MAX_CONNECTIONS), is in no access-log line: Squid writes a cache.log warning
only. So entrypoint.sh passes Squid's cache.log (its stderr) through this module's
`--warnings` filter, which echoes every line and sends a record of each such warning here,
in Squid's own line format (error ERR_CONNECTION_CAP): a connection flood is in the store
with its count, not only in the container log.

Squid sends with `on-error=drop`: a listener that is gone or slow costs Squid nothing (it
drops lines rather than wait), and Squid reconnects on the next line. Only Squid writes here:
the port is on the egress container's loopback, which the sandbox cannot reach.
Standard library only.
"""

from __future__ import annotations

import re
import socket
import socketserver
import sys
import threading
import time

import render
import auditwire

LINE_MAX = 8192    # Squid's own log-line limit; render.py keeps every record well under it
FIELDS = len(render.LOG_FIELDS) + 1
PRINTABLE = frozenset(range(0x20, 0x7F))
CUT = "a line of Squid's log that did not parse (cut or malformed)"
# What is kept for such a line: a line with Squid's prefix that no reader parses, so the
# audit counts it among its unparsed lines, as it would the same line read from the log.
UNPARSED = f"{render.LOG_PREFIX} -unparsed-\n"


def check(raw: bytes) -> tuple[str, str, int | None, str] | None:
    """(line, flood key, HTTP status, decision) for one of Squid's records, or None.

    The key names only fields of bounded range (the method as CONNECT, none or another,
    Squid's status and error code, the HTTP status), so no agent-chosen text makes a key of
    its own, and every line under one key is read alike (the audit's classify). The decision
    only keeps a connection closed before any request (no method: an error, not a denial)
    apart in the store's counting; the reader decides each record from its line."""
    if len(raw) > LINE_MAX or not set(raw) <= PRINTABLE:
        return None
    line = raw.decode("ascii")
    parts = line.split(" ")
    if len(parts) != FIELDS or parts[0] != render.LOG_PREFIX:
        return None
    named = dict(zip((name for name, _ in render.LOG_FIELDS), parts[1:]))
    method = named["method"]
    kind = "CONNECT" if method == "CONNECT" else "no method" if method == "-" else "other method"
    key = f"the proxy ended it: {kind}, {named['status']}, {named['error']}, {named['http_status']}"
    status = int(named["http_status"]) if named["http_status"].isdigit() else None
    return line + "\n", key, status, "error" if method == "-" else "denied"


def _unparsed(store) -> None:
    """A line that is not one of Squid's records is kept as a line that says so, not as is."""
    store.write_proxy(UNPARSED, CUT, None, decision="error")


class SquidLog(socketserver.StreamRequestHandler):
    """One connection from Squid's TCP logger: a line per record until Squid hangs up."""

    server: "Listener"

    def handle(self) -> None:
        store = self.server.store
        while True:
            raw = self.rfile.readline(LINE_MAX + 2)
            if not raw:
                return
            if not raw.endswith(b"\n"):  # cut: too long, or the connection ended mid-line
                _unparsed(store)
                if len(raw) <= LINE_MAX:
                    return
                self._skip_rest()
                continue
            checked = check(raw[:-1])
            if checked is None:
                _unparsed(store)
            else:
                store.write_proxy(*checked)

    def _skip_rest(self) -> None:
        while (chunk := self.rfile.readline(LINE_MAX)) and not chunk.endswith(b"\n"):
            pass


class Listener(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], store):
        self.store = store
        super().__init__(address, SquidLog)


def start(address: tuple[str, int], store) -> Listener:
    """Listen on `address` (bound before this returns, so Squid's first connect finds it)."""
    listener = Listener(address, store)
    threading.Thread(target=listener.serve_forever, kwargs={"poll_interval": 0.5},
                     name="squidlog", daemon=True).start()
    return listener


# Squid's cache.log line for a connection over client_ip_max_connections (client_side.cc),
# matched whole, from its timestamp: "2026/12/06 04:18:09| WARNING: 172.18.0.3:45182
# attempting more than 64 connections."
_CAP_WARNING = re.compile(rb"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: kid\d+)?\| WARNING: "
                          rb"([0-9.]{7,15}|\[[0-9A-Fa-f:.]{2,45}\]):\d{1,5} attempting more than "
                          rb"\d{1,9} connections\.\r?\n?")


def cap_record(line: bytes, now: float) -> bytes | None:
    """The record (a line in Squid's access-log format) of one cache.log warning that Squid
    closed a connection at accept for the per-client cap; None for any other line."""
    m = _CAP_WARNING.fullmatch(line)
    if not m:
        return None
    client = m.group(1).decode("ascii").strip("[]")
    fields = {"time": f"{now:.3f}", "client": client, "url": "error:connection-cap",
              "status": "NONE_NONE", "http_status": "000", "error": auditwire.CONNECTION_CAP,
              "bytes_sent": "0", "bytes_received": "0"}
    return " ".join([render.LOG_PREFIX, *(fields.get(name, "-") for name, _ in
                                           render.LOG_FIELDS)]).encode() + b"\n"


def relay_warnings(inp, out, address: tuple[str, int], clock=time.time) -> None:
    """Echo Squid's cache.log (`inp`) to `out` line by line, and send a record of each cap
    warning to the listener at `address`; one connection, made again after a failure, and a
    record dropped rather than waited for (as Squid's own logger does)."""
    sock = None
    while True:
        line = inp.readline(LINE_MAX)
        if not line:
            break
        try:
            out.write(line)
            out.flush()
        except OSError:
            pass
        record = cap_record(line, clock())
        if record is None:
            continue
        try:
            if sock is None:
                sock = socket.create_connection(address, timeout=1.0)
            sock.sendall(record)
        except OSError:
            if sock is not None:
                sock.close()
            sock = None
    if sock is not None:
        sock.close()


if __name__ == "__main__":
    # entrypoint.sh: squid ... 2> >(python3 squidlog.py --warnings)
    if sys.argv[1:] != ["--warnings"]:
        print("usage: squidlog.py --warnings  (Squid's cache.log on stdin)", file=sys.stderr)
        sys.exit(2)
    relay_warnings(sys.stdin.buffer, sys.stderr.buffer, ("127.0.0.1", render.SQUID_LOG_PORT))
