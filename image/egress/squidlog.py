"""Squid's own records into the run's audit store: the denials the gate never sees.

Squid ends some attempts itself (a CONNECT to a host off the allowlist, plain HTTP, an IP
literal) and writes a record of each to its access log: the container log, which an agent
can flood and Docker rotates, and which Inspect's sandbox API cannot read at all. So
render.py gives Squid a second access log, the same lines sent over loopback TCP to this
listener, which keeps each in the store (auditstore.py) under the store's rules: counted
past a burst, bounded, never evicting what came before.

Squid sends with `on-error=drop`: a listener that is gone or slow costs Squid nothing (it
drops lines rather than wait), and Squid reconnects on the next line. Only Squid writes here:
the port is on the egress container's loopback, which the sandbox cannot reach.
Standard library only.
"""

from __future__ import annotations

import socketserver
import threading

import render

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
