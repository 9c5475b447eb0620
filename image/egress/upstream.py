"""Where a decided BLAST request goes: NCBI (or a self-hosted BLAST URL API), or the site's
NCBI relay (relay.py), which a gate reaches by mutual TLS.

The upstream request is built from the canonical form alone (blastrequest.Request.encoded) with a
fixed User-Agent and Accept, never the agent's bytes; the reply is read bounded and its
hop-by-hop headers dropped. Standard library only.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from blastreply import MAX_REPLY  # the reply filter's bound, the one place it is written
from schedule import CONNECT_BOUND_S

UPSTREAM_S = 300.0
READ_CHUNK = 1 << 16
HEADERS = {"User-Agent": "biotool-egress", "Accept": "*/*"}  # never the agent's bytes
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailer", "trailers", "transfer-encoding", "upgrade", "content-length"}
RELAY_PORT = 8443
RUN_HEADER = "X-Biotool-Run"  # the gate's run id, so the relay is fair between runs
# What a gate needs in BIOTOOL_NCBI_RELAY_TLS (a directory).
CLIENT_FILES = ("site-ca.pem", "client.pem", "client.key")


class Failed(Exception):
    """The upstream could not be reached, or failed before its whole reply came."""


class TooLarge(Exception):
    """The upstream's reply is over MAX_REPLY: the rest is never read (status: its status)."""

    def __init__(self, why: str, status: int):
        super().__init__(why)
        self.status = status


@dataclass(frozen=True)
class Reply:
    status: int
    reason: str
    headers: list[tuple[str, str]]  # hop-by-hop headers dropped
    data: bytes | bytearray

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


def target(path: str, method: str, form: str) -> str:
    """The request target: the form goes in a GET's query, a POST's body."""
    return path if method == "POST" else f"{path}?{form}"


def send(host: str, port: int, ctx: ssl.SSLContext, method: str, path: str, form: str | bytes, *,
         extra: dict[str, str] | None = None, address: tuple[str, int] | None = None,
         written: Callable[[float], None] | None = None,
         connect_s: float = CONNECT_BOUND_S) -> Reply:
    """One request, the connection closed after it; `address`: connect there instead of
    resolving `host` (unit tests; the certificate is still checked against `host`).
    Connecting (TCP and TLS) and writing the request are done within `connect_s` in all, or
    the request is abandoned (Failed); `written(t)` is called once it is written, with the
    time, which is when NCBI's schedule counts the contact (schedule.Schedule.stamp). A POST's
    `form` may be bytes already (the relay's held form), sent as it is."""
    headers = {"Host": host, "Connection": "close", **HEADERS, **(extra or {})}
    if method == "POST":
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    deadline = time.monotonic() + connect_s
    conn = http.client.HTTPSConnection(host, port, timeout=connect_s, context=ctx)
    try:
        if address:
            raw = socket.create_connection(address, timeout=connect_s)
            raw.settimeout(max(0.001, deadline - time.monotonic()))
            conn.sock = ctx.wrap_socket(raw, server_hostname=host)
        else:
            conn.connect()
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"connect not done within {connect_s:.0f} s")
        conn.sock.settimeout(left)
        conn.request(method, target(path, method, form),
                     body=(form if isinstance(form, bytes) else form.encode())  # bytes: no copy
                     if method == "POST" else None, headers=headers)
        if time.monotonic() > deadline:
            raise TimeoutError(f"request not written within {connect_s:.0f} s")
        if written:
            written(time.time())
        conn.sock.settimeout(UPSTREAM_S)
        resp = conn.getresponse()
        data = read_bounded(resp)
        kept = [(k, v) for k, v in resp.getheaders()[:64] if k.lower() not in HOP_BY_HOP]
    except (OSError, ssl.SSLError, http.client.HTTPException) as exc:
        raise Failed(f"{type(exc).__name__}: {exc}") from None
    finally:
        conn.close()
    if data is None:
        raise TooLarge(f"upstream reply over {MAX_REPLY >> 20} MB (not read further)",
                       resp.status)
    return Reply(resp.status, resp.reason, kept, data)


def read_bounded(resp: "http.client.HTTPResponse") -> bytearray | None:
    """The reply's body in chunks (never one buffer of the cap's size), None past MAX_REPLY:
    memory is what came, at most the cap, whatever Content-Length says."""
    declared = resp.getheader("Content-Length") or ""
    if declared.strip().isdigit() and int(declared) > MAX_REPLY:
        return None
    data = bytearray()  # grown in place: no second copy when it is done
    while True:
        chunk = resp.read(READ_CHUNK)
        if not chunk:
            return data
        if len(data) + len(chunk) > MAX_REPLY:
            return None
        data += chunk


def verified_context(extra_ca: str | None = None) -> ssl.SSLContext:
    """TLS to NCBI: the system's CAs (and `extra_ca`, tests only)."""
    ctx = ssl.create_default_context()
    if extra_ca:
        ctx.load_verify_locations(cafile=extra_ca)
    return ctx


def parse_relay_url(url: str) -> tuple[str, int]:
    """(host, port) of BIOTOOL_NCBI_RELAY, which must be https:// with no path, user or query."""
    parts = urlsplit(url.strip())
    if parts.scheme != "https" or not parts.hostname or parts.username or parts.query \
            or parts.path not in ("", "/"):
        raise ValueError(f"the NCBI relay {url!r} is not https://HOST[:PORT]")
    return parts.hostname, parts.port or RELAY_PORT


def relay_client_context(tls_dir: str) -> ssl.SSLContext:
    """The gate's TLS to the relay: trusts the site CA only, presents the gate's certificate."""
    d = Path(tls_dir)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_verify_locations(cafile=str(d / CLIENT_FILES[0]))
    ctx.load_cert_chain(str(d / CLIENT_FILES[1]), str(d / CLIENT_FILES[2]))
    return ctx
