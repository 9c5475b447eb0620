"""The TLS ClientHello as the gate reads it before any handshake: its one SNI host name.

The gate peeks at the client's first TLS record without consuming it (the handshake reads it
after), and closes a tunnel whose hello has no SNI, two, a malformed one, or one that is not
the CONNECT host. Standard library only.
"""

from __future__ import annotations

import socket
import time
from urllib.parse import quote_from_bytes

from audit import FIELD_CAP

PEEK_MAX = 5 + (16 << 10)     # one whole TLS record: the largest ClientHello in one record


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
